package toolsearch

import (
	"slices"
	"testing"
)

func TestAppendWords(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"snake case splits at underscores", "list_pull_requests", []string{"list", "pull", "requests"}},
		{"kebab case splits at hyphens", "get-file-contents", []string{"get", "file", "contents"}},
		{"camel case splits and keeps the whole", "listPullRequests", []string{"listpullrequests", "list", "pull", "requests"}},
		{"pascal case splits and keeps the whole", "GitHub", []string{"github", "git", "hub"}},
		{"an acronym ends before the next word", "HTTPServer", []string{"httpserver", "http", "server"}},
		{"a plural acronym stays one word", "URLs", []string{"urls"}},
		{"letters and digits split, whole kept", "ec2 base64", []string{"ec2", "ec", "base64", "base", "64"}},
		{"one-character parts are dropped", "k8s x", []string{"k8s"}},
		{"dots split", "kubernetes.pods.list", []string{"kubernetes", "pods", "list"}},
		{"slashes split", "repos/owner/name", []string{"repos", "owner", "name"}},
		{"punctuation and spaces split", "Read a file; (fast), please!", []string{"read", "file", "fast", "please"}},
		{"case is folded", "READ File", []string{"read", "file"}},
		{"full Unicode case folding", "STRASSE Straße", []string{"strasse", "strasse"}},
		{"non-Latin letters are words", "Привет мир", []string{"привет", "мир"}},
		{"decomposed accents compose", "cafe\u0301 café", []string{"café", "café"}},
		{"full-width letters normalize", "ＧＩＴ", []string{"git"}},
		{"empty text has no words", "  _-./ ", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := appendWords(nil, tc.text)
			if !slices.Equal(got, tc.want) {
				t.Errorf("appendWords(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestStemmingMeets(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"plural and singular", "files", "file"},
		{"gerund and verb", "creating", "create"},
		{"past tense and verb", "deleted", "delete"},
		{"gerund and plural", "updating", "updates"},
		{"third person and verb", "lists", "list"},
		{"plural in y", "repositories", "repository"},
		{"plural in -ies", "queries", "query"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if stem(tc.a) != stem(tc.b) {
				t.Errorf("stem(%q) = %q, stem(%q) = %q: they should meet", tc.a, stem(tc.a), tc.b, stem(tc.b))
			}
		})
	}
	t.Run("identifiers with digits are kept", func(t *testing.T) {
		if got := stem("base64"); got != "base64" {
			t.Errorf("stem(base64) = %q", got)
		}
	})
}

func TestStopWords(t *testing.T) {
	tests := []struct {
		word string
		stop bool
	}{
		{"the", true},
		{"of", true},
		{"with", true},
		{"down", false}, // scroll down
		{"out", false},  // log out
		{"up", false},   // sign up
		{"file", false},
	}
	for _, tc := range tests {
		if got := isStopWord(tc.word); got != tc.stop {
			t.Errorf("isStopWord(%q) = %v, want %v", tc.word, got, tc.stop)
		}
	}
}
