package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// WorkloadTransport names how the server in a workload's image speaks MCP.
// +kubebuilder:validation:Enum=Stdio;StreamableHTTP;SSE
type WorkloadTransport string

const (
	// WorkloadStdio is a server that speaks MCP on its stdin and stdout.
	// The operator runs it behind mcp-bridge, which serves it over
	// Streamable HTTP at /mcp.
	WorkloadStdio WorkloadTransport = "Stdio"
	// WorkloadStreamableHTTP is a server that serves Streamable HTTP itself.
	WorkloadStreamableHTTP WorkloadTransport = "StreamableHTTP"
	// WorkloadSSE is a server that serves the 2024-11-05 HTTP+SSE
	// transport itself.
	WorkloadSSE WorkloadTransport = "SSE"
)

// WorkloadSpec runs an MCP server from a container image, as a Deployment
// and a Service named like the MCPServer. The pod is hardened: it runs as a
// non-root user, without privilege escalation, with every capability
// dropped, the RuntimeDefault seccomp profile, a read-only root filesystem
// (with a writable emptyDir at /tmp) and no service account token unless
// serviceAccountName is set: the restricted Pod Security profile. Only the
// fields below shape it; none of them loosens that hardening.
//
// +kubebuilder:validation:XValidation:rule="(has(self.transport) && self.transport != 'Stdio') || (has(self.command) && size(self.command) > 0)",message="command is required for the Stdio transport: the bridge starts it as the server's process"
// +kubebuilder:validation:XValidation:rule="!has(self.path) || (has(self.transport) && self.transport != 'Stdio')",message="path applies to the StreamableHTTP and SSE transports; the bridge serves a Stdio server at /mcp"
type WorkloadSpec struct {
	// image is the container image that holds the server, for example
	// node:22-alpine or ghcr.io/github/github-mcp-server:v1.0.0. Pin a tag
	// or a digest: the Deployment rolls out whenever it changes. At most
	// 1024 characters.
	//
	// Example: image: ghcr.io/github/github-mcp-server:v0.27.0
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image"`

	// command is the server's own command line, without its arguments,
	// for example ["npx", "-y", "@modelcontextprotocol/server-filesystem"].
	// Required for Stdio, where the bridge starts it as a child process;
	// for the HTTP transports it replaces the image's entrypoint, and
	// without it the image's entrypoint runs. At most 32 items of at most
	// 4096 characters. $(VAR) refers to a variable of env, as in any
	// container.
	//
	// Example:
	//   command:
	//   - npx
	//   - -y
	//   - "@modelcontextprotocol/server-filesystem@2026.8.31"
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=4096
	Command []string `json:"command,omitempty"`

	// args follow command, for example ["/data"]. Without command, for the
	// HTTP transports, they replace the image's CMD. At most 128 items of at
	// most 4096 characters.
	//
	// Example: args: ["/data"]
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=4096
	Args []string `json:"args,omitempty"`

	// env sets environment variables of the server's container (and, for
	// Stdio, of the server's process, which inherits the bridge's). Values
	// can come from Secrets and ConfigMaps with valueFrom; a changed Secret
	// reaches the server when its pods restart. At most 128, names unique.
	//
	// Example:
	//   env:
	//   - name: HOME
	//     value: /tmp
	//   - name: GITHUB_PERSONAL_ACCESS_TOKEN
	//     valueFrom:
	//       secretKeyRef:
	//         name: github-token
	//         key: token
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	Env []corev1.EnvVar `json:"env,omitempty"`

	// envFrom sets environment variables from every key of Secrets and
	// ConfigMaps. At most 16.
	//
	// Example:
	//   envFrom:
	//   - configMapRef:
	//       name: github-mcp-settings
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// transport is how the server in the image speaks MCP: Stdio (default)
	// on stdin and stdout, served over HTTP by the bridge; StreamableHTTP
	// or SSE when it serves HTTP itself.
	//
	// Example: transport: StreamableHTTP
	// +optional
	// +kubebuilder:default=Stdio
	Transport WorkloadTransport `json:"transport,omitempty"`

	// port is the port the server listens on, for the HTTP transports, or
	// the bridge listens on, for Stdio; the Service exposes the same port.
	// 1 to 65535, default 8080.
	//
	// Example: port: 3001
	// +optional
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// path is the server's MCP endpoint, for the HTTP transports: default
	// /mcp for StreamableHTTP and /sse for SSE. Not with Stdio, whose
	// bridge serves /mcp. At most 1024 characters, starting with /.
	//
	// Example: path: /mcp
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path,omitempty"`

	// replicas is how many pods run the server, 0 to 100. When set, the
	// operator keeps the Deployment at that count; when unset, the
	// Deployment starts with 1 and the count belongs to whoever scales it
	// (a HorizontalPodAutoscaler, kubectl scale). 0 stops the server:
	// WorkloadAvailable and Ready turn False. The Service keeps each
	// client on one pod (session affinity by client IP), because MCP
	// sessions live in one server process.
	//
	// Example: replicas: 2
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Replicas *int32 `json:"replicas,omitempty"`

	// resources are the server container's requests and limits. Default:
	// none.
	//
	// Example:
	//   resources:
	//     requests:
	//       cpu: 50m
	//       memory: 128Mi
	//     limits:
	//       memory: 512Mi
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// serviceAccountName runs the pods as this ServiceAccount of the
	// namespace, with its token mounted: for servers that call the
	// Kubernetes API. Without it the pods run as the namespace's default
	// ServiceAccount with no token mounted. A DNS subdomain name, at most
	// 253 characters.
	//
	// Example: serviceAccountName: kubernetes-mcp
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// runAsUser is the user id the containers run as, 1 to 2147483647. Unset,
	// they run as the image's own user, which must then be given as a
	// number and not be root, or the kubelet refuses to start them: many
	// images (node, python, distroless/base) run as root by default and
	// need this.
	//
	// Example: runAsUser: 1000
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	RunAsUser *int64 `json:"runAsUser,omitempty"`

	// volumes are added to the pod, for volumeMounts to mount. Only the
	// types the restricted Pod Security profile allows: configMap, csi,
	// downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected
	// and secret (no hostPath). The names mcp-tmp and mcp-bridge are the
	// operator's own. At most 32, names unique.
	//
	// Example:
	//   volumes:
	//   - name: data
	//     emptyDir: {}
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(v, v.name != 'mcp-tmp' && v.name != 'mcp-bridge')",message="the volume names mcp-tmp and mcp-bridge are the operator's own"
	// +kubebuilder:validation:XValidation:rule="self.all(v, has(v.configMap) || has(v.csi) || has(v.downwardAPI) || has(v.emptyDir) || has(v.ephemeral) || has(v.persistentVolumeClaim) || has(v.projected) || has(v.secret))",message="volumes may be configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected or secret, as the restricted Pod Security profile allows"
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// volumeMounts mount volumes into the server's container. /tmp and
	// /mcp-bridge are the operator's own (paths below /tmp are fine). At
	// most 32, mount paths unique.
	//
	// Example:
	//   volumeMounts:
	//   - name: data
	//     mountPath: /data
	// +optional
	// +listType=map
	// +listMapKey=mountPath
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(m, !(m.mountPath in ['/tmp', '/tmp/', '/mcp-bridge', '/mcp-bridge/']))",message="/tmp and /mcp-bridge are mounted by the operator"
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// nodeSelector limits the nodes the pods run on. At most 32 labels.
	//
	// Example:
	//   nodeSelector:
	//     kubernetes.io/arch: arm64
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations let the pods run on tainted nodes. At most 32.
	//
	// Example:
	//   tolerations:
	//   - key: dedicated
	//     operator: Equal
	//     value: mcp
	//     effect: NoSchedule
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// affinity places the pods relative to nodes and other pods.
	//
	// Example:
	//   affinity:
	//     podAntiAffinity:
	//       preferredDuringSchedulingIgnoredDuringExecution:
	//       - weight: 100
	//         podAffinityTerm:
	//           topologyKey: kubernetes.io/hostname
	//           labelSelector:
	//             matchLabels:
	//               app.kubernetes.io/instance: github
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// imagePullSecrets name Secrets of the namespace that hold credentials
	// for the image's registry (and for the bridge's image, for Stdio). At
	// most 8.
	//
	// Example:
	//   imagePullSecrets:
	//   - name: ghcr-pull
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}
