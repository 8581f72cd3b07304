package mcpclient

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// Relaying what a server says during one call (progress, log messages) to
// that call's caller. Over Streamable HTTP these notifications come on the
// call's own answer stream, so a tap on that stream (see tappedBody) hands
// them to the call that asked; over the legacy SSE transport every message
// shares one stream, so progress is routed by its token and log messages,
// which carry nothing that names their call, are not relayed.

// relay prepares c to bring back what opts asks for, and returns what
// undoes it once the call is over.
func (s *Session) relay(ctx context.Context, c *call, opts CallOptions) (release func()) {
	release = func() {}
	wantLog := opts.OnLog != nil && wire.LogLevelRank(opts.LogLevel) >= 0
	if opts.OnProgress == nil && !wantLog {
		return release
	}
	token := "progress-" + s.nextProgress()
	if opts.OnProgress != nil {
		c.meta["progressToken"] = token
	}
	if wantLog {
		if s.stateless {
			c.meta[mcp.MetaKeyLogLevel] = opts.LogLevel
		} else {
			s.raiseLogLevel(ctx, opts.LogLevel)
		}
	}
	forward := func(method string, params json.RawMessage) {
		switch {
		case method == string(mcp.MethodNotificationProgress) && opts.OnProgress != nil:
			if replaced, ok := withToken(params, token); ok {
				opts.OnProgress(replaced)
			}
		case method == string(mcp.MethodNotificationMessage) && wantLog:
			var msg struct {
				Level string `json:"level"`
			}
			if json.Unmarshal(params, &msg) == nil && wire.LogLevelRank(msg.Level) >= wire.LogLevelRank(opts.LogLevel) {
				opts.OnLog(params)
			}
		}
	}
	if !s.answersOnStream {
		c.tap = forward
		return release
	}
	if opts.OnProgress == nil {
		return release
	}
	s.routesMu.Lock()
	s.routes[token] = forward
	s.routesMu.Unlock()
	return func() {
		s.routesMu.Lock()
		delete(s.routes, token)
		s.routesMu.Unlock()
	}
}

// routeProgress hands a progress notification from the shared stream to
// the call whose token it carries.
func (s *Session) routeProgress(n mcp.JSONRPCNotification) {
	if n.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	params, err := json.Marshal(n.Params)
	if err != nil {
		return
	}
	var tok struct {
		ProgressToken any `json:"progressToken"`
	}
	if json.Unmarshal(params, &tok) != nil {
		return
	}
	token, _ := tok.ProgressToken.(string)
	s.routesMu.Lock()
	forward := s.routes[token]
	s.routesMu.Unlock()
	if forward != nil {
		forward(n.Method, params)
	}
}

// withToken gives progress params back with the caller's view: the token
// is the session's, so it is dropped and set again by whoever relays it.
// ok is false for progress of another call.
func withToken(params json.RawMessage, token string) (json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil {
		return nil, false
	}
	var got string
	if json.Unmarshal(fields["progressToken"], &got) != nil || got != token {
		return nil, false
	}
	delete(fields, "progressToken")
	out, err := json.Marshal(fields)
	return out, err == nil
}

// raiseLogLevel asks a legacy server for log messages down to level, once:
// its level is one for the whole session, so it is set to the most
// verbose any caller asked for, and each call keeps what its caller wants.
// Raises go one at a time (two sent at once could arrive out of order and
// leave the server less verbose than the session believes), each waiting
// no longer than its caller's context: a call that cannot raise the level
// in time goes on without it. A raise the server failed is not tried again
// for levelRetryAfter, so a server that never answers setLevel costs the
// next callers nothing.
func (s *Session) raiseLogLevel(ctx context.Context, level string) {
	if !s.logging {
		return
	}
	select {
	case s.levelLock <- struct{}{}:
		defer func() { <-s.levelLock }()
	case <-ctx.Done():
		return
	}
	if (s.logLevel != "" && wire.LogLevelRank(s.logLevel) <= wire.LogLevelRank(level)) || time.Since(s.levelFailed) < levelRetryAfter {
		return
	}
	if _, err := s.request(ctx, call{method: string(mcp.MethodSetLogLevel), params: map[string]string{"level": level}}, "setting the log level"); err != nil {
		s.levelFailed = time.Now()
		return
	}
	s.logLevel = level
}

// levelRetryAfter is how long a failed raise of the log level is not tried
// again.
const levelRetryAfter = 30 * time.Second

// tappedBody passes an event stream through unchanged and hands each
// notification in it (a message with a method and no id) to tap, and each
// request (a method and an id) to ask; either may be nil.
type tappedBody struct {
	body io.ReadCloser
	tap  func(method string, params json.RawMessage)
	ask  func(id json.RawMessage, method string, params json.RawMessage)
	// events splits what is read into events, made on the first read.
	events *wire.EventSplitter
}

func (t *tappedBody) Read(p []byte) (int, error) {
	n, err := t.body.Read(p)
	if t.events == nil {
		t.events = wire.NewEventSplitter(t.event)
	}
	_, _ = t.events.Write(p[:n])
	return n, err
}

func (t *tappedBody) event(data []byte) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	switch {
	case json.Unmarshal(data, &msg) != nil || msg.Method == "":
	case len(msg.ID) > 0 && string(msg.ID) != "null":
		if t.ask != nil {
			t.ask(msg.ID, msg.Method, msg.Params)
		}
	case t.tap != nil:
		t.tap(msg.Method, msg.Params)
	}
}

func (t *tappedBody) Close() error { return t.body.Close() }
