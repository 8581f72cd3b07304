package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// A 2026-07-28 server that keeps asking: each round's questions are asked
// through OnRequest and sent back with the state; after maxInputRounds
// answers the last "input_required" is given as it is; a refused question
// ends the call with the refusal.
func TestInputRequiredRoundsAreAnsweredAndBounded(t *testing.T) {
	var mu sync.Mutex
	var sent []string // each call's params as the server got them
	backend := startGoSDK(t, testmcp.GoSDKOnly2026)
	url := front(t, backend.URL(), func(w http.ResponseWriter, r *http.Request, pass http.Handler) {
		if r.Header.Get("Mcp-Method") != "tools/call" {
			pass.ServeHTTP(w, r)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		sent = append(sent, string(req.Params))
		round := len(sent)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","requestState":"state-%d",`+
			`"inputRequests":{"b":{"method":"sampling/createMessage","params":{"maxTokens":%d}},"a":{"method":"elicitation/create","params":{"message":"round %d"}}}}}`,
			req.ID, round, round, round)
	}, nil)
	s := connectT(t, Target{URL: url}, nil)

	var asked []string
	answer := func(_ context.Context, method string, params json.RawMessage) Answer {
		asked = append(asked, method+" "+string(params))
		return Answer{Result: json.RawMessage(`{"n":` + fmt.Sprint(len(asked)) + `}`)}
	}
	result, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{OnRequest: answer})
	if err != nil {
		t.Fatal(err)
	}
	if result.ResultType != InputRequired || len(sent) != maxInputRounds || len(asked) != 2*(maxInputRounds-1) {
		t.Fatalf("%d calls sent, %d questions asked, result %q; want %d calls, the questions of all but the last answered, and the last answer as it came",
			len(sent), len(asked), result.ResultType, maxInputRounds)
	}
	if asked[0] != `elicitation/create {"message":"round 1"}` || asked[1] != `sampling/createMessage {"maxTokens":1}` {
		t.Errorf("the first round asked %q; want the server's questions in key order, params as sent", asked[:2])
	}
	if !strings.Contains(sent[1], `"inputResponses":{"a":{"n":1},"b":{"n":2}}`) || !strings.Contains(sent[1], `"requestState":"state-1"`) {
		t.Errorf("the second call sent %s; want the answers by key and the first round's state", sent[1])
	}

	refuse := func(context.Context, string, json.RawMessage) Answer {
		return Refusal(-32601, "no user at the keyboard")
	}
	_, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{OnRequest: refuse})
	var refused *InputRefused
	if !errors.As(err, &refused) || refused.Method != "elicitation/create" || refused.Message != "no user at the keyboard" {
		t.Errorf("a refused question ended the call with %v; want an *InputRefused carrying the refusal", err)
	}
}

// A server's requests over the 2024-11-05 SSE transport, which mcp-go
// drops unread, are never invited: nothing is declared there, so a server
// refuses itself at once instead of waiting for an answer.
func TestNothingIsDeclaredOverSSE(t *testing.T) {
	g := startGoSDK(t, testmcp.GoSDKLegacySSE)
	g.AddElicitingTool()
	s := connectT(t, Target{URL: g.URL(), Transport: TransportSSE, Timeout: 20 * time.Second}, nil)
	asked := false
	result, err := s.CallTool(context.Background(), "elicit", json.RawMessage(`{}`), CallOptions{
		OnRequest: func(context.Context, string, json.RawMessage) Answer { asked = true; return Answer{} }})
	if err != nil {
		t.Fatal(err)
	}
	if asked || !result.IsError || !strings.Contains(string(result.Content[0]), "does not support elicitation") {
		t.Errorf("over SSE: asked %v, result %s; want the server to refuse itself, since nothing was declared", asked, result.Content)
	}
}

// A server that sheds load answers "input_required" with a state and
// nothing to ask: the call is sent again with that state, asking the
// caller nothing.
func TestInputRequiredWithOnlyAStateIsSentAgain(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	backend := startGoSDK(t, testmcp.GoSDKOnly2026)
	url := front(t, backend.URL(), func(w http.ResponseWriter, r *http.Request, pass http.Handler) {
		if r.Header.Get("Mcp-Method") != "tools/call" {
			pass.ServeHTTP(w, r)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		sent = append(sent, string(req.Params))
		first := len(sent) == 1
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if first {
			_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","requestState":"busy-1"}}`, req.ID)
			return
		}
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[{"type":"text","text":"done"}]}}`, req.ID)
	}, nil)
	s := connectT(t, Target{URL: url}, nil)
	asked := 0
	result, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{}`), CallOptions{
		OnRequest: func(context.Context, string, json.RawMessage) Answer { asked++; return Answer{} }})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 2 || !strings.Contains(sent[1], `"requestState":"busy-1"`) || asked != 0 || len(result.Content) != 1 {
		t.Errorf("sent %q, asked the caller %d times, got %s; want the call sent again with the state, nothing asked, and its result", sent, asked, result.Content)
	}
}
