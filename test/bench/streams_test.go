package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// BenchmarkStreams measures what agents that stay cost one replica (issue
// 45): n listening streams held at once through a collection's /mcp, half
// of them legacy (a 2025-11-25 session's GET) and half 2026-07-28
// subscriptions/listen, each on a connection of its own; what they cost
// the manager (live heap and goroutine stacks, goroutines and file
// descriptors, per stream); how long a change of the menu takes to reach
// every listener, and what calls made while it goes out cost; calls while
// the streams are held; then sessions opened and closed at a steady rate
// (initialize, tools/list, one call, DELETE), and whether goroutines,
// descriptors and the live heap come back to where they were.
// BENCH_STREAMS, BENCH_HOLD_SECONDS (how long the streams are then held,
// calling one after another with 100 ms between), BENCH_CHURN_RATE and BENCH_CHURN_SECONDS
// scale it (make bench-scale); by default it holds 2,000 streams for 10 s
// and opens 500 sessions a second for 10 s, and a smoke run 20 streams
// for 1 s and 20 sessions a second for 1 s. It reports as <n>-streams.
func BenchmarkStreams(b *testing.B) {
	n, hold, rate, seconds := 2000, 10, 500, 10
	if smoke() {
		n, hold, rate, seconds = 20, 1, 20, 1
	}
	n = envInt(b, "BENCH_STREAMS", n)
	hold = envInt(b, "BENCH_HOLD_SECONDS", hold)
	rate = envInt(b, "BENCH_CHURN_RATE", rate)
	seconds = envInt(b, "BENCH_CHURN_SECONDS", seconds)
	// Every stream is a descriptor in each process; the manager inherits
	// this process's limit.
	raiseFileLimit(b, uint64(n+4096))
	cp, err := sharedPlane()
	if err != nil {
		b.Fatal(err)
	}
	echoBase, _ := startFloor(b, "./test/bench/echoserver", "-tools=10")
	m := startManager(b, cp, "streams", "--catalog-max-streams="+strconv.Itoa(n+100),
		"--catalog-max-caller-streams="+strconv.Itoa(n+100))
	ns := namespace(b, cp, "streams")
	rw := watchReady(b, cp, ns, 11)
	collectionOfAll(b, cp, ns, "all")
	// Churning thousands of sessions a second calls the one server from
	// hundreds at once: its limit (spec.maxConcurrentCalls, 32 by default,
	// and as many waiting) is raised as a platform team would for that
	// load, so that the churn measures the catalog, not that limit.
	createServers(b, cp, ns, 1, func(int) string { return "echo" }, func(int) string { return echoBase + "/mcp" },
		func(srv *mcpv1alpha1.MCPServer) { srv.Spec.MaxConcurrentCalls = ptr.To[int32](512) })
	rw.wait(b, 1, time.Minute)
	base := m.catalog + "/v1/namespaces/" + ns + "/toolcollections/all"
	lc := newListenClient(n)
	eventually(b, "a REST call through the collection", func() error { return restCall(base+"/execute", executeBody("mcp_echo_echo")) })

	before := m.footprint(b)
	streams := make([]*heldStream, n)
	openStart := time.Now()
	var (
		opened   sync.WaitGroup
		mu       sync.Mutex
		openErrs int
		firstErr error
	)
	next := make(chan int)
	for range 64 {
		opened.Add(1)
		go func() {
			defer opened.Done()
			for i := range next {
				s, err := lc.open(base+"/mcp", i%2 == 0)
				if err != nil {
					mu.Lock()
					openErrs++
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					continue
				}
				streams[i] = s
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	opened.Wait()
	b.Cleanup(func() {
		for _, s := range streams {
			if s != nil {
				s.close()
			}
		}
	})
	if openErrs > 0 {
		b.Fatalf("%d of %d streams did not open; the first: %v", openErrs, n, firstErr)
	}
	openTime := time.Since(openStart)
	// The streams' own connections only: the pool's idle ones would be
	// counted as the streams'.
	lc.http.CloseIdleConnections()
	held := m.footprint(b)
	perStream := func(after, before float64) float64 { return (after - before) / float64(n) }

	// A change of the menu, heard by every listener, with calls made one
	// after another until the last one heard it, from a process of their
	// own (test/bench/caller).
	caller := startCaller(b, base+"/execute", executeBody("mcp_echo_echo"), "hi")
	changed := time.Now()
	patchExclude(b, cp, ns, `["*t0009"]`)
	lags := make([]time.Duration, 0, n)
	deadline := time.Now().Add(2 * time.Minute)
	for _, s := range streams {
		at, err := s.changedAfter(changed, time.Until(deadline))
		if err != nil {
			b.Fatalf("a %s stream, after the patch: %v", s.kind(), err)
		}
		lags = append(lags, at.Sub(changed))
	}
	fanLat, fanErrs := caller.stop(b)
	sortDurations(lags)
	sortDurations(fanLat)
	// Calls while every stream is held.
	var callLat []time.Duration
	callErrs := 0
	for range max(20, min(n/10, 500)) {
		start := time.Now()
		if err := restCall(base+"/execute", executeBody("mcp_echo_echo")); err != nil {
			callErrs++
			continue
		}
		callLat = append(callLat, time.Since(start))
	}
	sortDurations(callLat)
	// Held, with a steady trickle of calls.
	holdCalls, holdErrs := 0, 0
	for end := time.Now().Add(time.Duration(hold) * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		holdCalls++
		if err := restCall(base+"/execute", executeBody("mcp_echo_echo")); err != nil {
			holdErrs++
		}
	}
	ended := 0
	for _, s := range streams {
		if s.ended() {
			ended++
		}
	}
	for _, s := range streams {
		s.close()
	}
	// An idle keep-alive connection holds a descriptor and a goroutine in
	// the manager: the clients' own must not read as a leak.
	lc.http.CloseIdleConnections()

	churn := churnSessions(base+"/mcp", rate, time.Duration(seconds)*time.Second)
	after, back := m.settle(b, before, time.Minute)
	report(b, strconv.Itoa(n)+"-streams", map[string]float64{
		"hold-s":                        float64(hold),
		"hold-calls":                    float64(holdCalls),
		"hold-call-errors":              float64(holdErrs),
		"streams":                       float64(n),
		"open-s":                        openTime.Seconds(),
		"heap-KiB/stream":               perStream(held.heapMiB, before.heapMiB) * 1024,
		"stack-KiB/stream":              perStream(held.stackMiB, before.stackMiB) * 1024,
		"KiB/stream":                    perStream(held.heapMiB+held.stackMiB, before.heapMiB+before.stackMiB) * 1024,
		"goroutines/stream":             perStream(held.goroutines, before.goroutines),
		"fds/stream":                    perStream(held.fds, before.fds),
		"change-p50-ms":                 quantile(lags, 0.50) / 1e3,
		"change-p99-ms":                 quantile(lags, 0.99) / 1e3,
		"change-max-ms":                 quantile(lags, 1) / 1e3,
		"calls-during-change":           float64(len(fanLat) + fanErrs),
		"call-during-change-errors":     float64(fanErrs),
		"call-during-change-p50-ms":     quantile(fanLat, 0.50) / 1e3,
		"call-during-change-p99-ms":     quantile(fanLat, 0.99) / 1e3,
		"calls-while-held":              float64(len(callLat) + callErrs),
		"call-while-held-p50-ms":        quantile(callLat, 0.50) / 1e3,
		"call-while-held-p99-ms":        quantile(callLat, 0.99) / 1e3,
		"call-while-held-errors":        float64(callErrs),
		"streams-ended-while-held":      float64(ended),
		"churn-asked/s":                 float64(rate),
		"churn-started":                 float64(churn.started),
		"churn-s":                       float64(seconds),
		"churn-sessions/s":              churn.rate,
		"churn-session-p50-ms":          quantile(churn.latencies, 0.50) / 1e3,
		"churn-session-p99-ms":          quantile(churn.latencies, 0.99) / 1e3,
		"churn-errors":                  float64(churn.errors),
		"goroutines-after-minus-before": after.goroutines - before.goroutines,
		"fds-after-minus-before":        after.fds - before.fds,
		"heap-MiB-after-minus-before":   after.heapMiB - before.heapMiB,
		"settled":                       boolMetric(back),
	})
	if churn.errors > 0 {
		b.Logf("churn: %d errors, the first: %v", churn.errors, churn.firstErr)
	}
}

func boolMetric(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// envInt is the positive integer in the environment variable name, or def.
func envInt(b *testing.B, name string, def int) int {
	raw := os.Getenv(name)
	if raw == "" {
		return def
	}
	v, err := strconv.Atoi(raw)
	if err != nil || v < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, raw)
	}
	return v
}

// raiseFileLimit sets this process's RLIMIT_NOFILE to at least want (the
// hard limit too, which needs root when it is lower), always by
// Setrlimit: Go raises its own soft limit at start but gives the processes
// it starts the original one unless the program sets it itself, and the
// manager started afterwards must inherit it.
func raiseFileLimit(b *testing.B, want uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	lim.Cur = max(lim.Cur, want)
	lim.Max = max(lim.Max, want)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatalf("raising the file descriptor limit to %d (a stream is one in each process): %v", want, err)
	}
}

// footprint is what the manager holds at one moment.
type footprint struct {
	heapMiB, stackMiB, goroutines, fds float64
}

// footprint reads the manager's live heap from a GC cycle that ran after
// now (scrapes of /metrics make it allocate until one does), its goroutine
// stacks and goroutines from /metrics, and its open descriptors.
func (m *manager) footprint(b *testing.B) footprint {
	b.Helper()
	now := time.Now()
	live := m.waitLiveHeap(b, now, 2*time.Minute, func() { _, _ = m.metric("go_goroutines") })
	stack, err := m.metric("go_memstats_stack_inuse_bytes")
	if err != nil {
		b.Fatal(err)
	}
	goroutines, err := m.metric("go_goroutines")
	if err != nil {
		b.Fatal(err)
	}
	return footprint{heapMiB: live, stackMiB: stack / (1 << 20), goroutines: goroutines, fds: float64(openFiles(m.pid()))}
}

// settle waits up to limit for the manager's goroutines and descriptors to
// come back to within 10 of before's and its live heap to within 2 MiB
// (gctrace's whole MiB, and what the run's first calls left cached), and
// reports where they are and whether they came back.
func (m *manager) settle(b *testing.B, before footprint, limit time.Duration) (footprint, bool) {
	b.Helper()
	deadline := time.Now().Add(limit)
	for {
		g, err := m.metric("go_goroutines")
		if err != nil {
			b.Fatal(err)
		}
		fds := float64(openFiles(m.pid()))
		if g <= before.goroutines+10 && fds <= before.fds+10 {
			if now := m.footprint(b); now.heapMiB <= before.heapMiB+2 {
				return now, true
			}
		}
		if time.Now().After(deadline) {
			return m.footprint(b), false
		}
		time.Sleep(time.Second)
	}
}

func openFiles(pid int) int {
	entries, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	return len(entries)
}

// patchExclude sets the collection's spec.tools.exclude (JSON), which
// changes its menu.
func patchExclude(b *testing.B, cp *controlPlane, ns, exclude string) {
	b.Helper()
	tc := &mcpv1alpha1.ToolCollection{}
	tc.Namespace, tc.Name = ns, "all"
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"tools":{"exclude":`+exclude+`}}}`))
	if err := cp.client.Patch(context.Background(), tc, patch); err != nil {
		b.Fatal(err)
	}
}

// listenClient opens streams, each on a connection of its own, from
// several loopback source addresses when there are more than one address's
// ephemeral ports can hold.
type listenClient struct {
	http *http.Client
}

func newListenClient(n int) *listenClient {
	sources := max(1, (n+19999)/20000)
	var next atomic.Uint64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: 30 * time.Second}
		if sources > 1 {
			i := next.Add(1) % uint64(sources)
			d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}
		}
		return d.DialContext(ctx, network, addr)
	}
	return &listenClient{http: &http.Client{Transport: &http.Transport{DialContext: dial, MaxIdleConnsPerHost: 64,
		IdleConnTimeout: 5 * time.Minute, ResponseHeaderTimeout: time.Minute}}}
}

// heldStream is one open stream, read line by line by a goroutine of its
// own, which notes when it last heard the tools list change.
type heldStream struct {
	legacy  bool
	end     func() // ends a legacy stream's session, as a client that is done does
	closed  sync.Once
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	changes []time.Time
	heard   chan struct{} // signalled on every change heard
}

func (s *heldStream) kind() string {
	if s.legacy {
		return "legacy"
	}
	return "2026-07-28 listen"
}

// open opens a stream: a 2025-11-25 session and its GET (legacy), or a
// 2026-07-28 subscriptions/listen, and waits for its greeting (the
// catalog's first list change on every stream).
func (c *listenClient) open(url string, legacy bool) (*heldStream, error) {
	ctx, cancel := context.WithCancel(context.Background())
	var req *http.Request
	var err error
	if legacy {
		var session string
		if session, err = c.initialize(url); err != nil {
			cancel()
			return nil, err
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			cancel()
			return nil, err
		}
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(listenBody))
		if err != nil {
			cancel()
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("stream: status %d: %s", resp.StatusCode, raw)
	}
	s := &heldStream{legacy: legacy, cancel: cancel, done: make(chan struct{}), heard: make(chan struct{}, 1), end: func() {}}
	if legacy {
		session := req.Header.Get("Mcp-Session-Id")
		s.end = func() { _ = c.delete(url, session) }
	}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		// A small buffer: the load generator holds tens of thousands.
		r := bufio.NewReaderSize(resp.Body, 1024)
		for {
			line, err := r.ReadSlice('\n')
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return
			}
			if bytes.Contains(line, []byte(`"notifications/tools/list_changed"`)) {
				s.mu.Lock()
				s.changes = append(s.changes, time.Now())
				s.mu.Unlock()
				select {
				case s.heard <- struct{}{}:
				default:
				}
			}
		}
	}()
	// The greeting.
	select {
	case <-s.heard:
		return s, nil
	case <-s.done:
		s.close()
		return nil, fmt.Errorf("a %s stream ended before its greeting", s.kind())
	case <-time.After(time.Minute):
		s.close()
		return nil, fmt.Errorf("a %s stream sent no greeting within a minute", s.kind())
	}
}

// changedAfter waits up to limit for a list change heard after t.
func (s *heldStream) changedAfter(t time.Time, limit time.Duration) (time.Time, error) {
	deadline := time.After(limit)
	for {
		s.mu.Lock()
		for _, at := range s.changes {
			if at.After(t) {
				s.mu.Unlock()
				return at, nil
			}
		}
		s.mu.Unlock()
		select {
		case <-s.heard:
		case <-s.done:
			return time.Time{}, errors.New("the stream ended before it heard the list change")
		case <-deadline:
			return time.Time{}, fmt.Errorf("no list change heard within %s", limit.Round(time.Second))
		}
	}
}

func (s *heldStream) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// close closes the stream and, for a legacy one, ends its session, once.
func (s *heldStream) close() {
	s.closed.Do(func() {
		s.cancel()
		<-s.done
		s.end()
	})
}

const listenBody = `{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench-streams","version":"1"}},"notifications":{"toolsListChanged":true}}}`

// initialize opens a 2025-11-25 session and returns its id.
func (c *listenClient) initialize(url string) (string, error) {
	resp, err := c.post(url, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench-streams","version":"1"}}}`)
	if err != nil {
		return "", err
	}
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		return "", fmt.Errorf("initialize: no Mcp-Session-Id")
	}
	if _, err := c.post(url, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return "", err
	}
	return session, nil
}

// post sends one JSON-RPC message in session (none if empty) and reads the
// whole answer, which must be a success.
func (c *listenClient) post(url, session, body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 || bytes.Contains(raw, []byte(`"error":`)) || bytes.Contains(raw, []byte(`"isError":true`)) {
		return nil, fmt.Errorf("%.80s: status %d: %.200s", body, resp.StatusCode, raw)
	}
	return resp, nil
}

// delete ends a 2025-11-25 session.
func (c *listenClient) delete(url, session string) error {
	req, err := http.NewRequest(http.MethodDelete, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("DELETE: status %d", resp.StatusCode)
	}
	return nil
}

// churn is what a run of sessions opened and closed measured.
type churn struct {
	started   int
	rate      float64 // sessions completed a second, over the time asked
	latencies []time.Duration
	errors    int
	firstErr  error
}

// churnSessions starts rate sessions a second for d, each initialize,
// tools/list, one tools/call and DELETE, over a connection pool of their
// own, and measures each session's time from the moment it was due to
// start (so a load generator that falls behind counts against it, not
// for it) to its DELETE answered.
func churnSessions(url string, rate int, d time.Duration) churn {
	c := newListenClient(1)
	var (
		mu  sync.Mutex
		out churn
		wg  sync.WaitGroup
	)
	one := func(start time.Time) {
		defer wg.Done()
		err := func() error {
			session, err := c.initialize(url)
			if err != nil {
				return err
			}
			if _, err := c.post(url, session, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); err != nil {
				return err
			}
			if _, err := c.post(url, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_echo_echo","arguments":{"message":"hi"}}}`); err != nil {
				return err
			}
			return c.delete(url, session)
		}()
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			out.errors++
			if out.firstErr == nil {
				out.firstErr = err
			}
			return
		}
		out.latencies = append(out.latencies, time.Since(start))
	}
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; i < int(d/interval); i++ {
		due := start.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		out.started++
		go one(due)
	}
	wg.Wait()
	c.http.CloseIdleConnections()
	out.rate = float64(len(out.latencies)) / d.Seconds()
	sort.Slice(out.latencies, func(i, j int) bool { return out.latencies[i] < out.latencies[j] })
	return out
}

// callerProcess is test/bench/caller, calling until stopped.
type callerProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startCaller starts test/bench/caller calling url with body, each answer
// to have the output want, and returns once its first call was answered.
func startCaller(b *testing.B, url string, body []byte, want string) *callerProcess {
	b.Helper()
	cmd, stdin, out := startHelper(b, "./test/bench/caller", "-url", url, "-body", string(body), "-want", want)
	c := &callerProcess{cmd: cmd, stdin: stdin, out: out}
	if line, err := c.out.ReadString('\n'); err != nil || line != "ready\n" {
		b.Fatalf("the caller did not get ready: %q, %v (its first call failed: see its output)", line, err)
	}
	return c
}

// stop ends the calls and reads their latencies and errors.
func (c *callerProcess) stop(b *testing.B) ([]time.Duration, int) {
	b.Helper()
	_ = c.stdin.Close()
	var latencies []time.Duration
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			b.Fatalf("reading the caller's latencies: %v", err)
		}
		line = strings.TrimSpace(line)
		if n, ok := strings.CutPrefix(line, "errors "); ok {
			errs, err := strconv.Atoi(n)
			if err != nil {
				b.Fatalf("the caller's errors: %q", line)
			}
			_ = c.cmd.Wait()
			return latencies, errs
		}
		us, err := strconv.Atoi(line)
		if err != nil {
			b.Fatalf("a latency from the caller: %q", line)
		}
		latencies = append(latencies, time.Duration(us)*time.Microsecond)
	}
}
