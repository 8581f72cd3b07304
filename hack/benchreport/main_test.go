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

// searchRun is a tool search run whose measures are typical and met,
// except those set is given (unit → value).
func searchRun(set map[string]string) string {
	v := func(unit, typical string) string {
		if x, ok := set[unit]; ok {
			return x
		}
		return typical
	}
	retrieval := "245 tuning-queries   0.71 tuning-recall@1   " + v("tuning-recall@5", "0.930") + " tuning-recall@5   0.80 tuning-MRR   0.89 tuning-recall@5-lo   0.96 tuning-recall@5-hi" +
		"   0.62 tuning-bm25-recall@1   0.83 tuning-bm25-recall@5   0.70 tuning-bm25-MRR   245 tuning-bm25-queries" +
		"   80 tuning-1-4w-queries   0.6 tuning-1-4w-recall@1   0.9 tuning-1-4w-recall@5   0.7 tuning-1-4w-MRR" +
		"   250 blind-queries   " + v("blind-recall@1", "0.75") + " blind-recall@1   " + v("blind-recall@5", "0.92") + " blind-recall@5   0.82 blind-MRR" +
		"   90 blind-20+w-queries   0.7 blind-20+w-recall@1   " + v("blind-20+w-recall@5", "0.88") + " blind-20+w-recall@5   0.76 blind-20+w-MRR" +
		"   268 blind2-queries   " + v("blind2-recall@1", "0.72") + " blind2-recall@1   " + v("blind2-recall@5", "0.91") + " blind2-recall@5   0.80 blind2-MRR" +
		"   118 blind2-20+w-queries   0.7 blind2-20+w-recall@1   " + v("blind2-20+w-recall@5", "0.86") + " blind2-20+w-recall@5   0.75 blind2-20+w-MRR"
	return `cpu: Test CPU
BenchmarkRetrieval-2   1   51000000 ns/op   ` + retrieval + `
BenchmarkSearch10k-2   20000   300000 ns/op   120 p50-µs   ` + v("p99-µs", "1500") + ` p99-µs
BenchmarkBuild10k-2    3   900000000 ns/op   850 bytes/tool   300 ms/build
BenchmarkBuild100k-2    3   900000000 ns/op   ` + v("bytes/tool", "830") + ` bytes/tool   ` + v("ms/build", "2900") + ` ms/build
`
}

func TestSearchGoals(t *testing.T) {
	tests := []struct {
		name   string
		run    string
		missed int
	}{
		{"all met", searchRun(nil), 0},
		{"the tuning set below its recall@5 before issue 41", searchRun(map[string]string{"tuning-recall@5": "0.917"}), 1},
		{"blind recall@5 under 0.90", searchRun(map[string]string{"blind-recall@5": "0.899"}), 1},
		{"blind recall@1 under 0.70", searchRun(map[string]string{"blind-recall@1": "0.699"}), 1},
		{"blind long queries under 0.85", searchRun(map[string]string{"blind-20+w-recall@5": "0.849"}), 1},
		{"second blind set's recall@5 under 0.90", searchRun(map[string]string{"blind2-recall@5": "0.899"}), 1},
		{"second blind set's recall@1 under 0.70", searchRun(map[string]string{"blind2-recall@1": "0.699"}), 1},
		{"second blind set's long queries under 0.85", searchRun(map[string]string{"blind2-20+w-recall@5": "0.849"}), 1},
		{"p99 over 2 ms", searchRun(map[string]string{"p99-µs": "2001"}), 1},
		{"a 100k build over 3 s", searchRun(map[string]string{"ms/build": "3001"}), 1},
		{"an index over 1 KiB per tool", searchRun(map[string]string{"bytes/tool": "1025"}), 1},
		{"all missed", searchRun(map[string]string{"tuning-recall@5": "0.5", "blind-recall@5": "0.5", "blind-20+w-recall@5": "0.5",
			"blind2-recall@5": "0.5", "blind2-20+w-recall@5": "0.5", "p99-µs": "9000", "ms/build": "9000", "bytes/tool": "9000"}), 8},
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
	r := parse(strings.NewReader(searchRun(nil)))
	section := searchSection(r.get)
	for _, want := range []string{
		"**tuning** (the project's queries over the tuning corpus):",
		"| all | 245 | 0.710 | 0.930 (0.89–0.96) | 0.800 |",
		"| all, BM25 | 245 | 0.620 | 0.830 | 0.700 |",
		"| 1–4 words | 80 | 0.600 | 0.900 | 0.700 |",
		"**blind** (blind set: other servers",
		"| 20+ words | 90 | 0.700 | 0.880 | 0.760 |",
		"| search p99, 10,000 tools | 1500 µs |",
		"| index build, 10,000 tools | 300 ms |",
		"| index heap per tool, 10,000 tools | 850 B |",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the section lacks %q:\n%s", want, section)
		}
	}
	if strings.Contains(section, "**agent**") || strings.Contains(section, "5–14 words") {
		t.Errorf("rows for sets or lengths that did not run:\n%s", section)
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
		results: parse(strings.NewReader(callRun + searchRun(map[string]string{"tuning-recall@5": "0.91"}))),
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
		merged = earlier.merged(parse(strings.NewReader(searchRun(map[string]string{"tuning-recall@5": "0.95"}))), "Merged on "+day+" (test): ")
		buf.Reset()
		merged.write(&buf, nil)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	wantHeader := []string{"Written by `make bench` on 2026-11-30: test.",
		"Merged on 2026-12-02 (test): `BenchmarkBuild100k`, `BenchmarkBuild10k`, `BenchmarkRetrieval`, `BenchmarkSearch10k` measured again and merged in; the other results are as written before."}
	if !reflect.DeepEqual(merged.header, wantHeader) {
		t.Errorf("header = %q, want %q", merged.header, wantHeader)
	}
	if v, _ := merged.results.get("BenchmarkRetrieval", "tuning-recall@5"); v != 0.95 {
		t.Errorf("tuning-recall@5 = %v, want this run's 0.95", v)
	}
	if v, ok := merged.results.get("BenchmarkThroughput/catalog", "calls/s"); !ok || v != 7791 {
		t.Errorf("the earlier throughput result was lost: %v %v", v, ok)
	}
	if len(merged.results.order) != 7 {
		t.Errorf("results = %v, want 7 names, each once", merged.results.order)
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
	this := parse(strings.NewReader(searchRun(nil)))
	if missed := missedGoals(ranGoals(this, "BenchmarkRetrieval, BenchmarkSearch10k,BenchmarkBuild10k")); len(missed) != 0 {
		t.Errorf("missed %v, want none", missed)
	}
	missed := missedGoals(ranGoals(this, "BenchmarkRetrieval,BenchmarkBuild1M"))
	if want := []string{"BenchmarkBuild1M ran: a result, measured none in this run (did it fail?)"}; !reflect.DeepEqual(missed, want) {
		t.Errorf("missed %q, want %q", missed, want)
	}
	// A benchmark that reports only from sub-benchmarks ran when one of
	// them reported; a name that only begins like it did not.
	subs := parse(strings.NewReader("BenchmarkClients/client/net-http-2   1   0 ns/op   0 errors\n"))
	if missed := missedGoals(ranGoals(subs, "BenchmarkClients")); len(missed) != 0 {
		t.Errorf("missed %v, want none", missed)
	}
	if missed := missedGoals(ranGoals(subs, "BenchmarkClient")); len(missed) != 1 {
		t.Errorf("missed %v, want BenchmarkClient", missed)
	}
}
