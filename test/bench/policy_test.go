package bench

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// guardedCollection is the collection the policy paths (rest-jwt-policy,
// mcp-jwt-policy) call through: every server of the namespace, as "all",
// under benchPolicy.
const guardedCollection = "guarded"

// benchPolicy is a policy of 20 rules as a platform team would write
// one, ordered so that a call of the benchmark's echo tool by the JWT
// replica's caller is checked against 16 rules (5 of them expressions
// that it evaluates, 2 of those reading the arguments) before the 17th
// allows it; the default denies.
func benchPolicy() *mcpv1alpha1.ToolPolicy {
	yes := true
	rule := func(name string, effect mcpv1alpha1.PolicyEffect, match *mcpv1alpha1.PolicyMatch, expression string) mcpv1alpha1.PolicyRule {
		return mcpv1alpha1.PolicyRule{Name: name, Effect: effect, Match: match, Expression: expression, Message: "rule " + name}
	}
	servers := func(names ...string) *mcpv1alpha1.PolicyMatch { return &mcpv1alpha1.PolicyMatch{Servers: names} }
	tools := func(globs ...string) *mcpv1alpha1.PolicyMatch { return &mcpv1alpha1.PolicyMatch{Tools: globs} }
	return &mcpv1alpha1.ToolPolicy{Default: mcpv1alpha1.PolicyDeny, Rules: []mcpv1alpha1.PolicyRule{
		rule("no-deletes", mcpv1alpha1.PolicyDeny, tools("*_delete_*", "*_drop_*"), ""),
		rule("read-only-for-all", mcpv1alpha1.PolicyAllow, &mcpv1alpha1.PolicyMatch{Annotations: &mcpv1alpha1.AnnotationMatch{ReadOnlyHint: &yes}}, ""),
		rule("team-a", mcpv1alpha1.PolicyAllow, servers("github", "gitlab"), `"team-a" in caller.groups`),
		rule("team-b", mcpv1alpha1.PolicyAllow, servers("jira"), `"team-b" in caller.groups`),
		rule("team-c", mcpv1alpha1.PolicyAllow, servers("slack", "mail"), `"team-c" in caller.groups`),
		rule("team-d", mcpv1alpha1.PolicyAllow, servers("postgres"), `"team-d" in caller.groups`),
		rule("team-e", mcpv1alpha1.PolicyAllow, servers("s3"), `"team-e" in caller.groups`),
		rule("team-f", mcpv1alpha1.PolicyAllow, servers("vault"), `"team-f" in caller.groups`),
		rule("team-g", mcpv1alpha1.PolicyAllow, servers("k8s"), `"team-g" in caller.groups`),
		rule("team-h", mcpv1alpha1.PolicyAllow, servers("grafana"), `"team-h" in caller.groups`),
		rule("destructive-for-oncall", mcpv1alpha1.PolicyAllow,
			&mcpv1alpha1.PolicyMatch{Annotations: &mcpv1alpha1.AnnotationMatch{DestructiveHint: &yes}}, `"oncall" in caller.groups`),
		rule("no-admin-tools", mcpv1alpha1.PolicyDeny, tools("*_admin_*"), ""),
		rule("named-by-issuer", mcpv1alpha1.PolicyDeny, nil, `caller.issuer != "" && !caller.name.startsWith(caller.issuer)`),
		rule("admin-scope", mcpv1alpha1.PolicyAllow, nil, `"scope" in caller.extra && caller.extra["scope"].exists(s, s == "admin")`),
		rule("own-messages", mcpv1alpha1.PolicyDeny, tools("*_echo"), `has(arguments.owner) && arguments.owner != caller.name`),
		rule("short-messages", mcpv1alpha1.PolicyDeny, tools("*_echo"), `has(arguments.message) && size(arguments.message) > 4096`),
		rule("bench-callers", mcpv1alpha1.PolicyAllow, nil, `tool.name.startsWith("mcp_") && tool.server.matches("^c[0-9]+$") && caller.name.endsWith("#bench")`),
		rule("no-open-world", mcpv1alpha1.PolicyDeny, &mcpv1alpha1.PolicyMatch{Annotations: &mcpv1alpha1.AnnotationMatch{OpenWorldHint: &yes}}, ""),
		rule("interns-read", mcpv1alpha1.PolicyAllow, nil, `"interns" in caller.groups && tool.annotations.readOnlyHint`),
		rule("everyone-else", mcpv1alpha1.PolicyDeny, nil, ""),
	}}
}

// createGuarded creates the guarded collection in ns.
func createGuarded(b *testing.B, cp *controlPlane, ns string) {
	b.Helper()
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: guardedCollection},
		Spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Selector: &metav1.LabelSelector{}}, Policy: benchPolicy()}}
	if err := cp.client.Create(context.Background(), tc); err != nil {
		b.Fatal(err)
	}
}

// refusedByPolicy fails the benchmark unless the guarded collection
// refuses a call its policy denies (rule own-messages): the policy paths
// are measured with the policy in force.
func refusedByPolicy(b *testing.B, url, tool, token string) {
	b.Helper()
	body := []byte(`{"name":"` + tool + `","arguments":{"message":"hi","owner":"someone-else"}}`)
	err := executeWantAs(url, body, "hi", token)
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "denied by policy rule own-messages") {
		b.Fatalf("the guarded collection answered a call its policy denies with %v, not 403 from rule own-messages", err)
	}
}
