package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// Which of the server's requests a client's declared capabilities admit.
func TestClientCapabilitiesAdmitRequests(t *testing.T) {
	const (
		form     = `{"message":"name?","requestedSchema":{"type":"object"}}`
		formMode = `{"mode":"form","message":"name?","requestedSchema":{"type":"object"}}`
		url      = `{"mode":"url","message":"open","url":"https://example.com","elicitationId":"1"}`
		sampling = `{"messages":[],"maxTokens":1}`
	)
	tests := []struct {
		name   string
		caps   string
		method string
		params string
		want   bool
	}{
		{"elicitation {} means form mode", `{"elicitation":{}}`, "elicitation/create", form, true},
		{"an explicit form mode request too", `{"elicitation":{}}`, "elicitation/create", formMode, true},
		{"but not URL mode", `{"elicitation":{}}`, "elicitation/create", url, false},
		{"form declared", `{"elicitation":{"form":{}}}`, "elicitation/create", form, true},
		{"URL declared", `{"elicitation":{"form":{},"url":{}}}`, "elicitation/create", url, true},
		{"URL only is not form", `{"elicitation":{"url":{}}}`, "elicitation/create", form, false},
		{"URL only admits URL", `{"elicitation":{"url":{}}}`, "elicitation/create", url, true},
		{"sampling declared", `{"sampling":{}}`, "sampling/createMessage", sampling, true},
		{"sampling is not elicitation", `{"sampling":{}}`, "elicitation/create", form, false},
		{"elicitation is not sampling", `{"elicitation":{}}`, "sampling/createMessage", sampling, false},
		{"nothing declared", `{}`, "sampling/createMessage", sampling, false},
		{"null is not declared", `{"sampling":null}`, "sampling/createMessage", sampling, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caps := parseClientCaps(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":` + tt.caps + `}`))
			has, _, err := requirement(message{Method: tt.method, Params: json.RawMessage(tt.params)})
			if err != nil {
				t.Fatal(err)
			}
			if got := has(caps); got != tt.want {
				t.Errorf("capabilities %s admit %s %s: %v, want %v", tt.caps, tt.method, tt.params, got, tt.want)
			}
		})
	}
	if _, _, err := requirement(message{Method: "elicitation/create", Params: json.RawMessage(`{"mode":"telepathy"}`)}); err == nil ||
		err.Error() != `elicitation mode "telepathy" is neither form nor url` {
		t.Errorf("an unknown mode: %v", err)
	}
}

// Relayed requests are bounded per call, leave the table when answered,
// cancelled by the server or ended with their call, and only the session
// asked can answer.
func TestRelaysAreBoundedAndRemovedWhenDone(t *testing.T) {
	u := newUpstream(DefaultOptions(), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	s := newSession("s", false, time.Now())
	s.setInitialized("2025-11-25", clientCaps{sampling: true})
	c := &call{id: 1, session: s, request: message{Method: "tools/call"}, reply: make(chan reply, 1), asks: make(chan []byte, askQueue)}
	u.calls[c.id] = c
	proc := &child{queue: make(chan outgoing, 16), reaped: make(chan struct{})}
	sent := func() string { return string((<-proc.queue).msg) }
	ask := func(i int) {
		u.relayRequest(proc, message{ID: json.RawMessage(fmt.Sprint(i)), Method: "sampling/createMessage", Params: json.RawMessage(`{"messages":[],"maxTokens":1}`)})
	}
	for i := range maxCallRelays + 1 {
		ask(i)
	}
	if len(u.relays) != maxCallRelays || len(c.asks) != maxCallRelays || c.relays != maxCallRelays {
		t.Fatalf("%d relays, %d queued, %d counted; want the first %d only", len(u.relays), len(c.asks), c.relays, maxCallRelays)
	}
	if got, want := sent(), `{"jsonrpc":"2.0","id":8,"error":{"code":-32016,"message":"mcp-bridge: the client of this call has 8 requests of the MCP server to answer already, the most the bridge relays for one call"}}`; got != want {
		t.Errorf("the server's ninth request was answered %s, want %s", got, want)
	}
	first := string(<-c.asks)
	if want := `{"jsonrpc":"2.0","id":"bridge-relay-1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`; first != want {
		t.Errorf("the client is sent %s, want %s", first, want)
	}

	other := newSession("o", false, time.Now())
	answer := func(s *session, id string) bool {
		known, _ := u.answerRelayed(context.Background(), s, message{ID: json.RawMessage(id), Result: json.RawMessage(`{}`)})
		return known
	}
	if answer(other, `"bridge-relay-1"`) || answer(s, `"bridge-relay-99"`) || answer(s, `1`) {
		t.Error("an answer from another session, or with an id never relayed, was taken")
	}
	if !answer(s, `"bridge-relay-1"`) {
		t.Fatal("the asked session's answer was refused")
	}
	if got := sent(); got != `{"jsonrpc":"2.0","id":0,"result":{}}` {
		t.Errorf("the server got %s; want the answer under its own id", got)
	}
	if answer(s, `"bridge-relay-1"`) {
		t.Error("a second answer was taken")
	}

	u.relayCancelled(proc, json.RawMessage(`{"requestId":1,"reason":"no longer needed"}`))
	if _, ok := u.relays["bridge-relay-2"]; ok || c.relays != maxCallRelays-2 {
		t.Errorf("after the server's cancellation: %d relays (%d counted)", len(u.relays), c.relays)
	}
	var cancel string
	for len(c.asks) > 0 {
		cancel = string(<-c.asks)
	}
	if !strings.Contains(cancel, `"method":"notifications/cancelled"`) || !strings.Contains(cancel, `"requestId":"bridge-relay-2"`) {
		t.Errorf("the client was last sent %s; want the cancellation under the bridge's id", cancel)
	}

	delete(u.calls, c.id)
	u.endRelays(c, "the call ended")
	if len(u.relays) != 0 || c.relays != 0 {
		t.Errorf("%d relays left after their call ended", len(u.relays))
	}
	var ended, want []string
	for i := 2; i < maxCallRelays; i++ { // 0 was answered, 1 cancelled by the server
		ended = append(ended, sent())
		want = append(want, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32017,"message":"mcp-bridge: the call ended"}}`, i))
	}
	slices.Sort(ended)
	if !slices.Equal(ended, want) {
		t.Errorf("the server got %v, want %v", ended, want)
	}
}

// A call the bridge ended but the child never answered still counts when
// the child asks: its request could be for that call, so it is refused
// rather than shown to the client of the one call still in flight; once
// the child answers the ended call, or its time is up, it no longer
// counts.
func TestEndedCallsTheChildMayStillAskFor(t *testing.T) {
	u := newUpstream(DefaultOptions(), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	proc := &child{queue: make(chan outgoing, 16), reaped: make(chan struct{})}
	u.proc = proc
	session := func(name string) *session {
		s := newSession(name, false, time.Now())
		s.setInitialized("2025-11-25", clientCaps{sampling: true})
		return s
	}
	ended := &call{id: 1, session: session("a"), request: message{Method: "tools/call"}, reply: make(chan reply, 1), asks: make(chan []byte, askQueue)}
	running := &call{id: 2, session: session("b"), request: message{Method: "tools/call"}, reply: make(chan reply, 1), asks: make(chan []byte, askQueue)}
	u.calls[ended.id], u.calls[running.id] = ended, running
	if !u.abandon(ended, "the client stopped waiting") {
		t.Fatal("the call was not in flight")
	}
	<-proc.queue // the child is told of the cancel
	ask := func(id int) string {
		u.relayRequest(proc, message{ID: json.RawMessage(fmt.Sprint(id)), Method: "sampling/createMessage", Params: json.RawMessage(`{"messages":[],"maxTokens":1}`)})
		select {
		case m := <-proc.queue:
			return string(m.msg)
		default:
			return "" // relayed: nothing went back to the child
		}
	}
	if got := ask(10); !strings.Contains(got, "1 of them ended by the bridge but not answered by the MCP server") || len(running.asks) != 0 {
		t.Errorf("the child asked while an ended call lingered: it was told %q, the running call's client got %d requests", got, len(running.asks))
	}
	u.finish(ended.id, reply{result: json.RawMessage(`{}`)}) // the child answers the ended call after all
	if got := ask(11); got != "" || len(running.asks) != 1 {
		t.Errorf("after the child answered the ended call: it was told %q, the running call's client got %d requests", got, len(running.asks))
	}

	u.mu.Lock()
	u.lingering[3] = lingering{proc: proc, until: time.Now().Add(-time.Second)}
	u.lingering[4] = lingering{proc: &child{}, until: time.Now().Add(time.Minute)}
	n := u.lingeringCalls()
	u.mu.Unlock()
	if n != 0 || len(u.lingering) != 0 {
		t.Errorf("%d lingering calls counted, %d kept; a call whose time is up or whose child exited counts for nothing", n, len(u.lingering))
	}
}
