package policy

import (
	"reflect"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// The CEL environment of every rule: the three variables, typed, and the
// libraries Kubernetes' own CEL environments offer that apply here
// (strings, sets, lists, optional values). Built once: it is immutable
// and safe for concurrent use.

// Caller is who makes the call, as the catalog authenticated them.
type Caller struct {
	Name   string              `cel:"name"`
	UID    string              `cel:"uid"`
	Groups []string            `cel:"groups"`
	Extra  map[string][]string `cel:"extra"`
	// Issuer is the OpenID issuer that vouched for the caller; empty for a
	// Kubernetes token.
	Issuer string `cel:"issuer"`
}

// Tool is the called tool.
type Tool struct {
	// Name is the exposed name in the collection.
	Name string `cel:"name"`
	// OriginalName is its name on its server.
	OriginalName string `cel:"originalName"`
	// Server is the MCPServer's name.
	Server      string      `cel:"server"`
	Title       string      `cel:"title"`
	Annotations Annotations `cel:"annotations"`
}

// Annotations are a tool's MCP hints, with MCP's defaults for hints the
// server did not give (see AnnotationsOf).
type Annotations struct {
	ReadOnlyHint    bool `cel:"readOnlyHint"`
	DestructiveHint bool `cel:"destructiveHint"`
	IdempotentHint  bool `cel:"idempotentHint"`
	OpenWorldHint   bool `cel:"openWorldHint"`
}

// CostLimit bounds the cost of one expression, in CEL cost units: one
// whose estimated worst case, over the largest inputs the policy reads,
// exceeds it does not compile. Kubernetes bounds the estimated cost of a
// CRD validation rule by the same figure. An expression at the limit,
// over the largest arguments, evaluates in about 90 ms on one core
// (docs/policy.md); the usual ones in microseconds.
const CostLimit = 10_000_000

// The sizes the cost estimate assumes for the inputs: a call's arguments
// are at most MaxArgumentsSize bytes of JSON (larger ones are not read:
// see decodeArguments), and a caller's and a tool's strings and lists at
// most maxIdentitySize.
const (
	MaxArgumentsSize = 1 << 20
	maxIdentitySize  = 1024
)

var environment = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[Caller](), reflect.TypeFor[Tool](), reflect.TypeFor[Annotations](), ext.ParseStructTags(true)),
		cel.Variable("caller", cel.ObjectType("policy.Caller")),
		cel.Variable("tool", cel.ObjectType("policy.Tool")),
		cel.Variable("arguments", cel.MapType(cel.StringType, cel.DynType)),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Lists(),
	)
})

// estimator gives the cost estimate the sizes of the inputs it cannot see.
type estimator struct{}

func (estimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	path := n.Path()
	if len(path) == 0 {
		return nil
	}
	switch path[0] {
	case "arguments":
		return &checker.SizeEstimate{Min: 0, Max: MaxArgumentsSize}
	case "caller", "tool":
		return &checker.SizeEstimate{Min: 0, Max: maxIdentitySize}
	}
	return nil
}

func (estimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// activation is one evaluation's variables. arguments is nil for an
// evaluation at list time, where it is unknown.
type activation struct {
	caller    *Caller
	tool      *Tool
	arguments map[string]any
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "caller":
		return a.caller, true
	case "tool":
		return a.tool, true
	case "arguments":
		if a.arguments == nil {
			return nil, false
		}
		return a.arguments, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }
