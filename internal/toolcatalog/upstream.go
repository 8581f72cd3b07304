package toolcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/reach"
)

// upstreamError is a failure reaching the server, with its status code.
type upstreamError struct {
	code int
	kind string
	err  error
	// retryAfter, in seconds, is sent as Retry-After when set.
	retryAfter int
}

func (e *upstreamError) Error() string { return e.err.Error() }

// callUpstream calls the tool on its server over the pooled session, once
// the server's limiter gives it a turn. A request that certainly never
// reached the server (refused, or a session that ended) is sent once more
// on a fresh session; any other failure is not retried, since the tool may
// have run.
func (c *Catalog) callUpstream(ctx context.Context, entry *menu.Entry, arguments json.RawMessage, opts mcpclient.CallOptions) (Envelope, error) {
	up := c.upstreams.get(entry.Namespace + "/" + entry.Server)
	if up == nil {
		return Envelope{}, &upstreamError{code: http.StatusBadGateway, kind: "NotFound",
			err: fmt.Errorf("MCPServer %s/%s is gone", entry.Namespace, entry.Server)}
	}
	release, err := up.limit.acquire(ctx, c.opts.QueueTimeout)
	if err != nil {
		return Envelope{}, c.busy(up, err)
	}
	defer release()
	target, err := c.targetOf(ctx, up)
	if err != nil {
		var spec *reach.SpecError
		if errors.As(err, &spec) {
			return Envelope{}, &upstreamError{code: http.StatusBadGateway, kind: spec.Reason, err: err}
		}
		return Envelope{}, &upstreamError{code: http.StatusBadGateway, kind: "Internal", err: errors.New("reading the server's configuration failed")}
	}
	var result mcpclient.CallResult
	err = c.pool.Do(ctx, up.key, target, func(s *mcpclient.Session) error {
		var err error
		opts.InputSchema = entry.Tool.InputSchema.Raw
		result, err = s.CallTool(ctx, entry.Tool.OriginalName, arguments, opts)
		return err
	})
	if err == nil {
		return envelopeOf(result), nil
	}
	if code, message, ok := mcpclient.RPCErrorOf(err); ok {
		// The server answered: the call failed as a tool call, which the
		// agent reads as an observation.
		return Envelope{IsError: true, Error: fmt.Sprintf("%s (JSON-RPC error %d)", message, code), Content: []json.RawMessage{}}, nil
	}
	code := http.StatusBadGateway
	if mcpclient.KindOf(err) == mcpclient.ErrTimeout {
		code = http.StatusGatewayTimeout
	}
	return Envelope{}, &upstreamError{code: code, kind: string(mcpclient.KindOf(err)), err: err}
}

// busy is the answer when the server's limiter gave no turn.
func (c *Catalog) busy(up *upstream, err error) error {
	if !errors.Is(err, errBusy) {
		return &upstreamError{code: http.StatusGatewayTimeout, kind: "Canceled", err: fmt.Errorf("the call to MCPServer %s ended while waiting for a turn: %w", up.key, err)}
	}
	busyCalls.WithLabelValues(up.key).Inc()
	return &upstreamError{code: http.StatusTooManyRequests, kind: "Busy", retryAfter: retryAfterBusy,
		err: fmt.Errorf("MCPServer %s has %d calls in flight and as many waiting (spec.maxConcurrentCalls); retry in %ds", up.key, up.limit.capacity(), retryAfterBusy)}
}

// retryAfterBusy is the Retry-After, in seconds, of a busy answer.
const retryAfterBusy = 1

// notReady is the answer for a tool whose server is not Ready: the tool
// left the menu, and the agent learns why and that it will come back.
func (c *Catalog) notReady(entry *menu.Entry) error {
	why := "its state is not known yet"
	if up := c.upstreams.get(entry.Namespace + "/" + entry.Server); up != nil && up.ready != nil {
		why = up.ready.Reason + ": " + up.ready.Message
	}
	return &upstreamError{code: http.StatusBadGateway, kind: "NotReady",
		err: fmt.Errorf("MCPServer %s/%s is not Ready (%s); %s returns to the menu when it recovers", entry.Namespace, entry.Server, why, entry.Name)}
}
