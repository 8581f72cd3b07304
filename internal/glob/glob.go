// Package glob filters names by include and exclude lists of path.Match
// patterns, as MCPServer.spec.toolFilter and ToolCollection.spec.tools do.
package glob

import "path"

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
