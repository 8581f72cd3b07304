package main

import "fmt"

// Issue 45's goals for agents that stay, read on BenchmarkStreams' steps:
// make bench's (2,000 streams) and make bench-scale's (50,000).
const (
	maxStreamKiB   = 16   // live heap and goroutine stacks per open stream
	maxChangeP99Ms = 1000 // a menu change to every listener
	maxChurnP99Ms  = 20   // one session: initialize, tools/list, a call, DELETE
)

// streamSteps are the stream counts whose results carry goals.
var streamSteps = []int{2000, 50000}

// streamGoals are the goals of each step the results hold.
func streamGoals(get getter) []goal {
	var goals []goal
	for _, n := range streamSteps {
		name := fmt.Sprintf("BenchmarkStreams/%d-streams", n)
		m := func(metric string) float64 { v, _ := get(name, metric); return v }
		if _, ok := get(name, "KiB/stream"); !ok {
			continue
		}
		held := fmt.Sprintf("%d listening streams held (half legacy GET, half 2026-07-28 subscriptions/listen)", n)
		goals = append(goals,
			goal{what: held + ": memory per stream, and calls while held",
				target: fmt.Sprintf("≤ %d KiB (live heap and goroutine stacks), 0 call errors, no stream ended", maxStreamKiB),
				met:    m("KiB/stream") <= maxStreamKiB && m("hold-call-errors") == 0 && m("call-while-held-errors") == 0 && m("streams-ended-while-held") == 0,
				measured: fmt.Sprintf("%.1f KiB (heap %.1f, stacks %.1f); %.1f goroutines, %.1f descriptors a stream; %.0f + %.0f calls, %.0f errors; %.0f streams ended",
					m("KiB/stream"), m("heap-KiB/stream"), m("stack-KiB/stream"), m("goroutines/stream"), m("fds/stream"),
					m("calls-while-held"), m("hold-calls"), m("call-while-held-errors")+m("hold-call-errors"), m("streams-ended-while-held"))},
			goal{what: fmt.Sprintf("A menu change reaching all %d listeners, from the patch", n),
				target: fmt.Sprintf("p99 ≤ %d ms", maxChangeP99Ms), met: m("change-p99-ms") <= maxChangeP99Ms,
				measured: fmt.Sprintf("p50 %.0f ms, p99 %.0f ms, last %.0f ms; a call meanwhile p50 %.1f ms, p99 %.1f ms",
					m("change-p50-ms"), m("change-p99-ms"), m("change-max-ms"), m("call-while-held-p50-ms"), m("call-while-held-p99-ms"))},
			goal{what: fmt.Sprintf("Sessions opened and closed at %.0f a second for %.0f s (initialize, tools/list, a call, DELETE), after the streams", m("churn-asked/s"), m("churn-s")),
				target: fmt.Sprintf("session p99 ≤ %d ms, 0 errors; goroutines and descriptors (±10) and live heap (+2 MiB) back within a minute", maxChurnP99Ms),
				met:    m("churn-session-p99-ms") <= maxChurnP99Ms && m("churn-errors") == 0 && m("settled") == 1,
				measured: fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, %.0f sessions/s done, %.0f errors; after: goroutines %+.0f, descriptors %+.0f, live heap %+.0f MiB",
					m("churn-session-p50-ms"), m("churn-session-p99-ms"), m("churn-sessions/s"), m("churn-errors"),
					m("goroutines-after-minus-before"), m("fds-after-minus-before"), m("heap-MiB-after-minus-before"))})
	}
	return goals
}
