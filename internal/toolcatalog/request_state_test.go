package toolcatalog

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/menu"
)

// A sealed state opens only on the replica that sealed it, for the same
// caller, endpoint, tool and arguments, before it expires.
func TestRequestStateIsSealedToItsCall(t *testing.T) {
	keys, other := newStateKeys("catalog-a"), newStateKeys("catalog-a")
	now := time.Unix(1_800_000_000, 0)
	binding := stateBinding("alice", "ns/tc", "mcp_x_ask", "ns/x/ask", json.RawMessage(`{"b":1,"a":[1,2],"n":9007199254740993}`))
	sealed := keys.seal("server-state", binding, now)
	if owner, _, _, ok := stateOwner(sealed); !ok || owner != "catalog-a" {
		t.Fatalf("the state names %q (%v); want the pod that sealed it", owner, ok)
	}
	if got, err := keys.open(sealed, stateBinding("alice", "ns/tc", "mcp_x_ask", "ns/x/ask", json.RawMessage(` {"a":[1, 2],"b":1, "n":9007199254740993}`)), now.Add(time.Minute)); err != nil || got.State != "server-state" || got.Parked != "" {
		t.Errorf("the same call, its arguments encoded otherwise: %+v, %v", got, err)
	}
	args := json.RawMessage(`{"a":[1,2],"b":1,"n":9007199254740993}`)
	for name, tt := range map[string]struct {
		keys    *stateKeys
		state   string
		binding string
		at      time.Time
		want    error
	}{
		"another caller":          {keys, sealed, stateBinding("bob", "ns/tc", "mcp_x_ask", "ns/x/ask", args), now, errStateInvalid},
		"another endpoint":        {keys, sealed, stateBinding("alice", "ns/other", "mcp_x_ask", "ns/x/ask", args), now, errStateInvalid},
		"another tool":            {keys, sealed, stateBinding("alice", "ns/tc", "mcp_x_other", "ns/x/ask", args), now, errStateInvalid},
		"another server's tool":   {keys, sealed, stateBinding("alice", "ns/tc", "mcp_x_ask", "ns/y/ask", args), now, errStateInvalid},
		"other arguments":         {keys, sealed, stateBinding("alice", "ns/tc", "mcp_x_ask", "ns/x/ask", json.RawMessage(`{"a":[2,1],"b":1,"n":9007199254740993}`)), now, errStateInvalid},
		"a number past float64's": {keys, sealed, stateBinding("alice", "ns/tc", "mcp_x_ask", "ns/x/ask", json.RawMessage(`{"a":[1,2],"b":1,"n":9007199254740992}`)), now, errStateInvalid},
		"expired":                 {keys, sealed, binding, now.Add(stateTTL + time.Second), errStateExpired},
		"a restarted replica":     {other, sealed, binding, now, errStateInvalid},
		"another replica's":       {newStateKeys("catalog-b"), sealed, binding, now, errStateElsewhere},
		"altered":                 {keys, altered(sealed), binding, now, errStateInvalid},
		"not the catalog's":       {keys, "server-state", binding, now, errStateForeign},
		"the payload of another":  {keys, "mcpop1.catalog-a.e30." + keys.mac("e30"), binding, now, errStateInvalid},
	} {
		if _, err := tt.keys.open(tt.state, tt.binding, tt.at); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", name, err, tt.want)
		}
	}
}

// A parked call's state names the call, and no server state: it is never
// sent to a server as one.
func TestRequestStateOfAParkedCall(t *testing.T) {
	keys := newStateKeys("catalog-a")
	now := time.Now()
	sealed := keys.sealParked("p1", "b", now)
	got, err := keys.open(sealed, "b", now)
	if err != nil || got.Parked != "p1" || got.State != "" {
		t.Fatalf("opened: %+v, %v; want the parked call p1 and no server state", got, err)
	}
	if _, err := keys.open(sealed, "c", now); !errors.Is(err, errStateInvalid) {
		t.Errorf("another binding: %v, want %v", err, errStateInvalid)
	}
}

// altered is state with its MAC's first character changed.
func altered(state string) string {
	i := strings.LastIndexByte(state, '.') + 1
	c := byte('A')
	if state[i] == 'A' {
		c = 'B'
	}
	return state[:i] + string(c) + state[i+1:]
}

// A pod name may hold dots: the state still names it whole.
func TestRequestStateNamesAPodWithDots(t *testing.T) {
	keys := newStateKeys("mcp.operator-7d9f-x2")
	sealed := keys.seal("s", "b", time.Now())
	if owner, _, _, ok := stateOwner(sealed); !ok || owner != "mcp.operator-7d9f-x2" {
		t.Fatalf("the state names %q (%v)", owner, ok)
	}
	if got, err := keys.open(sealed, "b", time.Now()); err != nil || got.State != "s" {
		t.Errorf("opened on the replica that sealed it: %+v, %v", got, err)
	}
}

// A 2026-07-28 caller is given the server's input_required with its
// requests as sent and the state sealed; a load-shedding one (a state,
// nothing asked) has no inputRequests.
func TestInputRequiredAnswer(t *testing.T) {
	m := &mcpHandlers{states: newStateKeys("catalog-a")}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	msg := &rpcMessage{}
	msg.Params.Name = "mcp_x_ask"
	vw := &view{byName: map[string]*menu.Entry{}}
	for name, tt := range map[string]struct {
		asked inputRequired
		want  string
	}{
		"a question":     {inputRequired{requests: json.RawMessage(`{"who":{"method":"elicitation/create","params":{"message":"name?"}}}`), state: "s1"}, `"inputRequests":{"who":{"method":"elicitation/create","params":{"message":"name?"}}},"requestState":"mcpop1.catalog-a.`},
		"load shedding":  {inputRequired{state: "busy"}, `{"resultType":"input_required","requestState":"mcpop1.catalog-a.`},
		"no state given": {inputRequired{requests: json.RawMessage(`{"r":{"method":"roots/list"}}`)}, `{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}}}`},
	} {
		got := string(m.inputRequiredAnswer(r, viewKey{}, msg, vw, &tt.asked))
		if !strings.Contains(got, tt.want) || strings.Contains(got, `"s1"`) || strings.Contains(got, `"busy"`) {
			t.Errorf("%s: %s; want it to hold %s, and the server's state only sealed", name, got, tt.want)
		}
	}
	if problem := inputRequestsProblem("mcp_x_ask", json.RawMessage(`{"a":{"method":"sampling/createMessage","params":{"tools":[]}}}`), asksSampling); !strings.Contains(problem, "sampling.tools") {
		t.Errorf("sampling with tools for a caller that declared sampling alone: %q", problem)
	}
	if problem := inputRequestsProblem("mcp_x_ask", nil, 0); problem != "" {
		t.Errorf("nothing asked: %q", problem)
	}
}
