package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/util/teststorage"
)

const testNamespace = "monitoring-test"

// scrapeInterval spaces the scrapes when they are loaded into storage, as
// a Prometheus scraping once a minute would have stored them.
const scrapeInterval = time.Minute

// TestAgainstTheManager runs the real manager against a real control plane
// and real MCP servers, drives it through calls that succeed, fail as
// tools, and fail to reach a server that stopped answering, scrapes its
// metrics endpoint three times, and holds the rules and the dashboard to
// what it exported.
func TestAgainstTheManager(t *testing.T) {
	scrapes := runManager(t)
	latest := scrapes[len(scrapes)-1]
	needed := loadNeeded(t)
	known := knownFromScrape(latest).merged(knownFromNeeded(needed))
	groups := loadRules(t)
	queries := loadDashboard(t).queries()
	for _, group := range groups.Groups {
		for _, rule := range group.Rules {
			queries = append(queries, query{where: "alert " + rule.Alert, expr: rule.Expr})
		}
	}

	t.Run("rules and dashboard use only exported or listed metrics and labels", func(t *testing.T) {
		for _, q := range queries {
			expr, err := promParser.ParseExpr(q.expr)
			if err != nil {
				t.Errorf("%s: %v", q.where, err)
				continue
			}
			for _, problem := range unknownUses(known, expr) {
				t.Errorf("%s: %s", q.where, problem)
			}
		}
	})

	t.Run("METRICS-NEEDED.md lists only metrics not exported yet, each of them used", func(t *testing.T) {
		if len(needed) == 0 && strings.Contains(mustRead(t, neededFile), "| `") {
			t.Fatalf("%s has rows the test cannot read", neededFile)
		}
		used := map[string]bool{}
		for _, q := range queries {
			if expr, err := promParser.ParseExpr(q.expr); err == nil {
				for _, name := range selectedNames(expr) {
					used[name] = true
				}
			}
		}
		exported := knownFromScrape(latest)
		for _, m := range needed {
			for series := range knownFromNeeded(map[string]neededMetric{m.name: m}) {
				if _, ok := exported[series]; ok {
					t.Errorf("%s is exported now: remove its row from %s (the rules and the dashboard are then checked against its real labels)", m.name, neededFile)
				}
				if used[series] {
					delete(used, series)
					used[m.name] = true
				}
			}
			if !used[m.name] {
				t.Errorf("%s is listed in %s but no rule or panel uses it", m.name, neededFile)
			}
		}
	})

	t.Run("the alert tests' series are shaped like the exported ones", func(t *testing.T) {
		for _, tc := range alertCases {
			series, err := tc.seriesOf()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range series {
				labelNames, ok := known[s.Get(model.MetricNameLabel)]
				if !ok {
					t.Errorf("%s: %s is neither exported nor listed", tc.name, s.Get(model.MetricNameLabel))
					continue
				}
				s.Range(func(l labels.Label) {
					if l.Name != model.MetricNameLabel && !labelNames[l.Name] {
						t.Errorf("%s: %s has no label %q", tc.name, s.Get(model.MetricNameLabel), l.Name)
					}
				})
			}
		}
	})

	storage, at := loadScrapes(t, scrapes)
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, Parser: promParser})
	t.Cleanup(func() { _ = engine.Close() })
	evaluate := func(t *testing.T, expr string) promql.Vector {
		t.Helper()
		q, err := engine.NewInstantQuery(context.Background(), storage, nil, expr, at)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		defer q.Close()
		result := q.Exec(context.Background())
		if result.Err != nil {
			t.Fatalf("%q: %v", expr, result.Err)
		}
		vector, err := result.Vector()
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		return vector
	}

	t.Run("every query returns series on the run's metrics, unless it waits for a listed one", func(t *testing.T) {
		for _, q := range queries {
			expr, err := promParser.ParseExpr(q.expr)
			if err != nil {
				continue // reported above
			}
			result := evaluate(t, q.expr)
			if strings.HasPrefix(q.where, "alert ") || waitsForNeeded(expr, needed) {
				continue // alerts are silent on a healthy run; listed metrics are not exported yet
			}
			if len(result) == 0 {
				t.Errorf("%s: %q returns nothing on the run's metrics", q.where, q.expr)
			}
		}
	})

	t.Run("MCPCatalogErrorRatioHigh picks the server that stopped answering, not the healthy one", func(t *testing.T) {
		for _, group := range groups.Groups {
			for _, rule := range group.Rules {
				if rule.Alert != "MCPCatalogErrorRatioHigh" {
					continue
				}
				var servers []string
				for _, sample := range evaluate(t, rule.Expr) {
					servers = append(servers, sample.Metric.Get("server"))
				}
				if want := []string{testNamespace + "/doomed"}; !slices.Equal(servers, want) {
					t.Errorf("the expression selects %v, want %v", servers, want)
				}
				return
			}
		}
		t.Fatal("no MCPCatalogErrorRatioHigh rule")
	})
}

// waitsForNeeded is true when the expression selects a metric that
// METRICS-NEEDED.md lists.
func waitsForNeeded(expr parser.Expr, needed map[string]neededMetric) bool {
	listed := knownFromNeeded(needed)
	for _, name := range selectedNames(expr) {
		if _, ok := listed[name]; ok {
			return true
		}
	}
	return false
}

// runManager starts the control plane, two demo MCP servers and the
// manager, drives calls through the catalog in three phases and returns a
// scrape of the metrics endpoint after each.
func runManager(t *testing.T) []map[string]*dto.MetricFamily {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test`, which builds kube-apiserver and etcd")
	}
	bins := buildBinaries(t, "./hack/controlplane", "./cmd/manager", "./cmd/demo-mcp-server")
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	controlPlane := startProcess(t, filepath.Join(bins, "controlplane"), "--kubeconfig-out", kubeconfig, "--crds", filepath.Join(root, "config", "crd", "bases"))
	controlPlane.waitFor(t, "kubeconfig", 2*time.Minute, fileFilled(kubeconfig))

	// Two servers, the catalog, metrics, and an address nobody listens on.
	free := freeAddresses(t, 5)
	servers := map[string]*process{}
	addrs := map[string]string{"steady": free[0], "doomed": free[1]}
	for _, name := range []string{"steady", "doomed"} {
		servers[name] = startProcess(t, filepath.Join(bins, "demo-mcp-server"), "--listen", addrs[name])
		servers[name].waitFor(t, "listening", 30*time.Second, func() bool { return listening(addrs[name]) })
	}
	catalogAddr, metricsAddr := free[2], free[3]
	manager := startProcess(t, filepath.Join(bins, "manager"), "--kubeconfig="+kubeconfig,
		"--metrics-bind-address="+metricsAddr, "--health-probe-bind-address=0", "--catalog-bind-address="+catalogAddr)
	manager.waitFor(t, "catalog", time.Minute, func() bool { return listening(catalogAddr) && listening(metricsAddr) })

	kubectl(t, kubeconfig, manifests(addrs["steady"], addrs["doomed"], free[4]), "apply", "-f", "-")
	kubectl(t, kubeconfig, "", "wait", "-n", testNamespace, "--for=condition=Ready", "--timeout=90s",
		"mcpservers/steady", "mcpservers/doomed", "toolcollections/assistant")

	c := catalog{t: t, base: "http://" + catalogAddr + "/v1/namespaces/" + testNamespace + "/toolcollections/"}
	// kubectl wait read Ready from the API server; the catalog serves from
	// the manager's cache, which hears of it a moment later.
	manager.waitFor(t, "the servers' tools in the assistant menu", time.Minute,
		c.menuHolds("assistant", "mcp_steady_convert_units", "mcp_steady_pin_timezone", "mcp_doomed_convert_units"))
	var scrapes []map[string]*dto.MetricFamily
	// Calls that work, a tool answering isError, menus read, a tool list change.
	c.menu("assistant")
	c.menu("pinned")
	c.call("mcp_steady_convert_units", `{"value": 26.2, "from": "mi", "to": "km"}`, false)
	c.call("mcp_steady_time_add", `{"time": "yesterday", "duration": "1h"}`, true)
	c.call("mcp_doomed_convert_units", `{"value": 1, "from": "kg", "to": "lb"}`, false)
	c.call("mcp_steady_pin_timezone", `{"timezone": "Europe/Paris"}`, false)
	scrapes = append(scrapes, scrape(t, metricsAddr))

	// An agent holds an MCP session; doomed stops answering (SIGSTOP: the
	// connection stays, no answer comes, the 1s timeout ends each call) and,
	// with one call in flight and one waiting, turns the next away (busy).
	openSession(t, c.base+"assistant/mcp")
	servers["doomed"].pause(t)
	for phase := 0; phase < 2; phase++ {
		c.burst("mcp_doomed_convert_units", `{"value": 1, "from": "kg", "to": "lb"}`)
		c.call("mcp_steady_convert_units", `{"value": 1, "from": "km", "to": "mi"}`, false)
		c.call("mcp_steady_time_add", `{"time": "2026-11-30T12:00:00Z", "duration": "soon"}`, true)
		scrapes = append(scrapes, scrape(t, metricsAddr))
	}
	return scrapes
}

// manifests: steady and doomed are selected by the assistant collection
// (doomed takes one call at a time);
// broken points at an address nothing listens on, so its discovery fails;
// the pinned collection approves nothing, so it withholds steady's tools.
func manifests(steady, doomed, nowhere string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: mcp.toolmesh.io/v1alpha1
kind: MCPServer
metadata: {name: steady, namespace: %[1]s, labels: {team: monitoring}}
spec: {url: "http://%[2]s/mcp", refreshInterval: 1h}
---
apiVersion: mcp.toolmesh.io/v1alpha1
kind: MCPServer
metadata: {name: doomed, namespace: %[1]s, labels: {team: monitoring}}
spec: {url: "http://%[3]s/mcp", refreshInterval: 1h, timeout: 1s, maxConcurrentCalls: 1}
---
apiVersion: mcp.toolmesh.io/v1alpha1
kind: MCPServer
metadata: {name: broken, namespace: %[1]s}
spec: {url: "http://%[4]s/mcp", timeout: 1s}
---
apiVersion: mcp.toolmesh.io/v1alpha1
kind: ToolCollection
metadata: {name: assistant, namespace: %[1]s}
spec:
  servers: {selector: {matchLabels: {team: monitoring}}}
---
apiVersion: mcp.toolmesh.io/v1alpha1
kind: ToolCollection
metadata: {name: pinned, namespace: %[1]s}
spec:
  servers: {names: [steady]}
  pinning: {mode: Enforce}
`, testNamespace, steady, doomed, nowhere)
}

// catalog calls the catalog's REST API of one namespace.
type catalog struct {
	t    *testing.T
	base string
}

// do sends one request; it does not fail the test itself, so that
// goroutines may call it.
func (c catalog) do(method, url, body string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// execute calls a tool through the assistant collection.
func (c catalog) execute(tool, arguments string) (int, []byte, error) {
	return c.do(http.MethodPost, c.base+"assistant/execute", `{"name": "`+tool+`", "arguments": `+arguments+`}`)
}

func (c catalog) menu(collection string) {
	c.t.Helper()
	code, body, err := c.do(http.MethodGet, c.base+collection+"/tools", "")
	if err != nil || code != http.StatusOK {
		c.t.Fatalf("menu of %s: %d %s %v", collection, code, body, err)
	}
}

// menuHolds reports whether the collection's menu holds every one of tools.
func (c catalog) menuHolds(collection string, tools ...string) func() bool {
	return func() bool {
		code, body, err := c.do(http.MethodGet, c.base+collection+"/tools", "")
		if err != nil || code != http.StatusOK {
			return false
		}
		for _, tool := range tools {
			if !strings.Contains(string(body), `"`+tool+`"`) {
				return false
			}
		}
		return true
	}
}

// call executes a tool and checks that it answered, as a tool error or not.
func (c catalog) call(tool, arguments string, isError bool) {
	c.t.Helper()
	code, body, err := c.execute(tool, arguments)
	var envelope struct {
		IsError bool `json:"isError"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &envelope) != nil || envelope.IsError != isError {
		c.t.Fatalf("calling %s: %d %s %v, want 200 with isError %v", tool, code, body, err, isError)
	}
}

// burst sends three calls at once to a server that takes one at a time and
// does not answer: one is in flight, one waits, one is turned away (429);
// the two it took time out (504, or 502 once the session is dropped).
func (c catalog) burst(tool, arguments string) {
	c.t.Helper()
	type answer struct {
		code int
		err  error
	}
	answers := make(chan answer, 3)
	for range 3 {
		go func() {
			code, _, err := c.execute(tool, arguments)
			answers <- answer{code, err}
		}()
	}
	count := map[int]int{}
	for range 3 {
		a := <-answers
		if a.err != nil {
			c.t.Fatal(a.err)
		}
		count[a.code]++
	}
	if count[http.StatusTooManyRequests] != 1 || count[http.StatusGatewayTimeout]+count[http.StatusBadGateway] != 2 {
		c.t.Fatalf("three calls at once to %s (one at a time, not answering): status codes %v, want one 429 and two 502/504", tool, count)
	}
}

// openSession holds an MCP session on the catalog until the test ends, as
// an agent using an MCP client does (2025-11-25: a session with an id).
func openSession(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	req.Params.ClientInfo = mcp.Implementation{Name: "monitoring-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initializing an MCP session on %s: %v", url, err)
	}
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatalf("listing tools on %s: %v", url, err)
	}
}

// scrape reads the manager's metrics endpoint as Prometheus does.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scraping %s: %v", addr, err)
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape of %s: %v", addr, err)
	}
	return families
}

// loadScrapes stores the scrapes one scrapeInterval apart, series named
// as Prometheus names them, and returns the time of the last.
func loadScrapes(t *testing.T, scrapes []map[string]*dto.MetricFamily) (*teststorage.TestStorage, time.Time) {
	t.Helper()
	storage := teststorage.New(t)
	start := time.Unix(0, 0).UTC()
	app := storage.Appender(context.Background())
	for i, families := range scrapes {
		ts := start.Add(time.Duration(i) * scrapeInterval).UnixMilli()
		for name, family := range families {
			for _, m := range family.GetMetric() {
				for _, s := range samplesOf(name, family.GetType(), m) {
					if _, err := app.Append(0, s.labels, ts, s.value); err != nil {
						t.Fatalf("storing %s: %v", s.labels, err)
					}
				}
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	return storage, start.Add(time.Duration(len(scrapes)-1) * scrapeInterval)
}

type sample struct {
	labels labels.Labels
	value  float64
}

// samplesOf turns one exposed metric into the series Prometheus stores.
func samplesOf(name string, kind dto.MetricType, m *dto.Metric) []sample {
	series := func(seriesName string, value float64, extra ...string) sample {
		b := labels.NewScratchBuilder(len(m.GetLabel()) + 2)
		b.Add(model.MetricNameLabel, seriesName)
		for _, l := range m.GetLabel() {
			b.Add(l.GetName(), l.GetValue())
		}
		for i := 0; i+1 < len(extra); i += 2 {
			b.Add(extra[i], extra[i+1])
		}
		b.Sort()
		return sample{labels: b.Labels(), value: value}
	}
	switch kind {
	case dto.MetricType_COUNTER:
		return []sample{series(name, m.GetCounter().GetValue())}
	case dto.MetricType_GAUGE:
		return []sample{series(name, m.GetGauge().GetValue())}
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		out := []sample{
			series(name+"_sum", h.GetSampleSum()),
			series(name+"_count", float64(h.GetSampleCount())),
			series(name+"_bucket", float64(h.GetSampleCount()), "le", "+Inf"),
		}
		for _, b := range h.GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue // written above, from the count
			}
			out = append(out, series(name+"_bucket", float64(b.GetCumulativeCount()), "le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)))
		}
		return out
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		out := []sample{series(name+"_sum", s.GetSampleSum()), series(name+"_count", float64(s.GetSampleCount()))}
		for _, q := range s.GetQuantile() {
			out = append(out, series(name, q.GetValue(), "quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64)))
		}
		return out
	default:
		return []sample{series(name, m.GetUntyped().GetValue())}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
