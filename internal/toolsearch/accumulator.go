package toolsearch

// accumulator sums one query's scores. It is sized for one index and reused
// through that index's pool, so a query touches only the documents in its
// postings and allocates nothing per document; it is never shared by two
// queries at once.
type accumulator struct {
	score    []float32 // by document; zero for untouched ones
	best     []float32 // the last word's best alternative, by document
	touched  []int32   // documents with a score, in first-touch order
	touchedB []int32   // documents with a best, likewise
}

func newAccumulator(n int) *accumulator {
	return &accumulator{score: make([]float32, n), best: make([]float32, n)}
}

func (a *accumulator) add(docs []int32, weights []float32) {
	for i, d := range docs {
		if a.score[d] == 0 {
			a.touched = append(a.touched, d)
		}
		a.score[d] += weights[i]
	}
}

// max keeps, per document, the largest of the alternatives' weights seen.
func (a *accumulator) max(docs []int32, weights []float32, factor float32) {
	for i, d := range docs {
		w := weights[i] * factor
		if a.best[d] == 0 {
			a.touchedB = append(a.touchedB, d)
		}
		if w > a.best[d] {
			a.best[d] = w
		}
	}
}

// flushMax adds the best alternatives into the scores and clears them.
func (a *accumulator) flushMax() {
	for _, d := range a.touchedB {
		if a.score[d] == 0 {
			a.touched = append(a.touched, d)
		}
		a.score[d] += a.best[d]
		a.best[d] = 0
	}
	a.touchedB = a.touchedB[:0]
}

// top returns the limit best documents and clears the accumulator for reuse.
func (a *accumulator) top(limit int, names []string) []Hit {
	hits := make([]Hit, 0, min(limit, len(a.touched)))
	for _, d := range a.touched {
		s := a.score[d]
		a.score[d] = 0
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
	a.touched = a.touched[:0]
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
