package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Version is the bridge's version, as it introduces itself to the child.
var Version = "dev"

// Options configure a Bridge. DefaultOptions holds the defaults the
// command's flags show.
type Options struct {
	// Command is the stdio MCP server to run: the program and its
	// arguments.
	Command []string
	// MaxMessage bounds one line on the child's stdout; longer lines are
	// refused.
	MaxMessage int
	// MaxRequestBody bounds one HTTP request body from a client.
	MaxRequestBody int64
	// InitTimeout is how long the child has to answer initialize before
	// it is stopped and started again.
	InitTimeout time.Duration
	// ReadyWait is how long a request waits for the child to be ready
	// (starting or restarting) before it fails.
	ReadyWait time.Duration
	// RequestTimeout is how long a request waits for its answer before
	// it is cancelled and fails.
	RequestTimeout time.Duration
	// Grace is how long the child has to exit after SIGTERM before
	// SIGKILL.
	Grace time.Duration
	// RestartBackoff is the first wait before restarting an exited child;
	// it doubles up to 30 s while the child keeps exiting within a minute.
	RestartBackoff time.Duration
	// MaxSessions bounds the client sessions at once.
	MaxSessions int
	// SessionIdle ends a session that had no stream and no request for
	// this long.
	SessionIdle time.Duration
}

// DefaultOptions are the defaults for everything but Command.
func DefaultOptions() Options {
	return Options{
		MaxMessage:     16 << 20,
		MaxRequestBody: 16 << 20,
		InitTimeout:    time.Minute,
		ReadyWait:      30 * time.Second,
		RequestTimeout: 10 * time.Minute,
		Grace:          10 * time.Second,
		RestartBackoff: time.Second,
		MaxSessions:    1000,
		SessionIdle:    10 * time.Minute,
	}
}

func (o Options) validate() error {
	switch {
	case len(o.Command) == 0 || o.Command[0] == "":
		return errors.New("no MCP server command given")
	case o.MaxMessage <= 0 || o.MaxRequestBody <= 0 || o.MaxSessions <= 0:
		return errors.New("size and session limits must be positive")
	case o.InitTimeout <= 0 || o.ReadyWait <= 0 || o.RequestTimeout <= 0 || o.Grace <= 0 ||
		o.RestartBackoff <= 0 || o.SessionIdle <= 0:
		return errors.New("durations must be positive")
	}
	return nil
}

// Bridge serves one stdio MCP server to many HTTP clients.
type Bridge struct {
	opts     Options
	log      *slog.Logger
	up       *upstream
	sessions *sessions
}

// New makes a bridge for opts.Command; Run starts it.
func New(opts Options, log *slog.Logger) (*Bridge, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("configuring the bridge: %w", err)
	}
	s := newSessions(log, opts.MaxSessions, opts.SessionIdle)
	u := newUpstream(opts, log, s)
	s.onEnd = u.endSession
	return &Bridge{opts: opts, log: log, up: u, sessions: s}, nil
}

// Run runs the child, restarting it when it exits, until ctx ends; then it
// stops the child (SIGTERM, SIGKILL after Grace), ends every session, and
// returns once the child has exited.
func (b *Bridge) Run(ctx context.Context) {
	expireCtx, stopExpiring := context.WithCancel(context.Background())
	defer stopExpiring()
	go b.sessions.expire(expireCtx)
	b.up.run(ctx)
	b.sessions.endAll()
}

// initialize answers a client's initialize from the child's one
// initialization, with the revision negotiated for this client, and keeps
// the capabilities the client declared for the relay.
func (b *Bridge) initialize(ctx context.Context, s *session, m message) reply {
	init, r := b.up.waitReady(ctx)
	if r != nil {
		return *r
	}
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(m.Params, &p)
	revision := negotiate(p.ProtocolVersion, init.revision)
	s.setInitialized(revision, parseClientCaps(m.Params))
	return reply{result: init.resultFor(revision)}
}

// request sends a client's request, other than initialize, to the child.
// canAsk says the client can be sent requests while this one runs: its
// answer can become an event stream.
func (b *Bridge) request(ctx context.Context, s *session, m message, canAsk bool) (*call, *reply) {
	if !s.initialized() && m.Method != string(mcp.MethodPing) {
		r := errorReply(codeInvalidRequest, "%s before initialize: initialize the session first", m.Method)
		return nil, &r
	}
	return b.up.forward(ctx, s, m, canAsk)
}

// notification handles a client's notification. The child was initialized
// once, by the bridge, so notifications/initialized stops here;
// cancellations are translated to the bridge's ids; progress (which could
// only concern a request relayed from the child, whose progress the bridge
// does not pass back) and roots/list_changed (the bridge declared no roots)
// are dropped; anything else goes to the child as it is.
func (b *Bridge) notification(s *session, m message) {
	switch m.Method {
	case string(mcp.MethodNotificationInitialized), string(mcp.MethodNotificationProgress), mcp.MethodNotificationRootsListChanged:
	case string(mcp.MethodNotificationCancelled):
		b.up.cancel(s, m.Params)
	default:
		b.up.notify(m)
	}
}
