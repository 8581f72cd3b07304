package toolcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
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
		var err error
		if up, err = c.unobserved(ctx, entry); err != nil {
			return Envelope{}, err
		}
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

// unobserved is the upstream of a server the menu lists but the informer
// has not delivered to observeServer yet. The menu is read from the cache,
// whose store moves before the informer's handlers hear of it: a catalog
// just started, or a server just made Ready, is in the menu a moment
// before it is in the registry. Such a call reads the server from the
// cache once; it is gone only if the cache no longer has it either.
func (c *Catalog) unobserved(ctx context.Context, entry *menu.Entry) (*upstream, error) {
	forgotten := c.upstreams.forgottenCount()
	srv := &mcpv1alpha1.MCPServer{}
	if err := c.reader.Get(ctx, types.NamespacedName{Namespace: entry.Namespace, Name: entry.Server}, srv); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &upstreamError{code: http.StatusBadGateway, kind: "NotFound",
				err: fmt.Errorf("MCPServer %s/%s is gone", entry.Namespace, entry.Server)}
		}
		return nil, &upstreamError{code: http.StatusBadGateway, kind: "Internal", err: errors.New("reading the server failed")}
	}
	return c.upstreams.adopt(srv, forgotten), nil
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
