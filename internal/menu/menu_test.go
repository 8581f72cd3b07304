package menu

import (
	"reflect"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// server makes a Ready (or not) MCPServer with the given exposed tool names.
func server(name string, ready bool, lbls map[string]string, tools ...string) mcpv1alpha1.MCPServer {
	s := mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls, Generation: 1}}
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	s.Status.Conditions = []metav1.Condition{{Type: mcpv1alpha1.ConditionReady, Status: status, ObservedGeneration: 1}}
	for _, t := range tools {
		s.Status.Tools = append(s.Status.Tools, mcpv1alpha1.Tool{
			Name: t, OriginalName: t + "-orig", Description: "about " + t,
			InputSchema: runtime.RawExtension{Raw: []byte(`{"type":"object"}`)},
		})
	}
	return s
}

func names(m Menu) []string {
	out := []string{}
	for _, t := range m.Tools {
		out = append(out, t.Server+"/"+t.Name)
	}
	return out
}

func TestForCollection(t *testing.T) {
	team := map[string]string{"team": "a"}
	all := []mcpv1alpha1.MCPServer{
		server("alpha", true, team, "mcp_alpha_read", "mcp_alpha_write"),
		server("beta", true, map[string]string{"team": "b"}, "mcp_beta_read"),
		server("down", false, team, "mcp_down_x"),
	}
	tests := []struct {
		name      string
		spec      mcpv1alpha1.ToolCollectionSpec
		servers   []mcpv1alpha1.MCPServer
		want      []string
		conflicts []Conflict
		unmatched []string
		leftOut   int
		withheld  []string
	}{
		{
			name:     "an empty selector selects every server; not Ready ones serve nothing",
			spec:     mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Selector: &metav1.LabelSelector{}}},
			want:     []string{"alpha/mcp_alpha_read", "alpha/mcp_alpha_write", "beta/mcp_beta_read"},
			withheld: []string{"down/mcp_down_x"},
		},
		{
			name: "a not Ready server's tools are withheld under the names the menu would give them",
			spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"down"}},
				Tools: &mcpv1alpha1.ToolSelection{Overrides: []mcpv1alpha1.ToolOverride{{Name: "mcp_down_x", Rename: "x"}}}},
			want:      []string{},
			withheld:  []string{"down/x"},
			unmatched: []string{"mcp_down_x"},
		},
		{
			name: "labels select",
			spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}},
			want: []string{"beta/mcp_beta_read"},
		},
		{
			name: "names and labels together are a union",
			spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}, Names: []string{"alpha"}}},
			want: []string{"alpha/mcp_alpha_read", "alpha/mcp_alpha_write", "beta/mcp_beta_read"},
		},
		{
			name: "include then exclude, exclude wins",
			spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"alpha", "beta"}},
				Tools: &mcpv1alpha1.ToolSelection{Include: []string{"mcp_*_read", "mcp_alpha_*"}, Exclude: []string{"mcp_beta_*"}}},
			want: []string{"alpha/mcp_alpha_read", "alpha/mcp_alpha_write"},
		},
		{
			name: "rename and description overrides; an override of a missing tool is reported",
			spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"alpha"}},
				Tools: &mcpv1alpha1.ToolSelection{Overrides: []mcpv1alpha1.ToolOverride{
					{Name: "mcp_alpha_read", Rename: "read"},
					{Name: "mcp_alpha_write", Description: ptr.To("Writes.")},
					{Name: "mcp_alpha_gone", Rename: "gone"},
				}}},
			want:      []string{"alpha/mcp_alpha_write", "alpha/read"},
			unmatched: []string{"mcp_alpha_gone"},
		},
		{
			name: "two servers with one prefix: the first by name wins, both are named",
			spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Selector: &metav1.LabelSelector{}}},
			servers: []mcpv1alpha1.MCPServer{
				server("zeta", true, nil, "mcp_gh_issue"),
				server("eta", true, nil, "mcp_gh_issue", "mcp_gh_pr"),
			},
			want:      []string{"eta/mcp_gh_issue", "eta/mcp_gh_pr"},
			conflicts: []Conflict{{Name: "mcp_gh_issue", Servers: []string{"eta", "zeta"}}},
		},
		{
			name: "a rename resolves a conflict",
			spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Selector: &metav1.LabelSelector{}},
				Tools: &mcpv1alpha1.ToolSelection{Overrides: []mcpv1alpha1.ToolOverride{{Name: "mcp_gh_issue", Rename: "issue"}}}},
			servers: []mcpv1alpha1.MCPServer{
				server("zeta", true, nil, "mcp_gh_issue"),
				server("eta", true, nil, "mcp_other_issue"),
			},
			want: []string{"zeta/issue", "eta/mcp_other_issue"},
		},
		{
			name: "an override scoped to one server resolves a same-name conflict",
			spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Selector: &metav1.LabelSelector{}},
				Tools: &mcpv1alpha1.ToolSelection{Overrides: []mcpv1alpha1.ToolOverride{{Name: "mcp_gh_issue", Server: "zeta", Rename: "zeta_issue"}}}},
			servers: []mcpv1alpha1.MCPServer{
				server("zeta", true, nil, "mcp_gh_issue"),
				server("eta", true, nil, "mcp_gh_issue"),
			},
			want: []string{"eta/mcp_gh_issue", "zeta/zeta_issue"},
		},
		{
			name: "a rename onto an existing name conflicts like any other",
			spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"alpha", "beta"}},
				Tools: &mcpv1alpha1.ToolSelection{Overrides: []mcpv1alpha1.ToolOverride{{Name: "mcp_beta_read", Rename: "mcp_alpha_read"}}}},
			want:      []string{"alpha/mcp_alpha_read", "alpha/mcp_alpha_write"},
			conflicts: []Conflict{{Name: "mcp_alpha_read", Servers: []string{"alpha", "beta"}}},
		},
		{
			name: "maxTools keeps the first in name order",
			spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Selector: &metav1.LabelSelector{}}, MaxTools: ptr.To[int32](2)},
			want: []string{"alpha/mcp_alpha_read", "alpha/mcp_alpha_write"}, leftOut: 1, withheld: []string{"down/mcp_down_x"},
		},
		{
			name: "a selection that matches nothing is an empty menu",
			spec: mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"nobody"}}},
			want: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			servers := tt.servers
			if servers == nil {
				servers = all
			}
			m := ForCollection(&tt.spec, servers)
			got := names(m)
			want := append([]string{}, tt.want...)
			sort.Strings(got)
			sort.Strings(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("tools: got %v, want %v", got, want)
			}
			if !reflect.DeepEqual(m.Conflicts, tt.conflicts) {
				t.Errorf("conflicts: got %v, want %v", m.Conflicts, tt.conflicts)
			}
			if !reflect.DeepEqual(m.UnmatchedOverrides, tt.unmatched) {
				t.Errorf("unmatched overrides: got %v, want %v", m.UnmatchedOverrides, tt.unmatched)
			}
			if m.LeftOut != tt.leftOut {
				t.Errorf("left out: got %d, want %d", m.LeftOut, tt.leftOut)
			}
			withheld := names(Menu{Tools: m.Withheld})
			if !reflect.DeepEqual(withheld, append([]string{}, tt.withheld...)) {
				t.Errorf("withheld: got %v, want %v", withheld, tt.withheld)
			}
		})
	}
}

func TestDescriptionOverrideIsWhatTheAgentSees(t *testing.T) {
	spec := mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"alpha"}},
		Tools: &mcpv1alpha1.ToolSelection{Overrides: []mcpv1alpha1.ToolOverride{{Name: "mcp_alpha_write", Description: ptr.To("Writes.")}}}}
	m := ForCollection(&spec, []mcpv1alpha1.MCPServer{server("alpha", true, nil, "mcp_alpha_read", "mcp_alpha_write")})
	if m.Tools[1].Description != "Writes." || m.Tools[0].Description != "about mcp_alpha_read" {
		t.Errorf("descriptions: %q, %q", m.Tools[0].Description, m.Tools[1].Description)
	}
}

func TestHashChangesExactlyWithWhatAnAgentSees(t *testing.T) {
	spec := mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"alpha"}}}
	base := []mcpv1alpha1.MCPServer{server("alpha", true, nil, "mcp_alpha_read")}
	h := ForCollection(&spec, base).Hash()
	if again := ForCollection(&spec, base).Hash(); again != h {
		t.Fatal("the same menu hashed differently")
	}
	relabelled := []mcpv1alpha1.MCPServer{server("alpha", true, map[string]string{"x": "y"}, "mcp_alpha_read")}
	if ForCollection(&spec, relabelled).Hash() != h {
		t.Error("a label change, invisible to agents, changed the hash")
	}
	described := []mcpv1alpha1.MCPServer{server("alpha", true, nil, "mcp_alpha_read")}
	described[0].Status.Tools[0].Description = "new words"
	if ForCollection(&spec, described).Hash() == h {
		t.Error("a description change kept the hash")
	}
	schema := []mcpv1alpha1.MCPServer{server("alpha", true, nil, "mcp_alpha_read")}
	schema[0].Status.Tools[0].InputSchema.Raw = []byte(`{"type":"object","properties":{"a":{}}}`)
	if ForCollection(&spec, schema).Hash() == h {
		t.Error("a schema change kept the hash")
	}

	// Discovered tools carry the hash of their whole definition, which
	// stands for their schemas and annotations.
	hashed := func(definition string) []mcpv1alpha1.MCPServer {
		s := []mcpv1alpha1.MCPServer{server("alpha", true, nil, "mcp_alpha_read")}
		s[0].Status.Tools[0].Hash = definition
		return s
	}
	first := ForCollection(&spec, hashed("aaaa")).Hash()
	if first == h || ForCollection(&spec, hashed("aaaa")).Hash() != first {
		t.Error("a definition's hash does not identify it")
	}
	if ForCollection(&spec, hashed("bbbb")).Hash() == first {
		t.Error("a new definition (annotations changed, say) kept the hash")
	}
	renamed := hashed("aaaa")
	renamed[0].Status.Tools[0].Title = "Read"
	if ForCollection(&spec, renamed).Hash() == first {
		t.Error("a title change kept the hash")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		spec    mcpv1alpha1.ToolCollectionSpec
		invalid bool
	}{
		{"a good spec", mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"a"}},
			Tools: &mcpv1alpha1.ToolSelection{Include: []string{"mcp_*"}}}, false},
		{"a bad glob", mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"a"}},
			Tools: &mcpv1alpha1.ToolSelection{Exclude: []string{"mcp_["}}}, true},
		{"a bad prompt glob", mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"a"}},
			Prompts: &mcpv1alpha1.PromptSelection{Include: []string{"mcp_["}}}, true},
		{"a resource pattern with brackets, which are literal there", mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"a"}},
			Resources: &mcpv1alpha1.ResourceSelection{Include: []string{"test://a.b/["}}}, false},
		{"a bad selector operator", mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Validate(&tt.spec); (err != nil) != tt.invalid {
				t.Errorf("got %v, want invalid=%v", err, tt.invalid)
			}
		})
	}
}

func TestGlobal(t *testing.T) {
	a := server("tools", true, nil, "mcp_gh_issue", "mcp_a_x")
	a.Namespace = "team-b"
	b := server("tools", true, nil, "mcp_gh_issue")
	b.Namespace = "team-a"
	down := server("down", false, nil, "mcp_down_y")
	down.Namespace = "team-a"
	m := Global([]mcpv1alpha1.MCPServer{a, b, down})

	got := []string{}
	for _, e := range m.Tools {
		got = append(got, e.Namespace+"/"+e.Server+"/"+e.Name)
	}
	want := []string{"team-b/tools/mcp_a_x", "team-a/tools/mcp_gh_issue"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tools: got %v, want %v (winner by namespace, servers not Ready left out)", got, want)
	}
	wantConflicts := []Conflict{{Name: "mcp_gh_issue", Servers: []string{"team-a/tools", "team-b/tools"}}}
	if !reflect.DeepEqual(m.Conflicts, wantConflicts) {
		t.Errorf("conflicts: got %v, want %v", m.Conflicts, wantConflicts)
	}
	if got := names(Menu{Tools: m.Withheld}); !reflect.DeepEqual(got, []string{"down/mcp_down_y"}) {
		t.Errorf("withheld: got %v, want the not Ready server's tool", got)
	}
}

func TestPinning(t *testing.T) {
	srv := server("gh", true, nil, "mcp_gh_read", "mcp_gh_write", "mcp_gh_new")
	srv.Status.Tools[0].Hash = "h-read"
	srv.Status.Tools[1].Hash = "h-write-changed"
	srv.Status.Tools[2].Hash = "h-new"
	approved := map[string]string{"mcp_gh_read": "h-read", "mcp_gh_write": "h-write-approved"}
	tests := []struct {
		name string
		mode mcpv1alpha1.PinningMode
		want []string
	}{
		{"Enforce withholds changed and new tools", mcpv1alpha1.PinningEnforce, []string{"gh/mcp_gh_read"}},
		{"Warn serves them", mcpv1alpha1.PinningWarn, []string{"gh/mcp_gh_new", "gh/mcp_gh_read", "gh/mcp_gh_write"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := mcpv1alpha1.ToolCollectionSpec{Servers: mcpv1alpha1.ServerSelection{Names: []string{"gh"}},
				Pinning: &mcpv1alpha1.ToolPinning{Mode: tt.mode, Approved: approved}}
			m := ForCollection(&spec, []mcpv1alpha1.MCPServer{srv})
			if got := names(m); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("tools: got %v, want %v", got, tt.want)
			}
			want := []Unapproved{
				{Name: "mcp_gh_new", Server: "gh", CurrentHash: "h-new"},
				{Name: "mcp_gh_write", Server: "gh", ApprovedHash: "h-write-approved", CurrentHash: "h-write-changed"},
			}
			if !reflect.DeepEqual(m.Unapproved, want) {
				t.Errorf("unapproved: got %+v, want %+v", m.Unapproved, want)
			}
		})
	}
}
