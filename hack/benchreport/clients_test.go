package main

import (
	"bytes"
	"strings"
	"testing"
)

// client is a BenchmarkClients result whose direct path takes 100/300 µs
// and whose proxy adds 100/500 µs at 1,000 calls/s, with catalog as given
// (the manager's CPU 300 / 120 µs a call, the proxy's 250 / 100).
func client(catalog map[string]float64) map[string]float64 {
	m := map[string]float64{"direct-p50-µs": 100, "direct-p99-µs": 300, "proxy-p50-µs": 200, "proxy-p99-µs": 800,
		"proxy-calls/s": 1000, "proxy-cpu-µs/call": 250, "proxy-busy-cpu-µs/call": 100,
		"catalog-cpu-µs/call": 300, "catalog-busy-cpu-µs/call": 120, "errors": 0}
	for k, v := range catalog {
		m[k] = v
	}
	return m
}

func TestClientGoal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		catalog map[string]float64
		met     bool
	}{
		{"within every bound", map[string]float64{"catalog-p50-µs": 220, "catalog-p99-µs": 1300, "catalog-calls/s": 900}, true},
		{"added p50 over 1.2x this client's proxy", map[string]float64{"catalog-p50-µs": 221, "catalog-p99-µs": 800, "catalog-calls/s": 1000}, false},
		{"added p99 over 2x", map[string]float64{"catalog-p50-µs": 200, "catalog-p99-µs": 1301, "catalog-calls/s": 1000}, false},
		{"throughput under 0.9x", map[string]float64{"catalog-p50-µs": 200, "catalog-p99-µs": 800, "catalog-calls/s": 899}, false},
		{"an error", map[string]float64{"catalog-p50-µs": 200, "catalog-p99-µs": 800, "catalog-calls/s": 1000, "errors": 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Another client's floor must not count: its proxy adds
			// twice as much.
			other := client(map[string]float64{"proxy-p50-µs": 300, "proxy-p99-µs": 1300, "proxy-calls/s": 800})
			g, ok := clientGoal(results(map[string]map[string]float64{
				"BenchmarkClients/client/mcp-go-session": client(tc.catalog), "BenchmarkClients/client/net-http": other}), "mcp-go-session")
			if !ok {
				t.Fatal("no goal from the results")
			}
			if g.met != tc.met {
				t.Errorf("met = %v, want %v (%s)", g.met, tc.met, g.measured)
			}
			if !strings.Contains(g.what, "mcp-go") || !strings.Contains(g.measured, "CPU µs/call 300 / 120 at 32 (the proxy's 250 / 100)") {
				t.Errorf("the goal names %q and measured %q: want the client and the proxy's CPU", g.what, g.measured)
			}
		})
	}
	if _, ok := clientGoal(results(nil), "mcp-go-session"); ok {
		t.Error("a goal from no results")
	}
}

func TestClientTable(t *testing.T) {
	var out bytes.Buffer
	clients, withB := writeClientTable(&out, results(map[string]map[string]float64{
		"BenchmarkClients/client/mcpclient-stateless": client(map[string]float64{"catalog-p50-µs": 210, "catalog-b-p50-µs": 230}),
		"BenchmarkClients/client/net-http":            client(map[string]float64{"catalog-p50-µs": 210}),
	}))
	if clients != 2 || withB != 1 {
		t.Errorf("%d clients, %d with catalog-b: want 2 and 1 (what -ab checks)", clients, withB)
	}
	for _, row := range []string{"| mcpclient-stateless | direct | 100 |  |", "| mcpclient-stateless | proxy | 200 | +100 |",
		"| mcpclient-stateless | catalog | 210 | +110 |", "| mcpclient-stateless | catalog-b | 230 | +130 |"} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("the table lacks %q:\n%s", row, out.String())
		}
	}
	out.Reset()
	if clients, _ := writeClientTable(&out, results(nil)); clients != 0 || out.Len() != 0 {
		t.Errorf("a table from no results: %s", out.String())
	}
}

// A client's name ends in a letter, so that it reads the same whether or
// not go test appended GOMAXPROCS.
func TestClientNamesWithoutProcs(t *testing.T) {
	for _, client := range stockClients {
		for _, line := range []string{"BenchmarkClients/client/" + client + "-2   1   0 ns/op   5 direct-p50-µs",
			"BenchmarkClients/client/" + client + "   1   0 ns/op   5 direct-p50-µs"} {
			if v, ok := parse(strings.NewReader(line)).get("BenchmarkClients/client/"+client, "direct-p50-µs"); !ok || v != 5 {
				t.Errorf("%q: read %v, %v", line, v, ok)
			}
		}
	}
}
