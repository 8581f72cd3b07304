package toolcatalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// countingTrail is where an auditor writes, counting its writes and
// checking each is whole lines.
type countingTrail struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	// broken is a write that was not whole lines, or was larger than a
	// pipe keeps whole without being a single line.
	broken string
}

func (t *countingTrail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writes++
	lines := bytes.Count(p, []byte("\n"))
	if p[len(p)-1] != '\n' || (len(p) > auditWriteSize && lines > 1) {
		t.broken = fmt.Sprintf("a write of %d bytes and %d lines", len(p), lines)
	}
	return t.buf.Write(p)
}

func (t *countingTrail) check(tb testing.TB) {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.broken != "" {
		tb.Fatalf("the trail got %s: lines could interleave with other writers'", t.broken)
	}
}

// lines is what was written, line by line, each a whole audit record.
func (t *countingTrail) lines(tb testing.TB) []AuditRecord {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []AuditRecord
	for _, l := range strings.Split(strings.TrimSuffix(t.buf.String(), "\n"), "\n") {
		if l == "" {
			continue
		}
		var rec AuditRecord
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			tb.Fatalf("a line of the trail is not a record: %q: %v", l, err)
		}
		out = append(out, rec)
	}
	return out
}

func (t *countingTrail) counts() (bytes, writes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.Len(), t.writes
}

// waitFor polls cond until it holds, failing the test after ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited ten seconds for %s", what)
		}
	}
}

func TestAuditLinesGoOutWithoutAnotherCall(t *testing.T) {
	trail := &countingTrail{}
	a := newAuditor(trail)
	const n = 1000
	for i := range n {
		a.write(AuditRecord{RequestID: fmt.Sprint(i), Tool: "mcp_calc_add", Outcome: "success"})
	}
	// Nothing else is written and nobody flushes: the lines go out by
	// themselves, in order.
	waitFor(t, "the lines to go out", func() bool { return len(trail.lines(t)) == n })
	for i, rec := range trail.lines(t) {
		if rec.RequestID != fmt.Sprint(i) {
			t.Fatalf("line %d is request %s: lines out of order", i, rec.RequestID)
		}
	}
	trail.check(t)
}

func TestAuditLinesGoOutInBatchesOfWholeLines(t *testing.T) {
	trail := &countingTrail{}
	a := newAuditor(trail)
	a.interval = time.Hour // only the flush below writes
	const n = 1000
	for i := range n {
		a.write(AuditRecord{RequestID: fmt.Sprint(i), Tool: "mcp_calc_add", Outcome: "success"})
	}
	if written, _ := trail.counts(); written != 0 {
		t.Fatalf("%d bytes written before the flush", written)
	}
	a.write(AuditRecord{RequestID: "long", Tool: strings.Repeat("x", 2*auditWriteSize), Outcome: "success"})
	a.flush()
	lines := trail.lines(t)
	if len(lines) != n+1 || lines[n].RequestID != "long" {
		t.Fatalf("%d lines after the flush, want %d and the long one last", len(lines), n+1)
	}
	trail.check(t)
	// Whole lines fill each write but the last of the batch and the long
	// line's own.
	written, writes := trail.counts()
	if most := written/(auditWriteSize-200) + 2; writes > most {
		t.Fatalf("%d bytes took %d writes, want at most %d", written, writes, most)
	}
}

func TestAuditLinesAfterTheCatalogStoppedGoOutAtOnce(t *testing.T) {
	trail := &countingTrail{}
	a := newAuditor(trail)
	a.interval = time.Hour
	a.write(AuditRecord{RequestID: "before"})
	a.stop()
	if lines := trail.lines(t); len(lines) != 1 {
		t.Fatalf("stopping wrote %d lines, want the one pending", len(lines))
	}
	a.write(AuditRecord{RequestID: "cut"}) // a call the drain timeout cut
	if lines := trail.lines(t); len(lines) != 2 || lines[1].RequestID != "cut" {
		t.Fatalf("a line after stopping was not written at once: %+v", lines)
	}
}

func TestAuditBufferIsBounded(t *testing.T) {
	trail := &countingTrail{}
	a := newAuditor(trail)
	a.interval = time.Hour // only a full buffer writes
	record := AuditRecord{Tool: strings.Repeat("x", 1000), Outcome: "success"}
	line, _ := json.Marshal(record)
	total := 0
	for total < auditBufferLimit {
		a.write(record)
		total += len(line) + 1
	}
	// The write that filled the buffer wrote everything before it
	// returned.
	if written, _ := trail.counts(); written != total {
		t.Fatalf("%d of %d bytes written once the buffer was full", written, total)
	}
	a.write(record)
	if written, _ := trail.counts(); written != total {
		t.Fatalf("the next line was written at once (%d bytes, %d before)", written, total)
	}
}

func TestAuditLinesFromConcurrentCallsStayWhole(t *testing.T) {
	trail := &countingTrail{}
	a := newAuditor(trail)
	const callers, each = 8, 300
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				a.write(AuditRecord{RequestID: fmt.Sprintf("%d-%d", c, i), Tool: strings.Repeat("t", 1+i%2000), Outcome: "success"})
			}
		})
	}
	wg.Wait()
	a.flush()
	trail.check(t)
	seen := map[string]bool{}
	for _, rec := range trail.lines(t) {
		if seen[rec.RequestID] {
			t.Fatalf("request %s audited twice", rec.RequestID)
		}
		seen[rec.RequestID] = true
	}
	if len(seen) != callers*each {
		t.Fatalf("%d lines after the flush, want %d", len(seen), callers*each)
	}
}

func TestStoppingTheCatalogWritesPendingAuditLines(t *testing.T) {
	trail := &countingTrail{}
	c, err := New(fake.NewClientBuilder().WithScheme(apiScheme(t)).Build(), Options{Log: logr.Discard(), Audit: trail})
	if err != nil {
		t.Fatal(err)
	}
	c.audit.interval = time.Hour // only stopping writes
	c.audit.write(AuditRecord{RequestID: "last", Tool: "mcp_calc_add", Outcome: "success"})
	if written, _ := trail.counts(); written != 0 {
		t.Fatalf("%d bytes written before the catalog stopped", written)
	}
	if err := (&Runnable{Catalog: c}).shutdown(&http.Server{}); err != nil {
		t.Fatal(err)
	}
	if lines := trail.lines(t); len(lines) != 1 || lines[0].RequestID != "last" {
		t.Fatalf("after stopping, the trail is %+v", lines)
	}
}

// TestRequestID: a caller's usable X-Request-Id is kept; a missing or
// unusable one is replaced by a fresh id of 16 hex digits, another for
// every request; the answer carries the id either way.
func TestRequestID(t *testing.T) {
	made := regexp.MustCompile(`^[0-9a-f]{16}$`)
	cases := []struct {
		name, sent string
		kept       bool
	}{
		{"usable", "req-1.a:b_C", true},
		{"missing", "", false},
		{"too long", strings.Repeat("a", 65), false},
		{"a line break", "a\nb", false},
		{"a space", "a b", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]bool{}
			for range 100 {
				req := httptest.NewRequest(http.MethodPost, "/v1/execute", nil)
				if tc.sent != "" {
					req.Header.Set("X-Request-Id", tc.sent)
				}
				rec := httptest.NewRecorder()
				id := requestID(rec, req)
				if got := rec.Header().Get("X-Request-Id"); got != id {
					t.Fatalf("the answer carries %q, the call %q", got, id)
				}
				if tc.kept {
					if id != tc.sent {
						t.Fatalf("the caller's id %q became %q", tc.sent, id)
					}
					continue
				}
				if !made.MatchString(id) {
					t.Fatalf("made id %q is not 16 hex digits", id)
				}
				if seen[id] {
					t.Fatalf("id %q made twice", id)
				}
				seen[id] = true
			}
		})
	}
}
