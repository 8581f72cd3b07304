package toolsearch

import (
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzSearch feeds arbitrary text to every part of a document and to the
// query. Whatever it is, Search must not panic and must return at most limit
// hits, each a real document, best first with ties by name.
func FuzzSearch(f *testing.F) {
	f.Add("mcp_fs_read_file", "Read a file.", `{"properties":{"path":{"description":"Where"}}}`, "read fil", 3)
	f.Add("mcp_x_HTTPServer2", "Straße ＧＩＴ k8s", `{"items":[true,{"enum":["a",1]}]}`, "STRASSE git", 1)
	f.Add("", "", `{"$defs":{"a":{"$defs":{"b":{}}}}}`, "   ", 0)
	f.Fuzz(func(t *testing.T, name, description, schema, query string, limit int) {
		docs := []Document{
			{Name: name, OriginalName: name, Server: description, Title: description, Description: description, InputSchema: json.RawMessage(schema)},
			{Name: "mcp_b_" + query, Description: query},
			{Name: "mcp_a_" + query, Description: query},
		}
		if words, named := queryWords(query); !slices.Equal(words, appendWords(nil, query)) || len(named) != len(words) {
			t.Fatalf("queryWords(%q) = %q, %v: not appendWords' words, one flag each", query, words, named)
		}
		ix := Build(docs)
		hits := ix.Search(query, limit)
		if len(hits) > max(limit, 0) {
			t.Fatalf("Search(%q, %d) returned %d hits", query, limit, len(hits))
		}
		for i, h := range hits {
			if h.Doc < 0 || h.Doc >= len(docs) || !(h.Score > 0 && h.Score <= 1) {
				t.Fatalf("hit %d = %+v: not a document of 3 with a score in (0, 1]", i, h)
			}
			if i > 0 && better(float32(h.Score), int32(h.Doc), hits[i-1], ix.names) {
				t.Fatalf("hits out of order: %+v before %+v", hits[i-1], h)
			}
		}
		// Documents 1 and 2 are equal but for their names: a query that
		// finds one finds both, the smaller name first.
		if utf8.ValidString(query) && limit >= len(docs) {
			var at1, at2 = -1, -1
			for i, h := range hits {
				switch h.Doc {
				case 1:
					at1 = i
				case 2:
					at2 = i
				}
			}
			if (at1 < 0) != (at2 < 0) || (at1 >= 0 && at2 > at1) {
				t.Fatalf("equal documents ranked %d (mcp_b_) and %d (mcp_a_) for %q", at1, at2, query)
			}
		}
	})
}
