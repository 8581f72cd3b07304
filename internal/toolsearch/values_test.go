package toolsearch

import (
	"slices"
	"testing"
)

func TestWithoutValues(t *testing.T) {
	tests := []struct{ query, want string }{
		{"read the last 50 lines of /tmp/app/server.log please", "read the last lines of file please"},
		{"list ~/projects and ./build", "list path and path"},
		{"navigate to https://staging.acme.dev/login now", "navigate to url now"},
		{"write to ops@example.com about it", "write to email about it"},
		{"compare package.json, tsconfig.json and README.md", "compare file file and file"},
		{"close issue #341 of acme/web-app for v5.2", "close issue of for"},
		{"in group/sub/project open apps/v1", "in open"},
		{"run SELECT count(*) FROM orders WHERE x > 1", "run SELECT FROM orders WHERE x"},
		{"create a card titled 'Fix the login bug' in Done", "create a card titled in Done"},
		{`search for "quarterly report" in drive`, "search for in drive"},
		{"evaluate `document.title` in the page", "evaluate in the page"},
		// Apostrophes of words are not quotes.
		{"what's on the browser's tab that I haven't closed", "what's on the browser's tab that I haven't closed"},
		{"coordinates 46.02,7.75 at 14:05", "coordinates at"},
		// Words are not values: joined by one slash, emphasized, dotted
		// names that are no file, identifiers with digits.
		{"grant read/write access and set up CI/CD", "grant read/write access and set up CI/CD"},
		{"Please **delete** the branch, I need to *archive* it", "Please **delete** the branch, I need to *archive* it"},
		{"open issues on github.com for the Next.js app (e.g. the docs)", "open issues on github.com for the Next.js app (e.g. the docs)"},
		{"explain spec.strategy.rollingUpdate of a Deployment", "explain spec.strategy.rollingUpdate of a Deployment"},
		{"use ec2 and s3 in us-east-1", "use ec2 and s3 in us-east-1"},
		// A line break stays a sentence break.
		{"list files\nTime zones too", "list files . Time zones too"},
	}
	for _, tc := range tests {
		if got, _ := withoutValues(tc.query); got != tc.want {
			t.Errorf("withoutValues(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
	for query, want := range map[string]bool{"open https://example.com": true, "read a.json now": false, "read a.json": true} {
		if _, last := withoutValues(query); last != want {
			t.Errorf("withoutValues(%q) says the last word was a value: %v, want %v", query, last, want)
		}
	}
}

func TestQueryWordsNamed(t *testing.T) {
	tests := []struct {
		query string
		named []string // the words written as names
	}{
		{"what time is it in Tokyo", []string{"tokyo"}},
		{"What time is it", nil},
		{"fetch the issue. Fetch is not the point", nil},
		{"using Fetch, get the page", []string{"fetch"}},
		{"open it in GitHub", []string{"github", "git", "hub"}},
		{"GitHub issues please", []string{"github", "git", "hub"}},
		{"list my issues in gitlab", nil},
		{"list files\nTime zones too", nil},
		{"list files. Time zones too", nil},
	}
	for _, tc := range tests {
		words, named := queryWords(tc.query)
		var got []string
		for i, w := range words {
			if named[i] {
				got = append(got, w)
			}
		}
		if !slices.Equal(got, tc.named) {
			t.Errorf("queryWords(%q) named %q, want %q", tc.query, got, tc.named)
		}
	}
}
