package bench

import (
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// callStats is what one path of one scenario measured.
type callStats struct {
	latencies []time.Duration
	// cpu is the CPU time of the process the path goes through (the
	// manager, the bare proxy) during this path's latency blocks, over
	// cpuCalls calls: what a call costs that process.
	cpu      time.Duration
	cpuCalls int
	// throughput rounds: calls made, the time they took and the process's
	// CPU time meanwhile.
	busyCalls int
	busyTime  time.Duration
	busyCPU   time.Duration
	// rates are the calls/s of each throughput block.
	rates    []float64
	errors   int
	firstErr error
}

type pathKey struct{ scenario, path string }

type allStats map[pathKey]*callStats

func (a allStats) of(s *callScenario, p *callPath) *callStats {
	k := pathKey{s.name, p.name}
	if a[k] == nil {
		a[k] = &callStats{}
	}
	return a[k]
}

func (st *callStats) failed(err error) {
	st.errors++
	if st.firstErr == nil {
		st.firstErr = err
	}
}

// latencyRounds is how many rounds the sequential calls are split into.
const latencyRounds = 20

// measureLatency makes calls sequential calls by each path of each
// scenario, in rounds: each round gives every path of every scenario a
// block of calls, in an order that rotates from round to round, so that
// whatever else the machine does hits all of them alike.
func measureLatency(env *callEnv, calls int) allStats {
	stats := allStats{}
	rounds := min(latencyRounds, calls)
	perBlock := (calls + rounds - 1) / rounds
	inRotation(env, rounds, stats, func(p *callPath, st *callStats) {
		for range perBlock {
			start := time.Now()
			if err := p.one(); err != nil {
				st.failed(err)
				continue
			}
			st.latencies = append(st.latencies, time.Since(start))
		}
	}, func(st *callStats, cpu time.Duration) { st.cpu += cpu; st.cpuCalls += perBlock })
	return stats
}

// measureCalls runs the latency rounds and then the throughput rounds
// with calls calls a path, and logs each path's errors, prefixed by what.
func measureCalls(b *testing.B, env *callEnv, calls int, what string) allStats {
	stats := measureLatency(env, calls)
	measureThroughput(env, calls, stats)
	for key, st := range stats {
		if st.firstErr != nil {
			b.Logf("%s%s through %s: %d errors, the first: %v", what, key.scenario, key.path, st.errors, st.firstErr)
		}
	}
	return stats
}

// throughputRounds is how many rounds the concurrent calls are split into:
// blocks whose median rate is the throughput, so that a burst of other work
// on the machine spoils a block or two, not the figure.
const throughputRounds = 16

// measureThroughput has 32 callers make 16 blocks of calls calls (at least
// 32) by each path of each scenario, in rotating rounds as measureLatency
// does. A block's rate on this two-core machine varies from block to block
// (independently, not with the moment: pairing the rounds' blocks of two
// scenarios did not narrow it) by 20–30% at 500 calls and 15% at 2,000, so
// that the median of 16 blocks of 500 moved by ±9%, as much as the 10% the
// drift goal allows; blocks of 2,000 bring that to about ±5%.
func measureThroughput(env *callEnv, calls int, stats allStats) {
	perBlock := max(throughputCallers, calls)
	inRotation(env, throughputRounds, stats, func(p *callPath, st *callStats) {
		elapsed, errs := busy(p.many, perBlock)
		st.busyTime += elapsed
		st.busyCalls += perBlock
		st.rates = append(st.rates, float64(perBlock-len(errs))/elapsed.Seconds())
		for _, err := range errs {
			st.failed(err)
		}
	}, func(st *callStats, cpu time.Duration) { st.busyCPU += cpu })
}

// inRotation runs block once per path of every scenario in each of rounds
// rounds, in an order that rotates each round, so that every path sees the
// same moments of the machine; the CPU the path's process spent during a
// block goes to addCPU.
func inRotation(env *callEnv, rounds int, stats allStats, block func(*callPath, *callStats),
	addCPU func(*callStats, time.Duration)) {
	for r := range rounds {
		for i := range env.scenarios {
			s := env.scenarios[(i+r)%len(env.scenarios)]
			for j := range s.paths {
				p := s.paths[(j+r)%len(s.paths)]
				st := stats.of(s, p)
				var cpuBefore time.Duration
				if p.cpu != nil {
					cpuBefore = p.cpu()
				}
				block(p, st)
				if p.cpu != nil {
					addCPU(st, p.cpu()-cpuBefore)
				}
			}
		}
	}
}

// busy has one goroutine per caller make n calls between them.
func busy(callers []func() error, n int) (time.Duration, []error) {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	start := time.Now()
	for _, call := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := call(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), errs
}

// baselinePaths reach the echo server without the manager: their figures
// do not depend on the menu, so the goals read them pooled over every
// scenario, five times the samples of one.
var baselinePaths = []string{"direct", "proxy", "proxy-inproc"}

// pooled merges the baseline paths' figures of every scenario into a
// scenario of its own, "baseline".
func (a allStats) pooled(scenarios []*callScenario) *callScenario {
	base := &callScenario{name: "baseline"}
	for _, name := range baselinePaths {
		all := &callStats{}
		var cpu func() time.Duration
		for _, s := range scenarios {
			for _, p := range s.paths {
				st := a[pathKey{s.name, p.name}]
				if p.name != name || st == nil {
					continue
				}
				cpu = p.cpu
				all.latencies = append(all.latencies, st.latencies...)
				all.cpu += st.cpu
				all.cpuCalls += st.cpuCalls
				all.busyCalls += st.busyCalls
				all.busyTime += st.busyTime
				all.busyCPU += st.busyCPU
				all.rates = append(all.rates, st.rates...)
				all.errors += st.errors
			}
		}
		a[pathKey{base.name, name}] = all
		base.paths = append(base.paths, &callPath{name: name, cpu: cpu})
	}
	return base
}

func median(v []float64) float64 {
	sorted := append([]float64(nil), v...)
	sort.Float64s(sorted)
	return sorted[len(sorted)/2]
}

// metrics are a scenario's figures, named for benchreport:
// <path>-p50-µs, <path>-p99-µs, <path>-calls/s (the median block's),
// errors, and for the paths whose process is measured (see callPath.cpu)
// that process's CPU per call, sequential (<path>-cpu-µs/call) and at 32
// callers (<path>-busy-cpu-µs/call).
func (a allStats) metrics(s *callScenario) map[string]float64 {
	out := map[string]float64{"errors": 0}
	for _, p := range s.paths {
		st := a[pathKey{s.name, p.name}]
		if st == nil {
			continue
		}
		sortDurations(st.latencies)
		out[p.name+"-p50-µs"] = quantile(st.latencies, 0.50)
		out[p.name+"-p99-µs"] = quantile(st.latencies, 0.99)
		if len(st.rates) > 0 {
			out[p.name+"-calls/s"] = median(st.rates)
		}
		if p.cpu != nil && st.cpuCalls > 0 {
			out[p.name+"-cpu-µs/call"] = float64(st.cpu.Microseconds()) / float64(st.cpuCalls)
		}
		if p.cpu != nil && st.busyCalls > 0 {
			out[p.name+"-busy-cpu-µs/call"] = float64(st.busyCPU.Microseconds()) / float64(st.busyCalls)
		}
		out["errors"] += float64(st.errors)
	}
	return out
}
