package toolsearch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// minRecallAt5 is issue 16's goal: the right tool among the first five for
// at least nine queries in ten.
const minRecallAt5 = 0.90

// labelledSet is a set of labelled queries over the corpus they were
// written for.
type labelledSet struct {
	name, corpus, queries string
	// blind sets are never tuned on: their misses are never printed,
	// only their aggregates.
	blind bool
}

// labelledSets are every set the ranker is measured on (testdata/README.md
// says how each was made). The blind ones are measured only when asked:
// see measuredSets.
var labelledSets = []labelledSet{
	{name: "tuning", corpus: "testdata/corpus", queries: "testdata/queries.json"},
	{name: "agent", corpus: "testdata/corpus", queries: "testdata/queries-agent.json"},
	{name: "blind", corpus: "testdata/blind/corpus", queries: "testdata/blind/queries.json", blind: true},
	{name: "blind2", corpus: "testdata/blind2/corpus", queries: "testdata/blind2/queries.json", blind: true},
}

// blindEnv asks for the blind sets to be measured: make bench-search sets
// it, and nothing else does, so that tests and CI runs never print its
// figures to someone tuning the ranker.
const blindEnv = "TOOLSEARCH_MEASURE_BLIND"

// measuredSets are the sets measured by this run: the blind ones only when
// blindEnv is 1.
func measuredSets() []labelledSet {
	var sets []labelledSet
	for _, set := range labelledSets {
		if !set.blind || os.Getenv(blindEnv) == "1" {
			sets = append(sets, set)
		}
	}
	return sets
}

// lengthBuckets name a query's length in words, as written; the last one
// is how agents write.
var lengthBuckets = []struct {
	name     string
	min, max int
}{{"1-4w", 1, 4}, {"5-14w", 5, 14}, {"15-19w", 15, 19}, {"20+w", 20, math.MaxInt}}

func lengthBucket(query string) string {
	n := len(strings.Fields(query))
	for _, b := range lengthBuckets {
		if n >= b.min && n <= b.max {
			return b.name
		}
	}
	return lengthBuckets[0].name
}

// quality is how well a set of queries was answered.
type quality struct {
	// ranks holds each query's 1-based rank of its first relevant tool,
	// 0 when none was found.
	ranks []int
}

func (q *quality) add(rank int) { q.ranks = append(q.ranks, rank) }

func (q quality) n() int { return len(q.ranks) }

func (q quality) recall(k int) float64 { return recallOf(q.ranks, k) }

func (q quality) mrr() float64 {
	sum := 0.0
	for _, r := range q.ranks {
		if r > 0 {
			sum += 1 / float64(r)
		}
	}
	return sum / float64(len(q.ranks))
}

func recallOf(ranks []int, k int) float64 {
	found := 0
	for _, r := range ranks {
		if r > 0 && r <= k {
			found++
		}
	}
	return float64(found) / float64(len(ranks))
}

// recallInterval is a 95% bootstrap interval of recall@k: the queries
// resampled with replacement, from a fixed seed so a report is
// reproducible. With 250 queries at recall 0.9 it is about ±0.04: a change
// smaller than that is not shown to be one.
func (q quality) recallInterval(k int) (lo, hi float64) {
	const resamples = 2000
	rng := rand.New(rand.NewPCG(41, 5))
	sample := make([]int, len(q.ranks))
	stats := make([]float64, resamples)
	for i := range stats {
		for j := range sample {
			sample[j] = q.ranks[rng.IntN(len(q.ranks))]
		}
		stats[i] = recallOf(sample, k)
	}
	slices.Sort(stats)
	return stats[resamples*25/1000], stats[resamples*975/1000-1]
}

func (q quality) String() string {
	return fmt.Sprintf("n=%3d  recall@1=%.3f  recall@5=%.3f  MRR=%.3f", q.n(), q.recall(1), q.recall(5), q.mrr())
}

// ranker ranks a corpus's documents for a query: document indexes, best
// first.
type ranker struct {
	name  string
	build func(docs []Document) func(query string) []int32
}

// theRanker is the package's Index; bm25 is the baseline a ranker must
// beat (baseline_test.go).
var (
	theRanker = ranker{name: "ranker", build: func(docs []Document) func(string) []int32 {
		ix := Build(docs)
		return func(q string) []int32 {
			hits := ix.Search(q, ix.Len())
			docs := make([]int32, len(hits))
			for i, h := range hits {
				docs[i] = int32(h.Doc)
			}
			return docs
		}
	}}
	bm25 = ranker{name: "bm25", build: buildBM25}
)

// retrieval is one ranker's answers to one labelled set.
type retrieval struct {
	overall  quality
	byLength map[string]*quality
	misses   []string
}

func measure(tb testing.TB, set labelledSet, r ranker) retrieval {
	tb.Helper()
	c := loadCorpusFrom(tb, set.corpus)
	rank := r.build(c.docs)
	res := retrieval{byLength: map[string]*quality{}}
	for _, q := range loadQueriesFrom(tb, set.queries) {
		first := firstRelevant(rank(q.Query), c.labels, q.Relevant)
		res.overall.add(first)
		b := lengthBucket(q.Query)
		if res.byLength[b] == nil {
			res.byLength[b] = &quality{}
		}
		res.byLength[b].add(first)
		if !set.blind && (first == 0 || first > 5) {
			res.misses = append(res.misses, fmt.Sprintf("rank %d: %q (want one of %v)", first, q.Query, q.Relevant))
		}
	}
	return res
}

// firstRelevant returns the 1-based rank of the first relevant document,
// or 0.
func firstRelevant(ranked []int32, labels, relevant []string) int {
	for i, d := range ranked {
		if slices.Contains(relevant, labels[d]) {
			return i + 1
		}
	}
	return 0
}

// TestRetrievalQuality measures the ranker and the BM25 baseline on the
// tuning and agent sets (the blind ones too under make bench-search). It
// fails when the tuning set misses issue 16's goal; the blind sets' goals
// (issue 41) are make bench's, and their misses are never shown.
func TestRetrievalQuality(t *testing.T) {
	for _, set := range measuredSets() {
		for _, r := range []ranker{theRanker, bm25} {
			res := measure(t, set, r)
			t.Logf("%-6s %-6s all    %v", set.name, r.name, res.overall)
			for _, b := range lengthBuckets {
				if q := res.byLength[b.name]; q != nil {
					t.Logf("%-6s %-6s %-6s %v", set.name, r.name, b.name, *q)
				}
			}
			if r.name != theRanker.name {
				continue
			}
			for _, m := range res.misses {
				t.Logf("%s: outside the top 5: %s", set.name, m)
			}
			if set.name == "tuning" && res.overall.recall(5) < minRecallAt5 {
				t.Errorf("tuning set: recall@5 = %.3f, want at least %.2f", res.overall.recall(5), minRecallAt5)
			}
		}
	}
}

// TestLabelledSetsResolve checks every set's labels against its corpus: a
// label naming no tool would count a query as missed whatever the ranker
// does.
func TestLabelledSetsResolve(t *testing.T) {
	for _, set := range labelledSets {
		c := loadCorpusFrom(t, set.corpus)
		queries := loadQueriesFrom(t, set.queries)
		if len(queries) < 100 {
			t.Errorf("%s: %d queries, want at least 100", set.name, len(queries))
		}
		seen := map[string]bool{}
		for i, q := range queries {
			// A blind query is named by its index alone.
			text, label0 := q.Query, strings.Join(q.Relevant, " ")
			if set.blind {
				text, label0 = "(blind)", "(blind)"
			}
			if strings.TrimSpace(q.Query) == "" || len(q.Relevant) == 0 {
				t.Errorf("%s query %d: %q with %d relevant tools", set.name, i, text, len(q.Relevant))
			}
			for _, label := range q.Relevant {
				if !slices.Contains(c.labels, label) {
					t.Errorf("%s query %d: a label of %q is no tool of %s", set.name, i, label0, set.corpus)
				}
			}
			if seen[q.Query] {
				t.Errorf("%s query %d: %q is there twice", set.name, i, text)
			}
			seen[q.Query] = true
		}
	}
}
