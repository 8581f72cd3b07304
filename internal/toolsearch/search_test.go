package toolsearch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// names returns the Names of hits, in order.
func hitNames(docs []Document, hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = docs[h.Doc].Name
	}
	return out
}

// nested returns a schema with one property named leaf at the given depth
// of nested objects.
func nested(depth int, leaf string) json.RawMessage {
	s := fmt.Sprintf(`{"type":"object","properties":{%q:{"type":"string"}}}`, leaf)
	for i := 0; i < depth; i++ {
		s = fmt.Sprintf(`{"type":"object","properties":{"level%d":%s}}`, i, s)
	}
	return json.RawMessage(s)
}

func TestSearchRanking(t *testing.T) {
	tests := []struct {
		name  string
		docs  []Document
		query string
		limit int
		want  []string // Names, best first; nil for no hits
	}{
		{
			name: "a name match outranks a description mention",
			docs: []Document{
				{Name: "mcp_fs_read_log", Description: "Read a log file. The file is never deleted."},
				{Name: "mcp_fs_delete_file", Description: "Remove a path from disk."},
			},
			query: "delete file", limit: 10,
			want: []string{"mcp_fs_delete_file", "mcp_fs_read_log"},
		},
		{
			name: "stemming meets: creating files finds create_file",
			docs: []Document{
				{Name: "mcp_fs_create_file", Description: "Make a new one."},
				{Name: "mcp_fs_list", Description: "List entries."},
			},
			query: "creating files", limit: 10,
			want: []string{"mcp_fs_create_file"},
		},
		{
			name: "camelCase names are split",
			docs: []Document{
				{Name: "mcp_tf_providerDetails", OriginalName: "providerDetails"},
				{Name: "mcp_tf_moduleSearch", OriginalName: "moduleSearch"},
			},
			query: "provider details", limit: 10,
			want: []string{"mcp_tf_providerDetails"},
		},
		{
			name: "the last word matches as a prefix while typing",
			docs: []Document{
				{Name: "mcp_gh_search_repositories"},
				{Name: "mcp_gh_list_issues"},
			},
			query: "reposit", limit: 10,
			want: []string{"mcp_gh_search_repositories"},
		},
		{
			name: "a finished last word is not a prefix",
			docs: []Document{
				{Name: "mcp_gh_search_repositories"},
			},
			query: "reposit ", limit: 10,
			want: nil,
		},
		{
			name: "a prefix counts less than the whole word",
			docs: []Document{
				{Name: "mcp_a_pullrequests_tool"},
				{Name: "mcp_b_pull_tool"},
			},
			query: "pull", limit: 10,
			want: []string{"mcp_b_pull_tool", "mcp_a_pullrequests_tool"},
		},
		{
			name: "equal scores are ordered by name",
			docs: []Document{
				{Name: "mcp_zeta_echo", Description: "Echo the input."},
				{Name: "mcp_alpha_echo", Description: "Echo the input."},
				{Name: "mcp_mid_echo", Description: "Echo the input."},
			},
			query: "echo", limit: 10,
			want: []string{"mcp_alpha_echo", "mcp_mid_echo", "mcp_zeta_echo"},
		},
		{
			name: "limit is respected",
			docs: []Document{
				{Name: "mcp_a_echo"}, {Name: "mcp_b_echo"}, {Name: "mcp_c_echo"},
			},
			query: "echo", limit: 2,
			want: []string{"mcp_a_echo", "mcp_b_echo"},
		},
		{
			name:  "a limit below one finds nothing",
			docs:  []Document{{Name: "mcp_a_echo"}},
			query: "echo", limit: 0,
			want: nil,
		},
		{
			name:  "an empty query finds nothing",
			docs:  []Document{{Name: "mcp_a_echo"}},
			query: "", limit: 10,
			want: nil,
		},
		{
			name:  "a query of stop words finds nothing",
			docs:  []Document{{Name: "mcp_a_echo", Description: "What is it for? It is for all of this."}},
			query: "what is it for", limit: 10,
			want: nil,
		},
		{
			name:  "a word no tool holds finds nothing",
			docs:  []Document{{Name: "mcp_a_echo"}},
			query: "zebra", limit: 10,
			want: nil,
		},
		{
			name: "the title is searched",
			docs: []Document{
				{Name: "mcp_a_t1", Title: "Forecast the weather"},
				{Name: "mcp_a_t2", Title: "Send mail"},
			},
			query: "weather", limit: 10,
			want: []string{"mcp_a_t1"},
		},
		{
			name: "parameter names and descriptions are searched",
			docs: []Document{
				{Name: "mcp_a_merge", InputSchema: json.RawMessage(`{"type":"object","properties":{"squashCommits":{"type":"boolean","description":"Combine into one commit"}}}`)},
				{Name: "mcp_a_other", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
			},
			query: "squash commits", limit: 10,
			want: []string{"mcp_a_merge"},
		},
		{
			name: "array items are searched",
			docs: []Document{
				{Name: "mcp_a_items", InputSchema: json.RawMessage(`{"type":"object","properties":{"list":{"type":"array","items":{"type":"object","properties":{"quantity":{"type":"number"}}}}}}`)},
				{Name: "mcp_a_other"},
			},
			query: "quantity", limit: 10,
			want: []string{"mcp_a_items"},
		},
		{
			name: "$defs are searched",
			docs: []Document{
				{Name: "mcp_a_defs", InputSchema: json.RawMessage(`{"type":"object","$defs":{"Color":{"description":"a shade of magenta"}}}`)},
				{Name: "mcp_a_other"},
			},
			query: "magenta", limit: 10,
			want: []string{"mcp_a_defs"},
		},
		{
			name: "enum values are searched",
			docs: []Document{
				{Name: "mcp_a_enum", InputSchema: json.RawMessage(`{"type":"object","properties":{"state":{"enum":["archived","live"]}}}`)},
				{Name: "mcp_a_other"},
			},
			query: "archived", limit: 10,
			want: []string{"mcp_a_enum"},
		},
		{
			name: "schemas are walked only to a bounded depth",
			docs: []Document{
				{Name: "mcp_a_shallow", InputSchema: nested(maxSchemaDepth-1, "shallowleaf")},
				{Name: "mcp_a_deep", InputSchema: nested(maxSchemaDepth+1, "deepleaf")},
			},
			query: "shallowleaf deepleaf", limit: 10,
			want: []string{"mcp_a_shallow"},
		},
		{
			name: "an invalid schema leaves the tool findable by name",
			docs: []Document{
				{Name: "mcp_a_broken_tool", InputSchema: json.RawMessage(`{"properties":`)},
			},
			query: "broken", limit: 10,
			want: []string{"mcp_a_broken_tool"},
		},
		{
			name: "a synonym finds the word the author chose, below the word itself",
			docs: []Document{
				{Name: "mcp_fs_create_directory"},
				{Name: "mcp_ui_create_folder"},
			},
			query: "new folder", limit: 10,
			want: []string{"mcp_ui_create_folder", "mcp_fs_create_directory"},
		},
		{
			name: "two query words meet the compound they make",
			docs: []Document{
				{Name: "mcp_g_list_datasources"},
				{Name: "mcp_g_list_dashboards"},
			},
			query: "list data sources", limit: 10,
			want: []string{"mcp_g_list_datasources", "mcp_g_list_dashboards"},
		},
		{
			name: "matching every word beats matching the rarest alone",
			docs: []Document{
				{Name: "mcp_a_list_files", Description: "List files in a path."},
				{Name: "mcp_b_zipper", Description: "Zipper."},
				{Name: "mcp_c_list_users"}, {Name: "mcp_c_list_teams"}, {Name: "mcp_c_read_files"},
			},
			query: "list files zipper", limit: 1,
			want: []string{"mcp_a_list_files"},
		},
		{
			name: "case and Unicode are folded",
			docs: []Document{
				{Name: "mcp_a_strasse", Description: "Straßen auf der Karte"},
				{Name: "mcp_a_other"},
			},
			query: "STRASSEN", limit: 10,
			want: []string{"mcp_a_strasse"},
		},
		{
			name:  "a common word a server is named after does not pull up its tools",
			docs:  serverDocs(),
			query: "fetch the issue 42 of acme/cli", limit: 10,
			want: []string{"mcp_github_get_issue", "mcp_github_list_pull_requests"},
		},
		{
			name:  "a common word written as a name means the server",
			docs:  serverDocs(),
			query: "ask Fetch for the page", limit: 1,
			want: []string{"mcp_fetch_html"},
		},
		{
			name:  "the same word in lower case is the word",
			docs:  serverDocs(),
			query: "ask fetch for the page", limit: 1,
			want: []string{"mcp_github_get_issue"},
		},
		{
			name:  "a word written as a name once counts as one",
			docs:  serverDocs(),
			query: "ask fetch for the page, in Fetch", limit: 1,
			want: []string{"mcp_fetch_html"},
		},
		{
			name:  "a server name no other server's tools use names a product, in any case",
			docs:  serverDocs(),
			query: "list the pull requests on gitlab", limit: 1,
			want: []string{"mcp_gitlab_list_merge_requests"},
		},
		{
			name: "the words of a value say nothing about the tool",
			docs: []Document{
				{Name: "mcp_fs_read_file", Description: "Read a file."},
				{Name: "mcp_ops_restart_server", Description: "Restart a server and read its logs."},
			},
			query: "read /var/log/server/app.log", limit: 1,
			want: []string{"mcp_fs_read_file"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(tc.docs)
			got := hitNames(tc.docs, ix.Search(tc.query, tc.limit))
			if len(got) == 0 {
				got = nil
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Search(%q, %d) = %v, want %v", tc.query, tc.limit, got, tc.want)
			}
		})
	}
}

// serverDocs are the tools of three servers: "fetch", a common word the
// GitHub server's tools use too, and "gitlab", which no other server's
// tools say.
func serverDocs() []Document {
	return []Document{
		{Name: "mcp_fetch_html", OriginalName: "html", Server: "fetch", Description: "The HTML of a web page."},
		{Name: "mcp_fetch_markdown", OriginalName: "markdown", Server: "fetch", Description: "Convert a web page to markdown."},
		{Name: "mcp_github_get_issue", OriginalName: "get_issue", Server: "github", Description: "Fetch an issue of a repository."},
		{Name: "mcp_github_list_pull_requests", OriginalName: "list_pull_requests", Server: "github", Description: "Fetch the pull requests of a repository."},
		{Name: "mcp_gitlab_list_merge_requests", OriginalName: "list_merge_requests", Server: "gitlab", Description: "List the merge requests of a project."},
	}
}

func TestSearchHits(t *testing.T) {
	docs := []Document{
		{Name: "mcp_b_echo", Description: "Echo the input."},
		{Name: "mcp_a_echo", Description: "Echo the input."},
		{Name: "mcp_a_sum", Description: "Add two numbers."},
	}
	ix := Build(docs)
	if ix.Len() != 3 {
		t.Fatalf("Len() = %d, want 3", ix.Len())
	}
	hits := ix.Search("echo", 10)
	if len(hits) != 2 {
		t.Fatalf("Search(echo) = %v, want two hits", hits)
	}
	// Doc indexes the slice given to Build; equal documents score equally.
	if hits[0].Doc != 1 || hits[1].Doc != 0 {
		t.Errorf("hits name documents %d and %d, want 1 (mcp_a_echo) then 0", hits[0].Doc, hits[1].Doc)
	}
	if hits[0].Score != hits[1].Score || hits[0].Score <= 0 {
		t.Errorf("scores %v and %v, want equal and positive", hits[0].Score, hits[1].Score)
	}
	if got := ix.Search("echo", 10); !slices.Equal(got, hits) {
		t.Errorf("the same query answered %v, then %v", hits, got)
	}
}

// TestSearchScoresAreShares: a score is the share of an ideal document's,
// so 1 for a document that matched every word as strongly as any did,
// less for one that matched part of the query, and the same for the same
// match however the query's words score in absolute terms.
func TestSearchScoresAreShares(t *testing.T) {
	docs := []Document{
		{Name: "mcp_fs_read_file", Description: "Read a file from disk."},
		{Name: "mcp_fs_write_file", Description: "Write a file to disk."},
		{Name: "mcp_web_search", Description: "Search the web."},
	}
	ix := Build(docs)
	hits := ix.Search("read file", 10)
	if len(hits) != 2 || hits[0].Doc != 0 || hits[0].Score != 1 {
		t.Fatalf("Search(read file) = %v, want read_file first with 1", hits)
	}
	if hits[1].Score <= 0 || hits[1].Score >= 1 {
		t.Errorf("write_file, matching one word of two, scored %v, want between 0 and 1", hits[1].Score)
	}
	// No tool reads the web: the best answers half of the query.
	hits = ix.Search("read web", 10)
	if len(hits) != 2 {
		t.Fatalf("Search(read web) = %v, want read_file and search", hits)
	}
	for _, h := range hits {
		if h.Score <= 0 || h.Score >= 0.8 {
			t.Errorf("%s scored %v for a query it half answers, want under 0.8", docs[h.Doc].Name, h.Score)
		}
	}
}

func TestBuildEmpty(t *testing.T) {
	ix := Build(nil)
	if ix.Len() != 0 {
		t.Errorf("Len() = %d, want 0", ix.Len())
	}
	if hits := ix.Search("anything", 10); len(hits) != 0 {
		t.Errorf("an empty index found %v", hits)
	}
}

func TestSearchLongQuery(t *testing.T) {
	// A pasted paragraph must not blow up: every word is a group, bounded
	// by the words the index holds.
	ix := Build([]Document{{Name: "mcp_a_echo", Description: "Echo the input."}})
	q := strings.Repeat("echo input words that go on and on ", 500)
	if hits := ix.Search(q, 5); len(hits) != 1 || hits[0].Doc != 0 {
		t.Errorf("Search(long query) = %v, want the echo tool", hits)
	}
}

func TestSearchRepeatedWordsCountOnce(t *testing.T) {
	ix := Build([]Document{
		{Name: "mcp_fs_create_directory", Description: "Create a directory."},
		{Name: "mcp_fs_read_file", Description: "Read a file."},
	})
	tests := []struct {
		name, once, repeated string
	}{
		{"an indexed word", "directory", "directory directory directory"},
		{"a word found only through its synonyms", "folder", "folder folder folder"},
		{"a word and its inflection", "directory", "directory directories"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			once, repeated := ix.Search(tc.once, 10), ix.Search(tc.repeated, 10)
			if len(once) == 0 || !slices.Equal(once, repeated) {
				t.Errorf("Search(%q) = %v, Search(%q) = %v: want equal and not empty", tc.once, once, tc.repeated, repeated)
			}
		})
	}
}

func TestSearchCountsOnlyTheFirstWords(t *testing.T) {
	words := make([]string, maxQueryWords+1)
	for i := range words {
		words[i] = "zq" + string(rune('a'+i/26)) + string(rune('a'+i%26))
	}
	first, extra := words[:maxQueryWords], words[maxQueryWords]
	docs := []Document{
		{Name: "mcp_a_many", Description: strings.Join(first, " ")},
		{Name: "mcp_a_extra", Description: extra},
	}
	ix := Build(docs)
	if got := hitNames(docs, ix.Search(strings.Join(words, " ")+" ", 10)); !slices.Equal(got, []string{"mcp_a_many"}) {
		t.Errorf("with %q as word %d, Search found %v, want only mcp_a_many", extra, maxQueryWords+1, got)
	}
	if got := hitNames(docs, ix.Search(extra+" "+strings.Join(first[1:], " ")+" ", 10)); !slices.Contains(got, "mcp_a_extra") {
		t.Errorf("with %q as the first word, Search found %v, want mcp_a_extra among them", extra, got)
	}
}
