package bench

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// callScenario is one menu shape the call path is measured at: servers
// of toolsEach tools each (echo among them), in a namespace of their own,
// all in one ToolCollection that REST and MCP calls go through. The echo
// tool of the last server is the one called.
type callScenario struct {
	name      string
	servers   int
	toolsEach int
	// prefix starts the servers' names, distinct across scenarios so that
	// no two exposed tool names collide.
	prefix  string
	ns      string
	echoURL string
	tool    string
	restURL string
	mcpURL  string
	// jwt says the scenario is called through the JWT replica too
	// (jwtReplica): paths rest-jwt and mcp-jwt, and through the guarded
	// collection's 20-rule policy, rest-jwt-policy and mcp-jwt-policy.
	jwt   bool
	paths []*callPath
}

// bigServerFlags let one MCPServer hold 10,000 tools: more tools read
// than the default 5,000, and a status budget (default 768 KiB) large
// enough for 10,000 of the smallest definitions (155 bytes each in status:
// name, originalName, {"type":"object"} and the 64-character hash), so the
// object (about 1.55 MB) stays under etcd's request limit of 1.5 MiB
// (1,572,864 bytes). 1,536,000 keeps only 9,909 of them.
var bigServerFlags = []string{"--max-tools=10000", "--status-tools-budget=" + strconv.Itoa(bigStatusBudget)}

const bigStatusBudget = 1_560_000

// callScenarios are the shapes of issue 17: 10, 1,000 and 10,000 tools,
// spread over servers of 10 tools and held by one server (at 10 tools the
// two shapes are the same). A smoke run leaves out the thousand servers
// of spread-10000 and keeps the largest server.
func callScenarios() []*callScenario {
	all := []*callScenario{
		{name: "tools-10", servers: 1, toolsEach: 10, prefix: "c", jwt: true},
		{name: "spread-1000", servers: 100, toolsEach: 10, prefix: "s"},
		{name: "spread-10000", servers: 1000, toolsEach: 10, prefix: "w"},
		{name: "one-1000", servers: 1, toolsEach: 1000, prefix: "k"},
		{name: "one-10000", servers: 1, toolsEach: 10000, prefix: "m"},
	}
	if smoke() {
		return append(all[:2], all[3:]...)
	}
	return all
}

func (s *callScenario) serverName(i int) string { return fmt.Sprintf("%s%04d", s.prefix, i) }

// create serves the scenario's upstreams from the fleet and creates its
// MCPServers and collection; ready waits for them.
func (s *callScenario) create(b *testing.B, cp *controlPlane, f *fleet) *readyWatch {
	s.ns = namespace(b, cp, "calls")
	var shared *streamable
	if s.servers > 1 {
		shared = newStreamable(true, toolNames(s.toolsEach-1))
	}
	urls := make([]string, s.servers)
	for i := range urls {
		up := shared
		if up == nil {
			up = newStreamable(true, toolNames(s.toolsEach-1))
		}
		urls[i] = f.serve("/"+s.name+"/"+s.serverName(i)+"/mcp", up)
	}
	last := s.servers - 1
	s.echoURL, s.tool = urls[last], "mcp_"+s.serverName(last)+"_echo"
	rw := watchReady(b, cp, s.ns, s.toolsEach)
	collectionOfAll(b, cp, s.ns, "all")
	if s.jwt {
		createGuarded(b, cp, s.ns)
	}
	createServers(b, cp, s.ns, s.servers, s.serverName, func(i int) string { return urls[i] }, nil)
	return rw
}

// callEnv is the managers and the scenarios, shared by the measurements.
type callEnv struct {
	cp      *controlPlane
	fleet   *fleet
	manager *manager
	// jwt is the second replica, whose callers present a JWT.
	jwt       *jwtReplica
	scenarios []*callScenario
}

// setUpCalls starts the managers as the chart deploys them (two
// replicas, leader election; the first leads and runs the controllers,
// the second, the JWT replica, serves the catalog alone and checks JWTs)
// and the scenarios, and waits until every server is Ready.
func setUpCalls(b *testing.B) *callEnv {
	cp, err := sharedPlane()
	if err != nil {
		b.Fatal(err)
	}
	f, err := startFleet()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(f.stop)
	env := &callEnv{cp: cp, fleet: f, scenarios: callScenarios()}
	// A Lease of their own: no other benchmark's managers contend for it.
	leaseNS := namespace(b, cp, "calls-lease")
	flags := append([]string{"--leader-elect", "--leader-election-namespace=" + leaseNS}, bigServerFlags...)
	env.manager = startManager(b, cp, "calls", flags...)
	leader := leaseHolder(b, cp, leaseNS, "")
	started := time.Now()
	watches := make([]*readyWatch, len(env.scenarios))
	for i, s := range env.scenarios {
		watches[i] = s.create(b, cp, f)
	}
	for i, s := range env.scenarios {
		watches[i].wait(b, s.servers, time.Minute)
	}
	b.Logf("%d scenarios Ready in %s", len(env.scenarios), time.Since(started).Round(time.Millisecond))
	env.jwt = startJWTReplica(b, cp, flags)
	if got := leaseHolder(b, cp, leaseNS, ""); got != leader {
		b.Fatalf("the Lease moved from %s to %s: the JWT replica must be a follower", leader, got)
	}
	for _, s := range env.scenarios {
		s.restURL = env.manager.catalog + "/v1/namespaces/" + s.ns + "/toolcollections/all/execute"
		s.mcpURL = env.manager.catalog + "/v1/namespaces/" + s.ns + "/toolcollections/all/mcp"
	}
	return env
}

// callPath is one way of calling the echo tool: one caller for the
// latency rounds and 32 for the throughput rounds.
type callPath struct {
	name string
	// cpu, for a path whose process is measured (the manager or the bare
	// proxy it goes through; BenchmarkClients' MCP server for its direct
	// path), reads that process's CPU time.
	cpu  func() time.Duration
	one  func() error
	many []func() error
}

// throughputCallers is how many callers the throughput rounds run.
const throughputCallers = 32

// paths builds the scenario's paths: direct to the server, through the
// bare proxy (in a process of its own, and in this one), REST execute and
// /mcp tools/call over the catalog in both session styles (2026-07-28
// stateless, and a 2025-11-25 session), and for a jwt scenario REST
// execute and /mcp tools/call (2026-07-28) through the JWT replica with
// its callers' token (rest-jwt, mcp-jwt), and the same through the
// guarded collection, whose policy decides each call (rest-jwt-policy,
// mcp-jwt-policy).
func (s *callScenario) buildPaths(b *testing.B, env *callEnv, proxyBase string, proxyPID int, inProcessBase string) {
	body := executeBody(s.tool)
	rest := func() error { return restCall(s.restURL, body) }
	eventually(b, "REST execute through "+s.name, rest)
	managerCPU, proxyCPU := env.manager.cpuTime, func() time.Duration { return processCPU(proxyPID) }
	mcpPath := func(name, target, revision, tool, token string, cpu func() time.Duration) *callPath {
		var first *mcpclient.Session
		eventually(b, "MCP call through "+name+" of "+s.name, func() error {
			var err error
			if first, err = connect(target, revision, token); err != nil {
				return err
			}
			if err := mcpCall(first, tool); err != nil {
				first.Close()
				return err
			}
			return nil
		})
		b.Cleanup(first.Close)
		want := revision
		if want == "" {
			want = mcpclient.RevisionStateless
		}
		if got := first.Info().ProtocolVersion; got != want {
			b.Fatalf("%s of %s speaks %s, not %s", name, s.name, got, want)
		}
		p := &callPath{name: name, cpu: cpu, one: func() error { return mcpCall(first, tool) }}
		for range throughputCallers {
			sess := session(b, target, revision, token)
			p.many = append(p.many, func() error { return mcpCall(sess, tool) })
		}
		return p
	}
	restPath := func(name string, call func() error, cpu func() time.Duration) *callPath {
		p := &callPath{name: name, cpu: cpu, one: call}
		for range throughputCallers {
			p.many = append(p.many, call)
		}
		return p
	}
	s.paths = []*callPath{
		mcpPath("direct", s.echoURL, "", "echo", "", nil),
		mcpPath("proxy", proxyBase+pathOf(s.echoURL), "", "echo", "", proxyCPU),
		mcpPath("proxy-inproc", inProcessBase+pathOf(s.echoURL), "", "echo", "", nil),
		restPath("rest", rest, managerCPU),
		mcpPath("mcp", s.mcpURL, "", s.tool, "", managerCPU),
		mcpPath("mcp2025", s.mcpURL, "2025-11-25", s.tool, "", managerCPU),
	}
	if s.jwt {
		jwt := env.jwt
		restURL := jwt.manager.catalog + pathOf(s.restURL)
		restJWT := func() error { return restCallAs(restURL, body, jwt.token) }
		eventually(b, "REST execute with a JWT through "+s.name, restJWT)
		jwt.refusesAnonymous(b, restURL, body)
		guarded := strings.Replace(restURL, "/toolcollections/all/", "/toolcollections/"+guardedCollection+"/", 1)
		restPolicy := func() error { return restCallAs(guarded, body, jwt.token) }
		eventually(b, "REST execute with a JWT under a policy through "+s.name, restPolicy)
		refusedByPolicy(b, guarded, s.tool, jwt.token)
		s.paths = append(s.paths,
			restPath("rest-jwt", restJWT, jwt.manager.cpuTime),
			mcpPath("mcp-jwt", jwt.manager.catalog+pathOf(s.mcpURL), "", s.tool, jwt.token, jwt.manager.cpuTime),
			restPath("rest-jwt-policy", restPolicy, jwt.manager.cpuTime),
			mcpPath("mcp-jwt-policy", strings.Replace(jwt.manager.catalog+pathOf(s.mcpURL), "/toolcollections/all/", "/toolcollections/"+guardedCollection+"/", 1),
				"", s.tool, jwt.token, jwt.manager.cpuTime))
	}
}

// pathOf is the path of a URL.
func pathOf(raw string) string {
	u, _ := url.Parse(raw)
	return u.Path
}

// BenchmarkCatalog measures the manager's catalog from outside, as
// callers see it, against baselines measured in the same rounds: call
// latency and throughput by every path at every scenario, tools/list over
// /mcp and the REST menu at 10,000 tools. Its sub-benchmarks report.
func BenchmarkCatalog(b *testing.B) {
	env := setUpCalls(b)
	proxyBase, proxyPID := bareProxy(b, env.fleet.base)
	inProcessBase := inProcessProxy(b, env.fleet.base)
	for _, s := range env.scenarios {
		s.buildPaths(b, env, proxyBase, proxyPID, inProcessBase)
	}
	calls := callsPerPath()
	stats := measureCalls(b, env, calls, "")

	lists := map[string][2]map[string]float64{}
	for _, s := range env.scenarios {
		if s.servers*s.toolsEach == 10000 {
			toolsList, menu := measureLists(b, s, calls)
			lists[s.name] = [2]map[string]float64{toolsList, menu}
		}
	}

	report(b, "call/baseline", stats.metrics(stats.pooled(env.scenarios)))
	for _, s := range env.scenarios {
		report(b, "call/"+s.name, stats.metrics(s))
	}
	for _, s := range env.scenarios {
		if l, ok := lists[s.name]; ok {
			report(b, "tools-list/"+s.name, l[0])
			report(b, "menu/"+s.name, l[1])
		}
	}

	// The profiles, once every figure is reported (see profilePass): a
	// quarter of the call rounds again, and the listings again.
	profilePass(b, env.manager, "calls", func() { measureCalls(b, env, max(calls/4, 1), "profile pass, ") })
	profilePass(b, env.manager, "lists", func() {
		for _, s := range env.scenarios {
			if s.servers*s.toolsEach == 10000 {
				measureLists(b, s, max(calls/4, 1))
			}
		}
	})
}
