package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TransportType names an MCP transport over HTTP.
// +kubebuilder:validation:Enum=Auto;SSE;StreamableHTTP
type TransportType string

const (
	// TransportAuto tries Streamable HTTP first and falls back to SSE when
	// the initialize POST is answered 400, 404 or 405, as the MCP
	// specification's backwards-compatibility section describes.
	TransportAuto TransportType = "Auto"
	// TransportSSE is the 2024-11-05 HTTP+SSE transport.
	TransportSSE TransportType = "SSE"
	// TransportStreamableHTTP is the Streamable HTTP transport (2025-03-26
	// and later).
	TransportStreamableHTTP TransportType = "StreamableHTTP"
)

// MCPServerSpec says where an MCP server is and how to talk to it.
//
// +kubebuilder:validation:XValidation:rule="[has(self.url), has(self.service), has(self.workload)].filter(x, x).size() == 1",message="exactly one of url, service and workload must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.auth) || !has(self.headers) || !self.headers.exists(h, h.name.lowerAscii() == 'authorization')",message="spec.auth sets the Authorization header; spec.headers may not set it too"
// +kubebuilder:validation:XValidation:rule="!has(self.workload) || !has(self.tls)",message="tls does not apply to a workload: the operator reaches it over plain HTTP inside the cluster"
// +kubebuilder:validation:XValidation:rule="!has(self.workload) || !has(self.transport) || self.transport == 'Auto'",message="transport is for url and service; a workload's transport is spec.workload.transport"
type MCPServerSpec struct {
	// url is the server's MCP endpoint, for example
	// https://tools.example.com/mcp or http://10.0.0.5:3001/sse.
	// Only http and https are accepted, 8 to 2048 characters. Exactly one
	// of url, service and workload.
	//
	// Example: url: https://tools.example.com/mcp
	// +optional
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (url(self).getScheme() == 'http' || url(self).getScheme() == 'https') && url(self).getHostname() != ''",message="url must be an absolute http or https URL"
	URL string `json:"url,omitempty"`

	// service points at a Service in this namespace; the endpoint is
	// scheme://name.namespace.svc:port/path. Exactly one of url, service
	// and workload.
	//
	// Example:
	//   service:
	//     name: github-mcp
	//     port: 8080
	//     path: /mcp
	// +optional
	Service *ServiceReference `json:"service,omitempty"`

	// workload runs the server from a container image: the operator keeps
	// a Deployment and a Service named like this MCPServer and reaches the
	// server through the Service, at
	// http://name.namespace.svc:port/path. Exactly one of url, service and
	// workload.
	//
	// Example:
	//   workload:
	//     image: ghcr.io/github/github-mcp-server:v0.27.0
	//     command: ["/server/github-mcp-server", "stdio"]
	//     runAsUser: 65532
	//     env:
	//     - name: GITHUB_PERSONAL_ACCESS_TOKEN
	//       valueFrom:
	//         secretKeyRef: {name: github-token, key: token}
	// +optional
	Workload *WorkloadSpec `json:"workload,omitempty"`

	// transport selects the MCP transport for url and service: Auto
	// (default) detects it, SSE is the 2024-11-05 HTTP+SSE transport,
	// StreamableHTTP the 2025-03-26 one. The detected transport is in
	// status.serverInfo. A workload names its own in
	// spec.workload.transport, and this field must stay Auto.
	//
	// Example: transport: StreamableHTTP
	// +optional
	// +kubebuilder:default=Auto
	Transport TransportType `json:"transport,omitempty"`

	// toolPrefix is the middle part of every exposed tool name,
	// mcp_{toolPrefix}_{tool}: 1 to 32 letters, digits, '_' and '-'.
	// Defaults to the object's name.
	//
	// Example: toolPrefix: github
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]+$`
	ToolPrefix string `json:"toolPrefix,omitempty"`

	// refreshInterval is how often the tool list is read again, as a
	// duration such as 90s or 5m; at least 10s, default 1m. Up to 10%
	// jitter is added so that many servers do not refresh in lockstep.
	// Servers that announce tools.listChanged are also refreshed as soon
	// as they say their tools changed. The default is written as Go writes
	// durations (1m0s), so that a client that reads and writes the object
	// back does not change its spec.
	//
	// Example: refreshInterval: 5m
	// +optional
	// +kubebuilder:default="1m0s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="refreshInterval must be at least 10s"
	RefreshInterval *metav1.Duration `json:"refreshInterval,omitempty"`

	// timeout bounds every MCP request to this server (connect, initialize,
	// each tools/list page, each tools/call), as a duration; 1s to 10m,
	// default 30s.
	//
	// Example: timeout: 10s
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('10m')",message="timeout must be between 1s and 10m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// maxConcurrentCalls bounds the tool calls in flight to this server
	// from each catalog replica; 1 to 10000, default 32. Past it, as many
	// calls again wait (up to the catalog's --catalog-queue-timeout) for a
	// turn, and the rest are answered 429 with Retry-After (REST) or a
	// JSON-RPC error (MCP), so one busy server cannot take the catalog's
	// capacity from the others.
	//
	// Example: maxConcurrentCalls: 64
	// +optional
	// +kubebuilder:default=32
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxConcurrentCalls *int32 `json:"maxConcurrentCalls,omitempty"`

	// headers are sent on every request to the server: auth tokens, tenant
	// ids. Values from Secrets are re-read when the Secret changes. At most
	// 32, names unique.
	//
	// Example:
	//   headers:
	//   - name: Authorization
	//     valueFrom:
	//       secretKeyRef:
	//         name: tools-token
	//         key: authorization
	//   - name: X-Tenant
	//     value: team-a
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Headers []HeaderSpec `json:"headers,omitempty"`

	// auth gets the server an OAuth 2.0 access token, sent as
	// "Authorization: Bearer <token>" on every request alongside
	// spec.headers (which may then not set Authorization): the server's
	// own identity (oauth2ClientCredentials), or the calling agent's
	// (tokenExchange). The catalog never forwards a caller's own token to
	// the server: the MCP authorization spec forbids token passthrough,
	// since the server would then accept tokens minted for another
	// audience and act with more than it was given. Unset: only
	// spec.headers.
	//
	// Example:
	//   auth:
	//     tokenExchange:
	//       tokenURL: https://idp.example.com/oauth/v2/token
	//       clientID: mcp-catalog
	//       clientSecretRef: {name: catalog-oauth, key: client-secret}
	//       audience: https://issues.example.com/mcp
	// +optional
	Auth *UpstreamAuth `json:"auth,omitempty"`

	// tls configures how the server's certificate is verified. Not with
	// workload, which is reached over plain HTTP inside the cluster.
	//
	// Example:
	//   tls:
	//     caSecretRef:
	//       name: tools-ca
	//       key: ca.crt
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// toolFilter keeps or drops tools by their original names before they
	// are published.
	//
	// Example:
	//   toolFilter:
	//     include: ["get_*", "list_*", "search_*"]
	//     exclude: ["delete_*"]
	// +optional
	ToolFilter *ToolFilter `json:"toolFilter,omitempty"`

	// suspend stops refreshing; the last status is kept as it is. A
	// workload's Deployment and Service are left as they are, running
	// (set spec.workload.replicas to 0 to stop it). Default false.
	//
	// Example: suspend: true
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ServiceReference names a Service in the MCPServer's namespace.
type ServiceReference struct {
	// name of the Service: a DNS label, at most 63 characters.
	//
	// Example: name: github-mcp
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// port of the Service, 1 to 65535.
	//
	// Example: port: 8080
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// path of the MCP endpoint, for example /mcp or /sse; default /. At
	// most 1024 characters, starting with /.
	//
	// Example: path: /mcp
	// +optional
	// +kubebuilder:default="/"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path,omitempty"`

	// scheme is http (default) or https.
	//
	// Example: scheme: https
	// +optional
	// +kubebuilder:default=http
	// +kubebuilder:validation:Enum=http;https
	Scheme string `json:"scheme,omitempty"`
}

// HeaderSpec is one HTTP header sent to the server, with its value given
// inline or taken from a Secret.
//
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.valueFrom)",message="exactly one of value and valueFrom must be set"
type HeaderSpec struct {
	// name of the header, for example Authorization; at most 128
	// characters.
	//
	// Example: name: Authorization
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern="^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"
	Name string `json:"name"`

	// value of the header, inline. Use valueFrom for anything secret:
	// inline values are visible to everyone who can read the object. At
	// most 8192 characters.
	//
	// Example: value: team-a
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Value *string `json:"value,omitempty"`

	// valueFrom takes the value from a key of a Secret in this namespace.
	//
	// Example:
	//   valueFrom:
	//     secretKeyRef:
	//       name: tools-token
	//       key: authorization
	// +optional
	ValueFrom *HeaderValueSource `json:"valueFrom,omitempty"`
}

// HeaderValueSource is where a header value comes from.
type HeaderValueSource struct {
	// secretKeyRef names a key of a Secret in this namespace.
	//
	// Example:
	//   secretKeyRef:
	//     name: tools-token
	//     key: authorization
	// +required
	SecretKeyRef KeyReference `json:"secretKeyRef"`
}

// KeyReference names one key of a Secret or ConfigMap in the same namespace.
type KeyReference struct {
	// name of the Secret or ConfigMap, at most 253 characters.
	//
	// Example: name: tools-token  # or tools-ca, for a CA bundle in spec.tls
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key within it, at most 253 characters.
	//
	// Example: key: authorization  # or ca.crt, for a CA bundle in spec.tls
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// TLSSpec configures certificate verification.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.caSecretRef) && has(self.caConfigMapRef))",message="at most one of caSecretRef and caConfigMapRef may be set"
type TLSSpec struct {
	// caSecretRef names a Secret key holding PEM CA certificates to trust
	// instead of the system roots.
	//
	// Example:
	//   caSecretRef:
	//     name: tools-ca
	//     key: ca.crt
	// +optional
	CASecretRef *KeyReference `json:"caSecretRef,omitempty"`

	// caConfigMapRef names a ConfigMap key holding PEM CA certificates to
	// trust instead of the system roots.
	//
	// Example:
	//   caConfigMapRef:
	//     name: tools-ca
	//     key: ca.crt
	// +optional
	CAConfigMapRef *KeyReference `json:"caConfigMapRef,omitempty"`

	// insecureSkipVerify turns certificate verification off. Anyone on the
	// path can then read and change the traffic; a Warning Event says so.
	// Default false.
	//
	// Example: insecureSkipVerify: true
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// UpstreamAuth says where the server's access token comes from: exactly
// one of oauth2ClientCredentials and tokenExchange.
//
// +kubebuilder:validation:XValidation:rule="has(self.oauth2ClientCredentials) != has(self.tokenExchange)",message="exactly one of oauth2ClientCredentials and tokenExchange must be set"
type UpstreamAuth struct {
	// oauth2ClientCredentials gets a token for the server's own identity
	// with the client credentials grant (RFC 6749 section 4.4). Discovery
	// and every tool call use it; it is reused until 30 seconds before it
	// expires, then fetched again in one request however many calls wait.
	//
	// Example:
	//   oauth2ClientCredentials:
	//     tokenURL: https://idp.example.com/oauth/v2/token
	//     clientID: mcp-operator
	//     clientSecretRef: {name: tools-oauth, key: client-secret}
	//     scopes: ["tools.read"]
	// +optional
	OAuth2ClientCredentials *OAuth2Client `json:"oauth2ClientCredentials,omitempty"`

	// tokenExchange exchanges the validated token of the agent making each
	// tool call for a token meant for this server (RFC 8693), so the
	// server sees which user calls it. Callers' tokens are sent only to a
	// tokenURL the operator lists in the manager's --token-exchange-urls;
	// calls to a server with another are answered 502. Exchanged tokens
	// are reused per caller and subject token until 30 seconds before they
	// expire (at most 10000 per replica). Discovery has no caller: it uses
	// the same client's own identity with the client credentials grant,
	// and if the token service refuses that, Ready says so with reason
	// AuthUnavailable. A caller without a token (a catalog run with
	// --catalog-auth=none) is refused.
	//
	// Example:
	//   tokenExchange:
	//     tokenURL: https://idp.example.com/oauth/v2/token
	//     clientID: mcp-catalog
	//     clientSecretRef: {name: catalog-oauth, key: client-secret}
	//     audience: https://issues.example.com/mcp
	// +optional
	TokenExchange *TokenExchange `json:"tokenExchange,omitempty"`
}

// OAuth2Client is a confidential OAuth 2.0 client at a token endpoint, and
// what it asks for.
type OAuth2Client struct {
	// tokenURL is the token endpoint: an absolute https URL (http only
	// for a loopback address), at most 2048 characters. The manager's
	// egress policy applies to it as to the server.
	//
	// Example: tokenURL: https://idp.example.com/oauth/v2/token
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getHostname() != '' && (url(self).getScheme() == 'https' || (url(self).getScheme() == 'http' && (url(self).getHostname() == '127.0.0.1' || url(self).getHostname() == 'localhost' || url(self).getHostname() == '::1')))",message="tokenURL must be an absolute https URL (http only for a loopback address)"
	TokenURL string `json:"tokenURL"`

	// clientID identifies the operator's client at the token endpoint; at
	// most 256 characters.
	//
	// Example: clientID: mcp-operator
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ClientID string `json:"clientID"`

	// clientSecretRef names the Secret key holding the client secret,
	// sent with HTTP Basic authentication (client_secret_basic). It is
	// re-read when the Secret changes.
	//
	// Example: clientSecretRef: {name: tools-oauth, key: client-secret}
	// +required
	ClientSecretRef KeyReference `json:"clientSecretRef"`

	// scopes asked for; at most 32 of at most 256 characters each.
	//
	// Example: scopes: ["issues.read", "issues.write"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	Scopes []string `json:"scopes,omitempty"`

	// audience the token is asked for (the "audience" parameter), usually
	// the server's identifier at the authorization server; at most 2048
	// characters.
	//
	// Example: audience: https://issues.example.com/mcp
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Audience string `json:"audience,omitempty"`

	// resource the token is asked for (RFC 8707 "resource" parameter):
	// the server's canonical URL, for authorization servers that bind
	// tokens to resources; at most 2048 characters.
	//
	// Example: resource: https://issues.example.com/mcp
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Resource string `json:"resource,omitempty"`

	// tls configures how the token endpoint's certificate is verified
	// (default: the system roots).
	//
	// Example:
	//   tls:
	//     caConfigMapRef: {name: idp-ca, key: ca.crt}
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`
}

// TokenExchange is an RFC 8693 token exchange at a security token service.
type TokenExchange struct {
	OAuth2Client `json:",inline"`

	// requestedTokenType is the token type asked for; default
	// urn:ietf:params:oauth:token-type:access_token.
	//
	// Example: requestedTokenType: urn:ietf:params:oauth:token-type:jwt
	// +optional
	// +kubebuilder:default="urn:ietf:params:oauth:token-type:access_token"
	// +kubebuilder:validation:Enum="urn:ietf:params:oauth:token-type:access_token";"urn:ietf:params:oauth:token-type:jwt";"urn:ietf:params:oauth:token-type:id_token"
	RequestedTokenType string `json:"requestedTokenType,omitempty"`
}

// ToolFilter keeps or drops tools by their original names, with glob
// patterns in path.Match syntax (a plain name matches itself). With an
// include list only matching tools are kept; exclude wins over include.
type ToolFilter struct {
	// include keeps only tools matching one of these patterns. Empty keeps
	// every tool. At most 64 patterns of at most 256 characters.
	//
	// Example: include: ["get_*", "list_*", "search_*"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	Include []string `json:"include,omitempty"`

	// exclude drops tools matching one of these patterns. At most 64
	// patterns of at most 256 characters.
	//
	// Example: exclude: ["delete_*", "merge_pull_request"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	Exclude []string `json:"exclude,omitempty"`
}

// MCPServerStatus is what the controller last learned from the server.
type MCPServerStatus struct {
	// observedGeneration is the generation the status was computed for;
	// -1 until the controller first handles the object.
	// +optional
	// +kubebuilder:default=-1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Reconciling, Stalled, ToolsTruncated, ToolWarnings
	// and, for a workload, WorkloadAvailable.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// serverInfo describes the server as it introduced itself.
	// +optional
	ServerInfo *ServerInfo `json:"serverInfo,omitempty"`

	// tools are the tool definitions the server offers, after
	// spec.toolFilter, sorted by exposed name. When Ready is False they are
	// the ones from the last successful discovery.
	// +optional
	// +listType=atomic
	Tools []Tool `json:"tools,omitempty"`

	// toolCount is the number of tools in status.tools.
	// +optional
	// +kubebuilder:default=0
	ToolCount int32 `json:"toolCount"`

	// toolsHash is the SHA-256 of the sorted tool list: it changes exactly
	// when a published tool definition changes.
	// +optional
	ToolsHash string `json:"toolsHash,omitempty"`

	// prompts summarizes the server's prompts, when it offers them (its
	// prompts capability): how many, and a hash that changes when one
	// does. The definitions stay out of status, which they could outgrow:
	// each catalog replica reads them from the server when a client first
	// asks and again when the hash changes (docs/protocol.md).
	// +optional
	Prompts *SurfaceSummary `json:"prompts,omitempty"`
	// resources summarizes the server's resources, when it offers them (its
	// resources capability), as prompts does its prompts.
	// +optional
	Resources *SurfaceSummary `json:"resources,omitempty"`
	// resourceTemplates summarizes the server's resource templates, when it
	// offers resources and lists templates, as prompts does its prompts.
	// +optional
	ResourceTemplates *SurfaceSummary `json:"resourceTemplates,omitempty"`

	// lastSyncTime is when a discovery result was last written. A refresh
	// that finds nothing new does not move it, so that an unchanged server
	// costs no writes to the API server.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// lastChangeTime is when the published tool list last changed.
	// +optional
	LastChangeTime *metav1.Time `json:"lastChangeTime,omitempty"`
}

// ServerInfo is what the server said about itself during initialize.
type ServerInfo struct {
	// name the server gave.
	// +optional
	Name string `json:"name,omitempty"`
	// version the server gave.
	// +optional
	Version string `json:"version,omitempty"`
	// protocolVersion is the MCP revision negotiated, for example
	// 2026-07-28 or 2025-06-18: the newest both sides speak. The next
	// connection starts with it.
	// +optional
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// transport is the transport in use: SSE or StreamableHTTP.
	// +optional
	Transport TransportType `json:"transport,omitempty"`
	// listChanged is true when the operator hears of tool list changes as
	// they happen: the server announced them and they have a stream to
	// arrive on (the listening GET before 2026-07-28, a subscription in
	// 2026-07-28). False means the list is read again every
	// refreshInterval.
	// +optional
	ListChanged bool `json:"listChanged,omitempty"`
	// completions is true when the server completes prompt and resource
	// template arguments (its completions capability).
	// +optional
	Completions bool `json:"completions,omitempty"`
	// resourceSubscriptions is true when the server sends updates of the
	// resources a client subscribes to (its resources.subscribe
	// capability), which the catalog relays to its callers.
	// +optional
	ResourceSubscriptions bool `json:"resourceSubscriptions,omitempty"`
}

// SurfaceSummary counts one of a server's listings besides tools.
type SurfaceSummary struct {
	// count is the number of items listed (a name or URI listed twice
	// counts once).
	// +kubebuilder:validation:Minimum=0
	// +required
	Count int32 `json:"count"`
	// hash is the SHA-256 of the items as the server sent them: it changes
	// when one does.
	// +optional
	Hash string `json:"hash,omitempty"`
	// truncated is true when the server listed more than the operator
	// reads (--max-tools items in --max-tool-pages pages, 16 MiB of
	// items); the first ones are offered.
	// +optional
	Truncated bool `json:"truncated,omitempty"`
}

// Tool is one tool definition as the server sent it, under its exposed name.
type Tool struct {
	// name is the exposed name, mcp_{prefix}_{tool} sanitized to
	// ^[a-zA-Z][a-zA-Z0-9_-]{0,63}$.
	// +required
	Name string `json:"name"`
	// originalName is the tool's name on the server, used to call it.
	// +required
	OriginalName string `json:"originalName"`
	// title is the tool's human-readable title, if it has one.
	// +optional
	Title string `json:"title,omitempty"`
	// description as the server sent it.
	// +optional
	Description string `json:"description,omitempty"`
	// inputSchema is the JSON Schema of the arguments as the server sent
	// it, re-encoded as the API server stores JSON: object keys sorted, no
	// white space, a key given twice kept once (the last);
	// {"properties":{},"type":"object"} when it sent none.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	InputSchema runtime.RawExtension `json:"inputSchema"`
	// outputSchema is the JSON Schema of structured results, if the server
	// sent one, re-encoded as inputSchema is.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	OutputSchema *runtime.RawExtension `json:"outputSchema,omitempty"`
	// annotations are the server's hints about the tool's behaviour.
	// +optional
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
	// icons are the images the server offers for showing the tool to a
	// person (MCP 2025-11-25 and later), each an object with src (an
	// https: or data: URI) and optionally mimeType, sizes and theme, as the
	// server sent them and re-encoded as inputSchema is. At most 8192
	// bytes of JSON: larger, or not a list of objects, they are left out
	// and warnings says so.
	// +optional
	// +listType=atomic
	Icons []runtime.RawExtension `json:"icons,omitempty"`
	// execution says how the tool takes calls (MCP 2025-11-25):
	// taskSupport forbidden (the default), optional or required for
	// task-augmented calls. As the server sent it, re-encoded as
	// inputSchema is; at most 8192 bytes of JSON: larger, or not an
	// object, it is left out and warnings says so.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Execution *runtime.RawExtension `json:"execution,omitempty"`
	// _meta is the server's metadata about the tool for clients (an MCP
	// App's ui.resourceUri, say), as it sent it, re-encoded as inputSchema
	// is. At most 8192 bytes of JSON: larger, or not an object, it is left
	// out and warnings says so.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Meta *runtime.RawExtension `json:"_meta,omitempty"`
	// hash is the SHA-256 of the tool's canonical definition (original
	// name, title, description, schemas, annotations, icons, execution,
	// _meta) as the server sent it, including what status leaves out. A
	// definition without icons, execution or _meta hashes as it did
	// before they were kept.
	// +required
	Hash string `json:"hash"`
	// warnings say what about this definition deserves a person's look:
	// a description cut to the manager's limit, invisible characters in
	// the name or description (text a person reviewing it would not see),
	// icons, execution or _meta left out of status.
	// +optional
	// +listType=atomic
	Warnings []string `json:"warnings,omitempty"`
}

// ToolAnnotations are hints a server gives about a tool. They are hints, not
// guarantees: a server can say anything.
type ToolAnnotations struct {
	// title is a human-readable title for the tool.
	// +optional
	Title string `json:"title,omitempty"`
	// readOnlyHint: the tool does not change its environment.
	// +optional
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// destructiveHint: the tool may destroy data.
	// +optional
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// idempotentHint: calling it again with the same arguments has no
	// further effect.
	// +optional
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// openWorldHint: the tool reaches outside systems.
	// +optional
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// MCPServer points at one MCP server, or runs one; the controller
// publishes its tools in status.
//
// +kubebuilder:object:root=true
// +kubebuilder:validation:XValidation:rule="!has(self.spec.workload) || self.metadata.name.matches('^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$')",message="an MCPServer with a workload names its Service, so its name must be a DNS label: at most 63 lowercase letters, digits and '-', starting with a letter"
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcps,categories=mcp
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Tools",type=integer,JSONPath=`.status.toolCount`
// +kubebuilder:printcolumn:name="Transport",type=string,JSONPath=`.status.serverInfo.transport`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="URL",type=string,priority=1,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Service",type=string,priority=1,JSONPath=`.spec.service.name`
// +kubebuilder:printcolumn:name="Image",type=string,priority=1,JSONPath=`.spec.workload.image`
// +kubebuilder:printcolumn:name="Revision",type=string,priority=1,JSONPath=`.status.serverInfo.protocolVersion`
// +kubebuilder:printcolumn:name="Last-Sync",type=date,priority=1,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type MCPServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says where the server is and how to talk to it.
	// +required
	Spec MCPServerSpec `json:"spec"`

	// status is what the controller last learned from the server.
	// The default makes a new object read as not yet observed (generation 1
	// against -1), so kstatus, Flux and Argo CD see it in progress rather
	// than current before the controller first writes status.
	// +optional
	// +kubebuilder:default={}
	Status MCPServerStatus `json:"status,omitempty"`
}

// MCPServerList is a list of MCPServers.
//
// +kubebuilder:object:root=true
type MCPServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MCPServer `json:"items"`
}
