package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// menuProbe is one menu a caller reads, and how to tell it is current.
type menuProbe struct {
	name string
	page *listedPage
	url  string
}

// probes are the menus read after a change: the global REST menu, the
// probe collection's, and the first tools/list page of each over /mcp.
func (r *scaleRun) probes(m *manager) []menuProbe {
	collection := m.catalog + "/v1/namespaces/" + r.ns + "/toolcollections/probe"
	return []menuProbe{
		{"global", &listedPage{method: http.MethodGet}, m.catalog + "/v1/tools"},
		{"collection", &listedPage{method: http.MethodGet}, collection + "/tools"},
		{"global-mcp", &listedPage{method: http.MethodPost, request: listRequest("")}, m.catalog + "/mcp"},
		{"collection-mcp", &listedPage{method: http.MethodPost, request: listRequest("")}, collection + "/mcp"},
	}
}

// timedFetch fetches one page and says when its first byte came.
func timedFetch(url string, p *listedPage) (ttfb time.Duration, body []byte, err error) {
	var first time.Time
	start := time.Now()
	req, err := http.NewRequest(p.method, url, bytes.NewReader(p.request))
	if err != nil {
		return 0, nil, err
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotFirstResponseByte: func() { first = time.Now() },
	}))
	if p.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set(mcp.HeaderMethod, "tools/list")
	}
	resp, err := restClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
	return first.Sub(start), body, err
}

// menuTools counts the tools of a REST menu in the OpenAI format.
func menuTools(body []byte) int { return bytes.Count(body, []byte(`"type":"function"`)) }

// changes is how many times changeSettles changes a server and measures
// it (profile changes it twice more).
const changes = 5

// changeSettles adds a tool to s0000 five times and reads every probe
// menu until it shows the tool: the first current answer's first byte is
// what a caller waits for after a change (the median and the worst of the
// five are reported); its time since the status showed the change is how
// long the menu lagged.
func (r *scaleRun) changeSettles(m *manager) {
	b := r.b
	probes := r.probes(m)
	eventually(b, "the global menu with every tool", func() error {
		_, body, err := timedFetch(probes[0].url, probes[0].page)
		if err == nil && menuTools(body) != r.tools() {
			err = fmt.Errorf("%d tools, want %d", menuTools(body), r.tools())
		}
		return err
	})
	for _, p := range probes[1:] {
		eventually(b, "the "+p.name+" menu", func() error { _, _, err := timedFetch(p.url, p.page); return err })
	}
	firstByte := map[string][]float64{}
	lag := map[string]time.Duration{}
	var afterChange []float64
	for range changes {
		r.change(m, probes, func(p *menuProbe, ttfb time.Duration, shown time.Time, execute time.Duration) {
			if p == nil {
				afterChange = append(afterChange, float64(execute.Microseconds())/1e3)
				return
			}
			firstByte[p.name] = append(firstByte[p.name], float64(ttfb.Microseconds())/1e3)
			lag[p.name] = max(lag[p.name], time.Since(shown))
		})
	}
	r.set("execute-after-change-ms", median(afterChange))
	for _, p := range probes {
		r.set(p.name+"-ttfb-ms", median(firstByte[p.name]))
		r.set(p.name+"-ttfb-max-ms", slices.Max(firstByte[p.name]))
		r.set(p.name+"-lag-ms", float64(lag[p.name].Microseconds())/1e3)
	}
}

// change adds the next tool, added<i>, to s0000, waits until its status
// shows it, executes a tool through the global menu, then reads every
// probe menu until it shows the tool. seen is told the execute's latency (p nil),
// then each probe's first current answer's first byte.
func (r *scaleRun) change(m *manager, probes []menuProbe, seen func(p *menuProbe, ttfb time.Duration, shown time.Time, execute time.Duration)) {
	b := r.b
	i := r.added + 1
	name := fmt.Sprintf("added%d", i)
	r.probe.mcp.AddTool(mcp.Tool{Name: name, RawInputSchema: []byte(smallSchema)},
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(name), nil
		})
	r.added++
	shown := r.waitStatusTools(serverName(0), toolsPerServer+i)
	// A call through the global menu right after a change, before any
	// menu is read: what a change costs the call path.
	time.Sleep(100 * time.Millisecond) // the catalog's informer has it
	start := time.Now()
	if err := executeWant(m.catalog+"/v1/execute", []byte(`{"name":"mcp_`+serverName(1)+`_t00","arguments":{}}`), "t00"); err != nil {
		b.Fatal(err)
	}
	seen(nil, 0, shown, time.Since(start))
	want := []byte("mcp_" + serverName(0) + "_" + name)
	for _, p := range probes {
		eventually(b, "the "+p.name+" menu with "+name, func() error {
			ttfb, body, err := timedFetch(p.url, p.page)
			if err != nil {
				return err
			}
			if !bytes.Contains(body, want) {
				return errors.New("not current yet")
			}
			seen(&p, ttfb, shown, 0)
			return nil
		})
	}
}

// waitStatusTools waits until the server's status lists n tools and
// returns when it saw that.
func (r *scaleRun) waitStatusTools(name string, n int) time.Time {
	var seen time.Time
	eventually(r.b, fmt.Sprintf("%s with %d tools in status", name, n), func() error {
		var srv mcpv1alpha1.MCPServer
		if err := r.cp.client.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: name}, &srv); err != nil {
			return err
		}
		if int(srv.Status.ToolCount) != n {
			return fmt.Errorf("%d tools", srv.Status.ToolCount)
		}
		seen = time.Now()
		return nil
	})
	return seen
}

// quiet counts the writes the manager sends over three refresh intervals
// in which nothing changes, and reads its memory meanwhile: the live heap
// after GC (the smallest of the window's GC cycles), against the one
// before any MCPServer existed.
func (r *scaleRun) quiet(m *manager, baseline time.Time) {
	b := r.b
	time.Sleep(2 * time.Second) // the last change's Events and status
	// Three intervals and their jitter (up to 10%).
	window := 3 * r.size.refresh * 11 / 10
	before := r.cp.counts.snapshot()
	cpu, start := m.cpuTime(), time.Now()
	time.Sleep(window)
	writes, what := r.cp.counts.writesSince(before)
	r.set("api-writes", float64(writes))
	if writes > 0 {
		b.Logf("writes over the quiet window: %s", what)
	}
	refreshes := float64(r.size.servers) * window.Seconds() / r.size.refresh.Seconds()
	r.set("refresh-cpu-ms/server", float64((m.cpuTime()-cpu).Milliseconds())/refreshes)
	base, ok := m.lastLiveHeapBefore(baseline)
	if !ok {
		b.Fatal("no GC cycle before the fleet was created")
	}
	live := m.waitLiveHeap(b, start, 3*time.Minute, nil)
	rss, peak := m.memory()
	r.set("leader-heap-MiB", live)
	r.set("leader-heap-B/tool", (live-base)*(1<<20)/float64(r.tools()))
	r.set("leader-rss-MiB", rss)
	r.set("leader-peak-rss-MiB", peak)
}

// waitLiveHeap is the live heap after GC cycles since from, waiting up to
// limit for one; nudge, if set, is called meanwhile to make the process
// allocate.
func (m *manager) waitLiveHeap(b interface{ Fatalf(string, ...any) }, from time.Time, limit time.Duration, nudge func()) float64 {
	deadline := time.Now().Add(limit)
	for {
		if live, _, ok := m.liveHeapBetween(from, time.Now()); ok {
			return live
		}
		if time.Now().After(deadline) {
			b.Fatalf("manager %s ran no GC cycle in %s", m.name, limit)
		}
		if nudge != nil {
			nudge()
		} else {
			time.Sleep(time.Second)
		}
	}
}

// lastLiveHeapBefore is the live heap of the last GC cycle before t.
func (m *manager) lastLiveHeapBefore(t time.Time) (float64, bool) {
	live, ok := 0.0, false
	for _, c := range m.gcCycles() {
		if c.at.Before(t) {
			live, ok = c.live, true
		}
	}
	return live, ok
}

// catalogOnly starts a second manager while the first holds the Lease:
// it runs the catalog only (controllers run on the leader), so its memory
// is the catalog's, and the leader's minus it the controllers'. Its heap
// is read twice: with the informer cache synced and no menu served yet,
// then once it served the same menus the leader did. GOGC=5 makes it
// collect after a few MiB of allocation (the live heap does not depend on
// GOGC), which /metrics scrapes provide.
func (r *scaleRun) catalogOnly(holder string) {
	b := r.b
	follower, err := launchManager(r.cp, "scale-b", []string{"GOGC=5"}, managerFlags()...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(follower.stop)
	if err := follower.waitReady(2 * time.Minute); err != nil {
		b.Fatal(err)
	}
	if got := r.leaseHolder(""); got != holder {
		b.Fatalf("the Lease moved to %s: the second manager must be a follower", got)
	}
	nudge := func() { _, _ = follower.metric("go_goroutines") }
	r.set("catalog-cache-heap-MiB", follower.waitLiveHeap(b, time.Now(), time.Minute, nudge))
	for _, p := range r.probes(follower) {
		eventually(b, "the follower's "+p.name+" menu", func() error { _, _, err := timedFetch(p.url, p.page); return err })
	}
	live := follower.waitLiveHeap(b, time.Now(), time.Minute, nudge)
	rss, _ := follower.memory()
	r.set("catalog-heap-MiB", live)
	r.set("catalog-rss-MiB", rss)
	r.set("controllers-heap-MiB", r.metrics["leader-heap-MiB"]-live)
	follower.stop()
}

// restart stops the leader and starts it again with every server Ready
// in status: how long until it serves the whole global menu, and how
// many sessions (initialize or server/discover) its first execute to each
// server opens once its controllers have re-listed every server.
func (r *scaleRun) restart(old *manager) *manager {
	b := r.b
	beforeRestart := r.fleet.connectsByPath()
	old.stop()
	m, err := launchManager(r.cp, "scale-a2", nil, managerFlags()...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.stop)
	menu := &listedPage{method: http.MethodGet}
	for {
		_, body, err := timedFetch(m.catalog+"/v1/tools", menu)
		if err == nil && menuTools(body) == r.tools() {
			r.set("s-restart-to-full-menu", time.Since(m.started).Seconds())
			break
		}
		if time.Since(m.started) > 2*time.Minute {
			b.Fatalf("the restarted manager serves no full menu after 2 minutes: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.waitRediscovered(beforeRestart)
	before := r.fleet.connectsByPath()
	latencies := r.executeEach(m)
	most, total := 0, 0
	for path, n := range r.fleet.connectsByPath() {
		opened := int(n - before[path])
		most, total = max(most, opened), total+opened
	}
	sortDurations(latencies)
	r.set("first-execute-p50-ms", quantile(latencies, 0.5)/1e3)
	r.set("first-execute-max-connects", float64(most))
	r.set("first-execute-connects/server", float64(total)/float64(len(latencies)))
	return m
}

// waitRediscovered waits until the restarted controllers opened a
// session to every server and stopped opening more, so that what the
// executes open afterwards is the catalog's own.
func (r *scaleRun) waitRediscovered(start map[string]int64) {
	last, stable := -1, 0
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		reached, total := 0, 0
		for path, n := range r.fleet.connectsByPath() {
			if n > start[path] {
				reached++
			}
			total += int(n)
		}
		if reached == r.size.servers && total == last {
			if stable++; stable == 10 {
				return
			}
		} else {
			stable = 0
		}
		last = total
		time.Sleep(200 * time.Millisecond)
	}
	r.b.Fatal("the restarted manager did not re-discover every server within 3 minutes")
}

// executeEach executes one tool of every second server through the
// global REST execute, from 16 callers, and returns the latencies. Every
// second: each server a manager calls holds two sockets at each end (the
// calls, and the list-change stream the catalog's session opens), as do
// the controllers' sessions, and with every server that is more than this
// machine's 20,000 descriptors per process allow.
func (r *scaleRun) executeEach(m *manager) []time.Duration {
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failure   error
		wg        sync.WaitGroup
	)
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				start := time.Now()
				err := executeWant(m.catalog+"/v1/execute", []byte(`{"name":"mcp_`+serverName(i)+`_t00","arguments":{}}`), "t00")
				mu.Lock()
				if err != nil && failure == nil {
					failure = err
				}
				latencies = append(latencies, time.Since(start))
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < r.size.servers; i += 2 {
		next <- i
	}
	close(next)
	wg.Wait()
	if failure != nil {
		r.b.Fatal(failure)
	}
	return latencies
}
