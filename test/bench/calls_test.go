package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// echoServer starts a loopback Streamable HTTP server with an echo tool,
// points an MCPServer of that name at it in a namespace of its own, and
// returns the server, the tool's exposed name and an execute body for it.
func (r *rig) echoServer(b *testing.B, name string) (*testmcp.Server, string, []byte) {
	echo := echoUpstream(b)
	ns := r.namespace(b)
	r.server(b, ns, name, echo.URL())
	r.waitReady(b, ns, 1, 1, time.Minute)
	tool := "mcp_" + name + "_echo"
	return echo, tool, []byte(`{"name":"` + tool + `","arguments":{"message":"hi"}}`)
}

// echoUpstream is a loopback Streamable HTTP server with an echo tool.
func echoUpstream(b *testing.B) *testmcp.Server {
	s := upstream(b, testmcp.Options{Transport: testmcp.StreamableHTTP})
	s.AddToolFunc("echo", "Echoes the message", `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`,
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("message", "")), nil
		})
	return s
}

func session(b *testing.B, url string) *mcpclient.Session {
	s, err := mcpclient.Connect(context.Background(), mcpclient.Target{URL: url, Transport: mcpclient.TransportStreamableHTTP, Timeout: 30 * time.Second}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

// reverseProxy is the floor any extra hop costs: httputil.ReverseProxy with
// a connection pool sized for the concurrency.
func reverseProxy(b *testing.B, target string) string {
	u, _ := url.Parse(target)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	proxy.Transport = &http.Transport{MaxIdleConnsPerHost: 64}
	proxy.FlushInterval = -1
	srv := httptest.NewServer(proxy)
	b.Cleanup(srv.Close)
	return srv.URL + u.Path
}

var restClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func restCall(url string, body []byte) error {
	resp, err := restClient.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Output  string `json:"output"`
		IsError bool   `json:"isError"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || env.IsError || env.Output != "hi" {
		return fmt.Errorf("status %d, output %q", resp.StatusCode, env.Output)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}

func mcpCall(s *mcpclient.Session, tool string) error {
	result, err := s.CallTool(context.Background(), tool, json.RawMessage(`{"message":"hi"}`), mcpclient.CallOptions{})
	if err != nil {
		return err
	}
	if result.IsError || len(result.Content) == 0 {
		return fmt.Errorf("unexpected result %+v", result)
	}
	return nil
}

// measure runs call b.N times and reports its latency percentiles.
func measure(b *testing.B, call func() error) {
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, time.Since(start))
	}
	b.StopTimer()
	percentiles(b, latencies, "")
}

// BenchmarkCall is one echo call by each path, sequentially: the catalog's
// added latency against the plain proxy's.
func BenchmarkCall(b *testing.B) {
	r := setup(b)
	echo, tool, body := r.echoServer(b, "latency")

	b.Run("direct", func(b *testing.B) {
		s := session(b, echo.URL())
		measure(b, func() error { return mcpCall(s, "echo") })
	})
	b.Run("proxy", func(b *testing.B) {
		s := session(b, reverseProxy(b, echo.URL()))
		measure(b, func() error { return mcpCall(s, "echo") })
	})
	b.Run("catalog-rest", func(b *testing.B) {
		measure(b, func() error { return restCall(r.catalog.URL+"/v1/execute", body) })
	})
	b.Run("catalog-mcp", func(b *testing.B) {
		s := session(b, r.catalog.URL+"/mcp")
		measure(b, func() error { return mcpCall(s, tool) })
	})
	b.Run("catalog-rest-10k-tools", func(b *testing.B) {
		r.bigMenu(b)
		measure(b, func() error { return restCall(r.catalog.URL+"/v1/execute", body) })
	})
}

// BenchmarkCallInterleaved makes one call by each path in turn, so that
// all four see the same machine at the same moments: the goals are read
// from it.
func BenchmarkCallInterleaved(b *testing.B) {
	r := setup(b)
	echo, tool, body := r.echoServer(b, "interleaved")
	direct := session(b, echo.URL())
	proxied := session(b, reverseProxy(b, echo.URL()))
	viaMCP := session(b, r.catalog.URL+"/mcp")
	paths := []struct {
		name string
		call func() error
	}{
		{"direct", func() error { return mcpCall(direct, "echo") }},
		{"proxy", func() error { return mcpCall(proxied, "echo") }},
		{"rest", func() error { return restCall(r.catalog.URL+"/v1/execute", body) }},
		{"mcp", func() error { return mcpCall(viaMCP, tool) }},
	}
	latencies := make([][]time.Duration, len(paths))
	for b.Loop() {
		for i, p := range paths {
			start := time.Now()
			if err := p.call(); err != nil {
				b.Fatal(err)
			}
			latencies[i] = append(latencies[i], time.Since(start))
		}
	}
	for i, p := range paths {
		percentiles(b, latencies[i], p.name+"-")
	}
}

// BenchmarkThroughput is 32 concurrent callers through the plain proxy and
// through the catalog; it reports calls/s and errors.
func BenchmarkThroughput(b *testing.B) {
	r := setup(b)
	echo, _, body := r.echoServer(b, "throughput")
	const callers = 32

	run := func(b *testing.B, call func(worker int) error) {
		var errs atomic.Int64
		next := atomic.Int64{}
		var wg sync.WaitGroup
		b.ResetTimer()
		start := time.Now()
		for w := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(b.N) {
					if call(w) != nil {
						errs.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		b.ReportMetric(float64(errs.Load()), "errors")
	}
	b.Run("proxy", func(b *testing.B) {
		proxied := reverseProxy(b, echo.URL())
		sessions := make([]*mcpclient.Session, callers)
		for i := range sessions {
			sessions[i] = session(b, proxied)
		}
		run(b, func(w int) error { return mcpCall(sessions[w], "echo") })
	})
	b.Run("catalog", func(b *testing.B) {
		run(b, func(int) error { return restCall(r.catalog.URL+"/v1/execute", body) })
	})
}
