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
		{"in acme/cli close issue #341 for v5.2", "in close issue for"},
		{"run SELECT count(*) FROM orders WHERE x > 1", "run SELECT FROM orders WHERE x"},
		{"create a card titled 'Fix the login bug' in Done", "create a card titled in Done"},
		{`search for "quarterly report" in drive`, "search for in drive"},
		{"evaluate `document.title` in the page", "evaluate in the page"},
		// Apostrophes of words are not quotes.
		{"what's on the browser's tab that I haven't closed", "what's on the browser's tab that I haven't closed"},
		{"coordinates 46.02,7.75 at 14:05", "coordinates at"},
		// Words with dots that are no file name stay.
		{"explain spec.strategy.rollingUpdate of a Deployment", "explain spec.strategy.rollingUpdate of a Deployment"},
		{"use ec2 and s3 in us-east-1", "use ec2 and s3 in us-east-1"},
	}
	for _, tc := range tests {
		if got := withoutValues(tc.query); got != tc.want {
			t.Errorf("withoutValues(%q) = %q, want %q", tc.query, got, tc.want)
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
		{"list my todos in todoist", nil},
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
