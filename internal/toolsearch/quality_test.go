package toolsearch

import (
	"fmt"
	"strings"
	"testing"
)

// minRecallAt5 is issue 16's goal: the right tool among the first five for
// at least nine queries in ten.
const minRecallAt5 = 0.90

// quality is how well a set of queries was answered.
type quality struct {
	n                     int
	found1, found5, rrSum float64
}

func (q *quality) add(rank int) {
	q.n++
	if rank == 0 {
		return // not found at all
	}
	if rank == 1 {
		q.found1++
	}
	if rank <= 5 {
		q.found5++
	}
	q.rrSum += 1 / float64(rank)
}

func (q quality) recall1() float64 { return q.found1 / float64(q.n) }
func (q quality) recall5() float64 { return q.found5 / float64(q.n) }
func (q quality) mrr() float64     { return q.rrSum / float64(q.n) }

func (q quality) String() string {
	return fmt.Sprintf("n=%3d  recall@1=%.3f  recall@5=%.3f  MRR=%.3f", q.n, q.recall1(), q.recall5(), q.mrr())
}

// lengthBucket names a query's length in words, as written.
func lengthBucket(query string) string {
	switch n := len(strings.Fields(query)); {
	case n <= 2:
		return "1-2 words"
	case n <= 5:
		return "3-5 words"
	default:
		return "6+ words"
	}
}

// heldOut reports whether query i is in the third kept away from tuning.
func heldOut(i int) bool { return i%3 == 2 }

// retrieval ranks every labelled query over the whole corpus.
type retrieval struct {
	overall, tuning, held quality
	byLength              map[string]*quality
	misses                []string
}

func measureRetrieval(tb testing.TB) retrieval {
	tb.Helper()
	c := loadCorpus(tb)
	ix := Build(c.docs)
	r := retrieval{byLength: map[string]*quality{}}
	for i, q := range loadQueries(tb) {
		rank := firstRelevant(ix.Search(q.Query, ix.Len()), c.labels, q.Relevant)
		r.overall.add(rank)
		if heldOut(i) {
			r.held.add(rank)
		} else {
			r.tuning.add(rank)
		}
		b := lengthBucket(q.Query)
		if r.byLength[b] == nil {
			r.byLength[b] = &quality{}
		}
		r.byLength[b].add(rank)
		if rank == 0 || rank > 5 {
			split := "tuning"
			if heldOut(i) {
				split = "held out"
			}
			r.misses = append(r.misses, fmt.Sprintf("%s, rank %d: %q (want one of %v)", split, rank, q.Query, q.Relevant))
		}
	}
	return r
}

// firstRelevant returns the 1-based rank of the first relevant hit, or 0.
func firstRelevant(hits []Hit, labels, relevant []string) int {
	for i, h := range hits {
		for _, want := range relevant {
			if labels[h.Doc] == want {
				return i + 1
			}
		}
	}
	return 0
}

func TestRetrievalQuality(t *testing.T) {
	r := measureRetrieval(t)
	t.Logf("overall    %v", r.overall)
	t.Logf("tuning     %v", r.tuning)
	t.Logf("held out   %v", r.held)
	for _, b := range []string{"1-2 words", "3-5 words", "6+ words"} {
		t.Logf("%-10s %v", b, *r.byLength[b])
	}
	for _, m := range r.misses {
		t.Logf("outside the top 5: %s", m)
	}
	if r.overall.recall5() < minRecallAt5 {
		t.Errorf("recall@5 = %.3f, want at least %.2f", r.overall.recall5(), minRecallAt5)
	}
}
