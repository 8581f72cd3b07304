package toolsearch

import (
	"runtime"
	"slices"
	"sync"
)

// analyzed is one document's words, case-folded, by field.
type analyzed [numFields][]string

// analyze splits a document into its fields' words. It is pure, so Build
// runs it on several documents at once: decoding schemas and splitting
// words is most of the cost of a build.
func analyze(d Document) analyzed {
	var a analyzed
	a[fieldServer] = appendWords(nil, d.Server)
	a[fieldName] = appendWords(nil, d.OriginalName)
	// The exposed name adds what is neither "mcp" nor the server's name: a
	// collection's rename, or the original name as sanitized.
	for _, w := range appendWords(nil, d.Name) {
		if w != "mcp" && !slices.Contains(a[fieldServer], w) {
			a[fieldName] = append(a[fieldName], w)
		}
	}
	a[fieldTitle] = appendWords(nil, d.Title)
	a[fieldDescription] = appendWords(nil, d.Description)
	params := schemaTexts(d.InputSchema)
	for _, name := range params.names {
		a[fieldParamName] = appendWords(a[fieldParamName], name)
	}
	for _, text := range params.texts {
		a[fieldParamText] = appendWords(a[fieldParamText], text)
	}
	return a
}

// analyzeBatch is how many documents are analyzed before their words are
// turned into terms: it bounds the words held at once on a large build.
const analyzeBatch = 512

// analyzeAll calls use with each document's analysis, in document order,
// analyzing each batch on every available core.
func analyzeAll(docs []Document, use func(i int, a *analyzed)) {
	workers := min(runtime.GOMAXPROCS(0), 8)
	batch := make([]analyzed, analyzeBatch)
	for from := 0; from < len(docs); from += analyzeBatch {
		part := docs[from:min(from+analyzeBatch, len(docs))]
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < len(part); i += workers {
					batch[i] = analyze(part[i])
				}
			}(w)
		}
		wg.Wait()
		for i := range part {
			use(from+i, &batch[i])
			batch[i] = analyzed{}
		}
	}
}
