package main

import "fmt"

// getter reads one metric of one benchmark.
type getter func(name, metric string) (float64, bool)

// callGoals are the performance issue's goals for the call path, the
// menus and discovery; each is left out when its benchmarks did not run.
func callGoals(get getter) []goal {
	var goals []goal
	add := func(what, target string, met bool, measured string) {
		goals = append(goals, goal{what: what, target: target, measured: measured, met: met})
	}

	// Call overhead comes from the interleaved benchmark: every path saw the
	// same moments of the machine.
	lat := func(path, q string) (float64, bool) { return get("BenchmarkCallInterleaved", path+"-"+q+"-µs") }
	added := func(what, q, target string, limit float64, path string) {
		direct, ok1 := lat("direct", q)
		proxy, ok2 := lat("proxy", q)
		catalog, ok3 := lat(path, q)
		if !ok1 || !ok2 || !ok3 {
			return
		}
		if proxy <= direct {
			add(what, target, false, fmt.Sprintf("not measurable: the proxy added nothing over direct (%.0f vs %.0f µs)", proxy, direct))
			return
		}
		ratio := (catalog - direct) / (proxy - direct)
		add(what, target, ratio <= limit,
			fmt.Sprintf("%.2f× (catalog +%.0f µs, proxy +%.0f µs over direct %.0f µs)", ratio, catalog-direct, proxy-direct, direct))
	}
	added("Catalog REST added p50 vs plain proxy added p50", "p50", "≤ 2×", 2, "rest")
	added("Catalog REST added p99 vs plain proxy added p99", "p99", "≤ 3×", 3, "rest")
	added("Catalog /mcp added p50 vs plain proxy added p50", "p50", "≤ 2×", 2, "mcp")
	rest50, c := get("BenchmarkCall/catalog-rest", "p50-µs")
	big50, e := get("BenchmarkCall/catalog-rest-10k-tools", "p50-µs")
	if c && e {
		change := (big50 - rest50) / rest50
		add("Catalog p50 with 10,000 tools vs 10 tools", "within 10%", change <= 0.10,
			fmt.Sprintf("%+.1f%% (%.0f µs vs %.0f µs)", change*100, big50, rest50))
	}
	if p, ok := get("BenchmarkThroughput/proxy", "calls/s"); ok {
		if cat, ok := get("BenchmarkThroughput/catalog", "calls/s"); ok {
			errs, _ := get("BenchmarkThroughput/catalog", "errors")
			add("Throughput, 32 callers: catalog vs plain proxy", "≥ 0.8×, 0 errors", cat/p >= 0.8 && errs == 0,
				fmt.Sprintf("%.2f× (%.0f vs %.0f calls/s), %.0f errors", cat/p, cat, p, errs))
		}
	}
	if base, ok := get("BenchmarkMenu/servecontent", "ns/op"); ok {
		if cat, ok := get("BenchmarkMenu/catalog", "ns/op"); ok {
			add("Menu GET, 10,000 tools: catalog vs http.ServeContent of the same bytes", "≥ 0.8× throughput", base/cat >= 0.8,
				fmt.Sprintf("%.2f× (%.2f ms vs %.2f ms per GET)", base/cat, cat/1e6, base/1e6))
		}
	}
	if heap, ok := get("BenchmarkMenu/heap-per-tool", "process-heap-B/tool"); ok {
		add("Heap per tool beyond the status objects", "< 2 KiB", heap < 2048,
			fmt.Sprintf("≤ %.0f B (upper bound: the whole process's growth, test servers and informer cache included)", heap))
	}
	if s, ok := get("BenchmarkDiscovery", "s-to-all-ready"); ok {
		add("500 MCPServers × 20 tools all Ready", "≤ 30 s", s <= 30, fmt.Sprintf("%.1f s", s))
	}
	if s, ok := get("BenchmarkDiscovery", "s-status-to-menu"); ok {
		add("Tool added upstream: status to collection menu", "≤ 2 s", s <= 2, fmt.Sprintf("%.2f s", s))
	}
	if rss, ok := get("BenchmarkDiscovery", "peak-RSS-MiB"); ok {
		add("Peak RSS during discovery (manager, catalog, API clients and the 500 test servers in one process)", "reported", true, fmt.Sprintf("%.0f MiB", rss))
	}
	if w, ok := get("BenchmarkQuiet", "api-writes"); ok {
		add("100 unchanged servers over 3 refresh intervals: writes to the API server", "0", w == 0, fmt.Sprintf("%.0f", w))
	}
	return goals
}
