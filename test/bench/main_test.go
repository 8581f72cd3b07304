package bench

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestMain stops the shared control plane after the benchmarks and removes
// the run's folder (manager binary, logs, perf data) unless BENCH_KEEP is
// set, for reading the managers' logs.
func TestMain(m *testing.M) {
	// envtest's processes outlive a benchmark that is interrupted unless
	// they are stopped here (the managers die with this process).
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-interrupted
		if plane != nil {
			plane.stop()
		}
		os.Exit(1)
	}()
	code := m.Run()
	if plane != nil {
		plane.stop()
	}
	switch {
	case workDir == "":
	case os.Getenv("BENCH_KEEP") != "":
		fmt.Fprintln(os.Stderr, "kept", workDir)
	default:
		_ = os.RemoveAll(workDir)
	}
	os.Exit(code)
}

// callsPerPath is how many sequential calls each path gets: N of
// -benchtime=Nx, so that `make bench` (-benchtime=2000x) measures and
// `make bench-smoke` (-benchtime=1x) only runs everything once. The
// benchmarks that use it report from sub-benchmarks, so their own body
// runs once whatever the benchtime.
func callsPerPath() int {
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return defaultCalls
	}
	if n, err := strconv.Atoi(strings.TrimSuffix(f.Value.String(), "x")); err == nil && strings.HasSuffix(f.Value.String(), "x") {
		return n
	}
	return defaultCalls
}

// defaultCalls is for a -benchtime given as a duration.
const defaultCalls = 2000

// smoke is a run that only keeps the benchmarks from rotting.
func smoke() bool { return callsPerPath() < 10 }

func report(b *testing.B, name string, metrics map[string]float64) {
	b.Run(name, func(b *testing.B) {
		for b.Loop() {
		}
		// The figures were measured before; the loop times nothing.
		b.ReportMetric(0, "ns/op")
		for unit, v := range metrics {
			b.ReportMetric(v, unit)
		}
	})
}
