package v1alpha1

// Condition types, as kstatus, Flux and Argo CD read them.
const (
	// ConditionReady is True when the object's current generation is fully
	// served and False with a specific reason when it is not. While a new
	// generation is worked on (Reconciling=True) it keeps what it said for
	// the generation in its observedGeneration, so the last tools stay
	// served.
	ConditionReady = "Ready"
	// ConditionReconciling is True while the controller works on a generation
	// it has not finished. It is absent otherwise, never False. An
	// MCPServer's is written once the generation's work has taken a second,
	// or at once with a workload that is not up yet, a rollout or a
	// withdrawn tool; a quicker generation's one write is its finished
	// status (observedGeneration says it is in progress meanwhile). An
	// attempt that failed is finished: Stalled says so.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the controller cannot finish the
	// generation as things stand: the spec cannot work as written
	// (InvalidSpec; not retried until it changes), the last attempt failed
	// (an unreachable server, a missing Secret; retried with backoff and
	// when the objects it reads change), or a rollout missed its progress
	// deadline. It is not terminal: the next attempt that succeeds removes
	// it. kstatus, Flux and the cli-utils appliers read it as Failed. It is
	// absent otherwise.
	ConditionStalled = "Stalled"
	// ConditionToolsTruncated is True when not every tool the server offers
	// is in status: a page or tool cap, or the status size budget, was hit.
	ConditionToolsTruncated = "ToolsTruncated"
	// ConditionToolWarnings is True when some tool definitions carry
	// warnings (status.tools[].warnings). Absent otherwise.
	ConditionToolWarnings = "ToolWarnings"
	// ConditionWorkloadAvailable says whether spec.workload's Deployment
	// serves the server: True when it has rolled out its current spec and
	// has minimum availability, False with one of the reasons below and
	// the Deployment's own message when not. Ready needs it; during a
	// rollout (RolloutInProgress) the previous pods serve and the last
	// Ready and tools are kept. Absent without spec.workload.
	ConditionWorkloadAvailable = "WorkloadAvailable"
)

// Reasons for the MCPServer Ready condition. Each failure has its own reason
// so that alerts and dashboards can tell them apart.
const (
	// ReasonToolsDiscovered: the tool list was read successfully.
	ReasonToolsDiscovered = "ToolsDiscovered"
	// ReasonProgressing: a new generation is being discovered.
	ReasonProgressing = "Progressing"
	// ReasonUnreachable: no connection could be made (refused, no route,
	// name not resolved).
	ReasonUnreachable = "Unreachable"
	// ReasonTimeout: the server did not answer within spec.timeout.
	ReasonTimeout = "Timeout"
	// ReasonTLSError: the TLS handshake failed (unknown authority, bad
	// certificate, wrong host name).
	ReasonTLSError = "TLSError"
	// ReasonUnauthorized: the server answered HTTP 401.
	ReasonUnauthorized = "Unauthorized"
	// ReasonForbidden: the server answered HTTP 403.
	ReasonForbidden = "Forbidden"
	// ReasonHTTPError: the server answered another unexpected HTTP status.
	ReasonHTTPError = "HTTPError"
	// ReasonProtocolError: the server answered with a JSON-RPC error, or
	// broke the MCP protocol.
	ReasonProtocolError = "ProtocolError"
	// ReasonMalformedResponse: the server's answer was not valid JSON-RPC.
	ReasonMalformedResponse = "MalformedResponse"
	// ReasonSecretNotFound: a Secret or key named by spec.headers or
	// spec.tls does not exist (yet). Recovers when it appears.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonConfigMapNotFound: a ConfigMap or key named by spec.tls does not
	// exist (yet). Recovers when it appears.
	ReasonConfigMapNotFound = "ConfigMapNotFound"
	// ReasonEgressDenied: the server's address is one the manager's egress
	// policy (--egress-deny-cidrs, --egress-allow-cidrs) refuses to dial.
	ReasonEgressDenied = "EgressDenied"
	// ReasonInvalidSpec: the spec cannot work as written (for example a
	// malformed glob pattern or CA bundle). Stalled until the spec changes.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonTooManyTools: the server offers more tools or pages than the
	// controller reads; the first ones are kept.
	ReasonTooManyTools = "TooManyTools"
	// ReasonUntrustedText: descriptions were cut or hold invisible
	// characters, or a tool's icons, execution or _meta were left out
	// (status.tools[].warnings says which).
	ReasonUntrustedText = "UntrustedText"
	// ReasonStatusBudgetExceeded: the tool definitions do not fit in the
	// status size budget; the first ones in name order are kept.
	ReasonStatusBudgetExceeded = "StatusBudgetExceeded"
	// ReasonAuthUnavailable: spec.auth's token endpoint could not be
	// reached or refused to issue a token (the message gives its OAuth
	// error code, never token material). Retried with backoff.
	ReasonAuthUnavailable = "AuthUnavailable"
	// ReasonAuthMisconfigured: spec.auth cannot work as written (for
	// example its token endpoint's CA bundle holds no certificate).
	// Stalled until the spec, or the Secret or ConfigMap it names,
	// changes.
	ReasonAuthMisconfigured = "AuthMisconfigured"
	// ReasonWorkloadUnavailable: spec.workload's Deployment is not
	// available (yet); the message names the image and why, from the
	// WorkloadAvailable condition. Discovery waits for it.
	ReasonWorkloadUnavailable = "WorkloadUnavailable"
	// ReasonWorkloadConflict: a Deployment or Service with the MCPServer's
	// name exists and is not the MCPServer's own; the operator leaves it
	// alone. Rename one of them.
	ReasonWorkloadConflict = "WorkloadConflict"
)

// Reasons for the MCPServer WorkloadAvailable condition.
const (
	// ReasonDeploymentAvailable: the Deployment has rolled out its current
	// spec and has minimum availability (True).
	ReasonDeploymentAvailable = "DeploymentAvailable"
	// ReasonDeploymentPending: the Deployment controller has not reported
	// on the Deployment's current spec yet.
	ReasonDeploymentPending = "DeploymentPending"
	// ReasonDeploymentUnavailable: the Deployment does not have minimum
	// availability, and no pod shows a failure (yet): pods are being
	// scheduled, pulled, started, or are not ready.
	ReasonDeploymentUnavailable = "DeploymentUnavailable"
	// ReasonPodFailing: a pod of the workload cannot start or keeps
	// failing; the message names the pod, the container and the reason
	// (ImagePullBackOff, CrashLoopBackOff, CreateContainerConfigError,
	// Unschedulable, ...).
	ReasonPodFailing = "PodFailing"
	// ReasonReplicaFailure: the Deployment cannot create pods (a quota, an
	// admission policy such as Pod Security); the message is the
	// Deployment's.
	ReasonReplicaFailure = "ReplicaFailure"
	// ReasonProgressDeadlineExceeded: a rollout did not finish within the
	// Deployment's progress deadline. Also the reason of Stalled, which
	// the MCPServer then shows; pods of a previous rollout may still serve.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonRolloutInProgress: the Deployment serves from an earlier
	// rollout while its current spec rolls out (False). Also the reason of
	// Reconciling meanwhile: the generation is finished, and its tools
	// read, once the rollout is.
	ReasonRolloutInProgress = "RolloutInProgress"
	// ReasonScaledToZero: the Deployment runs no pods (replicas 0).
	ReasonScaledToZero = "ScaledToZero"
)

// ToolCollection condition types, beside Ready, Reconciling and Stalled.
const (
	// ConditionDegraded is True when some selected MCPServers are not Ready;
	// their tools are left out until they recover. Absent otherwise.
	ConditionDegraded = "Degraded"
	// ConditionConflicts is True when more than one tool claims an exposed
	// name; the first server by name wins. Absent otherwise.
	ConditionConflicts = "Conflicts"
	// ConditionUnmatchedOverrides is True when spec.tools.overrides names a
	// tool no selected, Ready server offers. Absent otherwise.
	ConditionUnmatchedOverrides = "UnmatchedOverrides"
	// ConditionTooManyTools is True when the menu was cut at spec.maxTools,
	// or holds more tools than many function-calling APIs accept and its
	// exposure is All (with Search, agents search rather than take them
	// all). Absent otherwise.
	ConditionTooManyTools = "TooManyTools"
	// ConditionUnapprovedTools is True when spec.pinning does not approve
	// the current definition of some tools. Absent otherwise.
	ConditionUnapprovedTools = "UnapprovedTools"
	// ConditionToolsRefused is True when some tools of the menu cannot be
	// offered to MCP clients (their definition breaks a rule of the MCP
	// library, see the MCPServer's status.tools[].warnings): they are
	// served over REST and left out of the collection's MCP endpoint.
	// Absent otherwise.
	ConditionToolsRefused = "ToolsRefused"
	// ConditionUnmatchedAlwaysInclude is True when exposure is Search and
	// spec.alwaysInclude names a tool the menu does not offer. Absent
	// otherwise.
	ConditionUnmatchedAlwaysInclude = "UnmatchedAlwaysInclude"
	// ConditionPolicyInvalid is True when spec.policy does not compile: the
	// message says where and why, and the catalog enforces
	// status.appliedPolicy (the last policy that compiled) until it is
	// fixed, or denies every call when there is none. Absent otherwise.
	ConditionPolicyInvalid = "PolicyInvalid"
)

// Reasons for ToolCollection conditions.
const (
	// ReasonMenuResolved: the menu was resolved and serves tools.
	ReasonMenuResolved = "MenuResolved"
	// ReasonNoToolsServed: no selected MCPServer is Ready with tools.
	ReasonNoToolsServed = "NoToolsServed"
	// ReasonServersNotReady: some selected MCPServers are not Ready.
	ReasonServersNotReady = "ServersNotReady"
	// ReasonNameConflicts: exposed names are claimed more than once.
	ReasonNameConflicts = "NameConflicts"
	// ReasonOverrideTargetMissing: an override names a missing tool.
	ReasonOverrideTargetMissing = "OverrideTargetMissing"
	// ReasonMaxToolsExceeded: the menu was cut at spec.maxTools.
	ReasonMaxToolsExceeded = "MaxToolsExceeded"
	// ReasonOverFunctionCallingLimit: the menu holds more than 128 tools.
	ReasonOverFunctionCallingLimit = "OverFunctionCallingLimit"
	// ReasonToolsWithheld: pinning mode Enforce holds unapproved tools back.
	ReasonToolsWithheld = "ToolsWithheld"
	// ReasonToolsNotApproved: pinning mode Warn serves unapproved tools.
	ReasonToolsNotApproved = "ToolsNotApproved"
	// ReasonInvalidForMCP: tool definitions MCP clients cannot be offered.
	ReasonInvalidForMCP = "InvalidForMCP"
	// ReasonAlwaysIncludeTargetMissing: spec.alwaysInclude names a tool the
	// menu does not offer.
	ReasonAlwaysIncludeTargetMissing = "AlwaysIncludeTargetMissing"
	// ReasonInvalidPolicy: spec.policy does not compile (an expression
	// with a syntax or type error, not a bool, over the cost limit, or a
	// bad glob).
	ReasonInvalidPolicy = "InvalidPolicy"
)
