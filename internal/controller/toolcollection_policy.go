package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/policy"
)

// maxPolicyProblem is the most bytes of the compiler's message a
// condition repeats: one per bad rule, up to 64 rules with expressions of
// 2048 characters could otherwise outgrow a condition's message (32768
// bytes), and the status write would fail on every reconcile. The first
// problems are the ones to fix first anyway.
const maxPolicyProblem = 4096

// compiledPolicies keeps the policies compiled: a collection is
// reconciled after every change to a server of its namespace, and its
// policy changes far less often.
var compiledPolicies = policy.NewCache(1024)

// collectionPolicy compiles spec.policy and records the outcome in
// status: appliedPolicy, the last policy that compiled, which the catalog
// enforces while spec.policy does not compile, and condition
// PolicyInvalid. It returns that condition's message when spec.policy
// does not compile, for Ready and Stalled to repeat, and "" otherwise.
func collectionPolicy(tc *mcpv1alpha1.ToolCollection) (problem string) {
	st := &tc.Status
	if tc.Spec.Policy == nil {
		st.AppliedPolicy = nil
		meta.RemoveStatusCondition(&st.Conditions, mcpv1alpha1.ConditionPolicyInvalid)
		return ""
	}
	if _, err := compiledPolicies.Compile(tc.Spec.Policy); err != nil {
		problem = policyProblem(err, st.AppliedPolicy, tc.Spec.Policy.Mode)
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: mcpv1alpha1.ConditionPolicyInvalid, Status: metav1.ConditionTrue,
			Reason: mcpv1alpha1.ReasonInvalidPolicy, Message: problem, ObservedGeneration: tc.Generation})
		return problem
	}
	// The generation recorded is the one at which this policy was first
	// seen to compile: a later edit elsewhere in the spec leaves
	// appliedPolicy, and status, as they are.
	if st.AppliedPolicy == nil || !equality.Semantic.DeepEqual(st.AppliedPolicy.Policy, *tc.Spec.Policy) {
		st.AppliedPolicy = &mcpv1alpha1.AppliedPolicy{Generation: tc.Generation, Policy: *tc.Spec.Policy.DeepCopy()}
	}
	meta.RemoveStatusCondition(&st.Conditions, mcpv1alpha1.ConditionPolicyInvalid)
	return ""
}

// policyProblem says why spec.policy does not compile and what the
// catalog enforces meanwhile: the last policy that compiled, else a
// denial of every call (only recorded, when the invalid policy asked for
// mode Audit).
func policyProblem(err error, applied *mcpv1alpha1.AppliedPolicy, mode mcpv1alpha1.PolicyMode) string {
	why := clip(err.Error(), maxPolicyProblem)
	switch {
	case applied == nil && mode == mcpv1alpha1.PolicyAudit:
		return why + "; no earlier policy compiled, so the catalog records every call of this collection as denied (mode Audit) until it is fixed"
	case applied == nil:
		return why + "; no earlier policy compiled, so the catalog denies every call of this collection until it is fixed"
	}
	return fmt.Sprintf("%s; the catalog enforces the policy of generation %d (status.appliedPolicy) until it is fixed", why, applied.Generation)
}
