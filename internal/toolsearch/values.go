package toolsearch

import (
	"regexp"
	"strings"
	"unicode"
)

// Agents put the values a call needs into their requests ("read the last
// 50 lines of /tmp/app/server.log", "navigate to https://staging.acme.dev/login",
// "run SELECT count(*) FROM orders"). The words inside a value say what the
// value is, not what the tool does: "server" and "log" of a path, "login"
// of a URL, "orders" of a query would each pull up tools that do something
// else. withoutValues replaces each value with the word for its kind, which
// tools' descriptions use ("url", "email", "file", "path"), or with nothing.
var (
	// Quoted text is a value: a title, a name, an expression. A single
	// quote opens only where a word cannot go on (so not "what's") and
	// closes only where none goes on (so not "browser's").
	quotedValue = regexp.MustCompile("`[^`]*`|\"[^\"]*\"|(^|[\\s(\\[{,:;=])'[^'\\s][^']*'($|[\\s)\\]},.:;!?])")
)

// withoutValues is the query with its values replaced (see above), and
// whether its last word was a value (so not a word still being typed).
// A line break stays a sentence break.
func withoutValues(query string) (string, bool) {
	query = quotedValue.ReplaceAllString(query, "$1 $2")
	query = strings.ReplaceAll(query, "\n", " . ")
	fields := strings.Fields(query)
	kept := fields[:0]
	lastWasValue := false
	for _, f := range fields {
		word, isValue := valueKind(f)
		lastWasValue = isValue
		switch {
		case !isValue:
			kept = append(kept, f)
		case word != "":
			kept = append(kept, word)
		}
	}
	return strings.Join(kept, " "), lastWasValue
}

// valueKind reports whether a whitespace-separated token of a query is a
// value, and the word for its kind ("" for none): a path, a file name, a
// number or id, code. Words joined by one slash ("read/write", "CI/CD")
// and dotted names that are no file ("github.com", "Next.js", "e.g.")
// are words, not values.
func valueKind(token string) (string, bool) {
	t := strings.TrimRight(token, ",.;:!?)*_")
	t = strings.TrimLeft(t, "(*_") // and Markdown's **emphasis**
	switch {
	case t == "":
		return "", false
	case strings.Contains(t, "://"):
		return "url", true
	case isEmail(t):
		return "email", true
	case strings.ContainsAny(t, "(){}[]=<>$|\\"):
		return "", true // code or an expression
	case strings.HasPrefix(t, "#") || isNumber(t):
		return "", true
	case isFileName(t):
		return "file", true
	case strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~/") || strings.HasPrefix(t, "./") || strings.HasPrefix(t, "../"):
		return "path", true
	case strings.ContainsRune(t, '/'):
		if before, after, _ := strings.Cut(t, "/"); isLetters(before) && isLetters(after) {
			return "", false // read/write, CI/CD
		}
		return "", true // group/sub/project, api-5d8/logs, apps/v1
	}
	return "", false
}

// isFileName reports whether a token names a file: it ends in a dot and
// one of fileExtensions, after a name. "Next.js" and "Chart.js" name
// libraries: a capitalized name with .js is not a file.
func isFileName(t string) bool {
	dot := strings.LastIndexByte(t, '.')
	if dot <= 0 || dot == len(t)-1 {
		return false
	}
	ext := strings.ToLower(t[dot+1:])
	if !fileExtensions[ext] {
		return false
	}
	name := t[strings.LastIndexByte(t, '/')+1 : dot]
	library := ext == "js" && name != "" && unicode.IsUpper(rune(name[0]))
	return name != "" && !library
}

// fileExtensions are the extensions that make a token a file name.
var fileExtensions = map[string]bool{}

func init() {
	for _, ext := range strings.Fields(`txt md markdown rst log csv tsv json jsonl ndjson yaml yml toml ini conf cfg env xml html htm css scss
		pdf doc docx xls xlsx ppt pptx odt rtf png jpg jpeg gif svg webp bmp ico tif tiff heic mp3 mp4 wav mov avi mkv webm
		zip tar gz tgz bz2 xz 7z rar jar war whl apk dmg iso
		go py rb java kt kts scala rs c h cc cpp hpp cs php pl sh bash zsh ps1 bat sql js mjs cjs jsx ts tsx vue svelte swift m dart lua r
		ipynb proto graphql gql tf tfvars hcl lock sum mod gradle pom dockerfile makefile patch diff pem crt key pub db sqlite parquet avro`) {
		fileExtensions[ext] = true
	}
}

// isEmail reports whether a token is an email address: a name, "@", and
// a domain with a dot.
func isEmail(t string) bool {
	name, domain, ok := strings.Cut(t, "@")
	dot := strings.LastIndexByte(domain, '.')
	return ok && name != "" && dot > 0 && dot < len(domain)-1 && !strings.ContainsRune(domain, '@')
}

// isLetters reports whether s is one or more letters.
func isLetters(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return s != ""
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
