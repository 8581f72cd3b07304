package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// session opens an MCP session with the repo's own client, as the catalog
// opens them upstream: the 2026-07-28 revision (stateless) when revision
// is empty and the server speaks it, else the revision named (2025-11-25:
// initialize and an Mcp-Session-Id). Every request bears token
// (Authorization: Bearer, as an agent sends its JWT), unless it is empty.
func session(b *testing.B, url, revision, token string) *mcpclient.Session {
	b.Helper()
	s, err := connect(url, revision, token)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

func connect(url, revision, token string) (*mcpclient.Session, error) {
	var headers map[string]string
	if token != "" {
		headers = map[string]string{"Authorization": "Bearer " + token}
	}
	s, err := mcpclient.Connect(context.Background(), mcpclient.Target{URL: url, Transport: mcpclient.TransportStreamableHTTP,
		Timeout: 30 * time.Second, Revision: revision, Headers: headers}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", url, err)
	}
	return s, nil
}

// bareProxy is the floor any extra hop costs: httputil.ReverseProxy with
// a connection pool sized for the callers (http.DefaultTransport keeps
// only two idle connections per host), in a process of its own
// (./test/bench/bareproxy) as the manager is, so that both pay the same
// hop between processes. It returns the proxy's base URL and its pid.
func bareProxy(b *testing.B, target string) (string, int) {
	b.Helper()
	return startFloor(b, "./test/bench/bareproxy", "-target="+target)
}

// startFloor builds and starts one of the programs that run as a process
// of their own beside the manager (the baselines bareproxy and
// pageserver, BenchmarkClients' MCP server echoserver), stopped with the
// benchmark; it returns the base URL the process printed first, and its
// pid.
func startFloor(b *testing.B, pkg string, args ...string) (string, int) {
	b.Helper()
	cmd, _, out := startHelper(b, pkg, args...)
	addr, err := out.ReadString('\n')
	if err != nil {
		b.Fatalf("reading the address %s listens on: %v", pkg, err)
	}
	return "http://" + strings.TrimSpace(addr), cmd.Process.Pid
}

// startHelper builds and starts one of the benchmark's helper commands,
// killed with the benchmark, and returns it with its standard input and
// output.
func startHelper(b *testing.B, pkg string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	b.Helper()
	bin, err := build(pkg)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, stdin, bufio.NewReader(out)
}

// inProcessProxy is the same proxy inside this process, where the hop
// to it costs a goroutine switch rather than a process's wakeup: how much
// of any hop's cost is the hop between processes.
func inProcessProxy(b *testing.B, target string) string {
	b.Helper()
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.Transport = &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 5 * time.Minute}
	proxy.FlushInterval = -1
	srv := httptest.NewServer(proxy)
	b.Cleanup(srv.Close)
	return srv.URL
}

// restClient is the callers' HTTP client for REST: pooled connections for
// 32 callers.
var restClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 5 * time.Minute}, Timeout: time.Minute}

// restCall executes the echo tool through the catalog's REST execute and
// checks the answer is the echo.
func restCall(url string, body []byte) error { return executeWant(url, body, "hi") }

// executeWant executes a tool through the catalog's REST execute and
// checks its output.
func executeWant(url string, body []byte, want string) error {
	return executeWantAs(url, body, want, "")
}

// restCallAs is restCall bearing token (Authorization: Bearer).
func restCallAs(url string, body []byte, token string) error {
	return executeWantAs(url, body, "hi", token)
}

// executeWantAs is executeWant with the request bearing token (none if
// empty).
func executeWantAs(url string, body []byte, want, token string) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := restClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Output  string `json:"output"`
		IsError bool   `json:"isError"`
		Error   string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("reading the execute answer (status %d): %w", resp.StatusCode, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK || env.IsError || env.Output != want {
		return fmt.Errorf("execute: status %d, output %q, error %q", resp.StatusCode, env.Output, env.Error)
	}
	return nil
}

// executeBody is a REST execute request for tool with the echo argument.
func executeBody(tool string) []byte {
	return []byte(`{"name":"` + tool + `","arguments":{"message":"hi"}}`)
}

var echoArguments = json.RawMessage(`{"message":"hi"}`)

// mcpCall calls the echo tool over an MCP session and checks the answer.
func mcpCall(s *mcpclient.Session, tool string) error {
	result, err := s.CallTool(context.Background(), tool, echoArguments, mcpclient.CallOptions{})
	if err != nil {
		return err
	}
	if result.IsError || len(result.Content) != 1 || !bytes.Contains(result.Content[0], []byte(`"hi"`)) {
		return fmt.Errorf("unexpected result %+v", result)
	}
	return nil
}

// eventually retries f until it succeeds or a minute passes: the catalog
// takes up a status change a moment after the API server has it.
func eventually(b *testing.B, what string, f func() error) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: still failing after a minute: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// quantile of sorted latencies, in microseconds.
func quantile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[int(q*float64(len(sorted)-1))].Nanoseconds()) / 1e3
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}
