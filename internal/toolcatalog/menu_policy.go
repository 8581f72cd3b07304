package toolcatalog

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"k8s.io/utils/lru"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/policy"
)

// A collection's spec.policy in its menus. The collection's view carries
// the compiled policy; each caller is served a view of its own, narrowed
// to the tools the policy could let them call (policy.MayCall: rules that
// do not read arguments are decided here, the others per call). Callers'
// views are kept with the collection's view, per caller, and shared among
// callers who are left the same tools, with their renderings; searches
// rank with the collection's index. MCP tools/list pages are built for
// each request (mcp_list.go). Calls are decided in the call pipeline
// (call_policy.go).

// policies compiles the collections' policies, each once.
type policies struct{ cache *policy.Cache }

// maxCompiledPolicies bounds the policies kept compiled: a collection's
// current and last applied one, for as many collections.
const maxCompiledPolicies = 1024

func newPolicies() *policies { return &policies{cache: policy.NewCache(maxCompiledPolicies)} }

// of is the policy the catalog enforces for a collection: spec.policy
// when it compiles, else the last one that did (status.appliedPolicy),
// else one that denies every call. Every replica decides alike, from the
// same object.
func (ps *policies) of(tc *mcpv1alpha1.ToolCollection) *policy.Policy {
	if tc.Spec.Policy == nil {
		return nil
	}
	if p, err := ps.cache.Compile(tc.Spec.Policy); err == nil {
		return p
	}
	if applied := tc.Status.AppliedPolicy; applied != nil {
		if p, err := ps.cache.Compile(&applied.Policy); err == nil {
			return p
		}
	}
	return policy.DenyAll("the collection's spec.policy does not compile and no earlier policy did; see its PolicyInvalid condition", tc.Spec.Policy.Mode)
}

// guard is a collection's policy as its views hold it: the compiled
// policy, the plans of its callers' calls, and, in the collection's own
// view, the views its callers were served; in a caller's view, that
// view's renderings.
type guard struct {
	policy  *policy.Policy
	plans   *lru.Cache
	callers *callerViews
	renders sync.Map
}

// perCaller reports whether the view's policy serves each caller a view
// of its own (mode Enforce).
func (vw *view) perCaller() bool { return vw.guard != nil && vw.guard.policy.Enforced() }

// callerViews are the views a collection's callers were served under its
// policy, by caller identity, and one per set of tools left.
type callerViews struct {
	byCaller *lru.Cache
	mu       sync.Mutex
	bySet    map[string]*view
}

// A collection's view keeps at most maxPolicyViews distinct views, and
// which of them its last maxPolicyCallers callers were served; a caller
// whose view is not one of those kept gets one built for it each time.
// Both go with the collection's view, at the next change.
const (
	maxPolicyCallers = 1024
	maxPolicyViews   = 64
)

func newCallerViews() *callerViews {
	return &callerViews{byCaller: lru.New(maxPolicyCallers), bySet: map[string]*view{}}
}

// anonymous is the caller a policy reads when the catalog does not
// authenticate callers: no name, no groups.
var anonymous = &policy.Caller{Extra: map[string][]string{}}

// forCaller is the view the caller is served: vw itself when the policy
// leaves them every tool or only audits, or when vw is a caller's view
// already.
func (vw *view) forCaller(who *caller) *view {
	if !vw.perCaller() || vw.base != nil {
		return vw
	}
	input, key := anonymous, ""
	if who != nil {
		input, key = who.policy, who.identity
	}
	if got, ok := vw.guard.callers.byCaller.Get(key); ok {
		return got.(*view)
	}
	narrowed := vw.narrow(input)
	cv := vw.guard.callers
	cv.mu.Lock()
	shared, kept := cv.bySet[narrowed.revision]
	switch {
	case kept:
		narrowed = shared
	case len(cv.bySet) < maxPolicyViews:
		cv.bySet[narrowed.revision], kept = narrowed, true
	}
	cv.mu.Unlock()
	if kept {
		cv.byCaller.Add(key, narrowed)
	}
	return narrowed
}

// narrow is vw with only the tools the policy could let the caller call.
func (vw *view) narrow(input *policy.Caller) *view {
	var hidden []string
	mayCall := func(e *menu.Entry) bool {
		if vw.guard.policy.MayCall(input, policyTool(e)) {
			return true
		}
		hidden = append(hidden, e.Name)
		return false
	}
	tools := keepEntries(vw.menu.Tools, mayCall)
	withheld := keepEntries(vw.menu.Withheld, mayCall)
	if len(hidden) == 0 {
		return vw
	}
	m := vw.menu
	m.Tools, m.Withheld = tools, withheld
	narrowed := &view{menu: m, base: vw, guard: &guard{policy: vw.guard.policy, plans: vw.guard.plans}, exposure: vw.exposure,
		revision: hashParts(append([]string{vw.revision}, hidden...)...),
		byName:   make(map[string]*menu.Entry, len(tools)), withheld: make(map[string]*menu.Entry, len(withheld))}
	for i := range m.Tools {
		narrowed.byName[m.Tools[i].Name] = &m.Tools[i]
	}
	for i := range m.Withheld {
		narrowed.withheld[m.Withheld[i].Name] = &m.Withheld[i]
	}
	// Nothing of a hidden tool is told, not even that its name is
	// contested or unapproved.
	narrowed.menu.Refused = keepEntries(vw.menu.Refused, func(e *menu.Entry) bool { return narrowed.byName[e.Name] != nil })
	narrowed.menu.Conflicts = nil
	for _, c := range vw.menu.Conflicts {
		if narrowed.byName[c.Name] != nil {
			narrowed.menu.Conflicts = append(narrowed.menu.Conflicts, c)
		}
	}
	narrowed.menu.Unapproved = nil
	for _, u := range vw.menu.Unapproved {
		if narrowed.byName[u.Name] != nil {
			narrowed.menu.Unapproved = append(narrowed.menu.Unapproved, u)
		}
	}
	narrowed.exposure.AlwaysInclude = nil
	for _, e := range vw.exposure.AlwaysInclude {
		if narrowed.byName[e.Name] != nil {
			narrowed.exposure.AlwaysInclude = append(narrowed.exposure.AlwaysInclude, e)
		}
	}
	narrowed.mcpRevision = mcpRevisionOf(narrowed.revision, narrowed.exposure)
	return narrowed
}

func keepEntries(entries []menu.Entry, keep func(*menu.Entry) bool) []menu.Entry {
	var kept []menu.Entry
	for i := range entries {
		if keep(&entries[i]) {
			kept = append(kept, entries[i])
		}
	}
	return kept
}

// policyTool is a menu's tool as a policy reads it.
func policyTool(e *menu.Entry) *policy.Tool {
	return &policy.Tool{Name: e.Name, OriginalName: e.Tool.OriginalName, Server: e.Server, Title: titleOf(e),
		Annotations: policy.AnnotationsOf(e.Tool.Annotations)}
}

// maxPolicyPlans bounds the plans a collection's view keeps: a caller's
// first call of a tool decides what the caller and the tool decide, and
// their next calls evaluate only the rules that read the arguments.
const maxPolicyPlans = 4096

// planFor is the policy's plan for the caller and a tool of the view.
func (vw *view) planFor(who *caller, e *menu.Entry) *policy.Plan {
	input, identity := anonymous, ""
	if who != nil {
		input, identity = who.policy, who.identity
	}
	key := string(menu.AppendPart([]byte(identity), e.Name))
	if got, ok := vw.guard.plans.Get(key); ok {
		return got.(*policy.Plan)
	}
	plan := vw.guard.policy.Plan(input, policyTool(e))
	vw.guard.plans.Add(key, plan)
	return plan
}

// rendering is a caller's view in a format, rendered on first use.
func (vw *view) rendering(format string) *rendered {
	if got, ok := vw.guard.renders.Load(format); ok {
		return got.(*rendered)
	}
	got, _ := vw.guard.renders.LoadOrStore(format, render(vw, format))
	return got.(*rendered)
}

// hashParts is a digest of the parts, none of which can be mistaken for
// another's.
func hashParts(parts ...string) string {
	h := sha256.New()
	var buf []byte
	for _, p := range parts {
		buf = menu.AppendPart(buf[:0], p)
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}
