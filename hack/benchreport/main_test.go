package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const callRun = `cpu: Test CPU
BenchmarkEnvelope-2     3000      4467 ns/op     968 B/op    23 allocs/op
BenchmarkThroughput/catalog-2   3000   128301 ns/op   7791 calls/s   0 errors
BenchmarkThroughput/proxy-2     3000   149049 ns/op   6709 calls/s   0 errors
`

func searchRun(recall5, p99 string) string {
	return `cpu: Test CPU
BenchmarkRetrieval-2   1   51000000 ns/op   245 queries   0.71 recall@1   ` + recall5 + ` recall@5   0.80 MRR   0.90 heldout-recall@5   80 1-2w-queries   0.6 1-2w-recall@1   0.9 1-2w-recall@5   0.7 1-2w-MRR
BenchmarkSearch10k-2   20000   300000 ns/op   120 p50-µs   ` + p99 + ` p99-µs
BenchmarkBuild10k-2    3   900000000 ns/op   850 bytes/tool   300 ms/build
`
}

func TestSearchGoals(t *testing.T) {
	tests := []struct {
		name   string
		run    string
		missed int
	}{
		{"both met", searchRun("0.930", "1500"), 0},
		{"recall@5 under 0.90 is missed", searchRun("0.899", "1500"), 1},
		{"p99 over 2 ms is missed", searchRun("0.930", "2001"), 1},
		{"both missed", searchRun("0.5", "9000"), 2},
		{"no search benchmarks, no search goals", callRun, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := parse(strings.NewReader(tt.run))
			if got := len(missedGoals(searchGoals(r.get))); got != tt.missed {
				t.Errorf("missed %d goals, want %d: %v", got, tt.missed, missedGoals(searchGoals(r.get)))
			}
		})
	}
}

func TestSearchSection(t *testing.T) {
	r := parse(strings.NewReader(searchRun("0.930", "1500")))
	section := searchSection(r.get)
	for _, want := range []string{
		"| all | 245 | 0.710 | 0.930 | 0.800 |",
		"| 1–2 words | 80 | 0.600 | 0.900 | 0.700 |",
		"recall@5 0.900.",
		"| search p99, 10,000 tools | 1500 µs |",
		"| index build, 10,000 tools | 300 ms |",
		"| index heap per tool, 10,000 tools | 850 B |",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the section lacks %q:\n%s", want, section)
		}
	}
	if strings.Contains(section, "| index build, 100,000 tools") {
		t.Errorf("a row for a benchmark that did not run:\n%s", section)
	}
	if got := searchSection(parse(strings.NewReader(callRun)).get); got != "" {
		t.Errorf("a search section without search results: %q", got)
	}
}

// TestMergeKeepsWhatThisRunDidNotMeasure writes a report, merges a search
// run into it twice, and reads back what stays.
func TestMergeKeepsWhatThisRunDidNotMeasure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	first := report{header: []string{"Written by `make bench` on 2026-11-30: test."},
		results: parse(strings.NewReader(callRun + searchRun("0.91", "1900"))),
		profile: "## CPU profile of the call and menu benchmarks\n\nsome notes\n```\ntop\n```\n"}
	var buf bytes.Buffer
	first.write(&buf, nil)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	var merged report
	for _, day := range []string{"2026-12-01", "2026-12-02"} {
		earlier, err := readReport(path)
		if err != nil {
			t.Fatal(err)
		}
		merged = earlier.merged(parse(strings.NewReader(searchRun("0.95", "900"))), "Merged on "+day+" (test): ")
		buf.Reset()
		merged.write(&buf, nil)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	wantHeader := []string{"Written by `make bench` on 2026-11-30: test.",
		"Merged on 2026-12-02 (test): `BenchmarkBuild10k`, `BenchmarkRetrieval`, `BenchmarkSearch10k` measured again and merged in; the other results are as written before."}
	if !reflect.DeepEqual(merged.header, wantHeader) {
		t.Errorf("header = %q, want %q", merged.header, wantHeader)
	}
	if v, _ := merged.results.get("BenchmarkRetrieval", "recall@5"); v != 0.95 {
		t.Errorf("recall@5 = %v, want this run's 0.95", v)
	}
	if v, ok := merged.results.get("BenchmarkThroughput/catalog", "calls/s"); !ok || v != 7791 {
		t.Errorf("the earlier throughput result was lost: %v %v", v, ok)
	}
	if len(merged.results.order) != 6 {
		t.Errorf("results = %v, want 6 names, each once", merged.results.order)
	}
	if !strings.HasSuffix(buf.String(), first.profile) {
		t.Errorf("the earlier profile was not kept:\n%s", buf.String())
	}
}

// TestReadsTheReportInTheTree keeps -merge able to read the report `make
// bench` wrote last.
func TestReadsTheReportInTheTree(t *testing.T) {
	rep, err := readReport(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.header) == 0 || !strings.HasPrefix(rep.header[0], "Written by `make bench` on ") {
		t.Errorf("header = %q", rep.header)
	}
	if len(rep.results.order) < 10 {
		t.Errorf("only %d results read: %v", len(rep.results.order), rep.results.order)
	}
	if !strings.HasPrefix(rep.profile, "## CPU profile") {
		t.Errorf("no profile section read")
	}
}

func TestRequiredBenchmarksMustReport(t *testing.T) {
	this := parse(strings.NewReader(searchRun("0.93", "1500")))
	if missed := missedGoals(ranGoals(this, "BenchmarkRetrieval, BenchmarkSearch10k,BenchmarkBuild10k")); len(missed) != 0 {
		t.Errorf("missed %v, want none", missed)
	}
	missed := missedGoals(ranGoals(this, "BenchmarkRetrieval,BenchmarkBuild100k"))
	if want := []string{"BenchmarkBuild100k ran: a result, measured none in this run (did it fail?)"}; !reflect.DeepEqual(missed, want) {
		t.Errorf("missed %q, want %q", missed, want)
	}
}
