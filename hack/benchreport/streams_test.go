package main

import (
	"strings"
	"testing"
)

// streamsStep is a BenchmarkStreams step that meets every goal, with
// metric overrides; a value below 0 removes the metric.
func streamsStep(set map[string]float64) map[string]float64 {
	m := map[string]float64{"KiB/stream": 15, "heap-KiB/stream": 10, "stack-KiB/stream": 5, "goroutines/stream": 1, "fds/stream": 1,
		"calls-while-held": 200, "call-while-held-errors": 0, "hold-calls": 100, "hold-call-errors": 0, "streams-ended-while-held": 0,
		"change-p50-ms": 300, "change-p99-ms": 900, "change-max-ms": 950, "call-while-held-p50-ms": 0.7, "call-while-held-p99-ms": 3,
		"calls-during-change": 300, "call-during-change-errors": 0, "call-during-change-p50-ms": 0.8, "call-during-change-p99-ms": 6,
		"churn-asked/s": 500, "churn-s": 10, "churn-sessions/s": 475, "churn-session-p50-ms": 4, "churn-session-p99-ms": 19, "churn-errors": 0,
		"settled": 1, "goroutines-after-minus-before": 2, "fds-after-minus-before": 0, "heap-MiB-after-minus-before": 1}
	for k, v := range set {
		m[k] = v
		if v < 0 {
			delete(m, k)
		}
	}
	return m
}

func TestStreamGoals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    map[string]float64
		missed string // the goal missed, by a word of its name; "" for none
	}{
		{"all met", nil, ""},
		{"a stream over 16 KiB", map[string]float64{"KiB/stream": 16.1}, "memory"},
		{"over 1.1 descriptors a stream", map[string]float64{"fds/stream": 1.2}, "memory"},
		{"a call failed while held", map[string]float64{"hold-call-errors": 1}, "memory"},
		{"a stream ended while held", map[string]float64{"streams-ended-while-held": 1}, "memory"},
		{"no memory figure", map[string]float64{"KiB/stream": -1}, "memory"},
		{"a change slower than 1 s at p99", map[string]float64{"change-p99-ms": 1001}, "menu change"},
		{"calls over 10 ms at p99 while it goes out", map[string]float64{"call-during-change-p99-ms": 10.1}, "menu change"},
		{"a call failed while it goes out", map[string]float64{"call-during-change-errors": 1}, "menu change"},
		{"a session slower than 20 ms at p99", map[string]float64{"churn-session-p99-ms": 20.1}, "Sessions"},
		{"under 95% of the rate done", map[string]float64{"churn-sessions/s": 474}, "Sessions"},
		{"a session failed", map[string]float64{"churn-errors": 1}, "Sessions"},
		{"not back in a minute", map[string]float64{"settled": 0}, "Sessions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "BenchmarkStreams/40000-streams"
			goals := streamGoals(results(map[string]map[string]float64{name: streamsStep(tc.set)}), []string{"BenchmarkClients/client/net-http", name})
			if len(goals) != 3 {
				t.Fatalf("%d goals, want 3", len(goals))
			}
			for _, g := range goals {
				if want := tc.missed != "" && strings.Contains(g.what, tc.missed); g.met == want {
					t.Errorf("%q: met = %v (%s)", g.what, g.met, g.measured)
				}
			}
		})
	}
	if goals := streamGoals(results(map[string]map[string]float64{"BenchmarkStreams/20-streams": streamsStep(nil)}),
		[]string{"BenchmarkStreams/20-streams"}); len(goals) != 0 {
		t.Errorf("a smoke step has goals: %v", goals)
	}
}
