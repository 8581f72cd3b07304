// Package policy compiles a ToolCollection's spec.policy and decides tool
// calls with it: once per call, with the call's arguments, and once per
// caller and tool when a menu is listed, with the arguments unknown. A
// compiled Policy is immutable and safe for concurrent use.
package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/glob"
)

// Policy is a compiled spec.policy.
type Policy struct {
	audit bool
	deny  bool
	rules []rule
	hash  string
}

type rule struct {
	name    string
	allow   bool
	message string
	tools   []string
	servers []string
	hints   *mcpv1alpha1.AnnotationMatch
	// program is the expression, nil without one; partial is the same
	// expression for evaluation with the arguments unknown.
	program, partial cel.Program
	// readsArguments says the expression reads the call's arguments.
	readsArguments bool
}

// Compile compiles and type-checks a policy. Its error names each rule
// that does not compile, where and why, on one line.
func Compile(spec *mcpv1alpha1.ToolPolicy) (*Policy, error) {
	env, err := environment()
	if err != nil {
		return nil, fmt.Errorf("the policy environment: %w", err)
	}
	raw, _ := json.Marshal(spec)
	sum := sha256.Sum256(raw)
	p := &Policy{audit: spec.Mode == mcpv1alpha1.PolicyAudit, deny: spec.Default == mcpv1alpha1.PolicyDeny,
		hash: hex.EncodeToString(sum[:])}
	var problems []string
	seen := map[string]bool{}
	for i := range spec.Rules {
		name := spec.Rules[i].Name
		r, err := compileRule(env, &spec.Rules[i])
		if seen[name] {
			err = errors.Join(fmt.Errorf("name %q is used by an earlier rule", name), err)
		}
		seen[name] = true
		if err != nil {
			problems = append(problems, fmt.Sprintf("spec.policy.rules[%d] (%s): %s", i, name, strings.ReplaceAll(err.Error(), "\n", "; ")))
			continue
		}
		p.rules = append(p.rules, r)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return p, nil
}

func compileRule(env *cel.Env, spec *mcpv1alpha1.PolicyRule) (rule, error) {
	r := rule{name: spec.Name, allow: spec.Effect != mcpv1alpha1.PolicyDeny, message: spec.Message}
	if m := spec.Match; m != nil {
		if p, bad := glob.FirstInvalid(m.Tools); bad {
			return r, fmt.Errorf("match.tools pattern %q is not a valid glob", p)
		}
		r.tools, r.servers, r.hints = m.Tools, m.Servers, m.Annotations
	}
	if strings.TrimSpace(spec.Expression) == "" {
		return r, nil
	}
	ast, iss := env.Compile(spec.Expression)
	if iss.Err() != nil {
		return r, issuesOf(iss)
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return r, fmt.Errorf("expression yields %s, not bool", ast.OutputType())
	}
	cost, err := env.EstimateCost(ast, estimator{})
	if err != nil {
		return r, fmt.Errorf("expression cost cannot be estimated: %w", err)
	}
	if cost.Max > CostLimit {
		return r, fmt.Errorf("expression may cost up to %d, over the limit of %d: bound what it iterates over or matches against", cost.Max, CostLimit)
	}
	// The estimate bounds every evaluation, since the inputs are bounded:
	// no cost is tracked as it runs. cel-go's runtime tracker costs time
	// quadratic in a comprehension's length (an exists over 340,000
	// items of the largest arguments took 2m42s with it, 86 ms without).
	// OptOptimize folds constants and compiles constant regular
	// expressions here, once: a bad one is an error now, not at each call.
	if r.program, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize)); err != nil {
		return r, fmt.Errorf("expression: %w", err)
	}
	if r.partial, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize, cel.OptPartialEval)); err != nil {
		return r, fmt.Errorf("expression: %w", err)
	}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == "arguments" {
			r.readsArguments = true
		}
	}
	return r, nil
}

// issuesOf is the compiler's errors on one line, each with its position.
func issuesOf(iss *cel.Issues) error {
	var parts []string
	for _, e := range iss.Errors() {
		parts = append(parts, fmt.Sprintf("expression line %d, column %d: %s", e.Location.Line(), e.Location.Column()+1, e.Message))
	}
	return errors.New(strings.Join(parts, "; "))
}

// InvalidPolicyRule names the rule of DenyAll in decisions: no rule of a
// spec can have it (rule names are DNS labels).
const InvalidPolicyRule = "(invalid-policy)"

// DenyAll is the policy of a collection whose policy never compiled: it
// denies every call, telling the caller why; in mode Audit (what the
// invalid policy asked for) it only records so.
func DenyAll(message string, mode mcpv1alpha1.PolicyMode) *Policy {
	audit := mode == mcpv1alpha1.PolicyAudit
	hash := "deny-all"
	if audit {
		hash = "deny-all-audit"
	}
	return &Policy{deny: true, audit: audit, rules: []rule{{name: InvalidPolicyRule, message: message}}, hash: hash}
}

// Hash identifies the policy: two policies with the same hash decide
// alike.
func (p *Policy) Hash() string { return p.hash }

// Enforced reports whether the policy refuses what it denies (mode
// Enforce) rather than only recording it (Audit).
func (p *Policy) Enforced() bool { return !p.audit }

// Decision is what the policy decided of one call.
type Decision struct {
	Allowed bool
	// Rule names the rule that decided; empty when the default did.
	Rule string
	// Enforced is false in mode Audit: the call goes ahead whatever was
	// decided.
	Enforced bool
	// Message is what a denied caller is told.
	Message string
}

// Refused reports whether the call is refused: denied and enforced.
func (d Decision) Refused() bool { return !d.Allowed && d.Enforced }

// Decide decides one call: the caller's plan for the tool, decided with
// the call's arguments (read only when a rule that reads them matches the
// tool and cannot be decided without them). The catalog keeps plans, so
// that a caller's later calls of a tool start from Plan.Decide.
func (p *Policy) Decide(caller *Caller, tool *Tool, arguments json.RawMessage) Decision {
	return p.Plan(caller, tool).Decide(arguments)
}

// withoutArguments evaluates the rule with the arguments unknown: true or
// false when its value does not depend on them, unknown when it does.
func (r *rule) withoutArguments(act *activation) (ref.Val, error) {
	known := *act
	known.arguments = nil
	vars, err := cel.PartialVars(&known, cel.AttributePattern("arguments"))
	if err != nil {
		return nil, err
	}
	out, _, err := r.partial.Eval(vars)
	return out, err
}

// MayCall reports whether the policy could allow the caller some call of
// the tool: rules that read arguments and cannot be decided without them
// are passed over when they deny and taken when they allow. In mode Audit
// every tool may be called.
func (p *Policy) MayCall(caller *Caller, tool *Tool) bool {
	return p.Plan(caller, tool).MayCall()
}

// Plan is the policy's decision for one caller and tool, all but what the
// arguments decide: the rules left to evaluate with them, in order, and
// the decision when none of those applies. A caller's calls of a tool
// share one plan (the catalog keeps them), so that a call evaluates only
// the rules that read its arguments.
type Plan struct {
	policy *Policy
	act    activation
	// steps are the rules that apply to the tool, read the arguments and
	// cannot be decided without them, before the rule that decides.
	steps []*rule
	// final is the decision when no step applies: the first rule that
	// applies without the arguments, or the default.
	final Decision
}

// Plan decides what the caller and the tool decide, evaluating each
// expression that reads arguments with them unknown: one whose value does
// not depend on them (true, or false, or an error, either way) is decided
// here like any other.
func (p *Policy) Plan(caller *Caller, tool *Tool) *Plan {
	pl := &Plan{policy: p, act: activation{caller: caller, tool: tool}}
	for i := range p.rules {
		r := &p.rules[i]
		if !r.matches(tool) {
			continue
		}
		if r.program == nil {
			pl.final = p.decided(r, nil)
			return pl
		}
		var out ref.Val
		var err error
		if r.readsArguments {
			out, err = r.withoutArguments(&pl.act)
		} else {
			out, _, err = r.program.Eval(&pl.act)
		}
		switch {
		case err != nil:
			if !r.allow {
				pl.final = p.decided(r, err)
				return pl
			}
		case types.IsUnknown(out):
			pl.steps = append(pl.steps, r)
		case out == types.True:
			pl.final = p.decided(r, nil)
			return pl
		}
	}
	pl.final = p.byDefault()
	return pl
}

// Decide decides a call with these arguments.
func (pl *Plan) Decide(arguments json.RawMessage) Decision {
	if len(pl.steps) == 0 {
		return pl.final
	}
	act := pl.act
	args, argsErr := decodeArguments(arguments)
	act.arguments = args
	for _, r := range pl.steps {
		if argsErr != nil {
			if r.allow {
				continue
			}
			return pl.policy.decided(r, argsErr)
		}
		out, _, err := r.program.Eval(&act)
		switch {
		case err != nil:
			if !r.allow {
				return pl.policy.decided(r, err)
			}
		case out == types.True:
			return pl.policy.decided(r, nil)
		}
	}
	return pl.final
}

// MayCall reports whether some arguments could be allowed: a step that
// allows, or the final decision. In mode Audit every tool may be called.
func (pl *Plan) MayCall() bool {
	if pl.policy.audit {
		return true
	}
	for _, r := range pl.steps {
		if r.allow {
			return true
		}
	}
	return pl.final.Allowed
}

func (p *Policy) decided(r *rule, err error) Decision {
	d := Decision{Allowed: r.allow, Rule: r.name, Enforced: !p.audit}
	switch {
	case r.name == InvalidPolicyRule:
		d.Message = "denied by policy: " + r.message
		return d
	case !r.allow:
		d.Message = "denied by policy rule " + r.name
		if r.message != "" {
			d.Message += ": " + r.message
		}
		if err != nil {
			d.Message += " (its expression could not be evaluated: " + err.Error() + ")"
		}
	}
	return d
}

func (p *Policy) byDefault() Decision {
	d := Decision{Allowed: !p.deny, Enforced: !p.audit}
	if p.deny {
		d.Message = "denied by policy: no rule allows this call"
	}
	return d
}

func (r *rule) matches(t *Tool) bool {
	if len(r.tools) > 0 && !glob.Keep(t.Name, r.tools, nil) {
		return false
	}
	if len(r.servers) > 0 && !contains(r.servers, t.Server) {
		return false
	}
	if h := r.hints; h != nil {
		a := &t.Annotations
		if !hint(h.ReadOnlyHint, a.ReadOnlyHint) || !hint(h.DestructiveHint, a.DestructiveHint) ||
			!hint(h.IdempotentHint, a.IdempotentHint) || !hint(h.OpenWorldHint, a.OpenWorldHint) {
			return false
		}
	}
	return true
}

func hint(want *bool, got bool) bool { return want == nil || *want == got }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// AnnotationsOf are a tool's hints with MCP's defaults for those not
// given: readOnlyHint false, destructiveHint true (false for a read-only
// tool, for which MCP says it has no meaning), idempotentHint false,
// openWorldHint true.
func AnnotationsOf(a *mcpv1alpha1.ToolAnnotations) Annotations {
	out := Annotations{DestructiveHint: true, OpenWorldHint: true}
	if a == nil {
		return out
	}
	out.ReadOnlyHint = a.ReadOnlyHint != nil && *a.ReadOnlyHint
	switch {
	case out.ReadOnlyHint:
		out.DestructiveHint = false
	case a.DestructiveHint != nil:
		out.DestructiveHint = *a.DestructiveHint
	}
	out.IdempotentHint = a.IdempotentHint != nil && *a.IdempotentHint
	if a.OpenWorldHint != nil {
		out.OpenWorldHint = *a.OpenWorldHint
	}
	return out
}
