package toolsearch

import (
	"slices"
	"testing"
)

func TestSynonymGroups(t *testing.T) {
	for _, g := range synonymGroups {
		var stems []string
		for _, w := range g {
			// A stop word never reaches the thesaurus, and a word must be
			// written as the tokenizer leaves it to be looked up at all.
			if isStopWord(w) {
				t.Errorf("group %v: %q is a stop word and would never match", g, w)
			}
			if words := appendWords(nil, w); !slices.Equal(words, []string{w}) {
				t.Errorf("group %v: %q tokenizes to %v", g, w, words)
			}
			if !slices.Contains(stems, stem(w)) {
				stems = append(stems, stem(w))
			}
		}
		if len(stems) < 2 {
			t.Errorf("group %v: all its words stem alike, so it adds nothing", g)
		}
	}
}

func TestSynonymsMeet(t *testing.T) {
	tests := []struct{ word, meets string }{
		{"folder", "directory"},
		{"directories", "folder"}, // through the stem
		{"remove", "delete"},
		{"photo", "image"},
	}
	for _, tc := range tests {
		if !slices.Contains(synonyms[stem(tc.word)], stem(tc.meets)) {
			t.Errorf("%q does not meet %q: synonyms are %v", tc.word, tc.meets, synonyms[stem(tc.word)])
		}
	}
}
