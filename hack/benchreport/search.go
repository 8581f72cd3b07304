package main

import (
	"fmt"
	"strings"
)

// Tool search's goals (issue 16), measured by internal/toolsearch's
// benchmarks.
const (
	minRecallAt5       = 0.90
	maxSearchP99Micros = 2000
)

// searchGoals are tool search's goals; each is left out when its
// benchmark did not run.
func searchGoals(get getter) []goal {
	var goals []goal
	if r5, ok := get("BenchmarkRetrieval", "recall@5"); ok {
		n, _ := get("BenchmarkRetrieval", "queries")
		r1, _ := get("BenchmarkRetrieval", "recall@1")
		mrr, _ := get("BenchmarkRetrieval", "MRR")
		goals = append(goals, goal{what: fmt.Sprintf("Tool search: the right tool in the first 5, %.0f labelled queries over the corpus of real tools", n),
			target: fmt.Sprintf("recall@5 ≥ %.2f", minRecallAt5), met: r5 >= minRecallAt5,
			measured: fmt.Sprintf("%.3f (recall@1 %.3f, MRR %.3f)", r5, r1, mrr)})
	}
	if p99, ok := get("BenchmarkSearch10k", "p99-µs"); ok {
		p50, _ := get("BenchmarkSearch10k", "p50-µs")
		goals = append(goals, goal{what: "Tool search latency, 10,000 tools", target: "p99 ≤ 2 ms", met: p99 <= maxSearchP99Micros,
			measured: fmt.Sprintf("p99 %.0f µs (p50 %.0f µs)", p99, p50)})
	}
	return goals
}

// searchSection details tool search: retrieval by query length, latency,
// and the cost of an index. Empty when no search benchmark ran.
func searchSection(get getter) string {
	var b strings.Builder
	if _, ok := get("BenchmarkRetrieval", "recall@5"); ok {
		b.WriteString("## Tool search\n\nRetrieval over the labelled queries of `internal/toolsearch/testdata` (a query counts as found at rank k when one of its relevant tools is ranked k or better):\n\n")
		b.WriteString("| queries | count | recall@1 | recall@5 | MRR |\n| --- | ---: | ---: | ---: | ---: |\n")
		for _, row := range []struct{ label, prefix string }{
			{"all", ""}, {"1–2 words", "1-2w-"}, {"3–5 words", "3-5w-"}, {"6+ words", "6+w-"},
		} {
			n, ok := get("BenchmarkRetrieval", row.prefix+"queries")
			if !ok {
				continue
			}
			r1, _ := get("BenchmarkRetrieval", row.prefix+"recall@1")
			r5, _ := get("BenchmarkRetrieval", row.prefix+"recall@5")
			mrr, _ := get("BenchmarkRetrieval", row.prefix+"MRR")
			fmt.Fprintf(&b, "| %s | %.0f | %.3f | %.3f | %.3f |\n", row.label, n, r1, r5, mrr)
		}
		if held, ok := get("BenchmarkRetrieval", "heldout-recall@5"); ok {
			fmt.Fprintf(&b, "\nThe third of the queries kept away from tuning the ranking: recall@5 %.3f.\n", held)
		}
	}
	speed := [][2]string{}
	add := func(what, name, metric, format string) {
		if v, ok := get(name, metric); ok {
			speed = append(speed, [2]string{what, fmt.Sprintf(format, v)})
		}
	}
	add("search p50, 10,000 tools", "BenchmarkSearch10k", "p50-µs", "%.0f µs")
	add("search p99, 10,000 tools", "BenchmarkSearch10k", "p99-µs", "%.0f µs")
	add("index build, 10,000 tools", "BenchmarkBuild10k", "ms/build", "%.0f ms")
	add("index build, 100,000 tools", "BenchmarkBuild100k", "ms/build", "%.0f ms")
	add("index heap per tool, 10,000 tools", "BenchmarkBuild10k", "bytes/tool", "%.0f B")
	add("index heap per tool, 100,000 tools", "BenchmarkBuild100k", "bytes/tool", "%.0f B")
	if len(speed) > 0 {
		if b.Len() == 0 {
			b.WriteString("## Tool search\n")
		}
		b.WriteString("\nSpeed and size (the corpus repeated under distinct server names to reach 10,000 and 100,000 tools; an index is built once per menu revision, never per query):\n\n| measure | value |\n| --- | ---: |\n")
		for _, row := range speed {
			fmt.Fprintf(&b, "| %s | %s |\n", row[0], row[1])
		}
	}
	return b.String()
}
