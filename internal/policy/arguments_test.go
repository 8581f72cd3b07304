package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// Arguments a server could read otherwise than the policy did are not
// read: a Deny rule that reads them applies, whatever they say.
func TestAmbiguousArgumentsAreNotRead(t *testing.T) {
	p := mustCompile(t, &mcpv1alpha1.ToolPolicy{Rules: []mcpv1alpha1.PolicyRule{
		{Name: "own-namespace", Effect: mcpv1alpha1.PolicyDeny, Expression: `arguments.namespace != "team-a"`},
	}})
	for _, c := range []struct{ arguments, why string }{
		{`{"namespace":"team-a","Namespace":"kube-system"}`, `"namespace" and "Namespace", which differ only in case`},
		{`{"namespace":"team-a","NAMESPACE":"kube-system"}`, "differ only in case"},
		{`{"namespace":"team-a","namespace":"kube-system"}`, `the key "namespace" twice`},
		{`{"namespace":"team-a","nested":{"k":1,"\u212a":2}}`, "differ only in case"}, // the Kelvin sign folds to k
		{`{"namespace":"team-a","list":[{"a":1,"a":2}]}`, `the key "a" twice`},
		{`{"namespace":"team-a"} {"namespace":"kube-system"}`, "not a JSON object"},
		{`["namespace","team-a"]`, "not a JSON object"},
		{`{"namespace":"team-a"`, "not a JSON object"},
	} {
		d := p.Decide(&Caller{}, &Tool{}, json.RawMessage(c.arguments))
		if d.Allowed || d.Rule != "own-namespace" || !strings.Contains(d.Message, c.why) {
			t.Errorf("%s: %+v, want denied by own-namespace saying %q", c.arguments, d, c.why)
		}
	}
	deep := strings.Repeat("[", 10002) + strings.Repeat("]", 10002)
	if d := p.Decide(&Caller{}, &Tool{}, json.RawMessage(`{"namespace":"team-a","x":`+deep+`}`)); d.Allowed || !strings.Contains(d.Message, "not a JSON object") {
		t.Errorf("deeply nested arguments: %+v", d)
	}
	// Past manyKeys, keys are compared by fold: the same answers.
	var many strings.Builder
	many.WriteString(`{"namespace":"team-a"`)
	for i := range 40 {
		fmt.Fprintf(&many, `,"k%d":%d`, i, i)
	}
	for extra, why := range map[string]string{`,"K39":1`: "differ only in case", `,"k20":1`: `the key "k20" twice`, `,"K7":1`: "differ only in case"} {
		if d := p.Decide(&Caller{}, &Tool{}, json.RawMessage(many.String()+extra+"}")); d.Allowed || !strings.Contains(d.Message, why) {
			t.Errorf("40 keys and %s: %+v, want denied saying %q", extra, d, why)
		}
	}
	if d := p.Decide(&Caller{}, &Tool{}, json.RawMessage(many.String()+"}")); !d.Allowed {
		t.Errorf("40 distinct keys: %+v, want allowed", d)
	}
	for _, ok := range []string{`{"namespace":"team-a"}`, `{"namespace":"team-a","name":"x","Name2":"y"}`, ` {"namespace":"team-a"} `} {
		if d := p.Decide(&Caller{}, &Tool{}, json.RawMessage(ok)); !d.Allowed {
			t.Errorf("%s: %+v, want allowed", ok, d)
		}
	}
}

// Whole numbers are compared exactly, as the server reads them.
func TestWholeNumbersAreExact(t *testing.T) {
	p := mustCompile(t, &mcpv1alpha1.ToolPolicy{Default: mcpv1alpha1.PolicyDeny, Rules: []mcpv1alpha1.PolicyRule{
		{Name: "one-id", Effect: mcpv1alpha1.PolicyAllow, Expression: `arguments.id == 288230376151711745`},
		{Name: "small", Effect: mcpv1alpha1.PolicyAllow, Expression: `has(arguments.count) && arguments.count < 2.5`},
		{Name: "huge", Effect: mcpv1alpha1.PolicyAllow, Expression: `has(arguments.big) && arguments.big == 18446744073709551615u`},
	}})
	for arguments, want := range map[string]bool{
		`{"id":288230376151711745}`:    true,
		`{"id":288230376151711744}`:    false, // the same double, another id
		`{"count":2}`:                  true,
		`{"count":2.0}`:                true,
		`{"count":3}`:                  false,
		`{"count":1e0}`:                true,
		`{"big":18446744073709551615}`: true,
	} {
		if d := p.Decide(&Caller{}, &Tool{}, json.RawMessage(arguments)); d.Allowed != want {
			t.Errorf("%s: %+v, want allowed %v", arguments, d, want)
		}
	}
}
