// Package toolsearch ranks tool definitions against a query a person or an
// agent writes ("read the last lines of a log file"). The ranking is lexical
// and deterministic, with no model to download: BM25F over a tool's names
// split into words, its title, its description, and its parameters' names and
// descriptions, with case folding, Unicode-aware words, Snowball stemming and
// prefix matching of the last query word. An Index is built once for a set of
// tools and never changes, so any number of goroutines may search it while
// the next one is built.
package toolsearch

import (
	"encoding/json"
	"math"
	"sync"
)

// Document is one tool as the catalog exposes it.
type Document struct {
	Name         string // exposed name (mcp_{server}_{tool}); also breaks ties
	OriginalName string // the name its server gave it
	Title        string
	Description  string
	InputSchema  json.RawMessage
}

// field is where in a tool a word was found; each counts differently.
type field int

const (
	fieldName field = iota // exposed and original name, each word once
	fieldTitle
	fieldDescription
	fieldParamName
	fieldParamText
	numFields
)

// BM25F parameters. Weights say how much a word in each field tells about the
// tool: a name is the tool's own summary, a parameter description often
// mentions other things. b sets how much a long field is discounted: names
// and titles are short by nature, so their length says little. They were set
// from these principles, not fitted to the labelled queries.
var (
	fieldWeight = [numFields]float64{
		fieldName: 3.0, fieldTitle: 2.0, fieldDescription: 1.0, fieldParamName: 0.7, fieldParamText: 0.4,
	}
	fieldB = [numFields]float64{
		fieldName: 0.3, fieldTitle: 0.3, fieldDescription: 0.75, fieldParamName: 0.5, fieldParamText: 0.75,
	}
)

const k1 = 1.2

// Index is an immutable BM25F index over a set of documents.
type Index struct {
	names []string // Document.Name by document, for ties
	terms map[string]int32
	// Every indexed word as written (folded, not stemmed), sorted, with the
	// term it stems to, for matching the last query word as typed.
	surface     []string
	surfaceTerm []int32
	// Postings in one flat array per column (compressed sparse rows): the
	// postings of term t are [offsets[t], offsets[t+1]). Each weight is the
	// whole BM25F score of that term in that document, computed at build.
	offsets []uint32
	docs    []int32
	weights []float32

	scratch sync.Pool // *accumulator sized for this index
}

// Len is the number of documents indexed.
func (ix *Index) Len() int { return len(ix.names) }

// docTerm is one term of one document: how often it occurs in each field.
type docTerm struct {
	term int32
	tf   [numFields]uint16
}

// Build indexes docs. Hits name documents by their position in docs.
func Build(docs []Document) *Index {
	b := newBuilder()
	perDoc := make([][]docTerm, len(docs))
	lengths := make([][numFields]uint32, len(docs))
	analyzeAll(docs, func(i int, a *analyzed) {
		perDoc[i], lengths[i] = b.document(a)
	})
	ix := &Index{names: make([]string, len(docs)), terms: b.terms}
	for i, d := range docs {
		ix.names[i] = d.Name
	}
	ix.surface, ix.surfaceTerm = b.surfaceList()
	ix.fillPostings(perDoc, lengths, len(b.terms))
	n := len(docs)
	ix.scratch.New = func() any { return newAccumulator(n) }
	return ix
}

// fillPostings computes every term's BM25F weight in every document holding it.
func (ix *Index) fillPostings(perDoc [][]docTerm, lengths [][numFields]uint32, numTerms int) {
	var avg [numFields]float64
	for _, l := range lengths {
		for f := range avg {
			avg[f] += float64(l[f])
		}
	}
	for f := range avg {
		avg[f] = math.Max(avg[f]/math.Max(float64(len(lengths)), 1), 1)
	}
	df := make([]uint32, numTerms)
	for _, terms := range perDoc {
		for _, t := range terms {
			df[t.term]++
		}
	}
	ix.offsets = make([]uint32, numTerms+1)
	for t, count := range df {
		ix.offsets[t+1] = ix.offsets[t] + count
	}
	total := ix.offsets[numTerms]
	ix.docs = make([]int32, total)
	ix.weights = make([]float32, total)
	next := append([]uint32(nil), ix.offsets[:numTerms]...)
	n := float64(len(perDoc))
	for d, terms := range perDoc {
		var norm [numFields]float64
		for f := range norm {
			norm[f] = 1 - fieldB[f] + fieldB[f]*float64(lengths[d][f])/avg[f]
		}
		for _, t := range terms {
			var tf float64
			for f := range t.tf {
				tf += fieldWeight[f] * float64(t.tf[f]) / norm[f]
			}
			dft := float64(df[t.term])
			idf := math.Log(1 + (n-dft+0.5)/(dft+0.5))
			at := next[t.term]
			ix.docs[at] = int32(d)
			ix.weights[at] = float32(idf * tf * (k1 + 1) / (k1 + tf))
			next[t.term]++
		}
	}
}

// postings returns the documents holding term t and its weight in each.
func (ix *Index) postings(t int32) ([]int32, []float32) {
	from, to := ix.offsets[t], ix.offsets[t+1]
	return ix.docs[from:to], ix.weights[from:to]
}
