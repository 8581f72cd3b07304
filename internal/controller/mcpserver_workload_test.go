package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// envtest runs no controller-manager and no kubelet: nothing acts on the
// Deployments the operator makes. The tests read them as the operator wrote
// them, and write their status (and pods) themselves, as the Deployment
// controller and the kubelet would.

const filesystemImage = "node:22-alpine"

// stdioWorkload is the filesystem reference server run through npx, as the
// sample does.
func stdioWorkload(s *mcpv1alpha1.MCPServer) {
	s.Spec.URL = ""
	s.Spec.Workload = &mcpv1alpha1.WorkloadSpec{
		Image:   filesystemImage,
		Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31"},
		Args:    []string{"/data"},
	}
}

// createWorkload creates an MCPServer with a workload; mutate adjusts it.
func createWorkload(ns, name string, mutate ...func(*mcpv1alpha1.MCPServer)) *mcpv1alpha1.MCPServer {
	return createServer(ns, name, "", append([]func(*mcpv1alpha1.MCPServer){stdioWorkload}, mutate...)...)
}

func deploymentOf(srv *mcpv1alpha1.MCPServer) func() (*appsv1.Deployment, error) {
	return func() (*appsv1.Deployment, error) {
		var d appsv1.Deployment
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(srv), &d)
		return &d, err
	}
}

func serviceOf(srv *mcpv1alpha1.MCPServer) func() (*corev1.Service, error) {
	return func() (*corev1.Service, error) {
		var s corev1.Service
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(srv), &s)
		return &s, err
	}
}

// existing waits for an object and returns it.
func existing[T any](get func() (T, error)) T {
	var got T
	Eventually(func() error {
		var err error
		got, err = get()
		return err
	}).Should(Succeed())
	return got
}

// gone polls whether an object is not found.
func gone[T any](get func() (T, error)) func() bool {
	return func() bool { _, err := get(); return apierrors.IsNotFound(err) }
}

// workloadOf polls "Status/Reason" of WorkloadAvailable for the current
// generation, and "none" otherwise.
func workloadOf(srv *mcpv1alpha1.MCPServer) func() string {
	return func() string {
		got := fetch(srv)
		c := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionWorkloadAvailable)
		if c == nil || c.ObservedGeneration != got.Generation {
			return "none"
		}
		return string(c.Status) + "/" + c.Reason
	}
}

func conditionMessage(srv *mcpv1alpha1.MCPServer, condType string) string {
	c := meta.FindStatusCondition(fetch(srv).Status.Conditions, condType)
	if c == nil {
		return ""
	}
	return c.Message
}

// reportDeployment writes the Deployment's status as the Deployment
// controller would once it has rolled out its current generation: every
// replica updated, and available when conditions say Available=True.
func reportDeployment(srv *mcpv1alpha1.MCPServer, conditions ...appsv1.DeploymentCondition) {
	reportRollout(srv, func(d *appsv1.Deployment) {
		n := ptr.Deref(d.Spec.Replicas, 1)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, Conditions: conditions}
		for _, c := range conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
				d.Status.ReadyReplicas, d.Status.AvailableReplicas = n, n
			}
		}
	})
}

// reportRollout writes the Deployment's status as set makes it: envtest
// runs no Deployment controller.
func reportRollout(srv *mcpv1alpha1.MCPServer, set func(*appsv1.Deployment)) {
	Eventually(func() error {
		d, err := deploymentOf(srv)()
		if err != nil {
			return err
		}
		set(d)
		return k8sClient.Status().Update(ctx, d)
	}).Should(Succeed())
}

// serverCondition polls "Status/Reason@generation" of an MCPServer's
// condition, and "none" when it is absent.
func serverCondition(srv *mcpv1alpha1.MCPServer, condType string) func() string {
	return func() string {
		c := meta.FindStatusCondition(fetch(srv).Status.Conditions, condType)
		if c == nil {
			return "none"
		}
		return fmt.Sprintf("%s/%s@%d", c.Status, c.Reason, c.ObservedGeneration)
	}
}

func deploymentCond(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: status, Reason: reason, Message: message,
		LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()}
}

var (
	minimumAvailable = deploymentCond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.")
	notAvailable     = deploymentCond(appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
)

// serverIn finds the server's container.
func serverIn(containers []corev1.Container) corev1.Container {
	for _, c := range containers {
		if c.Name == "server" {
			return c
		}
	}
	Fail("no container named server")
	return corev1.Container{}
}

var _ = Describe("MCPServer workloads", func() {
	It("runs a stdio server behind the bridge in a hardened pod, reached through its Service", func() {
		ns := newNamespace()
		srv := createWorkload(ns, "files", func(s *mcpv1alpha1.MCPServer) {
			w := s.Spec.Workload
			w.Env = []corev1.EnvVar{
				{Name: "HOME", Value: "/tmp"},
				{Name: "API_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "files-token"}, Key: "token"}}},
			}
			w.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "files-settings"}}}}
			w.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "files-data"}}}}
			w.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			w.RunAsUser = ptr.To[int64](1000)
			w.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}
			w.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
			w.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "mcp", Effect: corev1.TaintEffectNoSchedule}}
			w.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
		})

		d := existing(deploymentOf(srv))
		owner := fetch(srv)
		labels := map[string]string{"app.kubernetes.io/name": "mcp-server", "app.kubernetes.io/instance": "files", "app.kubernetes.io/managed-by": "mcp-operator"}
		Expect(d.Labels).To(Equal(labels))
		Expect(d.OwnerReferences).To(ConsistOf(metav1.OwnerReference{APIVersion: "mcp.toolmesh.io/v1alpha1", Kind: "MCPServer",
			Name: "files", UID: owner.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}),
			"the MCPServer is the controller owner: deleting it deletes the Deployment")
		Expect(d.Spec.Replicas).To(Equal(ptr.To[int32](1)), "unset replicas leave the Deployment's default")
		Expect(d.Spec.Selector.MatchLabels).To(Equal(map[string]string{"app.kubernetes.io/name": "mcp-server", "app.kubernetes.io/instance": "files"}))
		pod := d.Spec.Template
		Expect(pod.Labels).To(Equal(labels))
		Expect(pod.Annotations).To(HaveKeyWithValue("kubectl.kubernetes.io/default-container", "server"))

		By("installing the bridge from the operator's image into a shared emptyDir")
		Expect(pod.Spec.InitContainers).To(HaveLen(1))
		installer := pod.Spec.InitContainers[0]
		Expect(installer.Image).To(Equal(suiteBridgeImage))
		Expect(installer.Command).To(Equal([]string{"/usr/local/bin/mcp-bridge", "--install", "/mcp-bridge/mcp-bridge"}))
		Expect(installer.VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: "mcp-bridge", MountPath: "/mcp-bridge"}))

		By("wrapping the server's command line in the bridge")
		server := serverIn(pod.Spec.Containers)
		Expect(pod.Spec.Containers).To(HaveLen(1))
		Expect(server.Image).To(Equal(filesystemImage))
		Expect(server.Command).To(Equal([]string{"/mcp-bridge/mcp-bridge"}))
		Expect(server.Args).To(Equal([]string{"--listen", ":8080", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/data"}))
		Expect(server.Ports).To(ConsistOf(corev1.ContainerPort{Name: "mcp", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}))
		Expect(server.ReadinessProbe.HTTPGet).To(Equal(&corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("mcp"), Scheme: corev1.URISchemeHTTP}))
		Expect(server.LivenessProbe.HTTPGet).To(Equal(&corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("mcp"), Scheme: corev1.URISchemeHTTP}))

		By("passing env, env from Secrets and ConfigMaps, volumes and resources through")
		Expect(server.Env).To(Equal(srv.Spec.Workload.Env))
		Expect(server.Env[1].ValueFrom.SecretKeyRef.Name).To(Equal("files-token"), "the value stays in the Secret")
		Expect(server.EnvFrom).To(Equal(srv.Spec.Workload.EnvFrom))
		Expect(server.Resources.Requests.Memory().String()).To(Equal("128Mi"))
		Expect(server.VolumeMounts).To(ConsistOf(
			corev1.VolumeMount{Name: "mcp-tmp", MountPath: "/tmp"},
			corev1.VolumeMount{Name: "data", MountPath: "/data"},
			corev1.VolumeMount{Name: "mcp-bridge", MountPath: "/mcp-bridge", ReadOnly: true}))
		var volumes []string
		for _, v := range pod.Spec.Volumes {
			volumes = append(volumes, v.Name)
		}
		Expect(volumes).To(ConsistOf("mcp-tmp", "data", "mcp-bridge"))
		Expect(pod.Spec.NodeSelector).To(Equal(srv.Spec.Workload.NodeSelector))
		Expect(pod.Spec.Tolerations).To(Equal(srv.Spec.Workload.Tolerations))
		Expect(pod.Spec.ImagePullSecrets).To(Equal(srv.Spec.Workload.ImagePullSecrets))

		By("hardening the pod and both containers")
		Expect(pod.Spec.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
		Expect(pod.Spec.SecurityContext.RunAsUser).To(Equal(ptr.To[int64](1000)))
		Expect(pod.Spec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		Expect(pod.Spec.AutomountServiceAccountToken).To(Equal(ptr.To(false)), "no token without serviceAccountName")
		Expect(pod.Spec.EnableServiceLinks).To(Equal(ptr.To(false)))
		for _, c := range []corev1.Container{installer, server} {
			sc := c.SecurityContext
			Expect(sc.Privileged).To(Equal(ptr.To(false)), c.Name)
			Expect(sc.AllowPrivilegeEscalation).To(Equal(ptr.To(false)), c.Name)
			Expect(sc.ReadOnlyRootFilesystem).To(Equal(ptr.To(true)), c.Name)
			Expect(sc.RunAsNonRoot).To(Equal(ptr.To(true)), c.Name)
			Expect(sc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")), c.Name)
			Expect(sc.Capabilities.Add).To(BeEmpty(), c.Name)
			Expect(sc.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault), c.Name)
		}

		By("exposing the bridge on a ClusterIP Service that keeps each client on one pod")
		svc := existing(serviceOf(srv))
		Expect(svc.Labels).To(Equal(labels))
		Expect(svc.OwnerReferences).To(Equal(d.OwnerReferences))
		Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		Expect(svc.Spec.Selector).To(Equal(d.Spec.Selector.MatchLabels))
		Expect(svc.Spec.SessionAffinity).To(Equal(corev1.ServiceAffinityClientIP))
		Expect(svc.Spec.Ports).To(HaveLen(1))
		Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(8080))
		Expect(svc.Spec.Ports[0].TargetPort).To(Equal(intstr.FromString("mcp")))

		By("waiting for the Deployment instead of dialing a server that is not up")
		Eventually(workloadOf(srv)).Should(Equal("False/DeploymentPending"))
		Eventually(readyOf(srv)).Should(Equal("False/WorkloadUnavailable"))
		Expect(conditionMessage(srv, mcpv1alpha1.ConditionReady)).To(Equal(
			"The workload (image node:22-alpine) is not available: The Deployment controller has not reported on the Deployment yet"))

		By("writing nothing when re-applying an unchanged spec, as the retries do")
		rv := func() []string {
			d, err := deploymentOf(srv)()
			Expect(err).NotTo(HaveOccurred())
			s, err := serviceOf(srv)()
			Expect(err).NotTo(HaveOccurred())
			p, err := networkPolicyOf(srv)()
			Expect(err).NotTo(HaveOccurred())
			return []string{d.ResourceVersion, s.ResourceVersion, p.ResourceVersion, fetch(srv).ResourceVersion}
		}
		settled := rv()
		Consistently(rv, 5*time.Second, 250*time.Millisecond).Should(Equal(settled))
	})

	It("makes pods the restricted Pod Security profile admits", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restricted-",
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		stdio := createWorkload(ns.Name, "stdio", func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Workload.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			s.Spec.Workload.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		})
		web := createWorkload(ns.Name, "web", func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Workload = &mcpv1alpha1.WorkloadSpec{Image: "ghcr.io/example/web:1", Transport: mcpv1alpha1.WorkloadSSE, RunAsUser: ptr.To[int64](10001)}
		})
		// Pod Security admission checks pods, not Deployments: create the
		// pods the Deployments would, as their ReplicaSets would.
		podOf := func(srv *mcpv1alpha1.MCPServer) *corev1.Pod {
			template := existing(deploymentOf(srv)).Spec.Template
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, GenerateName: srv.Name + "-", Labels: template.Labels}, Spec: template.Spec}
		}
		for _, srv := range []*mcpv1alpha1.MCPServer{stdio, web} {
			Expect(k8sClient.Create(ctx, podOf(srv))).To(Succeed(), srv.Name)
		}
		loosened := podOf(stdio)
		loosened.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		err := k8sClient.Create(ctx, loosened)
		Expect(err).To(MatchError(ContainSubstring(`violates PodSecurity "restricted:latest"`)), "the namespace enforces the profile")
	})

	It("runs an HTTP server as its image says, with a TCP readiness check on its port", func() {
		srv := createWorkload(newNamespace(), "web", func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Workload = &mcpv1alpha1.WorkloadSpec{Image: "ghcr.io/example/everything:1", Args: []string{"streamableHttp"},
				Transport: mcpv1alpha1.WorkloadStreamableHTTP, Port: 3001}
		})
		d := existing(deploymentOf(srv))
		Expect(d.Spec.Template.Spec.InitContainers).To(BeEmpty())
		Expect(d.Spec.Template.Spec.Volumes).To(HaveLen(1), "only /tmp, no bridge volume")
		server := serverIn(d.Spec.Template.Spec.Containers)
		Expect(server.Command).To(BeEmpty(), "the image's entrypoint runs")
		Expect(server.Args).To(Equal([]string{"streamableHttp"}))
		Expect(server.Ports[0].ContainerPort).To(BeEquivalentTo(3001))
		Expect(server.ReadinessProbe.TCPSocket).To(Equal(&corev1.TCPSocketAction{Port: intstr.FromString("mcp")}))
		Expect(server.LivenessProbe).To(BeNil())
		Expect(existing(serviceOf(srv)).Spec.Ports[0].Port).To(BeEquivalentTo(3001))
	})

	It("follows spec changes, and puts back what someone else changed", func() {
		srv := createWorkload(newNamespace(), "tracked")
		existing(deploymentOf(srv))

		By("applying a new image, arguments, replica count and port")
		updateServer(srv, func(changed *mcpv1alpha1.MCPServer) {
			changed.Spec.Workload.Image = "node:24-alpine"
			changed.Spec.Workload.Args = []string{"/data", "/more"}
			changed.Spec.Workload.Replicas = ptr.To[int32](2)
			changed.Spec.Workload.Port = 9090
			changed.Spec.Workload.Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}}
		})
		Eventually(func(g Gomega) {
			d, err := deploymentOf(srv)()
			g.Expect(err).NotTo(HaveOccurred())
			server := serverIn(d.Spec.Template.Spec.Containers)
			g.Expect(server.Image).To(Equal("node:24-alpine"))
			g.Expect(server.Args).To(Equal([]string{"--listen", ":9090", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/data", "/more"}))
			g.Expect(server.Env).To(Equal([]corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}}))
			g.Expect(*d.Spec.Replicas).To(BeEquivalentTo(2))
		}).Should(Succeed())
		Eventually(func() (int32, error) {
			svc, err := serviceOf(srv)()
			return svc.Spec.Ports[0].Port, err
		}).Should(BeEquivalentTo(9090))

		By("dropping what the spec no longer says")
		updateServer(srv, func(dropped *mcpv1alpha1.MCPServer) {
			dropped.Spec.Workload.Env = nil
		})
		Eventually(func() ([]corev1.EnvVar, error) {
			d, err := deploymentOf(srv)()
			return d.Spec.Template.Spec.Containers[0].Env, err
		}).Should(BeEmpty())

		By("restoring the image and the hardening after an edit by another field manager")
		d := existing(deploymentOf(srv))
		d.Spec.Template.Spec.Containers[0].Image = "attacker.example/miner:1"
		d.Spec.Template.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
		d.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		d.Spec.Template.Spec.Containers[0].SecurityContext.Capabilities.Drop = nil
		d.Spec.Template.Spec.Containers[0].SecurityContext.RunAsNonRoot = nil
		d.Spec.Template.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr.To(false)
		d.Spec.Template.Spec.SecurityContext.RunAsNonRoot = nil
		// What kubectl rollout restart writes is not the operator's field.
		d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-12-01T00:00:00Z"
		Expect(k8sClient.Update(ctx, d, client.FieldOwner("kubectl-edit"))).To(Succeed())
		Eventually(func(g Gomega) {
			d, err := deploymentOf(srv)()
			g.Expect(err).NotTo(HaveOccurred())
			c := d.Spec.Template.Spec.Containers[0]
			g.Expect(c.Image).To(Equal("node:24-alpine"))
			g.Expect(c.SecurityContext.Privileged).To(Equal(ptr.To(false)))
			g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))
			g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
			g.Expect(c.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
			g.Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(Equal(ptr.To(true)))
			g.Expect(d.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
		}).Should(Succeed())
		Expect(existing(deploymentOf(srv)).Spec.Template.Annotations).To(HaveKeyWithValue("kubectl.kubernetes.io/restartedAt", "2026-12-01T00:00:00Z"))

		By("leaving the replica count to whoever scales the Deployment when the spec does not set it")
		updateServer(srv, func(unset *mcpv1alpha1.MCPServer) {
			unset.Spec.Workload.Replicas = nil
		})
		scaled := func(n int32) {
			Eventually(func() error {
				d, err := deploymentOf(srv)()
				if err != nil {
					return err
				}
				d.Spec.Replicas = ptr.To(n)
				return k8sClient.Update(ctx, d, client.FieldOwner("horizontal-pod-autoscaler"))
			}).Should(Succeed())
		}
		// WorkloadAvailable speaks for the new generation once the operator
		// applied it (without replicas); then scale as an autoscaler would.
		Eventually(workloadOf(srv)).ShouldNot(Equal("none"))
		scaled(5)
		Consistently(func() (int32, error) {
			d, err := deploymentOf(srv)()
			return *d.Spec.Replicas, err
		}).Should(BeEquivalentTo(5))
	})

	It("finishes a generation only once its Deployment has rolled it out, and stalls on a stuck rollout", func() {
		ns := newNamespace()
		srv := createWorkload(ns, "roll", func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Second}
		})
		existing(deploymentOf(srv))
		reportDeployment(srv, minimumAvailable)
		Eventually(workloadOf(srv)).Should(Equal("True/DeploymentAvailable"))
		// No cluster DNS here: discovery of generation 1 fails, and its
		// Ready stays as the record of generation 1.
		Eventually(serverCondition(srv, mcpv1alpha1.ConditionReady)).Should(MatchRegexp(`^False/(Unreachable|Timeout)@1$`))
		readyOfGeneration1 := serverCondition(srv, mcpv1alpha1.ConditionReady)()

		By("waiting while the Deployment controller has not observed the new image")
		updateServer(srv, func(changed *mcpv1alpha1.MCPServer) {
			changed.Spec.Workload.Image = "registry.example/does-not-exist:1"
		})
		Eventually(func() string { return serverIn(existing(deploymentOf(srv)).Spec.Template.Spec.Containers).Image }).
			Should(Equal("registry.example/does-not-exist:1"))
		Eventually(workloadOf(srv)).Should(Equal("False/RolloutInProgress"))
		Expect(serverCondition(srv, mcpv1alpha1.ConditionReconciling)()).To(Equal("True/RolloutInProgress@2"))
		Expect(conditionMessage(srv, mcpv1alpha1.ConditionReconciling)).To(ContainSubstring("Waiting for the Deployment controller to observe generation 2 of the Deployment"))
		Expect(fetch(srv).Status.ObservedGeneration).NotTo(BeEquivalentTo(2))
		Expect(kstatusOf(fetch(srv))).To(Equal(status.InProgressStatus))
		Expect(serverCondition(srv, mcpv1alpha1.ConditionReady)()).To(Equal(readyOfGeneration1), "Ready is left to the finished generation")

		By("naming the new pod's failure while the old one still serves")
		d := existing(deploymentOf(srv))
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "roll-2-x2x4q", Labels: d.Spec.Template.Labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "registry.example/does-not-exist:1"}}},
		}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "server", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		progressing := deploymentCond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "roll-2" is progressing.`)
		reportRollout(srv, func(d *appsv1.Deployment) {
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{minimumAvailable, progressing}}
		})
		Eventually(func() string { return conditionMessage(srv, mcpv1alpha1.ConditionReconciling) }).Should(Equal(
			"The workload (image registry.example/does-not-exist:1) is rolling out: Waiting for the rollout to finish: 1 old replicas are pending termination: " +
				"Pod roll-2-x2x4q: container server is waiting: ImagePullBackOff: Back-off pulling image. The pods of the previous rollout serve meanwhile"))
		Expect(workloadOf(srv)()).To(Equal("False/RolloutInProgress"))
		Expect(eventsOf(srv)()).NotTo(containsSubstring("WorkloadUnavailable"), "a rollout is not a warning")

		By("stalling with the Deployment's message once its progress deadline passes")
		stuck := deploymentCond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", `ReplicaSet "roll-2" has timed out progressing.`)
		reportRollout(srv, func(d *appsv1.Deployment) {
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{minimumAvailable, stuck}}
		})
		Eventually(serverCondition(srv, mcpv1alpha1.ConditionStalled)).Should(Equal("True/ProgressDeadlineExceeded@2"))
		stalledMessage := `The workload (image registry.example/does-not-exist:1) did not roll out: ReplicaSet "roll-2" has timed out progressing. The pods of the previous rollout still serve`
		Expect(conditionMessage(srv, mcpv1alpha1.ConditionStalled)).To(Equal(stalledMessage))
		got := fetch(srv)
		Expect(got.Status.ObservedGeneration).To(BeEquivalentTo(2))
		Expect(kstatusOf(got)).To(Equal(status.FailedStatus))
		Expect(serverCondition(srv, mcpv1alpha1.ConditionReconciling)()).To(Equal("none"))
		Expect(workloadOf(srv)()).To(Equal("False/ProgressDeadlineExceeded"))
		Expect(serverCondition(srv, mcpv1alpha1.ConditionReady)()).To(Equal(readyOfGeneration1), "the old pods still serve the last tools")
		Eventually(eventsOf(srv)).Should(ContainElement("ProgressDeadlineExceeded: " + stalledMessage))

		By("discovering the new generation once the rollout finishes")
		Expect(k8sClient.Delete(ctx, pod)).To(Succeed())
		reportDeployment(srv, minimumAvailable)
		Eventually(workloadOf(srv)).Should(Equal("True/DeploymentAvailable"))
		Eventually(serverCondition(srv, mcpv1alpha1.ConditionReady)).Should(MatchRegexp(`^False/(Unreachable|Timeout)@2$`))
		Expect(serverCondition(srv, mcpv1alpha1.ConditionStalled)()).To(MatchRegexp(`^True/(Unreachable|Timeout)@2$`),
			"the stuck rollout no longer holds it; the failed discovery does")
	})

	It("reports WorkloadAvailable from the Deployment and its pods, and gates Ready on it", func() {
		ns := newNamespace()
		srv := createWorkload(ns, "gated", func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Second}
		})
		existing(deploymentOf(srv))
		Eventually(readyOf(srv)).Should(Equal("False/WorkloadUnavailable"))

		By("naming the image and the pod's waiting reason while the image cannot be pulled")
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gated-7d9c-x2x4q", Labels: existing(deploymentOf(srv)).Spec.Template.Labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: filesystemImage}}},
		}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "server", Image: filesystemImage, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "node:22-alpine"`}}}}
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		reportDeployment(srv, notAvailable, deploymentCond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "gated-7d9c" is progressing.`))
		Eventually(workloadOf(srv)).Should(Equal("False/PodFailing"))
		Expect(readyOf(srv)()).To(Equal("False/WorkloadUnavailable"))
		want := `The workload (image node:22-alpine) is not available: Pod gated-7d9c-x2x4q: container server is waiting: ImagePullBackOff: Back-off pulling image "node:22-alpine"`
		Expect(conditionMessage(srv, mcpv1alpha1.ConditionReady)).To(Equal(want))
		Eventually(eventsOf(srv)).Should(ContainElement("WorkloadUnavailable: " + want))
		Expect(eventsOf(srv)()).NotTo(containsSubstring("has not reported"), "starting up is not a warning")

		By("saying what the Deployment says when it cannot create pods")
		reportDeployment(srv, notAvailable, deploymentCond(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate",
			`pods "gated-7d9c-" is forbidden: violates PodSecurity "restricted:latest"`))
		Eventually(workloadOf(srv)).Should(Equal("False/ReplicaFailure"))
		Expect(conditionMessage(srv, mcpv1alpha1.ConditionWorkloadAvailable)).To(Equal(`pods "gated-7d9c-" is forbidden: violates PodSecurity "restricted:latest"`))

		By("discovering through the Service once the Deployment is available")
		Expect(k8sClient.Delete(ctx, pod)).To(Succeed())
		reportDeployment(srv, minimumAvailable)
		Eventually(workloadOf(srv)).Should(Equal("True/DeploymentAvailable"))
		Expect(conditionMessage(srv, mcpv1alpha1.ConditionWorkloadAvailable)).To(Equal("Deployment has minimum availability."))
		// No kube-proxy or cluster DNS here: the Service's address does not
		// resolve, and Ready says discovery tried exactly it.
		Eventually(readyOf(srv)).Should(BeElementOf("False/Unreachable", "False/Timeout"))
		Expect(conditionMessage(srv, mcpv1alpha1.ConditionReady)).To(ContainSubstring("http://gated." + ns + ".svc:8080/mcp"))
		Eventually(eventsOf(srv)).Should(ContainElement("WorkloadAvailable: The workload is available: Deployment has minimum availability."))

		By("turning unavailable again when scaled to zero")
		updateServer(srv, func(scaled *mcpv1alpha1.MCPServer) {
			scaled.Spec.Workload.Replicas = ptr.To[int32](0)
		})
		Eventually(workloadOf(srv)).Should(Equal("False/ScaledToZero"))
		Eventually(readyOf(srv)).Should(Equal("False/WorkloadUnavailable"))
		Eventually(eventsOf(srv)).Should(ContainElement("ScaledToZero: The Deployment is scaled to 0 replicas, so no pod runs the server"))
	})

	It("removes the Deployment, Service and NetworkPolicy when the spec switches to a URL, and only those", func() {
		ns := newNamespace()
		mcp := startMCP(testmcp.Options{Transport: testmcp.StreamableHTTP})
		mcp.AddTools("t")
		srv := createWorkload(ns, "moved")
		existing(deploymentOf(srv))
		existing(serviceOf(srv))
		existing(networkPolicyOf(srv))
		Eventually(workloadOf(srv)).ShouldNot(Equal("none"))

		updateServer(srv, func(moved *mcpv1alpha1.MCPServer) {
			moved.Spec.Workload = nil
			moved.Spec.URL = mcp.URL()
		})
		Eventually(gone(deploymentOf(srv))).Should(BeTrue())
		Eventually(gone(serviceOf(srv))).Should(BeTrue())
		Eventually(gone(networkPolicyOf(srv))).Should(BeTrue())
		Eventually(readyOf(srv)).Should(Equal("True/ToolsDiscovered"))
		Expect(meta.FindStatusCondition(fetch(srv).Status.Conditions, mcpv1alpha1.ConditionWorkloadAvailable)).To(BeNil())
		Eventually(eventsOf(srv)).Should(ContainElement("WorkloadRemoved: spec.workload was removed: its Deployment, Service and NetworkPolicy are deleted"))

		By("leaving alone a Service of the same name that is not the MCPServer's")
		foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "moved", Labels: map[string]string{"app.kubernetes.io/managed-by": "mcp-operator"}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		updateServer(srv, func(refreshed *mcpv1alpha1.MCPServer) {
			refreshed.Spec.ToolPrefix = "again"
		})
		Eventually(func() []string { return toolNames(srv) }).Should(Equal([]string{"mcp_again_t"}))
		Expect(existing(serviceOf(srv)).UID).To(Equal(foreign.UID))
	})

	It("does not take over a Deployment of the same name that someone else made", func() {
		ns := newNamespace()
		theirs := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "theirs"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "their/app:1"}}},
				},
			},
		}
		Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
		srv := createWorkload(ns, "taken")
		Eventually(readyOf(srv)).Should(Equal("False/WorkloadConflict"))
		Expect(conditionMessage(srv, mcpv1alpha1.ConditionReady)).To(ContainSubstring("A Deployment named taken exists and does not belong to this MCPServer"))
		d := existing(deploymentOf(srv))
		Expect(d.OwnerReferences).To(BeEmpty())
		Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("their/app:1"))
		_, err := serviceOf(srv)()
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing of the workload is made while its name is taken")
		Expect(gone(networkPolicyOf(srv))()).To(BeTrue(), "nothing of the workload is made while its name is taken")
	})

	It("stalls on a workload the API server refuses as a pod spec", func() {
		srv := createWorkload(newNamespace(), "unmounted", func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Workload.VolumeMounts = []corev1.VolumeMount{{Name: "nowhere", MountPath: "/data"}}
		})
		Eventually(readyOf(srv)).Should(Equal("False/InvalidSpec"))
		Expect(meta.IsStatusConditionTrue(fetch(srv).Status.Conditions, mcpv1alpha1.ConditionStalled)).To(BeTrue())
		Expect(conditionMessage(srv, mcpv1alpha1.ConditionReady)).To(ContainSubstring(`volumeMounts[1].name: Not found: "nowhere"`))
	})

	DescribeTable("refuses workload specs that cannot work at create time",
		func(mutate func(*mcpv1alpha1.MCPServer), message string) {
			srv := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "bad-"}}
			stdioWorkload(srv)
			mutate(srv)
			err := k8sClient.Create(ctx, srv)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(message))
		},
		Entry("a workload and a URL", func(s *mcpv1alpha1.MCPServer) { s.Spec.URL = "http://example.com/mcp" }, "exactly one of url, service and workload must be set"),
		Entry("a workload and a Service", func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Service = &mcpv1alpha1.ServiceReference{Name: "tools", Port: 80}
		}, "exactly one of url, service and workload must be set"),
		Entry("a stdio workload without a command", func(s *mcpv1alpha1.MCPServer) { s.Spec.Workload.Command = nil },
			"command is required for the Stdio transport"),
		Entry("a path for a stdio workload", func(s *mcpv1alpha1.MCPServer) { s.Spec.Workload.Path = "/rpc" },
			"path applies to the StreamableHTTP and SSE transports"),
		Entry("tls for a workload", func(s *mcpv1alpha1.MCPServer) { s.Spec.TLS = &mcpv1alpha1.TLSSpec{InsecureSkipVerify: true} },
			"tls does not apply to a workload"),
		Entry("a client transport for a workload", func(s *mcpv1alpha1.MCPServer) { s.Spec.Transport = mcpv1alpha1.TransportSSE },
			"a workload's transport is spec.workload.transport"),
		Entry("the operator's volume name", func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Workload.Volumes = []corev1.Volume{{Name: "mcp-tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, "the volume names mcp-tmp and mcp-bridge are the operator's own"),
		Entry("a hostPath volume", func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Workload.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}, "volumes may be configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected or secret"),
		Entry("a mount over the operator's /tmp", func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Workload.VolumeMounts = []corev1.VolumeMount{{Name: "x", MountPath: "/tmp/"}}
		}, "/tmp and /mcp-bridge are mounted by the operator"),
		Entry("more than 100 replicas", func(s *mcpv1alpha1.MCPServer) { s.Spec.Workload.Replicas = ptr.To[int32](101) }, "spec.workload.replicas"),
		Entry("a negative port", func(s *mcpv1alpha1.MCPServer) { s.Spec.Workload.Port = -1 }, "spec.workload.port"),
		Entry("root", func(s *mcpv1alpha1.MCPServer) { s.Spec.Workload.RunAsUser = ptr.To[int64](0) }, "spec.workload.runAsUser"),
		Entry("an unknown workload transport", func(s *mcpv1alpha1.MCPServer) { s.Spec.Workload.Transport = "Carrier" }, "spec.workload.transport"),
		Entry("no image", func(s *mcpv1alpha1.MCPServer) { s.Spec.Workload.Image = "" }, "spec.workload.image"),
		Entry("a name that cannot name a Service", func(s *mcpv1alpha1.MCPServer) { s.GenerateName, s.Name = "", "files.v2" },
			"an MCPServer with a workload names its Service"),
	)
})

var _ = Describe("The manager's ClusterRole", func() {
	It("is all a workload needs: applied, read and removed as the generated role allows", func() {
		ns := newNamespace()
		raw, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "role.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var role rbacv1.ClusterRole
		Expect(yaml.Unmarshal(raw, &role)).To(Succeed())
		role.Name = "manager-role-" + ns
		user := "operator-" + ns
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		as, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		// Suspended, so the manager's own reconciler leaves it to this one.
		srv := createWorkload(ns, "least", func(s *mcpv1alpha1.MCPServer) { s.Spec.Suspend = true })
		r := &MCPServerReconciler{Client: as, APIReader: as, BridgeImage: suiteBridgeImage, WorkloadIngress: suiteIngress}

		By("being refused without the role, which shows the requests run as the user")
		_, err = r.applyWorkload(ctx, fetch(srv))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)

		Expect(k8sClient.Create(ctx, &role)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, &role)).To(Succeed()) })
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
		Expect(k8sClient.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, binding)).To(Succeed()) })

		By("creating, then reading and re-applying, with the role")
		withWorkload := fetch(srv)
		var unavailable *workloadError
		// The API server's authorizer sees a new binding within moments.
		Eventually(func() error { return r.reconcileWorkload(ctx, withWorkload) }).Should(BeAssignableToTypeOf(unavailable))
		Expect(r.reconcileWorkload(ctx, withWorkload)).To(BeAssignableToTypeOf(unavailable), "not refused, only not available yet")
		Expect(existing(deploymentOf(srv)).OwnerReferences).To(HaveLen(1))
		existing(serviceOf(srv))
		existing(networkPolicyOf(srv))

		By("writing both kinds' status by update, the one status write the role allows")
		Expect(writeStatus(ctx, as, fetch(srv))).To(Succeed())
		tc := createCollection(ns, "least", mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"least"}}})
		// The suite's manager writes the collection's status too: a
		// conflict is retried, a refusal never passes.
		Eventually(func() error { return writeStatus(ctx, as, fetchTC(tc)) }).Should(Succeed())
		patched := fetch(srv)
		err = as.Status().Patch(ctx, patched, client.MergeFrom(patched.DeepCopy()))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a status patch: %v", err)

		By("removing, with the role")
		without := withWorkload.DeepCopy()
		without.Spec.Workload = nil
		without.Spec.URL = "http://127.0.0.1:1/mcp"
		Expect(r.reconcileWorkload(ctx, without)).To(Succeed())
		Expect(gone(deploymentOf(srv))()).To(BeTrue())
		Expect(gone(serviceOf(srv))()).To(BeTrue())
		Expect(gone(networkPolicyOf(srv))()).To(BeTrue())
	})
})
