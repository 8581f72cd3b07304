package toolcatalog

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"

	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/policy"
)

// decide is the call pipeline's step 5: the collection's policy decides
// the call for its caller, tool and arguments. A denied call is refused
// (403 over REST, an isError result over MCP: the model reads the rule's
// message and can choose otherwise) and never reaches its server; in mode
// Audit the decision is only recorded. Either way the decision goes on
// the call's record (call_record.go): audit line, metric and span.
func (c *Catalog) decide(ctx context.Context, vw *view, entry *menu.Entry, arguments json.RawMessage) error {
	if vw.guard == nil {
		return nil
	}
	d := vw.planFor(callerFrom(ctx), entry).Decide(arguments)
	noteOf(ctx).policy = &d
	if d.Refused() {
		return &policyDeniedError{message: d.Message}
	}
	return nil
}

// policyDeniedError is a call the collection's policy refused.
type policyDeniedError struct{ message string }

func (e *policyDeniedError) Error() string { return e.message }

// policyDecisions counts the decisions of collections' policies.
var policyDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mcp_catalog_policy_decisions_total",
	Help: "Tool calls decided by a collection's spec.policy, by collection, deciding rule (\"(default)\" when none applied), decision (allow, deny) and mode (Enforce, Audit).",
}, []string{"collection", "rule", "decision", "mode"})

// Span attributes of a call a policy decided.
const (
	policyDecisionAttr = attribute.Key("mcp_operator.policy.decision")
	policyRuleAttr     = attribute.Key("mcp_operator.policy.rule")
	policyModeAttr     = attribute.Key("mcp_operator.policy.mode")
)

// policyRecord is a decision as the audit line, the metric and the span
// name it.
func policyRecord(d *policy.Decision) *AuditPolicy {
	p := &AuditPolicy{Decision: "allow", Rule: d.Rule, Mode: "Enforce"}
	if !d.Allowed {
		p.Decision = "deny"
	}
	if !d.Enforced {
		p.Mode = "Audit"
	}
	return p
}

// AuditPolicy is the decision of a collection's policy on a call.
type AuditPolicy struct {
	// Decision is allow or deny; with mode Audit a denied call went ahead.
	Decision string `json:"decision"`
	// Rule names the rule that decided; empty when the default did.
	Rule string `json:"rule,omitempty"`
	// Mode is Enforce or Audit.
	Mode string `json:"mode"`
}

func (p *AuditPolicy) count(collection string) {
	rule := p.Rule
	if rule == "" {
		rule = "(default)"
	}
	policyDecisions.WithLabelValues(collection, rule, p.Decision, p.Mode).Inc()
}

// forgetPolicyDecisions deletes a deleted collection's series.
func forgetPolicyDecisions(collection string) {
	policyDecisions.DeletePartialMatch(prometheus.Labels{"collection": collection})
}

func (p *AuditPolicy) attributes() []attribute.KeyValue {
	return []attribute.KeyValue{policyDecisionAttr.String(p.Decision), policyRuleAttr.String(p.Rule), policyModeAttr.String(p.Mode)}
}

// deniedStatus is how REST answers a call the policy refused.
const deniedStatus = http.StatusForbidden
