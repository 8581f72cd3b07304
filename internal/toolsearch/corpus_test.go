package toolsearch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/toolmesh/mcp-operator/internal/toolname"
)

// corpusTool is one tool definition as a server listed it.
type corpusTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations struct {
		Title string `json:"title"`
	} `json:"annotations"`
}

// corpus is every fixture of testdata/corpus as documents, named as the
// operator exposes them, with each document's "<server>/<tool>" label.
type corpus struct {
	docs   []Document
	labels []string
}

// loadCorpus is the tuning corpus, testdata/corpus.
func loadCorpus(tb testing.TB) corpus { return loadCorpusFrom(tb, "testdata/corpus") }

// loadCorpusFrom is every fixture of dir.
func loadCorpusFrom(tb testing.TB, dir string) corpus {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("finding corpus fixtures: %v (%d files)", err, len(files))
	}
	sort.Strings(files)
	var c corpus
	for _, f := range files {
		server := strings.TrimSuffix(filepath.Base(f), ".json")
		raw, err := os.ReadFile(f)
		if err != nil {
			tb.Fatalf("reading %s: %v", f, err)
		}
		var tools []corpusTool
		if err := json.Unmarshal(raw, &tools); err != nil {
			tb.Fatalf("decoding %s: %v", f, err)
		}
		c.add(server, "", tools)
	}
	return c
}

// add appends one server's tools. prefix tells copies of the corpus apart
// when it is repeated to make larger ones.
func (c *corpus) add(server, prefix string, tools []corpusTool) {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	exposed := toolname.Expose(prefix+server, names)
	for i, t := range tools {
		title := t.Title
		if title == "" {
			title = t.Annotations.Title
		}
		c.docs = append(c.docs, Document{
			Name: exposed[i], OriginalName: t.Name, Server: prefix + server, Title: title,
			Description: t.Description, InputSchema: t.InputSchema,
		})
		c.labels = append(c.labels, server+"/"+t.Name)
	}
}

// repeatCorpus makes n documents by repeating the corpus under distinct
// server prefixes, as a cluster running many copies of the same servers would.
func repeatCorpus(tb testing.TB, n int) []Document {
	tb.Helper()
	base := loadCorpus(tb)
	docs := make([]Document, 0, n)
	for copyN := 0; len(docs) < n; copyN++ {
		for _, d := range base.docs {
			if len(docs) == n {
				break
			}
			d.Name = fmt.Sprintf("mcp_c%d_%s", copyN, strings.TrimPrefix(d.Name, "mcp_"))
			d.Server = fmt.Sprintf("c%d-%s", copyN, d.Server)
			docs = append(docs, d)
		}
	}
	return docs
}

// labelledQuery is one entry of testdata/queries.json.
type labelledQuery struct {
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
}

// loadQueries is the tuning set's queries, testdata/queries.json.
func loadQueries(tb testing.TB) []labelledQuery { return loadQueriesFrom(tb, "testdata/queries.json") }

// loadQueriesFrom is a file of labelled queries.
func loadQueriesFrom(tb testing.TB, path string) []labelledQuery {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("reading queries: %v", err)
	}
	var qs []labelledQuery
	if err := json.Unmarshal(raw, &qs); err != nil {
		tb.Fatalf("decoding %s: %v", path, err)
	}
	return qs
}
