package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// maxErrorBody is how much of a failed answer's body is kept to explain it.
const maxErrorBody = 512

// exchange is what one request saw on the wire: the status of an answer
// that was not a success, the start of its body, and whether the answer
// passed the size cap. It travels in the request's context, as
// net/http/httptrace's hooks do, so that concurrent requests on one session
// never read each other's outcome.
type exchange struct {
	status   atomic.Int32
	tooLarge atomic.Bool
	mu       sync.Mutex
	body     string
	// tap, when set, hears the notifications on this request's answer
	// stream.
	tap func(method string, params json.RawMessage)
	// ask, when set, hears each request the server sends on this
	// request's answer stream (ask.go), its id and params as sent.
	ask func(id json.RawMessage, method string, params json.RawMessage)
}

type exchangeKey struct{}

func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

// exchangeOf returns the request's exchange; a request without one (a
// session's own streams after connecting) records nothing.
func exchangeOf(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

func (ex *exchange) lastStatus() int {
	if ex == nil {
		return 0
	}
	return int(ex.status.Load())
}

func (ex *exchange) overCap() bool { return ex != nil && ex.tooLarge.Load() }

// errorBody is the start of the body of the answer that failed, if any.
func (ex *exchange) errorBody() string {
	if ex == nil {
		return ""
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.body
}

// record keeps the status of an answer that was not a success and the
// start of its body, which the MCP library may drop; the body is handed on
// whole.
func (ex *exchange) record(resp *http.Response) {
	ex.status.Store(int32(resp.StatusCode))
	prefix, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	ex.mu.Lock()
	ex.body = string(prefix)
	ex.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(prefix), resp.Body), resp.Body}
}
