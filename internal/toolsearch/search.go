package toolsearch

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// prefixWeight discounts a word that only begins like the last query
	// word: "crea" is likely "create", but the user has not said so yet.
	prefixWeight = 0.7
	// minPrefixRunes is the shortest last word that is expanded: shorter
	// ones begin too many words to narrow anything.
	minPrefixRunes = 3
	// maxExpansions bounds the words one prefix stands for, so a query costs
	// the same however large the vocabulary grows.
	maxExpansions = 64
)

// Hit is one ranked document.
type Hit struct {
	Doc   int // position in the documents given to Build
	Score float64
}

// Search returns up to limit documents that share words with query, best
// first; ties go to the smaller Name, so equal queries give equal answers.
// The last word of a query that does not end in a space or punctuation also
// matches the words it begins ("pull req" finds "pull request"). A query
// with no indexed word, or a limit below 1, finds nothing.
func (ix *Index) Search(query string, limit int) []Hit {
	if limit < 1 || len(ix.names) == 0 {
		return nil
	}
	q := ix.parse(query)
	if len(q.exact) == 0 && len(q.last) == 0 {
		return nil
	}
	acc := ix.scratch.Get().(*accumulator)
	defer ix.scratch.Put(acc)
	for _, t := range q.exact {
		docs, weights := ix.postings(t)
		acc.add(docs, weights)
	}
	if len(q.last) > 0 {
		ix.addBest(acc, q.last)
	}
	return acc.top(limit, ix.names)
}

// weightedTerm is a query term and how much a match on it counts.
type weightedTerm struct {
	term   int32
	weight float32
}

// parsedQuery holds the terms of a query: those that must match as written,
// and the alternatives the last word may stand for (best one counts).
type parsedQuery struct {
	exact []int32
	last  []weightedTerm
}

// parse turns a query into terms. Stop words and words no document holds
// are dropped; a term named twice counts once.
func (ix *Index) parse(query string) parsedQuery {
	words := appendWords(nil, query)
	var q parsedQuery
	typing := endsInWord(query)
	for i, w := range words {
		if i == len(words)-1 && typing && utf8.RuneCountInString(w) >= minPrefixRunes && !isStopWord(w) {
			q.last = ix.expand(w)
			continue
		}
		if isStopWord(w) {
			continue
		}
		if t, ok := ix.terms[stem(w)]; ok && !containsTerm(q.exact, t) {
			q.exact = append(q.exact, t)
		}
	}
	// A last word already named earlier adds nothing.
	if len(q.last) > 0 && containsTerm(q.exact, q.last[0].term) && q.last[0].weight == 1 {
		q.last = nil
	}
	return q
}

// expand returns the term the word stems to (full weight) and the terms of
// the indexed words it begins (discounted), at most maxExpansions.
func (ix *Index) expand(word string) []weightedTerm {
	var out []weightedTerm
	exact, hasExact := ix.terms[stem(word)]
	if hasExact {
		out = append(out, weightedTerm{term: exact, weight: 1})
	}
	i := sort.SearchStrings(ix.surface, word)
	for ; i < len(ix.surface) && strings.HasPrefix(ix.surface[i], word) && len(out) < maxExpansions; i++ {
		t := ix.surfaceTerm[i]
		if (hasExact && t == exact) || containsWeighted(out, t) {
			continue
		}
		out = append(out, weightedTerm{term: t, weight: prefixWeight})
	}
	return out
}

// addBest adds, for each document, the best of the last word's alternatives.
func (ix *Index) addBest(acc *accumulator, alternatives []weightedTerm) {
	for _, a := range alternatives {
		docs, weights := ix.postings(a.term)
		acc.max(docs, weights, a.weight)
	}
	acc.flushMax()
}

// endsInWord reports whether the user may still be typing the last word.
func endsInWord(query string) bool {
	r, _ := utf8.DecodeLastRuneInString(query)
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

func containsTerm(ts []int32, t int32) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func containsWeighted(ws []weightedTerm, t int32) bool {
	for _, w := range ws {
		if w.term == t {
			return true
		}
	}
	return false
}
