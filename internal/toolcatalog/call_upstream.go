package toolcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mark3labs/mcp-go/mcp"
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

// callUpstream calls the tool on its server (onUpstream). A JSON-RPC
// error answer is a failed tool call, which the agent reads as an
// observation; any other failure is the caller's error.
func (c *Catalog) callUpstream(ctx context.Context, entry *menu.Entry, arguments json.RawMessage, wantsAnswersOnly bool, opts mcpclient.CallOptions) (Envelope, error) {
	var result mcpclient.CallResult
	var refused *mcpclient.InputRefused
	err := c.onUpstream(ctx, entry.Namespace, entry.Server, wantsAnswersOnly, func(s *mcpclient.Session) error {
		var err error
		opts.InputSchema = entry.Tool.InputSchema.Raw
		result, err = s.CallTool(ctx, entry.Tool.OriginalName, arguments, opts)
		if errors.As(err, &refused) {
			return nil // the server answered; its caller did not
		}
		return err
	})
	switch {
	case err == nil && refused != nil:
		// The server's question had no answer: the agent reads why.
		return Envelope{IsError: true, Content: []json.RawMessage{}, Error: fmt.Sprintf(
			"%s needs input (%s) that its caller did not give: %s", entry.Name, refused.Method, refused.Message)}, nil
	case err == nil && result.ResultType == mcpclient.InputRequired && opts.KeepInputRequired:
		// For the caller to answer (mcp_input.go), if it can.
		if problem := inputRequestsProblem(entry.Name, result.InputRequests, asksOfCapabilities(opts.ClientCapabilities)); problem != "" {
			return Envelope{IsError: true, Content: []json.RawMessage{}, Error: problem}, nil
		}
		return Envelope{Content: []json.RawMessage{}, inputRequired: &inputRequired{requests: result.InputRequests, state: result.RequestState}}, nil
	case err == nil && result.ResultType == mcpclient.InputRequired:
		// Still asking after every answer mcpclient gives: the call fails,
		// saying so, rather than seem to end with nothing.
		return Envelope{IsError: true, Content: []json.RawMessage{}, Error: fmt.Sprintf(
			"%s still asked for input (elicitation, sampling or roots) after its caller's answers; the catalog ends the call", entry.Name)}, nil
	case err == nil:
		return envelopeOf(result), nil
	}
	if code, message, ok := mcpclient.RPCErrorOf(err); ok {
		// The server answered: the call failed as a tool call, which the
		// agent reads as an observation.
		return Envelope{IsError: true, Error: fmt.Sprintf("%s (JSON-RPC error %d)", message, code), Content: []json.RawMessage{}}, nil
	}
	return Envelope{}, err
}

// onUpstream runs one request on a server's pooled session, once the
// server's limiter gives it a turn, as the caller when the server's
// credentials are per caller. wantsAnswersOnly says the request's caller
// hears nothing but its answer, so that it may go on the server's
// answers-only session (answersOnly). A request that certainly never
// reached the server (refused, or a session that ended) is sent once more
// on a fresh session; any other failure is not retried, since the server
// may have acted on it. A JSON-RPC error answer comes back as fn returned it
// (mcpclient.RPCErrorOf reads it); any other failure is an *upstreamError.
func (c *Catalog) onUpstream(ctx context.Context, namespace, server string, wantsAnswersOnly bool, fn func(*mcpclient.Session) error) error {
	up, err := c.upstreamOf(ctx, namespace, server)
	if err != nil {
		return err
	}
	release, err := up.limit.acquire(ctx, c.opts.QueueTimeout)
	if err != nil {
		return c.busy(up, err)
	}
	defer release()
	target, err := c.targetOf(ctx, up)
	if err != nil {
		var spec *reach.SpecError
		if errors.As(err, &spec) {
			return &upstreamError{code: http.StatusBadGateway, kind: spec.Reason, err: err}
		}
		return &upstreamError{code: http.StatusBadGateway, kind: "Internal", err: errors.New("reading the server's configuration failed")}
	}
	key := up.key
	if wantsAnswersOnly && answersOnly(&target) {
		key += answersOnlyKey
	}
	if target.Credentials != nil && target.Credentials.PerCaller() {
		if ctx, key, err = up.asCaller(ctx); err != nil {
			return err
		}
		if up.sessions == nil {
			defer c.pool.Drop(key) // an upstream kept for this call only
		} else {
			// Tracked again after the call: a key evicted while its
			// session was being opened would leave that session untracked;
			// and a server deleted meanwhile takes it with it.
			defer func() {
				up.sessions.add(key)
				if now := c.upstreams.get(up.key); now == nil || now.sessions != up.sessions {
					c.pool.Drop(key)
				}
			}()
		}
	}
	err = c.pool.Do(ctx, key, target, fn)
	if err == nil {
		return nil
	}
	if _, _, ok := mcpclient.RPCErrorOf(err); ok {
		return err
	}
	code := http.StatusBadGateway
	switch mcpclient.KindOf(err) {
	case mcpclient.ErrTimeout:
		code = http.StatusGatewayTimeout
	case mcpclient.ErrAuthRefused:
		// The token service would not give this caller a token for the
		// server: the caller may not, as a 403 from the server would say.
		code = http.StatusForbidden
	}
	return &upstreamError{code: code, kind: string(mcpclient.KindOf(err)), err: err}
}

// answersOnlyKey ends the pool key of the session on which a server that
// speaks 2026-07-28 takes requests that want their answers only (see
// onUpstream), beside its stateless one (the server's key). Server keys
// hold no NUL, and a caller's key is longer (asCaller), so no key is
// another's.
const answersOnlyKey = "\x00a"

// answersOnly readies target for a request whose caller hears nothing but
// its answer, and reports whether it goes on the server's answers-only
// session: for a server that spoke 2026-07-28 and whose credentials are
// not per caller, a 2025-11-25 session when the server keeps one
// (mcpclient.Target.AnswersOnly), which servers serve cheaper than
// stateless requests (an mcp-go server spends 56-116 µs more CPU on
// one), declaring no client capability. Any other request, or server,
// keeps the target as it is. A request that relays more (progress, log
// messages, a question for its caller) is not one: mcp-go's servers send
// some of those on a session's listening stream, where no call owns them.
func answersOnly(target *mcpclient.Target) bool {
	if !mcp.IsModernProtocol(target.Revision) || (target.Credentials != nil && target.Credentials.PerCaller()) {
		return false
	}
	target.AnswersOnly = true
	return true
}

// upstreamOf is a server's upstream: the registry's, else the cache's
// (upstreamFromCache).
func (c *Catalog) upstreamOf(ctx context.Context, namespace, server string) (*upstream, error) {
	if up := c.upstreams.get(namespace + "/" + server); up != nil {
		return up, nil
	}
	return c.upstreamFromCache(ctx, namespace, server)
}

// upstreamFromCache is the upstream of a server the menu lists but the
// registry lacks: the catalog started a moment ago and the informer is
// still handing observeServer the servers it already held (or its
// handlers lag). The menu is read from the same cache, whose store moves
// before its handlers hear of the change, so such a call reads the server
// from the cache and adopts it; the server is gone only if the cache
// lacks it too.
//
// Why an adopted server cannot outlive its deletion: c.reader reads the
// informer's store, and forget runs only after the store dropped the
// server, so a read that began after the last forget cannot return a
// deleted server, and one that began before it is not kept (adopt).
// Such a read is made again, with a fresh count; only under deletions
// that never pause does one call go out with what it read and a limiter
// of its own.
func (c *Catalog) upstreamFromCache(ctx context.Context, namespace, name string) (*upstream, error) {
	var up *upstream
	for range maxCacheReads {
		deletions := c.upstreams.deletionCount()
		srv := &mcpv1alpha1.MCPServer{}
		// The cache's own object, as observe has the informer's: upstreamOf
		// keeps its metadata, spec, serverInfo and a copy of its Ready
		// condition, never its tools, and copying every tool's schemas for
		// that would be most of the read.
		err := c.reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, srv, sharedFromCache)
		switch {
		case apierrors.IsNotFound(err):
			return nil, &upstreamError{code: http.StatusBadGateway, kind: "NotFound",
				err: fmt.Errorf("MCPServer %s/%s is gone", namespace, name)}
		case err != nil && ctx.Err() != nil:
			return nil, &upstreamError{code: http.StatusGatewayTimeout, kind: "Canceled",
				err: fmt.Errorf("the call to MCPServer %s/%s ended while reading the server: %w", namespace, name, context.Cause(ctx))}
		case err != nil:
			c.log.Error(err, "Reading an MCPServer from the cache failed", "server", namespace+"/"+name)
			return nil, &upstreamError{code: http.StatusBadGateway, kind: "Internal", err: errors.New("reading the server failed")}
		}
		var kept bool
		if up, kept = c.upstreams.adopt(srv, deletions); kept {
			break
		}
	}
	return up, nil
}

// maxCacheReads is how many times upstreamFromCache reads a server while
// deletions keep it from adopting what it read.
const maxCacheReads = 3

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
		// The reason only: the message, written for those who run the
		// server, may name where it runs.
		why = up.ready.Reason
	}
	return &upstreamError{code: http.StatusBadGateway, kind: "NotReady",
		err: fmt.Errorf("MCPServer %s/%s is not Ready (%s); %s returns to the menu when it recovers", entry.Namespace, entry.Server, why, entry.Name)}
}
