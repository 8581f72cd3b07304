package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Issue 45's goals for agents that stay, read on every BenchmarkStreams
// step of the results (make bench's 2,000 streams, make bench-scale's
// 50,000) but a smoke run's.
const (
	minStreamStep        = 1000
	maxStreamKiB         = 16   // live heap and goroutine stacks per open stream
	maxStreamFds         = 1.1  // descriptors per open stream: its connection
	maxChangeP99Ms       = 1000 // a menu change to every listener
	maxCallInChangeP99Ms = 10   // a call while it goes out: not waiting for it
	maxChurnP99Ms        = 20   // one session: initialize, tools/list, a call, DELETE
	minChurnDone         = 0.95 // sessions done a second, × those asked
)

// streamGoals are the goals of each step the results hold, read from the
// results' names (BenchmarkStreams/<n>-streams). A metric a step lacks
// reads as NaN, which meets no goal.
func streamGoals(get getter, names []string) []goal {
	var steps []int
	for _, name := range names {
		if rest, ok := strings.CutPrefix(name, "BenchmarkStreams/"); ok {
			if n, err := strconv.Atoi(strings.TrimSuffix(rest, "-streams")); err == nil && n >= minStreamStep {
				steps = append(steps, n)
			}
		}
	}
	sort.Ints(steps)
	var goals []goal
	for _, n := range steps {
		name := fmt.Sprintf("BenchmarkStreams/%d-streams", n)
		m := func(metric string) float64 {
			if v, ok := get(name, metric); ok {
				return v
			}
			return math.NaN()
		}
		held := fmt.Sprintf("%d listening streams held (half legacy GET, half 2026-07-28 subscriptions/listen)", n)
		goals = append(goals,
			goal{what: held + ": memory and descriptors per stream, and calls while held",
				target: fmt.Sprintf("≤ %d KiB (live heap and goroutine stacks), ≤ %.1f descriptors, 0 call errors, no stream ended", maxStreamKiB, maxStreamFds),
				met: m("KiB/stream") <= maxStreamKiB && m("fds/stream") <= maxStreamFds && m("hold-call-errors") == 0 &&
					m("call-while-held-errors") == 0 && m("streams-ended-while-held") == 0,
				measured: fmt.Sprintf("%.1f KiB (heap %.1f, stacks %.1f); %.1f goroutines, %.2f descriptors a stream; %.0f + %.0f calls, %.0f errors; %.0f streams ended",
					m("KiB/stream"), m("heap-KiB/stream"), m("stack-KiB/stream"), m("goroutines/stream"), m("fds/stream"),
					m("calls-while-held"), m("hold-calls"), m("call-while-held-errors")+m("hold-call-errors"), m("streams-ended-while-held"))},
			goal{what: fmt.Sprintf("A menu change reaching all %d listeners, from the patch, and calls made while it goes out (by a process of their own)", n),
				target: fmt.Sprintf("p99 ≤ %d ms; a call meanwhile p99 ≤ %d ms (not waiting for it), 0 errors", maxChangeP99Ms, maxCallInChangeP99Ms),
				met: m("change-p99-ms") <= maxChangeP99Ms && m("call-during-change-errors") == 0 &&
					m("call-during-change-p99-ms") <= maxCallInChangeP99Ms,
				measured: fmt.Sprintf("p50 %.0f ms, p99 %.0f ms, last %.0f ms; %.0f calls meanwhile, p50 %.1f ms, p99 %.1f ms (held: %.1f, %.1f), %.0f errors",
					m("change-p50-ms"), m("change-p99-ms"), m("change-max-ms"), m("calls-during-change"), m("call-during-change-p50-ms"),
					m("call-during-change-p99-ms"), m("call-while-held-p50-ms"), m("call-while-held-p99-ms"), m("call-during-change-errors"))},
			goal{what: fmt.Sprintf("Sessions opened and closed at %.0f a second for %.0f s (initialize, tools/list, a call, DELETE), after the %d streams", m("churn-asked/s"), m("churn-s"), n),
				target: fmt.Sprintf("session p99 ≤ %d ms from its due start, ≥ %.0f%% of the rate done, 0 errors; goroutines and descriptors (±10) and live heap (+2 MiB) back within a minute", maxChurnP99Ms, minChurnDone*100),
				met: m("churn-session-p99-ms") <= maxChurnP99Ms && m("churn-sessions/s") >= minChurnDone*m("churn-asked/s") &&
					m("churn-errors") == 0 && m("settled") == 1,
				measured: fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, %.0f sessions/s done of %.0f, %.0f errors; after: goroutines %+.0f, descriptors %+.0f, live heap %+.0f MiB",
					m("churn-session-p50-ms"), m("churn-session-p99-ms"), m("churn-sessions/s"), m("churn-asked/s"), m("churn-errors"),
					m("goroutines-after-minus-before"), m("fds-after-minus-before"), m("heap-MiB-after-minus-before"))})
	}
	return goals
}
