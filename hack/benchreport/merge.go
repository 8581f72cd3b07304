package main

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// readReport reads what an earlier docs/benchmarks.md holds: its header
// lines, its results and its profile section.
func readReport(path string) (report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return report{}, err
	}
	text := string(raw)
	var rep report
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "Written by ") || strings.HasPrefix(line, "Merged on ") {
			rep.header = append(rep.header, line)
		}
	}
	_, results, found := strings.Cut(text, "\n## All results\n")
	if !found {
		return report{}, fmt.Errorf("no \"## All results\" section")
	}
	block, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimLeft(results, "\n"), "```\n"), "```")
	rep.results = parse(strings.NewReader(block))
	if at := strings.Index(text, "\n## CPU profile"); at >= 0 {
		rep.profile = text[at+1:]
	}
	return rep, nil
}

var benchName = regexp.MustCompile("`(Benchmark[^`]+)`")

// merged is the earlier report with this run's results in place of those
// of the same benchmarks, and a header line saying which they are. An
// earlier merge line whose benchmarks this run all measured again goes.
func (r report) merged(this run, prefix string) report {
	out := report{results: run{byName: map[string]result{}}, profile: r.profile}
	for _, name := range r.results.order {
		out.results.add(r.results.byName[name])
	}
	for _, name := range this.order {
		out.results.add(this.byName[name])
	}
	for _, line := range r.header {
		if strings.HasPrefix(line, "Merged on ") && allIn(benchName.FindAllStringSubmatch(line, -1), this.byName) {
			continue
		}
		out.header = append(out.header, line)
	}
	names := append([]string(nil), this.order...)
	sort.Strings(names)
	out.header = append(out.header, prefix+"`"+strings.Join(names, "`, `")+"` measured again and merged in; the other results are as written before.")
	return out
}

func allIn(matches [][]string, names map[string]result) bool {
	for _, m := range matches {
		if _, ok := names[m[1]]; !ok {
			return false
		}
	}
	return len(matches) > 0
}
