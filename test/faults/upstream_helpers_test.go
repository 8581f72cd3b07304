package faults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck // Ginkgo's DSL reads best dot-imported
)

// fault is how a faultyUpstream misbehaves for one JSON-RPC method.
type fault string

const (
	// hang accepts the request and never answers; it lets go only when
	// the client goes away.
	hang fault = "hang"
	// reset starts an answer and resets the connection halfway.
	reset fault = "reset"
	// invalidJSON answers with a body that is not JSON.
	invalidJSON fault = "invalid-json"
	// hugeBody answers with a 100 MiB JSON body.
	hugeBody fault = "huge-body"
	// endlessStream answers with an event stream of keep-alive comments
	// that never carries the answer.
	endlessStream fault = "endless-stream"
	// endlessEvent answers with one server-sent event that never ends.
	endlessEvent fault = "endless-event"
	// unauthorized answers HTTP 401.
	unauthorized fault = "unauthorized"
)

// padMarker in an answer on an event stream makes the faultyUpstream pad
// that event past the catalog's 16 MiB answer cap.
const padMarker = "PAD-ME"

// faultyUpstream is a real MCP server behind a reverse proxy that injects
// faults into the answers to chosen methods, and counts the connections
// open to it.
type faultyUpstream struct {
	*httptest.Server
	faults sync.Map // method, or tools/call:<tool name> -> fault
	open   atomic.Int64
	hung   atomic.Int64
}

func newFaultyUpstream(target string) *faultyUpstream {
	u := &faultyUpstream{}
	backend, err := url.Parse(target)
	if err != nil {
		panic(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	proxy.FlushInterval = -1
	proxy.ErrorLog = log.New(GinkgoWriter, "faulty upstream: ", 0)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body = &padding{body: resp.Body, lines: bufio.NewReader(resp.Body)}
		}
		return nil
	}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			proxy.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		for _, key := range []string{msg.Method, msg.Method + ":" + msg.Params.Name} {
			if f, ok := u.faults.Load(key); ok {
				u.misbehave(w, r, f.(fault), msg.ID)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	u.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			u.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			u.open.Add(-1)
		}
	}
	u.Start()
	return u
}

// inject makes answers to method misbehave; clear puts them right.
func (u *faultyUpstream) inject(method string, f fault) { u.faults.Store(method, f) }

// injectTool makes answers to calls of one tool misbehave.
func (u *faultyUpstream) injectTool(tool string, f fault) { u.faults.Store("tools/call:"+tool, f) }

// padding passes an event stream through, line by line, padding each line
// that holds padMarker with 17 MiB inside the marker's JSON string.
type padding struct {
	body    io.Closer
	lines   *bufio.Reader
	pending []byte
}

func (p *padding) Read(b []byte) (int, error) {
	for len(p.pending) == 0 {
		line, err := p.lines.ReadBytes('\n')
		if bytes.Contains(line, []byte(padMarker)) {
			line = bytes.Replace(line, []byte(padMarker), append([]byte(padMarker), bytes.Repeat([]byte("x"), 17<<20)...), 1)
		}
		p.pending = line
		if err != nil && len(line) == 0 {
			return 0, err
		}
	}
	n := copy(b, p.pending)
	p.pending = p.pending[n:]
	return n, nil
}

func (p *padding) Close() error               { return p.body.Close() }
func (u *faultyUpstream) clear(method string) { u.faults.Delete(method) }

// openConnections counts the connections clients hold open to it.
func (u *faultyUpstream) openConnections() int64 { return u.open.Load() }

var mib = []byte(strings.Repeat("x", 1<<20))

func (u *faultyUpstream) misbehave(w http.ResponseWriter, r *http.Request, f fault, id json.RawMessage) {
	start := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
	switch f {
	case unauthorized:
		http.Error(w, "who are you?", http.StatusUnauthorized)
	case hang:
		u.hung.Add(1)
		defer u.hung.Add(-1)
		<-r.Context().Done()
	case reset:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, start+"half an answ")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		_ = conn.(*net.TCPConn).SetLinger(0) // close with RST
		_ = conn.Close()
	case invalidJSON:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, start+`ok"}]]]}`)
	case hugeBody:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, start)
		for range 100 {
			if _, err := w.Write(mib); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}]}}`)
	case endlessStream:
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			if _, err := io.WriteString(w, ": still thinking\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	case endlessEvent:
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: "+start)
		for range 100 {
			if _, err := w.Write(mib); err != nil {
				return
			}
		}
		<-r.Context().Done()
	}
}
