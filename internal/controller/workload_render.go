package controller

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/cachepolicy"
	"github.com/toolmesh/mcp-operator/internal/reach"
)

// What the operator puts into a workload's pod besides the spec.
const (
	// BridgeInImage is where the operator's image holds the static bridge
	// binary (see the Dockerfile).
	BridgeInImage = "/usr/local/bin/mcp-bridge"
	// bridgeDir is the emptyDir the init container installs the bridge
	// into, and bridgeBinary the bridge there.
	bridgeDir    = "/mcp-bridge"
	bridgeBinary = bridgeDir + "/mcp-bridge"
	// serverContainer runs the server (behind the bridge, for Stdio).
	serverContainer = "server"
	// bridgeContainer is the init container that installs the bridge.
	bridgeContainer = "mcp-bridge"
	portName        = "mcp"
	// Volume names the API reserves (spec.workload.volumes may not use them).
	tmpVolume    = "mcp-tmp"
	bridgeVolume = "mcp-bridge"
)

// Labels of a workload's objects and pods.
const (
	labelName     = "app.kubernetes.io/name"
	labelInstance = "app.kubernetes.io/instance"
	// nameValue says what the pods are; the instance is the MCPServer.
	nameValue = "mcp-server"
)

// workloadSelector picks the pods of one MCPServer's workload. It is the
// Deployment's selector, which cannot change once created.
func workloadSelector(srv *mcpv1alpha1.MCPServer) map[string]string {
	return map[string]string{labelName: nameValue, labelInstance: srv.Name}
}

// workloadLabels are the labels of the Deployment, the Service and the
// pods; the managed-by label puts them in the manager's cache.
func workloadLabels(srv *mcpv1alpha1.MCPServer) map[string]string {
	l := workloadSelector(srv)
	l[cachepolicy.ManagedByLabel] = cachepolicy.ManagedBy
	return l
}

// workloadMeta names an object of srv's workload: srv's name and
// namespace, its labels, and srv as its controller, so that deleting srv
// deletes it.
func workloadMeta(srv *mcpv1alpha1.MCPServer) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: srv.Name, Namespace: srv.Namespace, Labels: workloadLabels(srv),
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: mcpv1alpha1.GroupVersion.String(), Kind: "MCPServer", Name: srv.Name, UID: srv.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}
}

// renderService is the Service a workload is reached through. It keeps
// each client on one pod: an MCP session (and an SSE stream with the POSTs
// that go with it) lives in one server process.
func renderService(srv *mcpv1alpha1.MCPServer) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: workloadMeta(srv),
		Spec: corev1.ServiceSpec{
			// Owned, so that nobody turns it into a LoadBalancer unnoticed.
			Type:            corev1.ServiceTypeClusterIP,
			Selector:        workloadSelector(srv),
			SessionAffinity: corev1.ServiceAffinityClientIP,
			Ports: []corev1.ServicePort{{
				Name: portName, Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("http"),
				Port: reach.WorkloadPort(srv.Spec.Workload), TargetPort: intstr.FromString(portName),
			}},
		},
	}
}

// renderNetworkPolicy admits to srv's pods, on the server's port, only the
// pods from names: the workload holds whatever credentials its spec gives
// it (a token in its environment), and a client that reached it directly
// would skip the catalog's authorization and audit trail. Every other port
// and peer is refused once a policy selects the pods; kubelet probes come
// from the node, which NetworkPolicy implementations admit.
func renderNetworkPolicy(srv *mcpv1alpha1.MCPServer, from WorkloadIngress) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: workloadMeta(srv),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: workloadSelector(srv)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				// One peer with both selectors: pods with these labels in
				// that namespace, not either.
				From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: from.Namespace}},
					PodSelector:       &metav1.LabelSelector{MatchLabels: from.PodLabels},
				}},
				Ports: []networkingv1.NetworkPolicyPort{{
					Protocol: ptr.To(corev1.ProtocolTCP),
					Port:     ptr.To(intstr.FromInt32(reach.WorkloadPort(srv.Spec.Workload))),
				}},
			}},
		},
	}
}

// renderDeployment is the Deployment that runs a workload, with the pod
// hardened as the API documents. bridgeImage holds the bridge at
// BridgeInImage (the operator's own image).
func renderDeployment(srv *mcpv1alpha1.MCPServer, bridgeImage string) *appsv1.Deployment {
	w := srv.Spec.Workload
	pod := corev1.PodSpec{
		ServiceAccountName: w.ServiceAccountName,
		// A token only for a server that was given an account to use.
		AutomountServiceAccountToken: ptr.To(w.ServiceAccountName != ""),
		// No variables describing the namespace's other Services: they
		// tell the server about its neighbours and can clash with its own
		// settings (a Service named "port" sets PORT_...).
		EnableServiceLinks: ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      w.RunAsUser,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		ImagePullSecrets: w.ImagePullSecrets,
		NodeSelector:     w.NodeSelector,
		Tolerations:      w.Tolerations,
		Affinity:         w.Affinity,
		Containers:       []corev1.Container{serverContainerOf(w)},
		Volumes: append([]corev1.Volume{{Name: tmpVolume,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, w.Volumes...),
	}
	if reach.IsStdio(w) {
		pod.InitContainers = []corev1.Container{bridgeInstaller(bridgeImage)}
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: bridgeVolume,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: workloadMeta(srv),
		Spec: appsv1.DeploymentSpec{
			// Unset leaves the count to whoever scales the Deployment.
			Replicas: w.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: workloadSelector(srv)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: workloadLabels(srv),
					// kubectl logs and exec pick the server, not the installer.
					Annotations: map[string]string{"kubectl.kubernetes.io/default-container": serverContainer},
				},
				Spec: pod,
			},
		},
	}
}

// serverContainerOf runs the server: for Stdio, behind the bridge the
// init container installed; for the HTTP transports, as the image and the
// spec say.
func serverContainerOf(w *mcpv1alpha1.WorkloadSpec) corev1.Container {
	port := reach.WorkloadPort(w)
	c := corev1.Container{
		Name:            serverContainer,
		Image:           w.Image,
		Command:         w.Command,
		Args:            w.Args,
		Env:             w.Env,
		EnvFrom:         w.EnvFrom,
		Ports:           []corev1.ContainerPort{{Name: portName, ContainerPort: port, Protocol: corev1.ProtocolTCP}},
		SecurityContext: hardened(),
		VolumeMounts: append([]corev1.VolumeMount{{Name: tmpVolume, MountPath: "/tmp"}},
			w.VolumeMounts...),
		// A TCP check is all that is known of a server speaking HTTP
		// itself: ready once it listens. No liveness probe: a server that
		// stops listening usually exits, and restarting one that is merely
		// slow would cut its sessions.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(portName)}},
			PeriodSeconds: 5,
		},
	}
	if w.Resources != nil {
		c.Resources = *w.Resources
	}
	if reach.IsStdio(w) {
		c.Command = []string{bridgeBinary}
		c.Args = append(append([]string{"--listen", ":" + strconv.Itoa(int(port)), "--"}, w.Command...), w.Args...)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: bridgeVolume, MountPath: bridgeDir, ReadOnly: true})
		// Ready once the server answered the bridge's initialize; alive
		// while the bridge runs (it restarts the server itself).
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString(portName)}},
			PeriodSeconds: 5,
		}
		c.LivenessProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString(portName)}},
			PeriodSeconds:    10,
			TimeoutSeconds:   5,
			FailureThreshold: 3,
		}
	}
	return c
}

// bridgeInstaller copies the static bridge from the operator's image into
// the pod's bridge volume. The image is distroless (no shell, no cp), so
// the bridge copies itself.
func bridgeInstaller(image string) corev1.Container {
	return corev1.Container{
		Name:            bridgeContainer,
		Image:           image,
		Command:         []string{BridgeInImage, "--install", bridgeBinary},
		SecurityContext: hardened(),
		VolumeMounts:    []corev1.VolumeMount{{Name: bridgeVolume, MountPath: bridgeDir}},
		// Set, so that namespaces whose quotas demand them admit the pod.
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
	}
}

// hardened is the container security context of every workload
// container. privileged is set to false, not left out, so that the
// operator owns it and puts it back if someone sets it.
func hardened() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}
