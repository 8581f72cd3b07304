package toolsearch

import (
	"slices"
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
	// maxQueryWords bounds the words of a query that count.
	maxQueryWords = 32
)

// Hit is one ranked document.
type Hit struct {
	Doc int // position in the documents given to Build
	// Score is from 0 to 1: the document's score divided by that of an
	// ideal document, one that matched every word of the query as strongly
	// as the best-matching document of the index matched that word. 1 is a
	// document that is that ideal. The ideal counts every word, so a long
	// request, most of whose words name no capability, scores lower
	// throughout than a keyword query: a score is a share, not the
	// probability that a tool is right.
	Score float64
}

// Search returns up to limit documents that share words with query, best
// first; ties go to the smaller Name, so equal queries give equal answers.
// Each query word also matches its synonyms (see synonymGroups), and the last
// word of a query that does not end in a space or punctuation also matches
// the words it begins ("pull req" finds "pull request"); either kind counts
// less than the word itself, and a word scores by its best match only. A
// document's score is the sum over the query's words, scaled by the square
// root of the share of them it matched. Values in the query (see
// withoutValues) are set aside, and a word of a server's name that other
// servers' tools use matches that server's tools only when written as a
// name (see Build). A query with no indexed word, or a limit below 1, finds
// nothing. Search allocates nothing per document: its per-document scratch
// space is pooled with the index.
func (ix *Index) Search(query string, limit int) []Hit {
	if limit < 1 || len(ix.names) == 0 {
		return nil
	}
	groups, named := ix.parse(query)
	if len(groups) == 0 {
		return nil
	}
	acc := ix.scratch.Get().(*accumulator)
	defer ix.scratch.Put(acc)
	for i, g := range groups {
		for _, a := range g {
			docs, weights := ix.text.of(a.term)
			acc.max(docs, weights, a.weight)
			if named[i] {
				docs, weights = ix.serverName.of(a.term)
				acc.max(docs, weights, a.weight)
			}
		}
		acc.endWord()
	}
	return acc.top(limit, len(groups), ix.names)
}

// weightedTerm is a term a query word may stand for, and how much a match
// on it counts.
type weightedTerm struct {
	term   int32
	weight float32
}

// parse turns a query into one group of alternative terms per word (see
// alternatives). Stop words, words matching nothing and words met before
// are dropped, and only the first maxQueryWords words count, so a pasted
// paragraph costs no more than a sentence.
func (ix *Index) parse(query string) (groups [][]weightedTerm, named []bool) {
	typing := endsInWord(query)
	query, lastWasValue := withoutValues(query)
	typing = typing && !lastWasValue
	words, names := queryWords(query)
	var seen []string
	var seenGroup []int // the group of each stem seen, or -1
	prev, prevGroup := "", -1
	for i, w := range words {
		if len(groups) == maxQueryWords {
			break
		}
		if isStopWord(w) {
			prev, prevGroup = "", -1
			continue
		}
		s := stem(w)
		if at := slices.Index(seen, s); at >= 0 {
			// A word met again counts once, as a name if written as one
			// either time.
			if g := seenGroup[at]; g >= 0 && names[i] {
				named[g] = true
			}
			prev, prevGroup = w, -1
			continue
		}
		seen = append(seen, s)
		seenGroup = append(seenGroup, -1)
		g := ix.alternatives(w, s, i == len(words)-1 && typing)
		// The word it makes with its neighbour stands for both.
		if prev != "" {
			if t, ok := ix.terms[stem(prev+w)]; ok {
				g = addAlternative(g, t, 1)
				if prevGroup >= 0 {
					groups[prevGroup] = addAlternative(groups[prevGroup], t, 1)
				}
			}
		}
		prev, prevGroup = w, -1
		if len(g) > 0 {
			prevGroup = len(groups)
			seenGroup[len(seenGroup)-1] = len(groups)
			groups = append(groups, g)
			named = append(named, names[i])
		}
	}
	return groups, named
}

// alternatives returns the terms a query word (folded, and stemmed to s)
// stands for: its own, if indexed, at full weight, its synonyms', and, for a
// word still being typed, those of the indexed words it begins.
func (ix *Index) alternatives(w, s string, typing bool) []weightedTerm {
	var g []weightedTerm
	if t, ok := ix.terms[s]; ok {
		g = append(g, weightedTerm{term: t, weight: 1})
	}
	for _, syn := range synonyms[s] {
		if t, ok := ix.terms[syn]; ok {
			g = addAlternative(g, t, synonymWeight)
		}
	}
	if typing && utf8.RuneCountInString(w) >= minPrefixRunes {
		g = ix.addPrefixed(g, w)
	}
	return g
}

// addPrefixed adds the terms of the indexed words that word begins, at most
// maxExpansions of them.
func (ix *Index) addPrefixed(g []weightedTerm, word string) []weightedTerm {
	n := 0
	for i := sort.SearchStrings(ix.surface, word); i < len(ix.surface) && strings.HasPrefix(ix.surface[i], word) && n < maxExpansions; i++ {
		g = addAlternative(g, ix.surfaceTerm[i], prefixWeight)
		n++
	}
	return g
}

// addAlternative adds a term to a group, keeping the larger weight of a
// term reached twice.
func addAlternative(g []weightedTerm, t int32, weight float32) []weightedTerm {
	for i := range g {
		if g[i].term == t {
			g[i].weight = max(g[i].weight, weight)
			return g
		}
	}
	return append(g, weightedTerm{term: t, weight: weight})
}

// endsInWord reports whether the user may still be typing the last word.
func endsInWord(query string) bool {
	r, _ := utf8.DecodeLastRuneInString(query)
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}
