package toolcatalog

import (
	"strings"
	"testing"

	"k8s.io/utils/lru"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/policy"
)

// A caller's view tells nothing of a tool the policy hides from them: not
// its definition, nor that its name is contested, unapproved or refused.
func TestNarrowedViewTellsNothingOfHiddenTools(t *testing.T) {
	tool := func(name string) *mcpv1alpha1.Tool { return &mcpv1alpha1.Tool{Name: name, OriginalName: name} }
	m := menu.Menu{
		Tools: []menu.Entry{
			{Name: "mcp_ops_read", Server: "ops", Tool: tool("read")},
			{Name: "mcp_ops_drop", Server: "ops", Tool: tool("drop")},
		},
		Conflicts:  []menu.Conflict{{Name: "mcp_ops_read", Servers: []string{"ops", "twin"}}, {Name: "mcp_ops_drop", Servers: []string{"ops", "twin"}}},
		Unapproved: []menu.Unapproved{{Name: "mcp_ops_drop", Server: "ops", CurrentHash: "h"}},
		Refused:    []menu.Entry{{Name: "mcp_ops_drop", Server: "ops", Tool: tool("drop")}},
		Withheld:   []menu.Entry{{Name: "mcp_ops_drop_twin", Server: "twin", Tool: tool("drop")}},
	}
	p, err := policy.Compile(&mcpv1alpha1.ToolPolicy{Rules: []mcpv1alpha1.PolicyRule{
		{Name: "no-drops", Effect: mcpv1alpha1.PolicyDeny, Match: &mcpv1alpha1.PolicyMatch{Tools: []string{"*_drop*"}}, Expression: `caller.name != "admin"`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	vw := &view{menu: m, revision: "r", byName: map[string]*menu.Entry{}, withheld: map[string]*menu.Entry{}, guard: &guard{policy: p, callers: newCallerViews(), plans: lru.New(maxPolicyPlans)}}
	for i := range vw.menu.Tools {
		vw.byName[vw.menu.Tools[i].Name] = &vw.menu.Tools[i]
	}
	user := &caller{identity: "user", policy: &policy.Caller{Name: "user"}}
	admin := &caller{identity: "admin", policy: &policy.Caller{Name: "admin"}}

	if got := vw.forCaller(admin); got != vw {
		t.Errorf("the admin, who may call every tool, got a view of their own")
	}
	narrowed := vw.forCaller(user)
	if narrowed == vw || narrowed.revision == vw.revision {
		t.Fatalf("the user got the whole view (revision %q)", narrowed.revision)
	}
	if len(narrowed.menu.Tools) != 1 || narrowed.menu.Tools[0].Name != "mcp_ops_read" || narrowed.byName["mcp_ops_drop"] != nil {
		t.Errorf("tools: %+v", narrowed.menu.Tools)
	}
	if len(narrowed.menu.Conflicts) != 1 || narrowed.menu.Conflicts[0].Name != "mcp_ops_read" {
		t.Errorf("conflicts: %+v", narrowed.menu.Conflicts)
	}
	if len(narrowed.menu.Unapproved) != 0 || len(narrowed.menu.Refused) != 0 || len(narrowed.menu.Withheld) != 0 || len(narrowed.withheld) != 0 {
		t.Errorf("unapproved %+v, refused %+v, withheld %+v", narrowed.menu.Unapproved, narrowed.menu.Refused, narrowed.menu.Withheld)
	}
	body := string(render(narrowed, formatOpenAI).body)
	for _, hidden := range []string{"mcp_ops_drop"} {
		if strings.Contains(body, hidden) {
			t.Errorf("the user's menu names %s: %s", hidden, body)
		}
	}
	// A second caller left the same tools shares the view, and its
	// rendering.
	other := &caller{identity: "other", policy: &policy.Caller{Name: "other"}}
	if vw.forCaller(other) != narrowed || narrowed.rendering(formatOpenAI) != vw.forCaller(other).rendering(formatOpenAI) {
		t.Errorf("a caller left the same tools got a view of their own")
	}
	// A caller's view is its own caller's view.
	if narrowed.forCaller(admin) != narrowed {
		t.Errorf("a caller's view narrowed again")
	}
	// The original view is untouched.
	if len(vw.menu.Conflicts) != 2 || len(vw.menu.Tools) != 2 || len(vw.menu.Unapproved) != 1 {
		t.Errorf("narrowing changed the collection's view: %+v", vw.menu)
	}
}
