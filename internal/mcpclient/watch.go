package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// Watching one resource of a server: resources/subscribe on a session of
// its own in the revisions before 2026-07-28, whose updates arrive on the
// session's stream (the listening GET of Streamable HTTP, the event
// stream of HTTP+SSE); in 2026-07-28 a subscriptions/listen stream that
// names the resource, which carries its updates and whose end is the
// unsubscribe.

// ErrNotSubscribable is why a watch of a server that does not offer
// resource subscriptions failed (errors.Is tells it): it did not announce
// resources.subscribe, or it keeps no stream open for what it would say.
// Watching it again will not help; reading the resource again will.
var ErrNotSubscribable = errors.New("the server does not offer resource subscriptions")

// unsubscribeTimeout bounds the resources/unsubscribe sent as a watch
// ends: the session is closed after it anyway.
const unsubscribeTimeout = 2 * time.Second

// watchDoing is what a watch's errors say was being done. No error names
// the resource's URI: its query may carry a secret.
const watchDoing = "watching a resource"

// errNoAcknowledgement is why a 2026-07-28 subscription stream was
// closed: the server did not acknowledge it in time.
var errNoAcknowledgement = errors.New("the subscription was not acknowledged")

// WatchResource subscribes to updates of the resource uri of the server t
// names, on a connection of its own, and calls updated (on a goroutine of
// the library's: keep it short) each time the server says the resource
// changed, until ctx ends (then it returns nil) or the subscription breaks
// (then it returns why, as an *Error). subscribed is called once, when the
// server accepted the subscription, before any updated.
//
// A server that does not offer subscriptions fails it with an *Error that
// wraps ErrNotSubscribable; one that answers the subscription with a
// JSON-RPC error fails it with that error (RPCErrorOf reads it). The
// callbacks are never called at once, nor after WatchResource returned.
func WatchResource(ctx context.Context, t Target, uri string, subscribed func(), updated func()) error {
	if uri == "" {
		return &Error{Kind: ErrProtocol, Message: watchDoing + ": no resource URI was given"}
	}
	s, err := connectAny(ctx, t, hearing{stream: true})
	if err != nil {
		return watchEnded(ctx, t, err)
	}
	defer s.Close()
	// Ended before the session is closed: nothing is called after the
	// watch is over, whatever the closing still hears.
	gate := &watchGate{onSubscribed: subscribed, onUpdated: updated}
	defer gate.end()
	if !s.info.Capabilities.ResourcesSubscribe {
		return &Error{Kind: ErrProtocol, Err: ErrNotSubscribable, url: t.redactedURL(),
			Message: fmt.Sprintf("%s: %s does not offer resource subscriptions: it did not announce resources.subscribe", watchDoing, t.redactedURL())}
	}
	if s.stateless {
		err = s.watchStateless(ctx, uri, gate)
	} else {
		err = s.watchSession(ctx, uri, gate)
	}
	return watchEnded(ctx, t, err)
}

// watchEnded is what a watch of t returns for err: nothing once its
// caller ended it, whatever the ending did to the requests in flight.
func watchEnded(ctx context.Context, t Target, err error) error {
	if err == nil || ctx.Err() != nil {
		return nil
	}
	return classify(err, t, watchDoing, nil)
}

// watchSession watches uri on a session of a revision before 2026-07-28:
// resources/subscribe, then the updates on the session's stream until ctx
// ends (resources/unsubscribe, best effort) or the session is lost.
func (s *Session) watchSession(ctx context.Context, uri string, gate *watchGate) error {
	s.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != mcp.MethodNotificationResourceUpdated {
			return
		}
		if got, _ := n.Params.AdditionalFields["uri"].(string); got == uri {
			gate.update()
		}
	})
	if !s.answersOnStream {
		// Updates come on the listening GET: without it none is heard.
		waitCtx, cancel := context.WithTimeout(ctx, s.target.timeout())
		s.awaitListening(waitCtx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if !s.Listening() {
			return &Error{Kind: ErrProtocol, Err: ErrNotSubscribable, url: s.target.redactedURL(),
				Message: fmt.Sprintf("%s: %s does not offer resource subscriptions: it keeps no stream open for its notifications", watchDoing, s.target.redactedURL())}
		}
	}
	params := struct {
		URI string `json:"uri"`
	}{uri}
	_, err := s.requestRaw(ctx, call{method: string(mcp.MethodResourcesSubscribe), params: params}, watchDoing)
	switch {
	case ctx.Err() != nil:
		// The server may have taken it all the same.
		s.unsubscribe(uri)
		return nil
	case err != nil:
		return withoutURI(err, uri)
	}
	gate.confirm()
	select {
	case <-ctx.Done():
		s.unsubscribe(uri)
		return nil
	case <-s.Done():
		return s.subscriptionLost()
	}
}

// unsubscribe tells the server, briefly and best effort, that the
// subscription to uri is over.
func (s *Session) unsubscribe(uri string) {
	ctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
	defer cancel()
	params := struct {
		URI string `json:"uri"`
	}{uri}
	_, _ = s.request(ctx, call{method: string(mcp.MethodResourcesUnsubscribe), params: params}, watchDoing)
}

// subscriptionLost says why a session that carried a subscription ended.
func (s *Session) subscriptionLost() *Error {
	cause := context.Cause(s.lost)
	why := fmt.Sprintf("the event stream of %s broke", s.target.redactedURL())
	switch {
	case errors.Is(cause, errSessionForgotten):
		why = fmt.Sprintf("%s no longer knows the session", s.target.redactedURL())
	case errors.Is(cause, errSessionClosed):
		why = fmt.Sprintf("the session with %s was closed", s.target.redactedURL())
	}
	return &Error{Kind: ErrUnreachable, Err: cause, url: s.target.redactedURL(),
		Message: fmt.Sprintf("%s: the subscription ended: %s", watchDoing, why)}
}

// watchStateless watches uri on a 2026-07-28 server: a subscriptions/listen
// stream that names it, read until ctx ends (closing the stream is the
// unsubscribe) or the stream does.
func (s *Session) watchStateless(ctx context.Context, uri string, gate *watchGate) error {
	listenCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	// A server that holds the stream without acknowledging it would keep
	// the watch waiting, neither subscribed nor failed.
	acked := make(chan struct{})
	defer time.AfterFunc(s.target.timeout(), func() {
		select {
		case <-acked:
		default:
			stop(errNoAcknowledgement)
		}
	}).Stop()
	ex := &exchange{}
	req, err := s.listenRequest(withExchange(listenCtx, ex), mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}})
	if err != nil {
		return &Error{Kind: ErrProtocol, Message: watchDoing + ": the request could not be encoded", Err: err}
	}
	resp, err := s.http.Do(req)
	if err != nil {
		if errors.Is(context.Cause(listenCtx), errNoAcknowledgement) {
			err = errors.Join(context.DeadlineExceeded, err)
		}
		return classify(err, s.target, watchDoing, ex)
	}
	body := &endingBody{ReadCloser: resp.Body}
	// Its connection goes with it: the stream is the subscription.
	defer func() { _ = body.Close() }()
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mediaType != "text/event-stream" {
		return s.listenRefused(resp, body, ex, uri)
	}
	var failed error
	readErr := wire.ReadEvents(body, listenBufferSize, func(data []byte) bool {
		var msg struct {
			ID     json.RawMessage          `json:"id"`
			Method string                   `json:"method"`
			Error  *mcp.JSONRPCErrorDetails `json:"error"`
			Params struct {
				URI           string                 `json:"uri"`
				Notifications mcp.SubscriptionFilter `json:"notifications"`
			} `json:"params"`
		}
		if json.Unmarshal(data, &msg) != nil {
			return false
		}
		switch {
		case msg.Method == mcp.MethodNotificationSubscriptionsAcknowledged:
			if gate.confirmed() {
				return false
			}
			if !slices.Contains(msg.Params.Notifications.ResourceSubscriptions, uri) {
				failed = &Error{Kind: ErrProtocol, url: s.target.redactedURL(),
					Message: fmt.Sprintf("%s: %s did not accept the subscription to the resource", watchDoing, s.target.redactedURL())}
				return true
			}
			close(acked)
			gate.confirm()
		case msg.Method == mcp.MethodNotificationResourceUpdated:
			if msg.Params.URI == uri {
				gate.update()
			}
		case msg.Method == "" && len(msg.ID) > 0 && msg.Error == nil && gate.confirmed():
			// The server ended the subscription with its answer.
			failed = &Error{Kind: ErrUnreachable, url: s.target.redactedURL(),
				Message: fmt.Sprintf("%s: the subscription ended: %s ended it", watchDoing, s.target.redactedURL())}
			return true
		case msg.Method == "" && len(msg.ID) > 0:
			failed = s.listenAnswered(msg.Error, uri)
			return true
		}
		return false
	})
	switch {
	case failed != nil:
		return failed
	case ctx.Err() != nil:
		return nil
	case errors.Is(context.Cause(listenCtx), errNoAcknowledgement):
		return &Error{Kind: ErrTimeout, Err: errNoAcknowledgement, url: s.target.redactedURL(),
			Message: fmt.Sprintf("%s: %s did not acknowledge the subscription within %s", watchDoing, s.target.redactedURL(), s.target.timeout())}
	case errors.Is(readErr, errResponseTooLarge):
		return &Error{Kind: ErrMalformedResponse, Err: readErr, url: s.target.redactedURL(),
			Message: fmt.Sprintf("%s: the subscription ended: %s sent an event of more than %d bytes", watchDoing, s.target.redactedURL(), s.target.maxResponseBytes())}
	}
	if readErr == nil {
		readErr = io.EOF
	}
	return &Error{Kind: ErrUnreachable, Err: fmt.Errorf("%w: %w", errStreamLost, readErr), url: s.target.redactedURL(),
		Message: fmt.Sprintf("%s: the subscription ended: the event stream of %s ended", watchDoing, s.target.redactedURL())}
}

// listenBufferSize is the read buffer of a subscription's stream, mostly
// waiting for an event of a hundred bytes.
const listenBufferSize = 512

// listenRefused explains a subscriptions/listen answered with something
// other than its stream: an error status, a JSON-RPC error, or a result.
func (s *Session) listenRefused(resp *http.Response, body *endingBody, ex *exchange, uri string) error {
	var answer struct {
		ID    json.RawMessage          `json:"id"`
		Error *mcp.JSONRPCErrorDetails `json:"error"`
	}
	raw, _ := io.ReadAll(io.LimitReader(body, maxErrorBody))
	decoded := json.Unmarshal(raw, &answer) == nil && len(answer.ID) > 0
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		// The credentials, whatever the body says.
	case decoded && answer.Error != nil:
		return s.listenAnswered(answer.Error, uri)
	case decoded && resp.StatusCode < 300:
		return s.listenAnswered(nil, uri)
	case resp.StatusCode < 300:
		return &Error{Kind: ErrMalformedResponse, url: s.target.redactedURL(),
			Message: fmt.Sprintf("%s: %s answered the subscription with neither an event stream nor a JSON-RPC answer", watchDoing, s.target.redactedURL())}
	}
	return classify(fmt.Errorf("request failed with status %d", resp.StatusCode), s.target, watchDoing, ex)
}

// listenAnswered is the error of a subscriptions/listen the server
// answered, which ends it: with a JSON-RPC error, or a result.
func (s *Session) listenAnswered(rpcErr *mcp.JSONRPCErrorDetails, uri string) error {
	if rpcErr != nil {
		return rpcError(rpcErr, s.target, watchDoing).without(uri)
	}
	return &Error{Kind: ErrProtocol, url: s.target.redactedURL(),
		Message: fmt.Sprintf("%s: %s ended the subscription at once", watchDoing, s.target.redactedURL())}
}

// withoutURI is err with uri left out of what it says.
func withoutURI(err error, uri string) error {
	var e *Error
	if errors.As(err, &e) {
		return e.without(uri)
	}
	return err
}

// watchGate calls a watch's callbacks in their order, one at a time:
// subscribed once, then updated. An update heard before the subscription
// was confirmed (the server may send it on its stream before its answer
// arrives) is held until then; nothing is called once the watch ended.
type watchGate struct {
	onSubscribed, onUpdated func()

	mu                      sync.Mutex
	subscribed, held, ended bool
}

// confirm says the server accepted the subscription.
func (g *watchGate) confirm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended || g.subscribed {
		return
	}
	g.subscribed = true
	invoke(g.onSubscribed)
	if g.held {
		g.held = false
		invoke(g.onUpdated)
	}
}

func (g *watchGate) confirmed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.subscribed
}

// update says the server said the resource changed.
func (g *watchGate) update() {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.ended:
	case !g.subscribed:
		g.held = true
	default:
		invoke(g.onUpdated)
	}
}

// end says the watch is over; it waits for a callback under way.
func (g *watchGate) end() {
	g.mu.Lock()
	g.ended = true
	g.mu.Unlock()
}

// invoke calls f, if there is one.
func invoke(f func()) {
	if f != nil {
		f()
	}
}
