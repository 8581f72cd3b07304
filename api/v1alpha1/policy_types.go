package v1alpha1

// ToolPolicy decides, inside one collection, which caller may call which
// tool with which arguments. RBAC decides first who may use the
// collection at all; the policy then decides per tool and per call.
//
// The rules are read in order and the first one that applies to a call
// decides it: a rule applies when its match matches the tool and its
// expression, if any, is true. When no rule applies, default decides.
// A rule whose expression fails to evaluate (a missing argument, the
// cost limit) counts against the caller: a Deny rule applies, an Allow
// rule does not.
//
// A caller is listed only the tools it could call: rules whose expression
// reads arguments are decided per call, the rest already when the menu
// is listed.
type ToolPolicy struct {
	// mode is Enforce (the default), which refuses what the policy denies
	// and lists each caller only the tools it may call, or Audit, which
	// decides every call, records the decision (audit line, metric, span)
	// and refuses nothing, for rolling a policy out safely.
	//
	// Example: mode: Audit
	// +optional
	// +kubebuilder:default=Enforce
	Mode PolicyMode `json:"mode,omitempty"`

	// default decides a call no rule applies to: Allow (the default, as a
	// collection without a policy allows every call RBAC lets through) or
	// Deny.
	//
	// Example: default: Deny
	// +optional
	// +kubebuilder:default=Allow
	Default PolicyEffect `json:"default,omitempty"`

	// rules, in order; the first that applies to a call decides it. At
	// most 64, with unique names. (The bounds on a rule's fields keep a
	// policy under 480 KB, so that it fits in the object twice: once in
	// spec, once in status.appliedPolicy.)
	//
	// Example:
	//   rules:
	//   - name: read-only-for-everyone
	//     effect: Allow
	//     match:
	//       annotations: {readOnlyHint: true}
	//   - name: destructive-for-oncall
	//     effect: Allow
	//     match:
	//       annotations: {destructiveHint: true}
	//     expression: '"oncall" in caller.groups'
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Rules []PolicyRule `json:"rules,omitempty"`
}

// PolicyMode says whether a policy's denials are enforced.
// +kubebuilder:validation:Enum=Enforce;Audit
type PolicyMode string

const (
	// PolicyEnforce refuses denied calls and lists each caller only the
	// tools it may call.
	PolicyEnforce PolicyMode = "Enforce"
	// PolicyAudit records each decision and refuses nothing.
	PolicyAudit PolicyMode = "Audit"
)

// PolicyEffect is what a rule, or a policy's default, decides.
// +kubebuilder:validation:Enum=Allow;Deny
type PolicyEffect string

const (
	// PolicyAllow lets the call through.
	PolicyAllow PolicyEffect = "Allow"
	// PolicyDeny refuses it.
	PolicyDeny PolicyEffect = "Deny"
)

// PolicyRule is one rule of a ToolPolicy.
type PolicyRule struct {
	// name identifies the rule in the audit trail, metrics, traces and
	// denials: 1 to 63 lowercase letters, digits and '-'.
	//
	// Example: name: destructive-for-oncall
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// effect is what the rule decides when it applies: Allow or Deny.
	//
	// Example: effect: Deny
	// +required
	Effect PolicyEffect `json:"effect"`

	// match narrows the rule to some tools; absent, it matches every tool.
	//
	// Example:
	//   match:
	//     tools: ["mcp_github_delete_*"]
	// +optional
	Match *PolicyMatch `json:"match,omitempty"`

	// expression is a CEL expression that must be true for the rule to
	// apply; absent, the match alone decides. It reads:
	//   - caller: name, uid, groups (list of strings), extra (map of
	//     string to list of strings) and issuer (the OpenID issuer that
	//     vouched for the caller; empty for Kubernetes tokens);
	//   - tool: name (exposed in this collection), originalName (on its
	//     server), server (the MCPServer's name), title, and annotations
	//     (readOnlyHint, destructiveHint, idempotentHint, openWorldHint,
	//     booleans with MCP's defaults where the server gave none);
	//   - arguments: the call's arguments, a map from string to JSON
	//     values.
	// It is compiled and type-checked when the controller reconciles the
	// collection; one that does not compile, does not yield a bool, or
	// whose estimated worst-case cost exceeds 10,000,000 CEL cost units
	// (Kubernetes' limit on a CRD validation rule), over arguments of up to
	// 1 MiB, makes the policy invalid (condition PolicyInvalid). Arguments
	// over 1 MiB are not read: a rule reading them fails to evaluate. At
	// most 1024 characters.
	//
	// Example: expression: 'arguments.owner == caller.name'
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Expression string `json:"expression,omitempty"`

	// message is what a caller denied by this rule is told, after the
	// rule's name. At most 256 characters.
	//
	// Example: message: destructive tools are for the on-call group
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Message string `json:"message,omitempty"`
}

// PolicyMatch picks the tools a rule is about. Every field given must
// match; a list matches when any of its items does.
type PolicyMatch struct {
	// tools are glob patterns (path.Match syntax) over the tool's exposed
	// name in this collection. At most 16 of at most 128 characters.
	//
	// Example: tools: ["mcp_github_delete_*", "mcp_github_merge_*"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	Tools []string `json:"tools,omitempty"`

	// servers are names of MCPServers whose tools match. At most 16 of at
	// most 253 characters.
	//
	// Example: servers: ["github"]
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	Servers []string `json:"servers,omitempty"`

	// annotations match the tool's MCP annotations. A hint the server did
	// not give takes MCP's default: readOnlyHint false, destructiveHint
	// true (false for a read-only tool), idempotentHint false,
	// openWorldHint true. Servers can say anything here: match on them to
	// sort tools, not to trust them.
	//
	// Example:
	//   annotations:
	//     destructiveHint: true
	// +optional
	Annotations *AnnotationMatch `json:"annotations,omitempty"`
}

// AnnotationMatch is the annotation values a rule matches; a field left
// out matches any value.
type AnnotationMatch struct {
	// readOnlyHint: the tool does not change its environment.
	//
	// Example: readOnlyHint: true
	// +optional
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// destructiveHint: the tool may destroy data.
	//
	// Example: destructiveHint: true
	// +optional
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// idempotentHint: calling it again with the same arguments has no
	// further effect.
	//
	// Example: idempotentHint: false
	// +optional
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// openWorldHint: the tool reaches outside systems.
	//
	// Example: openWorldHint: false
	// +optional
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// AppliedPolicy is the policy the catalog enforces while spec.policy is
// invalid: the last one that compiled.
type AppliedPolicy struct {
	// generation is the collection's generation whose spec.policy this is.
	Generation int64 `json:"generation"`
	// policy is that generation's spec.policy.
	Policy ToolPolicy `json:"policy"`
}
