package mcpclient

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// streamWatch hears about a session's stream for notifications: the GET
// of Streamable HTTP before 2026-07-28, the subscriptions/listen stream in
// 2026-07-28. listening says the server will send list changes on it; once
// it was open, failing to open the GET again means the server is
// unreachable or forgot the session. A stream that never opened is the
// library's to retry or give up on (servers may not offer one).
type streamWatch struct {
	lost      func(error)
	listening atomic.Bool
	// settled is closed once the stream's first attempt has an outcome.
	settled    chan struct{}
	settleOnce sync.Once
	// version is the negotiated revision, for the GET's
	// MCP-Protocol-Version header; versionKnown is closed once it is set.
	version      atomic.Value
	versionKnown chan struct{}
	versionOnce  sync.Once
}

func newStreamWatch() *streamWatch {
	return &streamWatch{settled: make(chan struct{}), versionKnown: make(chan struct{})}
}

func (w *streamWatch) settle() { w.settleOnce.Do(func() { close(w.settled) }) }

// knowVersion records the negotiated revision.
func (w *streamWatch) knowVersion(v string) {
	w.version.Store(v)
	w.versionOnce.Do(func() { close(w.versionKnown) })
}

func (w *streamWatch) observe(req *http.Request, resp *http.Response, err error) {
	if w == nil {
		return
	}
	defer w.settle()
	switch {
	case err == nil && resp.StatusCode < 300:
		w.listening.Store(true)
	case w.lost == nil || !w.listening.Load():
	case err != nil && req.Context().Err() == nil:
		w.lost(err)
	case err == nil && resp.StatusCode == http.StatusNotFound:
		w.lost(errSessionForgotten)
	}
}

// withVersion gives a GET the MCP-Protocol-Version header the library may
// not have set yet: its listening stream can start before it records the
// version initialize negotiated.
func (w *streamWatch) withVersion(req *http.Request) *http.Request {
	if w == nil || req.Header.Get("MCP-Protocol-Version") != "" {
		return req
	}
	select {
	case <-w.versionKnown:
	case <-time.After(time.Second):
		return req
	case <-req.Context().Done():
		return req
	}
	v, _ := w.version.Load().(string)
	if v == "" || v == mcp.ProtocolVersion20241105 {
		return req
	}
	req = req.Clone(req.Context())
	req.Header.Set("MCP-Protocol-Version", v)
	return req
}
