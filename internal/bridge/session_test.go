package bridge

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

func TestSessionLogLevel(t *testing.T) {
	tests := []struct {
		name    string
		set     string // "" leaves the level unset
		message string
		want    bool
	}{
		{"unset passes everything", "", "debug", true},
		{"a level passes itself", "warning", "warning", true},
		{"and what is more severe", "warning", "error", true},
		{"but not what is less", "warning", "info", false},
		{"notifications that are no log messages always pass", "emergency", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession("s", false, time.Now())
			if tt.set != "" {
				s.setLogLevel(tt.set)
			}
			if got := s.wants(wire.LogLevelRank(tt.message)); got != tt.want {
				t.Errorf("wants(%q) = %v, want %v", tt.message, got, tt.want)
			}
		})
	}
}

// The child is asked for the most verbose level any session wants, so that
// each session can filter down to its own.
func TestSetLevelAsksTheChildForTheMostVerbose(t *testing.T) {
	u := newUpstream(DefaultOptions(), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	a, b := newSession("a", false, time.Now()), newSession("b", false, time.Now())
	steps := []struct {
		session *session
		level   string
		sent    string
	}{
		{a, "error", "error"},
		{b, "info", "info"},
		{a, "critical", "info"},
		{b, "debug", "debug"},
	}
	for _, step := range steps {
		params, err := u.paramsFor(step.session, message{Method: "logging/setLevel", Params: json.RawMessage(`{"level":"` + step.level + `"}`)})
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Level string }
		_ = json.Unmarshal(params, &p)
		if p.Level != step.sent {
			t.Errorf("after %s asked for %s the child was asked for %s, want %s", step.session.id, step.level, p.Level, step.sent)
		}
	}
	if a.wants(wire.LogLevelRank("error")) || !a.wants(wire.LogLevelRank("alert")) {
		t.Error("session a does not filter at critical")
	}
	if _, err := u.paramsFor(a, message{Method: "logging/setLevel", Params: json.RawMessage(`{"level":"loud"}`)}); err == nil {
		t.Error("an unknown level was accepted")
	}
}

// TestACancelReachesACallWaitingForTheNextChild: a request the exited
// child never got waits to be sent to the next one; a cancel that comes
// meanwhile ends it there, and it is never sent.
func TestACancelReachesACallWaitingForTheNextChild(t *testing.T) {
	u := newUpstream(DefaultOptions(), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	s := newSession("a", false, time.Now())
	c := &call{id: 1, session: s, request: message{ID: json.RawMessage(`7`), Method: "tools/call"}, reply: make(chan reply, 1)}
	u.calls[c.id] = c
	u.setDown("exited", errorReply(codeServerExited, "exited"))
	if r := <-c.reply; !r.resend {
		t.Fatalf("the call was answered %s, not handed back to be sent on", r.err)
	}
	// The window: handed back, not yet sent on.
	u.cancel(s, json.RawMessage(`{"requestId":7}`))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next, r, ok := u.resend(ctx, c)
	if next != nil || !ok || !strings.Contains(string(r.err), "cancelled by the client") {
		t.Fatalf("sent on: %v; answered %v with %s; want the cancel's answer, not sent", next != nil, ok, r.err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.calls) != 0 {
		t.Errorf("%d calls left behind", len(u.calls))
	}
}
