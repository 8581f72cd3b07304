package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/toolmesh/mcp-operator/internal/wire"
)

// upstream is the bridge's one MCP session with the child process, shared by
// every client: it runs the child (supervisor.go), sends it the clients'
// requests under ids of its own (calls.go), dispatches what it writes
// back (dispatch.go) and relays its requests to clients (relay.go). This
// file holds its state and readiness.
type upstream struct {
	opts     Options
	log      *slog.Logger
	sessions *sessions

	mu       sync.Mutex
	proc     *child      // the running child; nil between runs
	gen      uint64      // counts children started
	init     *serverInit // the current child's initialize result; nil while not ready
	ready    chan struct{}
	notReady string        // why requests cannot be served now, for /readyz and errors
	stopping chan struct{} // closed when the bridge shuts down
	calls    map[int64]*call
	lastID   int64
	// relays are the child's requests relayed to clients and not yet
	// answered, by the id the bridge gave them (relay.go).
	relays    map[string]*relayed
	lastRelay int64
	// lingering are calls that may ask, ended on the bridge's side
	// (cancelled, timed out, their session gone) but not answered by the
	// child, which may still be working on them and ask for them: each
	// counts as in flight for attributing the child's requests until the
	// child answers it or its time is up (relay.go).
	lingering map[int64]lingering
	// logLevel is the most verbose level a client asked the current child
	// for; each session filters down to its own.
	logLevel string
}

func newUpstream(opts Options, log *slog.Logger, s *sessions) *upstream {
	return &upstream{opts: opts, log: log, sessions: s, ready: make(chan struct{}), stopping: make(chan struct{}),
		notReady: "the MCP server has not started yet", calls: map[int64]*call{}, relays: map[string]*relayed{}, lingering: map[int64]lingering{}}
}

// serverInit is what the child answered the bridge's initialize with.
type serverInit struct {
	revision string                     // the revision the child settled on
	name     string                     // serverInfo.name, for the log
	result   map[string]json.RawMessage // its initialize result
	// changed lists the list_changed notifications the child's capabilities
	// announce, sent to every session after a restart: a new process may
	// offer other tools.
	changed []string
}

// resultFor is the child's initialize result as a client that negotiated
// revision gets it.
func (i *serverInit) resultFor(revision string) json.RawMessage {
	fields := make(map[string]json.RawMessage, len(i.result))
	for k, v := range i.result {
		fields[k] = v
	}
	fields["protocolVersion"], _ = wire.Marshal(revision)
	b, _ := wire.Marshal(fields)
	return b
}

// waitReady returns the child's initialization once it has one, waiting at
// most ReadyWait while it starts or restarts.
func (u *upstream) waitReady(ctx context.Context) (*serverInit, *reply) {
	ctx, cancel := context.WithTimeout(ctx, u.opts.ReadyWait)
	defer cancel()
	for {
		u.mu.Lock()
		init, ready, why := u.init, u.ready, u.notReady
		u.mu.Unlock()
		if init != nil {
			return init, nil
		}
		u.log.Debug("Waiting for the MCP server to be ready", "reason", why)
		select {
		case <-ready:
		case <-u.stopping:
			r := errorReply(codeNotReady, "the bridge is shutting down")
			return nil, &r
		case <-ctx.Done():
			r := errorReply(codeNotReady, "the MCP server is not ready after waiting %s: %s", u.opts.ReadyWait, why)
			return nil, &r
		}
	}
}

// setStarting records a new child; it is not ready until it answers
// initialize.
func (u *upstream) setStarting(proc *child) uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.gen++
	u.proc = proc
	u.notReady = fmt.Sprintf("the MCP server (pid %d) has not answered initialize yet", proc.pid)
	return u.gen
}

// setReady makes the child of generation gen serve requests.
func (u *upstream) setReady(gen uint64, init *serverInit) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if gen != u.gen || u.proc == nil || u.init != nil {
		return false
	}
	u.init = init
	u.notReady = ""
	close(u.ready)
	return true
}

// setDown records why no child serves and ends every call in flight: their
// answers can no longer come. A client's request not written to the child
// is handed back to be sent to the next child (see resend), staying where
// a cancel finds it meanwhile; the others fail.
func (u *upstream) setDown(why string, failure reply) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.proc = nil
	if u.init != nil {
		u.init = nil
		u.ready = make(chan struct{})
	}
	u.notReady = why
	u.logLevel = ""
	for id, c := range u.calls {
		switch {
		case c.parked:
			// Handed back at an earlier exit; resend sends it on.
		case c.session != nil && !c.written.Load():
			c.parked = true
			c.reply <- reply{resend: true}
		default:
			delete(u.calls, id)
			c.reply <- failure
		}
	}
}

// setNotReady updates why requests cannot be served, while no child runs.
func (u *upstream) setNotReady(why string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.notReady = why
}

// health is what /healthz and /readyz report.
type health struct {
	running  bool
	pid      int
	ready    bool
	notReady string
	gen      uint64
}

func (u *upstream) health() health {
	u.mu.Lock()
	defer u.mu.Unlock()
	h := health{ready: u.init != nil, notReady: u.notReady, gen: u.gen}
	if u.proc != nil && u.proc.running() {
		h.running, h.pid = true, u.proc.pid
	}
	select {
	case <-u.stopping:
		h.ready, h.notReady = false, "the bridge is shutting down"
	default:
	}
	return h
}

// sendBestEffort queues a message no one waits on (a cancellation, an
// answer to the child's ping) without waiting: it may be sent from the
// goroutine reading the child's stdout, which must never block on the
// child's stdin. A full queue means the child is not reading; such a
// message is dropped.
func (u *upstream) sendBestEffort(proc *child, msg []byte) {
	if proc == nil {
		return
	}
	if !proc.trySend(msg) {
		u.log.Debug("Dropped a message to the MCP server, which is not reading its stdin")
	}
}
