package toolsearch

import (
	"sort"
	"strings"
)

// builder turns analyzed documents into terms. It lives for one Build: its
// maps are never shared with an Index's readers except terms, which is
// frozen after.
type builder struct {
	terms map[string]int32 // stem → term id
	words map[string]int32 // folded word → term id, or -1 for a stop word
	seen  map[int32]int    // term → position in the current document's list
}

func newBuilder() *builder {
	return &builder{
		terms: make(map[string]int32),
		words: make(map[string]int32),
		seen:  make(map[int32]int),
	}
}

// document returns the terms of one document and each field's length in words.
func (b *builder) document(a *analyzed) ([]docTerm, [numFields]uint32) {
	clear(b.seen)
	var list []docTerm
	var lengths [numFields]uint32
	for f := field(0); f < numFields; f++ {
		for _, w := range a[f] {
			t := b.term(w)
			if t < 0 {
				continue
			}
			at, ok := b.seen[t]
			if !ok {
				at = len(list)
				b.seen[t] = at
				list = append(list, docTerm{term: t})
			}
			// A name's words count once: "mcp_github_get_issue" and
			// "get_issue" name the same thing twice.
			if f == fieldName && list[at].tf[f] > 0 {
				continue
			}
			if list[at].tf[f] < ^uint16(0) {
				list[at].tf[f]++
			}
			lengths[f]++
		}
	}
	return list, lengths
}

// term returns the id of the term a folded word stems to, or -1 for a stop
// word. Each distinct word is stemmed once per build, and copied, so that
// the index does not keep the documents' texts alive through it.
func (b *builder) term(word string) int32 {
	if t, ok := b.words[word]; ok {
		return t
	}
	word = strings.Clone(word)
	t := int32(-1)
	if !isStopWord(word) {
		s := stem(word)
		var ok bool
		if t, ok = b.terms[s]; !ok {
			t = int32(len(b.terms))
			b.terms[s] = t
		}
	}
	b.words[word] = t
	return t
}

// surfaceList returns the indexed words in order, with their terms.
func (b *builder) surfaceList() ([]string, []int32) {
	words := make([]string, 0, len(b.words))
	for w, t := range b.words {
		if t >= 0 {
			words = append(words, w)
		}
	}
	sort.Strings(words)
	terms := make([]int32, len(words))
	for i, w := range words {
		terms[i] = b.words[w]
	}
	return words, terms
}
