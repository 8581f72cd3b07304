// Package glob filters names by include and exclude lists of path.Match
// patterns, as MCPServer.spec.toolFilter and ToolCollection.spec.tools do.
package glob

import (
	"path"
	"strings"
)

// Keep reports whether name passes: it matches an include pattern (or the
// list is empty) and no exclude pattern; exclude wins.
func Keep(name string, include, exclude []string) bool {
	if len(include) > 0 && !matchesAny(name, include) {
		return false
	}
	return !matchesAny(name, exclude)
}

// FirstInvalid returns the first pattern path.Match cannot use, if any.
func FirstInvalid(lists ...[]string) (string, bool) {
	for _, list := range lists {
		for _, p := range list {
			if _, err := path.Match(p, ""); err != nil {
				return p, true
			}
		}
	}
	return "", false
}

func matchesAny(name string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// KeepURI is Keep for URIs, with patterns in which '*' matches any run of
// characters, '/' included, and every other character matches itself: a
// URI's path has no segments to stop at that a person filtering it means.
func KeepURI(uri string, include, exclude []string) bool {
	if len(include) > 0 && !starMatchesAny(uri, include) {
		return false
	}
	return !starMatchesAny(uri, exclude)
}

func starMatchesAny(s string, patterns []string) bool {
	for _, p := range patterns {
		if starMatch(p, s) {
			return true
		}
	}
	return false
}

// starMatch matches s against p, '*' matching any run of characters: the
// literal pieces between stars in order, the first at the start and the
// last at the end. Linear in len(p)+len(s) per piece found.
func starMatch(p, s string) bool {
	pieces := strings.Split(p, "*")
	if len(pieces) == 1 {
		return p == s
	}
	first, last := pieces[0], pieces[len(pieces)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, piece := range pieces[1 : len(pieces)-1] {
		i := strings.Index(s, piece)
		if i < 0 {
			return false
		}
		s = s[i+len(piece):]
	}
	return true
}
