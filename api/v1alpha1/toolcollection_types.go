package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ToolCollectionSpec selects MCPServers in the collection's namespace and
// shapes their tools into one menu.
type ToolCollectionSpec struct {
	// servers selects the MCPServers whose tools the collection offers.
	//
	// Example:
	//   servers:
	//     selector:
	//       matchLabels:
	//         team: platform
	// +required
	Servers ServerSelection `json:"servers"`

	// tools filters and renames the selected servers' tools.
	//
	// Example:
	//   tools:
	//     exclude: ["mcp_*_delete_*"]
	//     overrides:
	//     - name: mcp_demo_convert_units
	//       rename: convert
	// +optional
	Tools *ToolSelection `json:"tools,omitempty"`

	// prompts filters and renames the selected servers' prompts, which the
	// collection's MCP endpoint offers (prompts/list, prompts/get). Each is
	// exposed as mcp_{prefix}_{prompt}, as tools are, and conflicts are
	// resolved as for tools. Absent, every prompt of the selected servers
	// is offered.
	//
	// Example:
	//   prompts:
	//     exclude: ["mcp_*_debug_*"]
	// +optional
	Prompts *PromptSelection `json:"prompts,omitempty"`

	// resources filters the selected servers' resources and resource
	// templates, which the collection's MCP endpoint offers
	// (resources/list, resources/templates/list, resources/read), by the
	// URI the endpoint offers: the server's URI with the server named in
	// it (docs/protocol.md), or as served with uris AsServed. Only what
	// is offered, or a template's expansion, can be read. Absent, every
	// resource of the selected servers is offered.
	//
	// Example:
	//   resources:
	//     include: ["file://files.tools/*"]
	// +optional
	Resources *ResourceSelection `json:"resources,omitempty"`

	// maxTools caps the number of tools in the menu; tools past it, in name
	// order, are left out and a condition says so. Many function-calling
	// APIs accept at most 128 tools per request. 1 to 10000.
	//
	// Example: maxTools: 128
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxTools *int32 `json:"maxTools,omitempty"`

	// pinning approves each tool's definition by hash, so that a silently
	// changed description or schema (a "rug pull") is held back until a
	// person approves it, for example in a GitOps pull request.
	//
	// Example:
	//   pinning:
	//     mode: Enforce
	//     approved:
	//       mcp_github_get_me:
	//         9f2c4e1ab07d35c6e8f41b2d97a0c3e5f6b8d1a24c7e9f03b5d6a8c1e2f4b7d9
	// +optional
	Pinning *ToolPinning `json:"pinning,omitempty"`

	// exposure says how the collection's MCP endpoint offers its tools: All
	// (the default) lists every tool; Search lists only find_tools, which
	// ranks the tools against what the agent asks for and returns the best
	// matches' full definitions, and call_tool, which calls one of them by
	// name exactly as a direct call would, plus the tools named in
	// alwaysInclude. Search suits collections too large to hand a model
	// whole. The REST menu lists every tool either way, and every tool can
	// still be called directly by name.
	//
	// Example: exposure: Search
	// +optional
	// +kubebuilder:default=All
	Exposure Exposure `json:"exposure,omitempty"`

	// alwaysInclude names tools (exposed names in this collection) that the
	// MCP endpoint lists beside find_tools and call_tool when exposure is
	// Search, for tools an agent needs on every turn. Ignored with exposure
	// All. A name the menu does not offer is reported in the
	// UnmatchedAlwaysInclude condition. At most 32 names of 1 to 64
	// characters.
	//
	// Example: alwaysInclude: ["mcp_github_get_me"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	AlwaysInclude []string `json:"alwaysInclude,omitempty"`

	// policy decides, per tool and per call, which callers may call the
	// collection's tools with which arguments, in CEL over the caller, the
	// tool and its annotations, and the arguments (see docs/policy.md).
	// Absent, every caller RBAC lets through may call every tool.
	//
	// Example:
	//   policy:
	//     rules:
	//     - name: destructive-for-oncall
	//       effect: Deny
	//       match:
	//         annotations: {destructiveHint: true}
	//       expression: '!("oncall" in caller.groups)'
	//       message: destructive tools are for the on-call group
	// +optional
	Policy *ToolPolicy `json:"policy,omitempty"`
}

// Exposure says how a collection's MCP endpoint offers its tools.
// +kubebuilder:validation:Enum=All;Search
type Exposure string

const (
	// ExposureAll lists every tool of the menu on the MCP endpoint.
	ExposureAll Exposure = "All"
	// ExposureSearch lists find_tools and call_tool (and spec.alwaysInclude)
	// on the MCP endpoint: the agent searches for the tools it needs.
	ExposureSearch Exposure = "Search"
)

// PinningMode says what happens to a tool whose definition is not approved.
// +kubebuilder:validation:Enum=Enforce;Warn
type PinningMode string

const (
	// PinningEnforce withholds unapproved tools from the menu and from
	// execution.
	PinningEnforce PinningMode = "Enforce"
	// PinningWarn serves unapproved tools and reports them.
	PinningWarn PinningMode = "Warn"
)

// ToolPinning lists approved tool definitions.
type ToolPinning struct {
	// mode is Enforce (default) or Warn.
	//
	// Example: mode: Warn
	// +optional
	// +kubebuilder:default=Enforce
	Mode PinningMode `json:"mode,omitempty"`

	// approved maps an exposed name in this collection to the hash of its
	// approved definition (status.unapprovedTools and the MCPServer's
	// status.tools[].hash show current hashes). A tool that is missing here
	// or whose hash differs is unapproved. At most 2000 entries.
	//
	// Example:
	//   approved:
	//     mcp_github_get_me:
	//       9f2c4e1ab07d35c6e8f41b2d97a0c3e5f6b8d1a24c7e9f03b5d6a8c1e2f4b7d9
	//     mcp_github_list_issues:
	//       0b7e5d3c1a9f8e6d4c2b0a1f3e5d7c9b8a6f4e2d0c1b3a5f7e9d8c6b4a2f0e1d
	// +optional
	// +kubebuilder:validation:MaxProperties=2000
	Approved map[string]string `json:"approved,omitempty"`
}

// ServerSelection picks MCPServers by labels, by names, or both (the union).
//
// +kubebuilder:validation:XValidation:rule="has(self.selector) || (has(self.names) && size(self.names) > 0)",message="set selector, names, or both"
type ServerSelection struct {
	// selector matches MCPServers in this namespace by label. An empty
	// selector {} matches every MCPServer in the namespace.
	//
	// Example:
	//   selector:
	//     matchLabels:
	//       team: platform
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// names lists MCPServers in this namespace by name. At most 256 names
	// of at most 253 characters.
	//
	// Example: names: ["github", "files"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	Names []string `json:"names,omitempty"`
}

// ToolSelection filters and renames tools by their exposed names.
type ToolSelection struct {
	// include keeps only tools whose exposed name matches one of these glob
	// patterns (path.Match syntax). Empty keeps every tool. At most 128
	// patterns of at most 256 characters.
	//
	// Example: include: ["mcp_github_*", "mcp_files_read_*"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=256
	Include []string `json:"include,omitempty"`

	// exclude drops tools whose exposed name matches one of these glob
	// patterns; exclude wins over include. At most 128 patterns of at most
	// 256 characters.
	//
	// Example: exclude: ["mcp_*_delete_*"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=256
	Exclude []string `json:"exclude,omitempty"`

	// overrides rename tools or replace their descriptions. The first
	// override that matches a tool applies. At most 512.
	//
	// Example:
	//   overrides:
	//   - name: mcp_demo_convert_units
	//     rename: convert
	//     description: Converts length, mass and temperature between units.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=512
	Overrides []ToolOverride `json:"overrides,omitempty"`
}

// PromptSelection filters and renames prompts as ToolSelection does tools.
type PromptSelection struct {
	// include keeps only prompts whose exposed name matches one of these
	// glob patterns (path.Match syntax). Empty keeps every prompt. At most
	// 128 patterns of at most 256 characters.
	//
	// Example: include: ["mcp_github_*"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=256
	Include []string `json:"include,omitempty"`

	// exclude drops prompts whose exposed name matches one of these glob
	// patterns; exclude wins over include. At most 128 patterns of at most
	// 256 characters.
	//
	// Example: exclude: ["mcp_*_debug_*"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=256
	Exclude []string `json:"exclude,omitempty"`

	// overrides rename prompts or replace their descriptions, each naming
	// a prompt by its exposed name as a tool override names a tool. The
	// first override that matches a prompt applies. At most 512.
	//
	// Example:
	//   overrides:
	//   - name: mcp_github_summarize_pr
	//     rename: review
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=512
	Overrides []ToolOverride `json:"overrides,omitempty"`
}

// ResourceURIs is how a collection's MCP endpoint names resources.
// +kubebuilder:validation:Enum=Exposed;AsServed
type ResourceURIs string

const (
	// ResourceURIsExposed names each resource by its URI with its server
	// named in it (docs/protocol.md): the resources of many servers never
	// collide.
	ResourceURIsExposed ResourceURIs = "Exposed"
	// ResourceURIsAsServed names each resource as its server does.
	ResourceURIsAsServed ResourceURIs = "AsServed"
)

// ResourceSelection filters resources and resource templates by exposed URI.
type ResourceSelection struct {
	// uris is how the MCP endpoint names resources and templates: Exposed
	// (the default) rewrites each URI to name its server, so that the
	// resources of many servers never collide; AsServed offers them as
	// their servers do, for clients that expect a server's own URIs. With
	// AsServed a URI listed by more than one selected server is read from
	// the first (in name order), which the REST listing reports as a
	// conflict, and a URI no server lists is read from the first server
	// with a template it matches.
	//
	// Example: uris: AsServed
	// +optional
	// +kubebuilder:default=Exposed
	URIs ResourceURIs `json:"uris,omitempty"`

	// include keeps only resources and templates whose offered URI (or
	// URI template) matches one of these patterns, in which '*' matches any
	// run of characters ('/' included) and every other character itself.
	// Empty keeps every one. At most 128 patterns of at most 1024
	// characters.
	//
	// Example: include: ["ui://*", "file://files.tools/*"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=1024
	Include []string `json:"include,omitempty"`

	// exclude drops resources and templates whose offered URI matches one
	// of these patterns ('*' as in include); exclude wins over include. At
	// most 128 patterns of at most 1024 characters.
	//
	// Example: exclude: ["file://files.tools//etc/*"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=1024
	Exclude []string `json:"exclude,omitempty"`
}

// ToolOverride renames one tool or replaces its description.
//
// +kubebuilder:validation:XValidation:rule="has(self.rename) || has(self.description)",message="an override sets rename, description, or both"
type ToolOverride struct {
	// name is the exposed name as the MCPServer publishes it, 1 to 64
	// characters.
	//
	// Example: name: mcp_demo_convert_units
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`

	// server limits the override to the tool of this MCPServer, to resolve
	// a conflict between servers that publish the same name. Empty applies
	// to the tool of that name on every selected server. At most 253
	// characters.
	//
	// Example: server: demo
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Server string `json:"server,omitempty"`

	// rename is the final exposed name, used as given (not prefixed) and
	// checked for conflicts like any other name: 1 to 64 letters, digits,
	// '_' and '-'.
	//
	// Example: rename: convert
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]+$`
	Rename string `json:"rename,omitempty"`

	// description replaces the tool's description. At most 8192 characters.
	//
	// Example: description: Converts length, mass and temperature between units.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Description *string `json:"description,omitempty"`
}

// ToolCollectionStatus is the resolved menu.
type ToolCollectionStatus struct {
	// observedGeneration is the generation the status was computed for;
	// -1 until the controller first handles the object.
	// +optional
	// +kubebuilder:default=-1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Degraded, Conflicts, PolicyInvalid, Reconciling
	// and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// servers are the selected MCPServers, sorted by name.
	// +optional
	// +listType=atomic
	Servers []CollectionServer `json:"servers,omitempty"`

	// tools are the menu's tools, sorted by name. Their definitions stay in
	// the MCPServers' status.
	// +optional
	// +listType=atomic
	Tools []CollectionTool `json:"tools,omitempty"`

	// conflicts lists every exposed name offered by more than one server.
	// +optional
	// +listType=atomic
	Conflicts []ToolConflict `json:"conflicts,omitempty"`

	// serverCount is the number of selected servers.
	// +optional
	// +kubebuilder:default=0
	ServerCount int32 `json:"serverCount"`

	// toolCount is the number of tools in the menu.
	// +optional
	// +kubebuilder:default=0
	ToolCount int32 `json:"toolCount"`

	// conflictCount is the number of entries in conflicts.
	// +optional
	// +kubebuilder:default=0
	ConflictCount int32 `json:"conflictCount"`

	// unapprovedTools lists the tools whose definition is not approved by
	// spec.pinning: withheld with mode Enforce, served with mode Warn.
	// +optional
	// +listType=atomic
	UnapprovedTools []UnapprovedTool `json:"unapprovedTools,omitempty"`

	// menuHash changes exactly when what an agent would see changes: names,
	// descriptions, schemas.
	// +optional
	MenuHash string `json:"menuHash,omitempty"`

	// exposure is how the MCP endpoint offers the menu for the observed
	// generation: All (every tool) or Search (find_tools and call_tool, and
	// spec.alwaysInclude).
	// +optional
	Exposure Exposure `json:"exposure,omitempty"`

	// appliedPolicy is the last spec.policy that compiled, with its
	// generation: what the catalog enforces while spec.policy is invalid
	// (condition PolicyInvalid). Absent when spec.policy is absent; while
	// a policy that never compiled is absent too, and the catalog then
	// denies every call of the collection.
	// +optional
	AppliedPolicy *AppliedPolicy `json:"appliedPolicy,omitempty"`
}

// CollectionServer is one selected MCPServer.
type CollectionServer struct {
	// name of the MCPServer.
	Name string `json:"name"`
	// ready is whether the MCPServer is Ready; the tools of one that is not
	// are left out until it recovers.
	Ready bool `json:"ready"`
	// toolCount is the number of its tools in the menu.
	ToolCount int32 `json:"toolCount"`
}

// CollectionTool is one tool of the menu.
type CollectionTool struct {
	// name is the exposed name in this collection.
	Name string `json:"name"`
	// server is the MCPServer that serves it.
	Server string `json:"server"`
	// originalName is the tool's name on that server.
	OriginalName string `json:"originalName"`
}

// UnapprovedTool is a tool whose current definition is not the approved one.
type UnapprovedTool struct {
	// name is the exposed name in this collection.
	Name string `json:"name"`
	// server serves it.
	Server string `json:"server"`
	// approvedHash is the hash spec.pinning approves; empty for a new tool.
	// +optional
	ApprovedHash string `json:"approvedHash,omitempty"`
	// currentHash is the hash of the definition the server sends now.
	CurrentHash string `json:"currentHash"`
}

// ToolConflict is an exposed name offered by more than one server.
type ToolConflict struct {
	// name is the contested exposed name.
	Name string `json:"name"`
	// servers offering it, sorted; the first one wins.
	// +listType=atomic
	Servers []string `json:"servers"`
}

// ToolCollection is the menu one agent, or one team, is given.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tc,categories=mcp
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Servers",type=integer,JSONPath=`.status.serverCount`
// +kubebuilder:printcolumn:name="Tools",type=integer,JSONPath=`.status.toolCount`
// +kubebuilder:printcolumn:name="Conflicts",type=integer,JSONPath=`.status.conflictCount`
// +kubebuilder:printcolumn:name="Exposure",type=string,JSONPath=`.status.exposure`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type ToolCollection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec selects servers and shapes their tools.
	// +required
	Spec ToolCollectionSpec `json:"spec"`

	// status is the resolved menu.
	// The default makes a new object read as not yet observed (generation 1
	// against -1), so kstatus, Flux and Argo CD see it in progress rather
	// than current before the controller first writes status.
	// +optional
	// +kubebuilder:default={}
	Status ToolCollectionStatus `json:"status,omitempty"`
}

// ToolCollectionList is a list of ToolCollections.
//
// +kubebuilder:object:root=true
type ToolCollectionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ToolCollection `json:"items"`
}
