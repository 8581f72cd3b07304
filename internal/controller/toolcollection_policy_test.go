package controller

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/policy"
)

// onePolicy is a policy of one Allow rule with the expression.
func onePolicy(name, expression string) *mcpv1alpha1.ToolPolicy {
	return &mcpv1alpha1.ToolPolicy{Rules: []mcpv1alpha1.PolicyRule{{Name: name, Effect: mcpv1alpha1.PolicyAllow, Expression: expression}}}
}

// updateTC applies mutate to the collection's latest version and writes
// it, again on a conflict with the controller's status write.
func updateTC(tc *mcpv1alpha1.ToolCollection, mutate func(*mcpv1alpha1.ToolCollection)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := fetchTC(tc)
		mutate(latest)
		return k8sClient.Update(ctx, latest)
	})).To(Succeed())
}

// observedOf is the generation the collection's status was computed for.
func observedOf(tc *mcpv1alpha1.ToolCollection) func() int64 {
	return func() int64 { return fetchTC(tc).Status.ObservedGeneration }
}

// tcMessage is the message of the collection's condition, "" without it.
func tcMessage(tc *mcpv1alpha1.ToolCollection, condType string) string {
	if c := meta.FindStatusCondition(fetchTC(tc).Status.Conditions, condType); c != nil {
		return c.Message
	}
	return ""
}

// policyEvents lists "Type Reason Action: note" of the InvalidPolicy
// Events about the collection, with " (repeated)" when the recorder
// counted one more than once.
func policyEvents(tc *mcpv1alpha1.ToolCollection) func() []string {
	return func() []string {
		var list eventsv1.EventList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(tc.Namespace))).To(Succeed())
		out := []string{}
		for _, e := range list.Items {
			if e.Regarding.Name != tc.Name || e.Reason != mcpv1alpha1.ReasonInvalidPolicy {
				continue
			}
			line := fmt.Sprintf("%s %s %s: %s", e.Type, e.Reason, e.Action, e.Note)
			if e.Series != nil {
				line += " (repeated)"
			}
			out = append(out, line)
		}
		return out
	}
}

var _ = Describe("ToolCollection policy", func() {
	team := map[string]string{"team": "p"}

	It("records a policy that compiles, keeps enforcing it while its successor does not, and takes the fix", func() {
		ns := newNamespace()
		mcp, _ := readyServer(ns, "pol", team, "read")
		tc := createCollection(ns, "guarded", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team),
			Policy: onePolicy("named-x", `caller.name == "x"`)})

		Eventually(conditionOf(tc, mcpv1alpha1.ConditionReady)).Should(Equal("True/MenuResolved"))
		Eventually(func() *mcpv1alpha1.AppliedPolicy { return fetchTC(tc).Status.AppliedPolicy }).ShouldNot(BeNil())
		got := fetchTC(tc)
		Expect(got.Status.AppliedPolicy.Generation).To(BeEquivalentTo(1))
		Expect(got.Status.AppliedPolicy.Policy).To(Equal(*got.Spec.Policy), "the spec's policy, defaults included")
		Expect(got.Status.AppliedPolicy.Policy.Mode).To(Equal(mcpv1alpha1.PolicyEnforce))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionPolicyInvalid)()).To(Equal("none"))

		// An edit elsewhere in the spec keeps the generation the policy
		// was first applied at.
		updateTC(tc, func(c *mcpv1alpha1.ToolCollection) { c.Spec.MaxTools = ptr.To[int32](50) })
		Eventually(observedOf(tc)).Should(BeEquivalentTo(2))
		applied := fetchTC(tc).Status.AppliedPolicy
		Expect(applied.Generation).To(BeEquivalentTo(1))

		// A typo in a field name does not compile: the last policy that
		// did stays applied, and the menu is still served.
		updateTC(tc, func(c *mcpv1alpha1.ToolCollection) { c.Spec.Policy.Rules[0].Expression = `caller.username == "x"` })
		Eventually(conditionOf(tc, mcpv1alpha1.ConditionPolicyInvalid)).Should(Equal("True/InvalidPolicy"))
		got = fetchTC(tc)
		problem := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionPolicyInvalid).Message
		_, compileErr := policy.Compile(got.Spec.Policy)
		Expect(compileErr).To(HaveOccurred())
		Expect(problem).To(HavePrefix(compileErr.Error()), "the compiler's own message")
		Expect(problem).To(MatchRegexp(`^spec\.policy\.rules\[0\] \(named-x\): expression line 1, column \d+: undefined field 'username'`))
		Expect(problem).To(HaveSuffix("; the catalog enforces the policy of generation 1 (status.appliedPolicy) until it is fixed"))
		Expect(got.Status.AppliedPolicy).To(Equal(applied))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionReady)()).To(Equal("False/InvalidPolicy"))
		Expect(tcMessage(tc, mcpv1alpha1.ConditionReady)).To(Equal(problem))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionStalled)()).To(Equal("True/InvalidPolicy"))
		Expect(tcMessage(tc, mcpv1alpha1.ConditionStalled)).To(Equal(problem))
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Expect(menuOf(tc)()).To(Equal([]string{"pol/mcp_pol_read"}))
		Eventually(policyEvents(tc)).Should(Equal([]string{"Warning InvalidPolicy Resolve: " + problem}))

		// A change of the servers is still resolved, and the policy,
		// still invalid alike, is not warned of again.
		mcp.AddTools("write")
		Eventually(menuOf(tc)).Should(Equal([]string{"pol/mcp_pol_read", "pol/mcp_pol_write"}))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionReady)()).To(Equal("False/InvalidPolicy"))
		Consistently(policyEvents(tc)).Should(Equal([]string{"Warning InvalidPolicy Resolve: " + problem}))

		// The fix is applied at its generation, and the collection is
		// Ready again.
		updateTC(tc, func(c *mcpv1alpha1.ToolCollection) { c.Spec.Policy.Rules[0].Expression = `caller.name == "y"` })
		Eventually(conditionOf(tc, mcpv1alpha1.ConditionReady)).Should(Equal("True/MenuResolved"))
		got = fetchTC(tc)
		Expect(meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionPolicyInvalid)).To(BeNil())
		Expect(meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionStalled)).To(BeNil())
		Expect(got.Status.AppliedPolicy.Generation).To(Equal(got.Generation))
		Expect(got.Status.AppliedPolicy.Policy).To(Equal(*got.Spec.Policy))

		// Without a policy there is nothing to apply.
		updateTC(tc, func(c *mcpv1alpha1.ToolCollection) { c.Spec.Policy = nil })
		Eventually(func() *mcpv1alpha1.AppliedPolicy { return fetchTC(tc).Status.AppliedPolicy }).Should(BeNil())
		Expect(conditionOf(tc, mcpv1alpha1.ConditionReady)()).To(Equal("True/MenuResolved"))
	})

	It("says every call is denied while no policy of the collection ever compiled, until one does", func() {
		ns := newNamespace()
		readyServer(ns, "pol", team, "read")
		tc := createCollection(ns, "denied", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team),
			Policy: onePolicy("typo", `caller.username == "x"`)})

		Eventually(conditionOf(tc, mcpv1alpha1.ConditionPolicyInvalid)).Should(Equal("True/InvalidPolicy"))
		Expect(tcMessage(tc, mcpv1alpha1.ConditionPolicyInvalid)).To(HaveSuffix(
			"; no earlier policy compiled, so the catalog denies every call of this collection until it is fixed"))
		Expect(fetchTC(tc).Status.AppliedPolicy).To(BeNil())
		Expect(conditionOf(tc, mcpv1alpha1.ConditionReady)()).To(Equal("False/InvalidPolicy"))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionStalled)()).To(Equal("True/InvalidPolicy"))
		Eventually(menuOf(tc)).Should(Equal([]string{"pol/mcp_pol_read"}))

		updateTC(tc, func(c *mcpv1alpha1.ToolCollection) { c.Spec.Policy.Rules[0].Expression = `caller.name == "x"` })
		Eventually(conditionOf(tc, mcpv1alpha1.ConditionReady)).Should(Equal("True/MenuResolved"))
		got := fetchTC(tc)
		Expect(meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionPolicyInvalid)).To(BeNil())
		Expect(meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionStalled)).To(BeNil())
		Expect(got.Status.AppliedPolicy).To(Equal(&mcpv1alpha1.AppliedPolicy{Generation: 2, Policy: *got.Spec.Policy}))
	})

	It("refuses an expression whose worst case costs more than the limit", func() {
		ns := newNamespace()
		tc := createCollection(ns, "costly", mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team),
			Policy: onePolicy("costly", `arguments.items.all(i, i.matches("a+b+"))`)})
		Eventually(conditionOf(tc, mcpv1alpha1.ConditionPolicyInvalid)).Should(Equal("True/InvalidPolicy"))
		Expect(tcMessage(tc, mcpv1alpha1.ConditionPolicyInvalid)).To(And(
			HavePrefix("spec.policy.rules[0] (costly): "), ContainSubstring("over the limit of 10000000")))
		Expect(conditionOf(tc, mcpv1alpha1.ConditionStalled)()).To(Equal("True/InvalidPolicy"))
	})

	It("is refused by the API server where the schema can tell", func() {
		ns := newNamespace()
		create := func(rules ...mcpv1alpha1.PolicyRule) error {
			return k8sClient.Create(ctx, &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "bad-"},
				Spec: mcpv1alpha1.ToolCollectionSpec{Servers: byLabels(team), Policy: &mcpv1alpha1.ToolPolicy{Rules: rules}}})
		}
		Expect(create(mcpv1alpha1.PolicyRule{Name: "a", Effect: "Maybe"})).To(MatchError(
			ContainSubstring(`spec.policy.rules[0].effect: Unsupported value: "Maybe"`)))
		Expect(create(mcpv1alpha1.PolicyRule{Name: "Bad_Name", Effect: mcpv1alpha1.PolicyAllow})).To(MatchError(
			ContainSubstring(`spec.policy.rules[0].name: Invalid value: "Bad_Name"`)))
		Expect(create(mcpv1alpha1.PolicyRule{Name: "a", Effect: mcpv1alpha1.PolicyAllow},
			mcpv1alpha1.PolicyRule{Name: "a", Effect: mcpv1alpha1.PolicyDeny})).To(MatchError(
			ContainSubstring(`spec.policy.rules[1]: Duplicate value`)))
		Expect(create(mcpv1alpha1.PolicyRule{Name: "long", Effect: mcpv1alpha1.PolicyAllow,
			Expression: strings.Repeat("a", 2049)})).To(MatchError(ContainSubstring("spec.policy.rules[0].expression: Too long")))
	})
})

func TestCollectionPolicy(t *testing.T) {
	valid := onePolicy("a", `caller.name == "x"`)
	invalid := onePolicy("a", `caller.username == "x"`)
	collection := func(generation int64, spec *mcpv1alpha1.ToolPolicy, applied *mcpv1alpha1.AppliedPolicy, conditions ...metav1.Condition) *mcpv1alpha1.ToolCollection {
		tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Generation: generation}}
		tc.Spec.Policy = spec
		tc.Status.AppliedPolicy = applied
		tc.Status.Conditions = conditions
		return tc
	}
	invalidCond := cond(mcpv1alpha1.ConditionPolicyInvalid, "True", mcpv1alpha1.ReasonInvalidPolicy, "old", 1)
	tests := []struct {
		name        string
		tc          *mcpv1alpha1.ToolCollection
		wantApplied *mcpv1alpha1.AppliedPolicy
		wantProblem string // a substring; "" when the policy compiles
	}{
		{"no policy applies nothing", collection(3, nil, &mcpv1alpha1.AppliedPolicy{Generation: 1, Policy: *valid}, invalidCond), nil, ""},
		{"a policy that compiles is applied at its generation", collection(3, valid, nil, invalidCond),
			&mcpv1alpha1.AppliedPolicy{Generation: 3, Policy: *valid}, ""},
		{"the same policy keeps the generation it was applied at", collection(3, valid, &mcpv1alpha1.AppliedPolicy{Generation: 1, Policy: *valid}),
			&mcpv1alpha1.AppliedPolicy{Generation: 1, Policy: *valid}, ""},
		{"another policy is applied at its generation", collection(3, onePolicy("b", "true"), &mcpv1alpha1.AppliedPolicy{Generation: 1, Policy: *valid}),
			&mcpv1alpha1.AppliedPolicy{Generation: 3, Policy: *onePolicy("b", "true")}, ""},
		{"a policy that does not compile keeps the applied one", collection(3, invalid, &mcpv1alpha1.AppliedPolicy{Generation: 1, Policy: *valid}),
			&mcpv1alpha1.AppliedPolicy{Generation: 1, Policy: *valid}, "undefined field 'username'; the catalog enforces the policy of generation 1 (status.appliedPolicy) until it is fixed"},
		{"a policy that never compiled denies every call", collection(3, invalid, nil, invalidCond), nil,
			"; no earlier policy compiled, so the catalog denies every call of this collection until it is fixed"},
		{"in mode Audit, a policy that never compiled only records denials", collection(3, auditing(invalid), nil), nil,
			"; no earlier policy compiled, so the catalog records every call of this collection as denied (mode Audit) until it is fixed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problem := collectionPolicy(tt.tc)
			if got := tt.tc.Status.AppliedPolicy; (got == nil) != (tt.wantApplied == nil) ||
				got != nil && (got.Generation != tt.wantApplied.Generation || !reflect.DeepEqual(got.Policy, tt.wantApplied.Policy)) {
				t.Errorf("appliedPolicy %+v, want %+v", got, tt.wantApplied)
			}
			c := meta.FindStatusCondition(tt.tc.Status.Conditions, mcpv1alpha1.ConditionPolicyInvalid)
			switch {
			case tt.wantProblem == "" && (problem != "" || c != nil):
				t.Errorf("problem %q, condition %+v; want none", problem, c)
			case tt.wantProblem != "" && !strings.Contains(problem, tt.wantProblem):
				t.Errorf("problem %q, want it to contain %q", problem, tt.wantProblem)
			case tt.wantProblem != "" && (c == nil || c.Message != problem || c.ObservedGeneration != tt.tc.Generation):
				t.Errorf("condition %+v, want it to say %q at generation %d", c, problem, tt.tc.Generation)
			}
		})
	}
}

// auditing is p in mode Audit.
func auditing(p *mcpv1alpha1.ToolPolicy) *mcpv1alpha1.ToolPolicy {
	p = p.DeepCopy()
	p.Mode = mcpv1alpha1.PolicyAudit
	return p
}

func TestCollectionPolicyDoesNotAliasSpec(t *testing.T) {
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	tc.Spec.Policy = onePolicy("a", "true")
	collectionPolicy(tc)
	tc.Spec.Policy.Rules[0].Name = "changed"
	if got := tc.Status.AppliedPolicy.Policy.Rules[0].Name; got != "a" {
		t.Errorf("appliedPolicy follows a change of the spec: %q", got)
	}
}

func TestCollectionPolicyProblemIsClipped(t *testing.T) {
	long := &mcpv1alpha1.ToolPolicy{}
	for i := range 2 {
		long.Rules = append(long.Rules, mcpv1alpha1.PolicyRule{Name: fmt.Sprintf("r%d", i), Effect: mcpv1alpha1.PolicyAllow,
			Expression: strings.Repeat("caller.username == 'x' && ", 90) + "true"})
	}
	tc := &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	tc.Spec.Policy = long
	problem := collectionPolicy(tc)
	if len(problem) > maxPolicyProblem+200 || !strings.HasSuffix(problem, "until it is fixed") {
		t.Errorf("a problem of %d bytes, ending %q", len(problem), problem[max(len(problem)-80, 0):])
	}
}

func TestCollectionPolicyEvents(t *testing.T) {
	const msg = "spec.policy.rules[0] (a): expression line 1, column 8: undefined field 'username'; no earlier policy compiled"
	invalid := func(message string) *mcpv1alpha1.ToolCollection {
		c := &mcpv1alpha1.ToolCollection{}
		c.Status.Conditions = []metav1.Condition{
			cond(mcpv1alpha1.ConditionPolicyInvalid, "True", mcpv1alpha1.ReasonInvalidPolicy, message, 1),
			cond(mcpv1alpha1.ConditionStalled, "True", mcpv1alpha1.ReasonInvalidPolicy, message, 1),
			cond(mcpv1alpha1.ConditionReady, "False", mcpv1alpha1.ReasonInvalidPolicy, message, 1),
		}
		return c
	}
	valid := &mcpv1alpha1.ToolCollection{}
	valid.Status.Conditions = []metav1.Condition{cond(mcpv1alpha1.ConditionReady, "True", mcpv1alpha1.ReasonMenuResolved, "1 tools", 1)}
	specAndPolicy := invalid(msg)
	specAndPolicy.Status.Conditions[1] = cond(mcpv1alpha1.ConditionStalled, "True", mcpv1alpha1.ReasonInvalidSpec, "bad glob", 1)
	tests := []struct {
		name          string
		before, after *mcpv1alpha1.ToolCollection
		want          []string
	}{
		{"a policy that turns invalid warns once", valid, invalid(msg), []string{"Warning InvalidPolicy Resolve " + msg}},
		{"one that stays invalid alike does not warn again", invalid(msg), invalid(msg), nil},
		{"one invalid otherwise warns again", invalid(msg), invalid(msg + "!"), []string{"Warning InvalidPolicy Resolve " + msg + "!"}},
		{"a fixed policy says nothing", invalid(msg), valid, nil},
		{"an invalid spec still warns beside it", valid, specAndPolicy,
			[]string{"Warning InvalidSpec Resolve bad glob", "Warning InvalidPolicy Resolve " + msg}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range collectionEvents(tt.before, tt.after) {
				got = append(got, fmt.Sprintf("%s %s %s %s", e.eventType, e.reason, e.action, e.message))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}
