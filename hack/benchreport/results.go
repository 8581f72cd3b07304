package main

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// result is one benchmark line: its name (without -GOMAXPROCS) and metrics.
type result struct {
	name    string
	metrics map[string]float64
	line    string
}

// run is the results of one `go test -bench` run, or of a report.
type run struct {
	byName map[string]result
	order  []string // names, first seen first
	cpu    string
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.*)$`)

func parse(r io.Reader) run {
	out := run{byName: map[string]result{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if c, ok := strings.CutPrefix(line, "cpu: "); ok {
			out.cpu = c
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		res := result{name: m[1], metrics: map[string]float64{}, line: line}
		fields := strings.Fields(m[4])
		for i := 0; i+1 < len(fields); i += 2 {
			if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
				res.metrics[fields[i+1]] = v
			}
		}
		out.add(res)
	}
	return out
}

func (r *run) add(res result) {
	if _, seen := r.byName[res.name]; !seen {
		r.order = append(r.order, res.name)
	}
	r.byName[res.name] = res
}

// get returns a benchmark's metric, if the run has it.
func (r run) get(name, metric string) (float64, bool) {
	res, ok := r.byName[name]
	if !ok {
		return 0, false
	}
	v, ok := res.metrics[metric]
	return v, ok
}
