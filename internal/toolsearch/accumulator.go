package toolsearch

import "math"

// accumulator sums one query's scores. It is sized for one index and reused
// through that index's pool, so a query touches only the documents in its
// postings and allocates nothing per document; it is never shared by two
// queries at once.
type accumulator struct {
	score   []float32 // by document; zero for untouched ones
	matched []uint16  // query words a document matched
	best    []float32 // the current word's best alternative, by document
	touched []int32   // documents with a score, in first-touch order
	inGroup []int32   // documents with a best for the current word
	// ideal is the score of a document that matched every word so far as
	// strongly as the best-matching document matched it.
	ideal float32
}

func newAccumulator(n int) *accumulator {
	return &accumulator{score: make([]float32, n), matched: make([]uint16, n), best: make([]float32, n)}
}

// max keeps, per document, the largest weight seen for the current word.
func (a *accumulator) max(docs []int32, weights []float32, factor float32) {
	for i, d := range docs {
		w := weights[i] * factor
		if a.best[d] == 0 {
			a.inGroup = append(a.inGroup, d)
		}
		if w > a.best[d] {
			a.best[d] = w
		}
	}
}

// endWord adds the current word's best matches into the scores.
func (a *accumulator) endWord() {
	var strongest float32
	for _, d := range a.inGroup {
		if a.score[d] == 0 {
			a.touched = append(a.touched, d)
		}
		strongest = max(strongest, a.best[d])
		a.score[d] += a.best[d]
		a.matched[d]++
		a.best[d] = 0
	}
	a.ideal += strongest
	a.inGroup = a.inGroup[:0]
}

// top returns the limit best documents and clears the accumulator for reuse.
// A document's score is scaled by the square root of the share of the
// query's words it matched (a softened form of Lucene's classic
// coordination factor): one that answers every word of "list files in a
// folder" beats one that matches "folder" alone, however rare "folder" is,
// yet in a long request, where many words name no capability ("before the
// demo tomorrow, so the team can see it"), a tool matching one more of
// them does not outrank the tool that matches what is asked. Scores are
// then divided by the ideal one (see Hit.Score).
func (a *accumulator) top(limit, words int, names []string) []Hit {
	hits := make([]Hit, 0, min(limit, len(a.touched)))
	for _, d := range a.touched {
		s := a.score[d] * float32(math.Sqrt(float64(a.matched[d])/float64(words)))
		a.score[d], a.matched[d] = 0, 0
		if len(hits) == limit && !better(s, d, hits[limit-1], names) {
			continue
		}
		// Insert in order; limit is small, so shifting beats a heap.
		at := len(hits)
		for at > 0 && better(s, d, hits[at-1], names) {
			at--
		}
		if len(hits) < limit {
			hits = append(hits, Hit{})
		}
		copy(hits[at+1:], hits[at:len(hits)-1])
		hits[at] = Hit{Doc: int(d), Score: float64(s)}
	}
	for i := range hits {
		hits[i].Score = min(hits[i].Score/float64(a.ideal), 1)
	}
	a.touched, a.ideal = a.touched[:0], 0
	return hits
}

// better orders hits: higher score first, then smaller name, then position.
func better(s float32, d int32, h Hit, names []string) bool {
	hs := float32(h.Score)
	if s != hs {
		return s > hs
	}
	if names[d] != names[h.Doc] {
		return names[d] < names[h.Doc]
	}
	return int(d) < h.Doc
}
