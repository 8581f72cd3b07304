package toolsearch

import (
	"regexp"
	"strings"
)

// Agents put the values a call needs into their requests ("read the last
// 50 lines of /tmp/app/server.log", "navigate to https://staging.acme.dev/login",
// "run SELECT count(*) FROM orders"). The words inside a value say what the
// value is, not what the tool does: "server" and "log" of a path, "login"
// of a URL, "orders" of a query would each pull up tools that do something
// else. withoutValues replaces each value with the word for its kind, which
// tools' descriptions use ("url", "email", "file", "path"), or with nothing.
var (
	urlValue   = regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"<>)\]]*`)
	emailValue = regexp.MustCompile(`\b[^\s@'"<>()]+@[^\s@'"<>()]+\.[a-zA-Z]{2,}\b`)
	// Quoted text is a value: a title, a name, an expression. A single
	// quote opens only where a word cannot go on (so not "what's") and
	// closes only where none goes on (so not "browser's").
	quotedValue = regexp.MustCompile("`[^`]*`|\"[^\"]*\"|(^|[\\s(\\[{,:;=])'[^'\\s][^']*'($|[\\s)\\]},.:;!?])")
)

// withoutValues is the query with its values replaced (see above).
func withoutValues(query string) string {
	query = urlValue.ReplaceAllString(query, " url ")
	query = emailValue.ReplaceAllString(query, " email ")
	query = quotedValue.ReplaceAllString(query, "$1 $2")
	fields := strings.Fields(query)
	kept := fields[:0]
	for _, f := range fields {
		if word, ok := valueKind(f); ok {
			if word != "" {
				kept = append(kept, word)
			}
			continue
		}
		kept = append(kept, f)
	}
	return strings.Join(kept, " ")
}

// valueKind reports whether a whitespace-separated token of a query is a
// value, and the word for its kind ("" for none): a path, a file name, a
// number or id, code.
func valueKind(token string) (string, bool) {
	t := strings.TrimRight(token, ",.;:!?)")
	t = strings.TrimLeft(t, "(")
	switch {
	case t == "":
		return "", false
	case strings.ContainsAny(t, "(){}[]=<>*$|\\"):
		return "", true // code or an expression
	case strings.HasPrefix(t, "#") || isNumber(t):
		return "", true
	case strings.ContainsRune(t, '/'):
		if hasExtension(t) {
			return "file", true
		}
		if strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~") || strings.HasPrefix(t, ".") {
			return "path", true
		}
		return "", true // owner/repo, group/project, a/b
	case hasExtension(t) && strings.Count(t, ".") >= 1 && !strings.ContainsAny(t[:1], "."):
		return "file", true
	}
	return "", false
}

// isNumber reports whether a token is digits and separators only: an id,
// a version, a time, coordinates.
func isNumber(t string) bool {
	digits := 0
	for _, r := range t {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case strings.ContainsRune(".,:-+%_vV", r):
		default:
			return false
		}
	}
	return digits > 0
}

// hasExtension reports whether a token ends in a file extension: a dot
// and one to five letters or digits, at least one a letter, after a name.
func hasExtension(t string) bool {
	dot := strings.LastIndexByte(t, '.')
	if dot <= 0 || dot == len(t)-1 || len(t)-dot-1 > 5 {
		return false
	}
	letter := false
	for _, r := range t[dot+1:] {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letter = true
		case r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return letter
}
