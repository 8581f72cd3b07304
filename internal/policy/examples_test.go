package policy

import (
	"encoding/json"
	"testing"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// The examples of docs/policy.md compile and decide as the page says.
func TestDocExamples(t *testing.T) {
	no := false
	p, err := Compile(&mcpv1alpha1.ToolPolicy{Rules: []mcpv1alpha1.PolicyRule{
		{Name: "own-namespace", Effect: mcpv1alpha1.PolicyDeny, Match: &mcpv1alpha1.PolicyMatch{Tools: []string{"mcp_k8s_*"}},
			Expression: `!caller.name.startsWith("system:serviceaccount:") ||
        !has(arguments.namespace) ||
        arguments.namespace != caller.name.split(":")[2]`,
			Message: "an agent may act only in its own namespace"},
		{Name: "own-repositories", Effect: mcpv1alpha1.PolicyDeny,
			Match:      &mcpv1alpha1.PolicyMatch{Servers: []string{"github"}, Annotations: &mcpv1alpha1.AnnotationMatch{ReadOnlyHint: &no}},
			Expression: `!has(arguments.owner) || arguments.owner != caller.name.replace("idp:", "")`},
		{Name: "company-users", Effect: mcpv1alpha1.PolicyDeny, Expression: `caller.issuer != "https://login.example.com"`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The README's shorter own-namespace rule decides alike.
	_, err = Compile(&mcpv1alpha1.ToolPolicy{Rules: []mcpv1alpha1.PolicyRule{{Name: "own-namespace", Effect: mcpv1alpha1.PolicyDeny,
		Expression: `!has(arguments.namespace) || !caller.name.startsWith("system:serviceaccount:") || arguments.namespace != caller.name.split(":")[2]`}}})
	if err != nil {
		t.Fatal(err)
	}
	agent := &Caller{Name: "system:serviceaccount:team-a:agent", Issuer: "https://login.example.com"}
	alice := &Caller{Name: "idp:alice", Issuer: "https://login.example.com"}
	k8s := &Tool{Name: "mcp_k8s_delete_pod", Server: "k8s", Annotations: AnnotationsOf(nil)}
	github := &Tool{Name: "mcp_github_push", Server: "github", Annotations: AnnotationsOf(nil)}
	for _, c := range []struct {
		who       *Caller
		tool      *Tool
		arguments string
		allowed   bool
		rule      string
	}{
		{agent, k8s, `{"namespace":"team-a"}`, true, ""},
		{agent, k8s, `{"namespace":"team-b"}`, false, "own-namespace"},
		{agent, k8s, `{}`, false, "own-namespace"},
		{alice, k8s, `{"namespace":"team-a"}`, false, "own-namespace"},
		{alice, github, `{"owner":"alice"}`, true, ""},
		{alice, github, `{"owner":"bob"}`, false, "own-repositories"},
		{&Caller{Name: "idp:alice", Issuer: "https://other.example.com"}, github, `{"owner":"alice"}`, false, "company-users"},
	} {
		d := p.Decide(c.who, c.tool, json.RawMessage(c.arguments))
		if d.Allowed != c.allowed || d.Rule != c.rule {
			t.Errorf("%s calling %s with %s: %+v, want allowed %v by %q", c.who.Name, c.tool.Name, c.arguments, d, c.allowed, c.rule)
		}
	}
}
