package toolsearch

import (
	"cmp"
	"math"
	"slices"
)

// buildBM25 is the baseline a ranker must beat: Okapi BM25 (k1 1.2, b 0.75)
// over one field holding all of a tool's text (its exposed and original
// names, title, description, and its schema's property names and texts),
// with the package's words, stop words and stems, and nothing else: no
// field weights, no thesaurus, no prefixes, no coordination. A ranker's
// gain over it is what its design adds, not what its word analysis does.
func buildBM25(docs []Document) func(query string) []int32 {
	const k1, b = 1.2, 0.75
	tfs := make([]map[string]float64, len(docs))
	lengths := make([]float64, len(docs))
	df := map[string]int{}
	total := 0.0
	for i, d := range docs {
		tfs[i] = map[string]float64{}
		a := analyze(d)
		for _, field := range a {
			for _, w := range field {
				if isStopWord(w) {
					continue
				}
				tfs[i][stem(w)]++
				lengths[i]++
			}
		}
		for t := range tfs[i] {
			df[t]++
		}
		total += lengths[i]
	}
	avg := total / float64(len(docs))
	n := float64(len(docs))
	return func(query string) []int32 {
		var terms []string
		for _, w := range appendWords(nil, query) {
			if t := stem(w); !isStopWord(w) && !slices.Contains(terms, t) {
				terms = append(terms, t)
			}
		}
		type scored struct {
			doc   int32
			score float64
		}
		var hits []scored
		for i := range docs {
			score := 0.0
			for _, t := range terms {
				tf := tfs[i][t]
				if tf == 0 {
					continue
				}
				idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
				score += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*lengths[i]/avg))
			}
			if score > 0 {
				hits = append(hits, scored{int32(i), score})
			}
		}
		slices.SortFunc(hits, func(x, y scored) int {
			return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.doc, y.doc))
		})
		ranked := make([]int32, len(hits))
		for i, h := range hits {
			ranked[i] = h.doc
		}
		return ranked
	}
}
