package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// BenchmarkClients measures the call path the way users call it, with
// clients nobody here wrote as well as the project's own, each against a
// floor made with that same client: the MCP server in a process of its
// own (./test/bench/echoserver, an mcp-go server of 11 tools), called
// directly, through the bare proxy and through the manager, every path by
// the same client at the same revision, in interleaved rounds. A path's
// added cost is its latency less the same client's direct latency, so a
// client's own costs cancel out, and the bare proxy's added cost is that
// client's floor. The measured manager serves the catalog as a follower:
// a third manager, not measured, holds the Lease and runs the
// controllers. With BENCH_AB_REF set to a commit, a manager built from
// that commit is a second follower beside this build's, and every client
// calls it too (path catalog-b): the two builds in the same rounds and the
// same role, so that a change's cost is measured, not inferred.
func BenchmarkClients(b *testing.B) {
	cp, err := sharedPlane()
	if err != nil {
		b.Fatal(err)
	}
	echoBase, echoPID := startFloor(b, "./test/bench/echoserver", "-tools=10")
	echoCPU := func() time.Duration { return processCPU(echoPID) }
	echoURL := echoBase + "/mcp"
	proxyBase, proxyPID := bareProxy(b, echoBase)
	proxyCPU := func() time.Duration { return processCPU(proxyPID) }

	leaseNS := namespace(b, cp, "clients-lease")
	flags := []string{"--leader-elect", "--leader-election-namespace=" + leaseNS}
	startManager(b, cp, "clients-leader", flags...)
	leader := leaseHolder(b, cp, leaseNS, "")
	ns := namespace(b, cp, "clients")
	rw := watchReady(b, cp, ns, 11)
	collectionOfAll(b, cp, ns, "all")
	createServers(b, cp, ns, 1, func(int) string { return "echo" }, func(int) string { return echoURL }, nil)
	rw.wait(b, 1, time.Minute)
	tool := "mcp_echo_echo"

	catalogs := []*manager{startManager(b, cp, "clients", flags...)}
	if ref := os.Getenv("BENCH_AB_REF"); ref != "" {
		bin, err := buildAt(ref, "./cmd/manager")
		if err != nil {
			b.Fatal(err)
		}
		catalogs = append(catalogs, startManagerBinary(b, bin, cp, "clients-b", flags...))
		b.Logf("catalog-b is %s (%s)", ref, bin)
	}
	// Both measured managers must stay followers throughout.
	defer func() {
		if got := leaseHolder(b, cp, leaseNS, ""); got != leader {
			b.Errorf("the Lease moved from %s to %s during the rounds: a measured manager ran the controllers", leader, got)
		}
	}()

	env := &callEnv{}
	for _, c := range stockClients() {
		s := &callScenario{name: c.name}
		add := func(path, url, tool string, cpu func() time.Duration) {
			var first func() error
			eventually(b, c.name+" through "+path, func() error {
				call, end, err := c.open(url, tool)
				if err != nil {
					return err
				}
				if err := call(); err != nil {
					end()
					return err
				}
				b.Cleanup(end)
				first = call
				return nil
			})
			p := &callPath{name: path, cpu: cpu, one: first}
			for range throughputCallers {
				call, end, err := c.open(url, tool)
				if err != nil {
					b.Fatalf("%s through %s: %v", c.name, path, err)
				}
				b.Cleanup(end)
				p.many = append(p.many, call)
			}
			s.paths = append(s.paths, p)
		}
		// The direct path's CPU is the server's: what a call of this
		// client's revision costs it.
		add("direct", echoURL, "echo", echoCPU)
		add("proxy", proxyBase+"/mcp", "echo", proxyCPU)
		for i, m := range catalogs {
			url := m.catalog + "/v1/namespaces/" + ns + "/toolcollections/all/" + c.catalogPath
			add([]string{"catalog", "catalog-b"}[i], url, tool, m.cpuTime)
		}
		env.scenarios = append(env.scenarios, s)
	}

	calls := callsPerPath()
	stats := measureCalls(b, env, calls, "")
	for _, s := range env.scenarios {
		report(b, "client/"+s.name, stats.metrics(s))
	}
	// A profile of this build's catalog paths, once every figure is
	// reported (see profilePass): what the clients' calls cost the manager.
	catalogOnly := &callEnv{}
	for _, s := range env.scenarios {
		i := slices.IndexFunc(s.paths, func(p *callPath) bool { return p.name == "catalog" })
		catalogOnly.scenarios = append(catalogOnly.scenarios, &callScenario{name: s.name, paths: s.paths[i : i+1]})
	}
	profilePass(b, catalogs[0], "clients", func() { measureCalls(b, catalogOnly, max(calls/4, 1), "profile pass, ") })
}

// stockClient is one kind of caller: how it opens a session (or its
// equivalent) on an endpoint and calls a tool there, and which of a
// collection's endpoints it calls through the catalog (mcp, or execute
// for REST). Its names end in a letter: benchreport reads a trailing
// "-<digits>" as GOMAXPROCS.
type stockClient struct {
	name        string
	catalogPath string
	// open returns a call of tool at url on a session of its own, opened
	// now, and what ends that session.
	open func(url, tool string) (call func() error, end func(), err error)
}

// stockHTTP is the HTTP client of mcp-go's and go-sdk's sessions: one
// pool sized for 32 callers, as restClient's is (the libraries' defaults
// keep two idle connections per host and would dial on most calls), and a
// bound on a call that stalls. mcpclient's sessions each have their own
// transport, as the catalog's do upstream.
var stockHTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 5 * time.Minute}, Timeout: time.Minute}

// stockClients are the clients measured: the project's own (the
// 2026-07-28 revision, stateless, and a 2025-11-25 session), mcp-go's
// with a 2025-11-25 session, go-sdk's at 2026-07-28 and at 2025-11-25, and
// plain net/http, which posts a 2026-07-28 tools/call directly and through
// the proxy and calls REST execute through the catalog.
func stockClients() []stockClient {
	ctx := context.Background()
	return []stockClient{
		ownClient("mcpclient-stateless", ""),
		ownClient("mcpclient-session", "2025-11-25"),
		{name: "mcp-go-session", catalogPath: "mcp", open: func(url, tool string) (func() error, func(), error) {
			c, err := mcpgoclient.NewStreamableHttpClient(url, transport.WithHTTPBasicClient(stockHTTP))
			if err != nil {
				return nil, nil, err
			}
			mcpgoclient.WithProtocolVersion("2025-11-25")(c)
			if err := c.Start(ctx); err != nil {
				return nil, nil, err
			}
			end := func() { _ = c.Close() }
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = "2025-11-25"
			init.Params.ClientInfo = mcp.Implementation{Name: "bench-mcp-go", Version: "1"}
			res, err := c.Initialize(ctx, init)
			if err == nil && res.ProtocolVersion != "2025-11-25" {
				err = fmt.Errorf("%s speaks %s", url, res.ProtocolVersion)
			}
			if err != nil {
				end()
				return nil, nil, err
			}
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = tool, map[string]any{"message": "hi"}
			return func() error {
				res, err := c.CallTool(ctx, req)
				if err != nil {
					return err
				}
				return echoed(res.IsError, len(res.Content), func() string { t, _ := mcp.AsTextContent(res.Content[0]); return t.Text })
			}, end, nil
		}},
		goSDKClient("go-sdk-stateless", "2026-07-28"),
		goSDKClient("go-sdk-session", "2025-11-25"),
		{name: "net-http", catalogPath: "execute", open: func(url, tool string) (func() error, func(), error) {
			if strings.HasSuffix(url, "/execute") {
				body := executeBody(tool)
				return func() error { return restCall(url, body) }, func() {}, nil
			}
			return func() error { return postToolCall(url, tool) }, func() {}, nil
		}},
	}
}

// ownClient is the project's client (internal/mcpclient) at revision:
// the 2026-07-28 revision, stateless, when it is empty. Its 2025-11-25
// sessions keep their list-change stream open, as the catalog's own
// sessions upstream do.
func ownClient(name, revision string) stockClient {
	want := revision
	if want == "" {
		want = mcpclient.RevisionStateless
	}
	return stockClient{name: name, catalogPath: "mcp", open: func(url, tool string) (func() error, func(), error) {
		s, err := connect(url, revision, "")
		if err != nil {
			return nil, nil, err
		}
		if got := s.Info().ProtocolVersion; got != want {
			s.Close()
			return nil, nil, fmt.Errorf("%s speaks %s", url, got)
		}
		return func() error { return mcpCall(s, tool) }, s.Close, nil
	}}
}

// goSDKClient is the official Go SDK's client at revision, without the
// standalone stream, on every path alike (mcp-go's client opens none
// either).
func goSDKClient(name, revision string) stockClient {
	client := sdk.NewClient(&sdk.Implementation{Name: "bench-go-sdk", Version: "1"}, nil)
	return stockClient{name: name, catalogPath: "mcp", open: func(url, tool string) (func() error, func(), error) {
		ctx := context.Background()
		s, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: stockHTTP, DisableStandaloneSSE: true},
			&sdk.ClientSessionOptions{ProtocolVersion: revision})
		if err != nil {
			return nil, nil, err
		}
		end := func() { _ = s.Close() }
		if got := s.InitializeResult().ProtocolVersion; got != revision {
			end()
			return nil, nil, fmt.Errorf("%s speaks %s", url, got)
		}
		params := &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"message": "hi"}}
		return func() error {
			res, err := s.CallTool(ctx, params)
			if err != nil {
				return err
			}
			return echoed(res.IsError, len(res.Content), func() string {
				t, _ := res.Content[0].(*sdk.TextContent)
				if t == nil {
					return ""
				}
				return t.Text
			})
		}, end, nil
	}}
}

// echoed checks a tool result is the echo of "hi".
func echoed(isError bool, n int, text func() string) error {
	if isError || n != 1 || text() != "hi" {
		return fmt.Errorf("unexpected result: isError %v, %d contents", isError, n)
	}
	return nil
}

// toolCallBody is a 2026-07-28 tools/call of tool with the echo argument,
// as a client with no SDK writes it: the revision, client and
// capabilities in _meta.
func toolCallBody(tool string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool +
		`","arguments":{"message":"hi"},"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"2026-07-28","` +
		mcp.MetaKeyClientInfo + `":{"name":"bench-net-http","version":"1"},"` + mcp.MetaKeyClientCapabilities + `":{}}}}`)
}

// postToolCall posts a 2026-07-28 tools/call with net/http and checks the
// answer is the echo.
func postToolCall(url, tool string) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(toolCallBody(tool)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, "2026-07-28")
	req.Header.Set(mcp.HeaderMethod, "tools/call")
	req.Header.Set(mcp.HeaderName, tool)
	resp, err := restClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return fmt.Errorf("reading the tools/call answer (status %d, %s): %w", resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK || answer.Error != nil {
		return fmt.Errorf("tools/call: status %d, error %+v", resp.StatusCode, answer.Error)
	}
	r := answer.Result
	return echoed(r.IsError, len(r.Content), func() string { return r.Content[0].Text })
}
