package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// minWordRunes drops one-character fragments ("s" of "k8s", "x" of "x_offset"):
// they match nearly everything and say nothing about a capability.
const minWordRunes = 2

// appendWords appends the words of text to dst, case-folded: runs of letters
// and digits, anything else (space, punctuation, "_", "-", ".", "/") ending a
// run. A run is also split where a lower-case letter meets an upper-case one
// ("listPullRequests"), where an acronym meets a word ("HTTPServer"), and
// where letters meet digits ("ec2", "base64"). A run that splits is kept
// whole as well, so the brand "GitHub" in prose meets a query for "github"
// and one for "hub".
//
// Hand-written because no library splits identifiers: Unicode word breaking
// (UAX #29) keeps "listPullRequests" and "snake_case" as one word each.
func appendWords(dst []string, text string) []string {
	start := -1
	for i, r := range text {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			dst = appendRun(dst, text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		dst = appendRun(dst, text[start:])
	}
	return dst
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf { // nearly all tool text: no table lookups
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// appendRun appends one run of letters and digits: whole, then its parts.
func appendRun(dst []string, run string) []string {
	dst = appendFolded(dst, run)
	cuts := partCuts(run)
	if len(cuts) == 0 {
		return dst
	}
	from := 0
	for _, cut := range cuts {
		dst = appendFolded(dst, run[from:cut])
		from = cut
	}
	return appendFolded(dst, run[from:])
}

// partCuts returns the byte offsets inside run where a new part starts.
func partCuts(run string) []int {
	if isLowerASCII(run) {
		return nil // most words: nothing to cut
	}
	var cuts []int
	prev, cur := rune(-1), rune(-1)
	curAt := 0
	for i, r := range run {
		if cur >= 0 {
			switch {
			case unicode.IsLower(cur) && unicode.IsUpper(r): // listPull
				cuts = append(cuts, i)
			case unicode.IsUpper(prev) && unicode.IsUpper(cur) && unicode.IsLower(r) && run[i:] != "s": // HTTPServer, not URLs
				cuts = append(cuts, curAt)
			case unicode.IsDigit(cur) != unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r): // ec2, 3d
				cuts = append(cuts, i)
			}
		}
		prev, cur, curAt = cur, r, i
	}
	return cuts
}

// isLowerASCII reports whether s is lower-case ASCII letters only.
func isLowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// appendFolded appends part case-folded, unless it is too short to mean anything.
func appendFolded(dst []string, part string) []string {
	if utf8.RuneCountInString(part) < minWordRunes {
		return dst
	}
	return append(dst, fold(part))
}

// fold case-folds a word. ASCII, nearly every tool text, takes a fast path;
// other scripts get NFKC normalization (so composed and decomposed accents,
// and full-width letters, meet) and full Unicode case folding (ß → ss).
func fold(word string) string {
	if isASCII(word) {
		return strings.ToLower(word)
	}
	// A Caser keeps state, so each call gets its own rather than sharing one.
	return cases.Fold().String(norm.NFKC.String(word))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// queryWords is appendWords of a query, with whether each word was written
// as a name: capitalized where a sentence does not begin ("in Todoist",
// "ask Time"), or with a capital inside it ("GitHub", "macOS"). A query
// written in lower case names nothing this way.
func queryWords(query string) (words []string, named []bool) {
	start := -1
	sentenceStart := true
	for i, r := range query + " " {
		if i < len(query) && isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			run := query[start:i]
			name := writtenAsName(run, sentenceStart)
			before := len(words)
			words = appendRun(words, run)
			for range len(words) - before {
				named = append(named, name)
			}
			start = -1
			sentenceStart = false
		}
		switch r {
		case '.', '!', '?', ':', ';', '\n':
			sentenceStart = true
		}
	}
	return words, named
}

// writtenAsName reports whether a run of letters was written as a name.
func writtenAsName(run string, sentenceStart bool) bool {
	for i, r := range run {
		if !unicode.IsUpper(r) {
			continue
		}
		if i > 0 || !sentenceStart {
			return true
		}
	}
	return false
}
