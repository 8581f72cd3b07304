package toolcatalog

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"sync"
	"time"
)

// The audit trail: one JSON line per tool call the catalog was asked to
// make, allowed or not, on a writer of its own (--audit-log), so that it can
// be routed apart from the manager's logs. A line says who asked for what
// and how it ended, never argument or result values, never headers.
// docs/audit.md documents each field.

// AuditRecord is one line of the audit trail.
type AuditRecord struct {
	// Time is when the call was answered, RFC 3339 with nanoseconds.
	Time string `json:"time"`
	// RequestID names the request: the caller's X-Request-Id when it sent
	// a usable one, else one the catalog made; the answer carries it back.
	RequestID string `json:"requestId"`
	// TraceID is the call's trace: the caller's when it sent one, else
	// the one the catalog started, with tracing on.
	TraceID string `json:"traceId,omitempty"`
	// User and Groups are who called, as the TokenReview said or the
	// OIDC claims map to; User is "anonymous" when the catalog runs
	// without authentication. Issuer is the OpenID issuer that vouched
	// for a caller the catalog checked itself.
	User   string   `json:"user"`
	Groups []string `json:"groups,omitempty"`
	Issuer string   `json:"issuer,omitempty"`
	// Via is "rest" or "mcp".
	Via string `json:"via"`
	// Collection is the ToolCollection called through (namespace/name), or
	// empty for the global menu.
	Collection string `json:"collection,omitempty"`
	// Tool is the name the caller used; OriginalName and Server the tool's
	// name on its MCPServer (namespace/name), when the name was found.
	Tool         string `json:"tool,omitempty"`
	OriginalName string `json:"originalName,omitempty"`
	Server       string `json:"server,omitempty"`
	// Method is set for what is not a tool call: prompts/get,
	// resources/read or completion/complete. Prompt is the prompt's
	// exposed name; Resource the resource's exposed URI without its query
	// or fragment, which may carry what is not the audit's to keep.
	// OriginalName is then the prompt's name or the URI's (likewise cut)
	// on Server.
	Method   string `json:"method,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Outcome is how it ended, as the metrics name it: success,
	// tool_error, input_required, invalid_arguments, unknown_tool, forbidden,
	// policy_denied, unauthorized, rate_limited, busy, upstream_unreachable, upstream_auth_refused,
	// upstream_timeout, …; Status the HTTP status of a REST answer.
	Outcome string `json:"outcome"`
	Status  int    `json:"status,omitempty"`
	// Policy is the decision of the collection's spec.policy, when it has
	// one (outcome policy_denied when it refused the call).
	Policy *AuditPolicy `json:"policy,omitempty"`
	// DurationMs is from receiving the call to answering it.
	DurationMs float64 `json:"durationMs"`
	// ResultBytes is the size of the result's text and content, 0 when
	// there was none.
	ResultBytes int `json:"resultBytes"`
}

// The trail is written in batches: a line goes into a buffer, and the
// buffer goes out at most auditFlushInterval after its first line, at
// once when it reaches auditBufferLimit, and when the catalog stops (after
// which each line goes out as it comes). One write per line cost every
// call a system call on its answer's path (stdout is a pipe or a file);
// a batch costs one for many calls (a full one about 64). A batch is
// written in pieces of whole lines no larger than auditWriteSize, which a
// pipe keeps whole: the manager's logs may share it (2>&1), and a larger
// write of ours could have their lines land inside one of its lines. What
// a process killed outright loses is the lines not written yet: about the
// last interval's.
const (
	auditFlushInterval = 100 * time.Millisecond
	auditBufferLimit   = 256 << 10
	// auditWriteSize is PIPE_BUF on Linux: writes up to it are atomic.
	auditWriteSize = 4096
)

// auditor writes the trail; nil writes nothing.
type auditor struct {
	out io.Writer
	// interval is auditFlushInterval but in tests.
	interval time.Duration
	// writing orders the batches: one goes out at a time, oldest first.
	writing sync.Mutex

	mu sync.Mutex
	// pending is the lines not written yet; spare is the last batch's
	// buffer, kept for the next one.
	pending, spare []byte
	// scheduled says a flush is on its way for the pending lines.
	scheduled bool
	// stopped says the catalog stopped: lines are written as they come,
	// since no later flush is sure to run before the process exits.
	stopped bool
}

func newAuditor(out io.Writer) *auditor {
	if out == nil {
		return nil
	}
	return &auditor{out: out, interval: auditFlushInterval}
}

func (a *auditor) write(r AuditRecord) {
	if a == nil {
		return
	}
	// Encoded outside the lock, on the stack when it fits (most lines
	// are 200–400 bytes), so that concurrent calls do not wait on it.
	var stack [512]byte
	line := r.appendJSON(stack[:0])
	a.mu.Lock()
	a.pending = append(append(a.pending, line...), '\n')
	now := a.stopped || len(a.pending) >= auditBufferLimit
	if !now && !a.scheduled {
		a.scheduled = true
		time.AfterFunc(a.interval, a.flush)
	}
	a.mu.Unlock()
	if now {
		// The caller whose line filled the buffer writes it: memory stays
		// bounded, and a trail that cannot keep up slows its callers
		// down, as an unbatched one did.
		a.flush()
	}
}

// flush writes the pending lines out, and returns once they are.
func (a *auditor) flush() {
	if a == nil {
		return
	}
	a.writing.Lock()
	defer a.writing.Unlock()
	a.mu.Lock()
	batch := a.pending
	a.pending, a.spare, a.scheduled = a.spare[:0], nil, false
	a.mu.Unlock()
	for rest := batch; len(rest) > 0; {
		piece := rest
		if len(piece) > auditWriteSize {
			// Whole lines up to the size; a longer line goes alone.
			if cut := bytes.LastIndexByte(piece[:auditWriteSize], '\n'); cut >= 0 {
				piece = piece[:cut+1]
			} else if cut := bytes.IndexByte(piece, '\n'); cut >= 0 {
				piece = piece[:cut+1]
			}
		}
		_, _ = a.out.Write(piece)
		rest = rest[len(piece):]
	}
	if cap(batch) <= 2*auditBufferLimit {
		a.mu.Lock()
		a.spare = batch[:0]
		a.mu.Unlock()
	}
}

// stop writes what is pending and every later line as it comes: the
// catalog has stopped, and the process may exit before a timer fires.
func (a *auditor) stop() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.stopped = true
	a.mu.Unlock()
	a.flush()
}

// usableRequestID is what a caller's X-Request-Id may look like to be
// kept: short, and nothing that could break a log line.
var usableRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestID returns the request's id, making one when the caller sent
// none, and sets it on the answer.
func requestID(w http.ResponseWriter, r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if !usableRequestID.MatchString(id) {
		// An id tells calls apart in the trail; it guards nothing, so the
		// runtime's generator serves, without a system call per request.
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], rand.Uint64())
		id = hex.EncodeToString(b[:])
	}
	w.Header().Set("X-Request-Id", id)
	return id
}

func auditTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
