package toolsearch

import (
	"github.com/kljensen/snowball/english"
)

// keptStopWords are words of the stop list that name what a tool does:
// "scroll down", "log out", "sign up", "turn off" must not lose their verb's
// particle.
var keptStopWords = map[string]bool{
	"up": true, "down": true, "out": true, "off": true, "over": true, "under": true,
	"before": true, "after": true, "above": true, "below": true, "between": true,
}

// isStopWord reports whether a folded word carries no meaning for search.
// The list is the Snowball project's English one (it ships with the stemmer).
func isStopWord(word string) bool {
	return english.IsStopWord(word) && !keptStopWords[word]
}

// stem reduces a folded word to the term it is indexed under, with the
// Snowball English (Porter2) stemmer, so "files"/"file" and
// "creating"/"create" meet. Words holding digits ("ec2", "base64", "2fa")
// are identifiers, kept as they are.
func stem(word string) string {
	for i := 0; i < len(word); i++ {
		if word[i] >= '0' && word[i] <= '9' {
			return word
		}
	}
	return english.Stem(word, true)
}
