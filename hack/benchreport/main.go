// Command benchreport reads `go test -bench` output on stdin and writes
// docs/benchmarks.md: every result, and each goal of the performance and
// tool search issues, call-path goals computed as a ratio against the
// baseline measured in the same run. It exits 1 when a goal is missed, so
// that `make bench` fails, after writing the report that shows which.
// With -merge it keeps an earlier report's results that this run did not
// measure again (`make bench-search` measures only tool search).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

func main() {
	profiles := flag.String("profiles", "", "text of `go tool pprof` reports on the manager's CPU profiles (make bench writes it), included as it is")
	merge := flag.String("merge", "", "an earlier report: its results stay where this run did not measure the same benchmark, and its profile stays unless -profiles is given")
	require := flag.String("require", "", "comma-separated benchmarks this run must have reported; one missing (it failed, or was not run) is a missed goal")
	ab := flag.Bool("ab", false, "write only the call path by client, with no goals, and fail unless every client has both builds' figures (make bench-ab)")
	flag.Parse()
	this := parse(os.Stdin)
	if *ab {
		if clients, withB := writeClientTable(os.Stdout, this.get); clients < len(stockClients) || withB < clients {
			fmt.Fprintf(os.Stderr, "benchreport: %d of %d clients reported, %d of them with catalog-b\n", clients, len(stockClients), withB)
			os.Exit(1)
		}
		return
	}
	now := time.Now().UTC().Format("2006-01-02")
	environment := fmt.Sprintf("%s, %s, GOMAXPROCS %d, cpu %q", runtime.GOOS+"/"+runtime.GOARCH, runtime.Version(), runtime.GOMAXPROCS(0), this.cpu)

	rep := report{header: []string{fmt.Sprintf("Written by `make bench` on %s: %s.", now, environment)}, results: this}
	if *merge != "" {
		earlier, err := readReport(*merge)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchreport: reading %s to merge: %v\n", *merge, err)
			os.Exit(2)
		}
		rep = earlier.merged(this, fmt.Sprintf("Merged on %s (%s): ", now, environment))
	}
	if *profiles != "" {
		if text, err := os.ReadFile(*profiles); err == nil {
			rep.profile = fmt.Sprintf("## CPU profiles of the manager\n\n%s\n```\n%s```\n", profileNotes, text)
		}
	}
	goals := append(ranGoals(this, *require), managerGoals(rep.results.get)...)
	goals = append(goals, streamGoals(rep.results.get, rep.results.order)...)
	goals = append(goals, searchGoals(rep.results.get)...)
	rep.write(os.Stdout, goals)
	if missed := missedGoals(goals); len(missed) > 0 {
		fmt.Fprintf(os.Stderr, "benchreport: goals missed: %s\n", strings.Join(missed, "; "))
		os.Exit(1)
	}
}

// report is what docs/benchmarks.md holds.
type report struct {
	header  []string // who wrote it, when, on what
	results run
	profile string // the CPU profile section, whole
}

type goal struct {
	what, target, measured string
	met                    bool
}

// ranGoals are missed goals for the required benchmarks this run lacks: a
// benchmark that failed prints no result, and its goals would otherwise
// go unchecked (or, merged, be checked against an older run).
func ranGoals(this run, required string) []goal {
	var goals []goal
	for _, name := range strings.Split(required, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if !this.reported(name) {
			goals = append(goals, goal{what: name + " ran", target: "a result", measured: "none in this run (did it fail?)"})
		}
	}
	return goals
}

// reported tells whether the run holds a result of the benchmark name or
// of one of its sub-benchmarks (BenchmarkClients reports only those).
func (r run) reported(name string) bool {
	for n := range r.byName {
		if n == name || strings.HasPrefix(n, name+"/") {
			return true
		}
	}
	return false
}

func missedGoals(goals []goal) []string {
	var missed []string
	for _, g := range goals {
		if !g.met {
			missed = append(missed, fmt.Sprintf("%s: %s, measured %s", g.what, g.target, g.measured))
		}
	}
	return missed
}

func (r report) write(out io.Writer, goals []goal) {
	fmt.Fprintf(out, "# Benchmarks\n\n%s\n", strings.Join(r.header, "\n"))
	fmt.Fprintf(out, "Goals of the call path are ratios against a baseline measured in the same run, since absolute times drift on a shared machine; "+
		"tool search's goals are absolute, as issue 16 sets them.\n\n")
	fmt.Fprintf(out, "## Goals\n\n| goal | target | measured | met |\n| --- | --- | --- | --- |\n")
	for _, g := range goals {
		met := "yes"
		if !g.met {
			met = "**no**"
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s |\n", g.what, g.target, g.measured, met)
	}
	if section := searchSection(r.results.get); section != "" {
		fmt.Fprintf(out, "\n%s", section)
	}
	fmt.Fprintf(out, "\n## All results\n\n```\n")
	names := append([]string(nil), r.results.order...)
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintln(out, r.results.byName[name].line)
	}
	fmt.Fprintf(out, "```\n")
	writeCallTable(out, r.results.get)
	writeClientTable(out, r.results.get)
	if r.profile != "" {
		fmt.Fprintf(out, "\n%s", r.profile)
	}
}
