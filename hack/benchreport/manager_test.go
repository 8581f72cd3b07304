package main

import (
	"strings"
	"testing"
)

// results is a getter over fixed metrics.
func results(m map[string]map[string]float64) getter {
	return func(name, metric string) (float64, bool) {
		v, ok := m[name][metric]
		return v, ok
	}
}

// baseline is direct 100/300 µs and a proxy adding 100/500 µs, 1,000 calls/s.
var baseline = map[string]float64{"direct-p50-µs": 100, "direct-p99-µs": 300, "proxy-p50-µs": 200, "proxy-p99-µs": 800, "proxy-calls/s": 1000}

func TestCallGoal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		catalog map[string]float64
		met     bool
	}{
		{"within every bound", map[string]float64{"mcp-p50-µs": 220, "mcp-p99-µs": 1300, "mcp-calls/s": 900, "errors": 0}, true},
		{"added p50 over 1.2x the proxy's", map[string]float64{"mcp-p50-µs": 221, "mcp-p99-µs": 800, "mcp-calls/s": 1000, "errors": 0}, false},
		{"added p99 over 2x the proxy's", map[string]float64{"mcp-p50-µs": 200, "mcp-p99-µs": 1301, "mcp-calls/s": 1000, "errors": 0}, false},
		{"throughput under 0.9x the proxy's", map[string]float64{"mcp-p50-µs": 200, "mcp-p99-µs": 800, "mcp-calls/s": 899, "errors": 0}, false},
		{"an error", map[string]float64{"mcp-p50-µs": 200, "mcp-p99-µs": 800, "mcp-calls/s": 1000, "errors": 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, ok := callGoal(results(map[string]map[string]float64{
				"BenchmarkCatalog/call/baseline": baseline, "BenchmarkCatalog/call/tools-10": tc.catalog}), "tools-10", "mcp")
			if !ok {
				t.Fatal("no goal from the results")
			}
			if g.met != tc.met {
				t.Errorf("met = %v, want %v (%s)", g.met, tc.met, g.measured)
			}
		})
	}
}

func TestCallGoalWithoutResults(t *testing.T) {
	if _, ok := callGoal(results(nil), "tools-10", "mcp"); ok {
		t.Error("a goal from no results")
	}
}

func TestDriftGoal(t *testing.T) {
	small := map[string]float64{"rest-p50-µs": 500, "rest-calls/s": 4000}
	for _, tc := range []struct {
		name string
		big  map[string]float64
		met  bool
	}{
		{"the same", map[string]float64{"rest-p50-µs": 500, "rest-calls/s": 4000}, true},
		{"p50 10% higher", map[string]float64{"rest-p50-µs": 550, "rest-calls/s": 4000}, true},
		{"p50 more than 10% higher", map[string]float64{"rest-p50-µs": 551, "rest-calls/s": 4000}, false},
		{"throughput more than 10% lower", map[string]float64{"rest-p50-µs": 500, "rest-calls/s": 3599}, false},
		{"faster at 10,000", map[string]float64{"rest-p50-µs": 400, "rest-calls/s": 5000}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, ok := driftGoal(results(map[string]map[string]float64{
				"BenchmarkCatalog/call/tools-10": small, "BenchmarkCatalog/call/one-10000": tc.big}), "one", "rest")
			if !ok {
				t.Fatal("no goal from the results")
			}
			if g.met != tc.met {
				t.Errorf("met = %v, want %v (%s)", g.met, tc.met, g.measured)
			}
		})
	}
}

// TestDriftGoalNoise: a throughput drift within the spread the bare proxy
// showed between scenarios in the same run is noise.
func TestDriftGoalNoise(t *testing.T) {
	small := map[string]float64{"rest-p50-µs": 500, "rest-calls/s": 4000, "proxy-calls/s": 5000}
	for _, tc := range []struct {
		name     string
		bigProxy float64
		met      bool
	}{
		{"the proxy steady: 15% lower is a regression", 5000, false},
		{"the proxy 20% apart: 15% lower is noise", 4000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			big := map[string]float64{"rest-p50-µs": 500, "rest-calls/s": 3400, "proxy-calls/s": tc.bigProxy}
			g, ok := driftGoal(results(map[string]map[string]float64{
				"BenchmarkCatalog/call/tools-10": small, "BenchmarkCatalog/call/one-10000": big}), "one", "rest")
			if !ok {
				t.Fatal("no goal from the results")
			}
			if g.met != tc.met {
				t.Errorf("met = %v, want %v (%s)", g.met, tc.met, g.measured)
			}
		})
	}
}

func TestScaleGoals(t *testing.T) {
	goals := scaleGoals(results(map[string]map[string]float64{"BenchmarkScale/servers-5000": {
		"s-to-all-ready": 61, "s-to-create": 30, "api-writes": 0, "s-restart-to-full-menu": 4.9, "first-execute-max-connects": 2,
	}}))
	met := map[string]bool{}
	for _, g := range goals {
		met[g.what] = g.met
	}
	for what, want := range map[string]bool{
		"first create to all Ready":                 false,
		"three refresh intervals":                   true,
		"start to the whole global menu":            true,
		"first execute to each server (most of any": false,
	} {
		found := false
		for w, got := range met {
			if strings.Contains(w, what) {
				found = true
				if got != want {
					t.Errorf("%q: met = %v, want %v", w, got, want)
				}
			}
		}
		if !found {
			t.Errorf("no goal about %q", what)
		}
	}
}

func TestInProcessGoal(t *testing.T) {
	g, ok := inProcessGoal(results(map[string]map[string]float64{
		"BenchmarkCallPath/proxy": {"ns/op": 200000}, "BenchmarkCallPath/mcp-stateless": {"ns/op": 206000}, "BenchmarkCallPath/rest": {"ns/op": 198500}}))
	if !ok {
		t.Fatal("no row from the results")
	}
	if want := "+6 / -2 µs (206 and 198 vs 200 µs)"; g.measured != want {
		t.Errorf("measured = %q, want %q", g.measured, want)
	}
	if _, ok := inProcessGoal(results(nil)); ok {
		t.Error("a row from no results")
	}
}

// TestInProcessGoalParsed: the row comes from go test's own lines, with
// the GOMAXPROCS suffix and without it (GOMAXPROCS=1 prints none, and a
// name ending in digits after a dash would lose them).
func TestInProcessGoalParsed(t *testing.T) {
	for _, suffix := range []string{"-2", ""} {
		out := "BenchmarkCallPath/proxy" + suffix + "   3000   200000 ns/op   75781 B/op   454 allocs/op\n" +
			"BenchmarkCallPath/rest" + suffix + "   3000   198500 ns/op   54328 B/op   596 allocs/op\n" +
			"BenchmarkCallPath/mcp-stateless" + suffix + "   3000   206000 ns/op   54063 B/op   617 allocs/op\n"
		g, ok := inProcessGoal(parse(strings.NewReader(out)).get)
		if !ok || g.measured != "+6 / -2 µs (206 and 198 vs 200 µs)" {
			t.Errorf("suffix %q: %v, %q", suffix, ok, g.measured)
		}
	}
}

// A decision from a kept plan is held to 20 µs at p99, read from
// BenchmarkPlanDecide's line as go test prints it, with the first call's
// told beside it; a run without it has no such goal.
func TestPolicyGoal(t *testing.T) {
	const first = "BenchmarkDecide-2   20000   7548 ns/op   5.679 p50-µs   22.52 p99-µs   3264 B/op   91 allocs/op\n"
	for line, met := range map[string]bool{
		"BenchmarkPlanDecide-2   20000   2437 ns/op   2.053 p50-µs   6.169 p99-µs   880 B/op   26 allocs/op": true,
		"BenchmarkPlanDecide-2   20000   9437 ns/op   7.053 p50-µs   20.01 p99-µs   880 B/op   26 allocs/op": false,
	} {
		g, ok := policyGoal(parse(strings.NewReader(first + line)).get)
		if !ok || g.met != met || !strings.Contains(g.measured, "first call of the tool, which makes the plan: 22.5 µs") {
			t.Errorf("%s: %+v (%v), want met %v", line, g, ok, met)
		}
	}
	if _, ok := policyGoal(parse(strings.NewReader(first)).get); ok {
		t.Error("a goal from a run without BenchmarkPlanDecide")
	}
}
