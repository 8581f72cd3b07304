// Package toolsearch ranks tool definitions against a query a person or an
// agent writes ("read the last lines of a log file"). The ranking is lexical
// and deterministic, with no model to download: BM25F over a tool's names
// split into words, its title, its description, and its parameters' names and
// descriptions, with case folding, Unicode-aware words, Snowball stemming and
// prefix matching of the last query word. Values in a query (paths, URLs,
// quoted text, numbers, code) are set aside, and a server's name counts as
// a tool's name only where it names a product. An Index is built once for a set of
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
	// Server holds the names of the server the tool comes from (the
	// catalog gives the MCPServer's name and, when it is another, its tool
	// prefix). Their words are taken out of Name and indexed apart: see
	// Build.
	Server      string
	Title       string
	Description string
	InputSchema json.RawMessage
}

// field is where in a tool a word was found; each counts differently.
type field int

const (
	fieldName field = iota // original name, and exposed-name words not the server's, each once
	fieldTitle
	fieldDescription
	fieldParamName
	fieldParamText
	fieldServer // the server's name, which every tool of the server holds
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
	// text holds every term's BM25F weight in every document holding it
	// (its server's name counted only where it names a product, see
	// Build); serverName the weight of the terms of server names that are
	// common words, in that server's tools, for a query that writes the
	// word as a name ("in Time, …").
	text, serverName postings

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
//
// A word of a tool's server name counts as a word of its name when it
// names a product: when no other server's tools use it. A word other
// servers' tools use too ("time", "memory", "fetch", "search") is a
// common word the server happens to be named after, and a query using it
// says nothing about which server it means: it is not indexed for the
// server's tools, so it does not pull up every tool of that server.
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
	nameServerWords(docs, perDoc, len(b.terms))
	ix.fillPostings(perDoc, lengths, len(b.terms))
	n := len(docs)
	ix.scratch.New = func() any { return newAccumulator(n) }
	return ix
}

// fillPostings computes the weights of every term in every document.
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
	serverDF := make([]uint32, numTerms)
	for _, terms := range perDoc {
		for _, t := range terms {
			if t.inText() {
				df[t.term]++
			}
			if t.tf[fieldServer] > 0 {
				serverDF[t.term]++
			}
		}
	}
	ix.text = newPostings(df)
	ix.serverName = newPostings(serverDF)
	n := float64(len(perDoc))
	for d, terms := range perDoc {
		var norm [numFields]float64
		for f := range norm {
			norm[f] = 1 - fieldB[f] + fieldB[f]*float64(lengths[d][f])/avg[f]
		}
		for _, t := range terms {
			if t.tf[fieldServer] > 0 {
				// As a word of the name would count.
				tf := fieldWeight[fieldName] / norm[fieldName]
				ix.serverName.add(t.term, int32(d), float32(idf(n, serverDF[t.term])*tf*(k1+1)/(k1+tf)))
			}
			if !t.inText() {
				continue
			}
			var tf float64
			for f := range fieldServer {
				tf += fieldWeight[f] * float64(t.tf[f]) / norm[f]
			}
			ix.text.add(t.term, int32(d), float32(idf(n, df[t.term])*tf*(k1+1)/(k1+tf)))
		}
	}
	ix.text.next, ix.serverName.next = nil, nil
}

// idf is BM25's inverse document frequency of a term df of n documents
// hold.
func idf(n float64, df uint32) float64 {
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

// postings are every term's documents and its weight in each, in one flat
// array per column (compressed sparse rows): the postings of term t are
// [offsets[t], offsets[t+1]).
type postings struct {
	offsets []uint32
	docs    []int32
	weights []float32
	next    []uint32 // while filling: where each term's next posting goes
}

// newPostings makes room for terms held by df documents each.
func newPostings(df []uint32) postings {
	p := postings{offsets: make([]uint32, len(df)+1)}
	for t, count := range df {
		p.offsets[t+1] = p.offsets[t] + count
	}
	p.docs = make([]int32, p.offsets[len(df)])
	p.weights = make([]float32, p.offsets[len(df)])
	p.next = append([]uint32(nil), p.offsets[:len(df)]...)
	return p
}

// add fills the next posting of term t; documents come in order.
func (p *postings) add(t, d int32, w float32) {
	at := p.next[t]
	p.docs[at], p.weights[at] = d, w
	p.next[t]++
}

// of returns the documents holding term t and its weight in each.
func (p *postings) of(t int32) ([]int32, []float32) {
	from, to := p.offsets[t], p.offsets[t+1]
	return p.docs[from:to], p.weights[from:to]
}

// inText reports whether the term occurs outside the server field.
func (t *docTerm) inText() bool {
	for f := range fieldServer {
		if t.tf[f] > 0 {
			return true
		}
	}
	return false
}
