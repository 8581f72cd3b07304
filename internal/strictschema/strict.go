// Package strictschema rewrites a tool's input schema into the subset a
// model API's strict mode takes (OpenAI's Structured Outputs for function
// tools, Anthropic's strict tool use), and says when it cannot.
//
// A rewrite is served as strict only when it is lossless: every set of
// arguments the tool accepts can still be written under the strict
// schema, and every constraint the strict subset has no keyword for is
// kept in the description, where the model reads it, and still enforced,
// since the catalog validates arguments against the tool's own schema
// before a call. Objects are closed (an object that says nothing of
// other properties takes none that mean anything to the tool); for
// OpenAI, whose strict mode requires every property, an optional property
// becomes required and nullable, and StripNulls drops the null a model
// then sends for it. A schema that cannot be rewritten so, an explicitly
// open object above all, is served as it is, not strict, with the reason.
//
// The rewrite follows the providers' own helpers: `openai`'s
// toStrictJsonSchema (its output is a fixed point of that function) and
// `@anthropic-ai/sdk`'s transformJSONSchema (likewise), which moves what
// the strict subset lacks into the description as "{key: value, ...}".
package strictschema

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Dialect is the model API a schema is made strict for.
type Dialect string

const (
	// OpenAI is Structured Outputs, which function tools with strict: true
	// follow in the Chat Completions and Responses APIs.
	OpenAI Dialect = "openai"
	// Anthropic is the Messages API's strict tool use.
	Anthropic Dialect = "anthropic"
)

// Result is a schema made strict, or the reason it could not be.
type Result struct {
	// Schema is the strict schema, compact JSON; the input as it was when
	// Strict is false.
	Schema []byte
	Strict bool
	// Reason says why the schema is served as it is, when it is.
	Reason string
}

// Convert rewrites a tool's input schema for a dialect.
func Convert(schema []byte, d Dialect) Result {
	if len(bytes.TrimSpace(schema)) == 0 {
		return Result{Schema: schema, Reason: "the tool has no input schema"}
	}
	root, err := parse(schema)
	if err != nil {
		return Result{Schema: schema, Reason: "the schema cannot be read: " + err.Error()}
	}
	var out *node
	switch d {
	case Anthropic:
		out, err = convertAnthropic(root)
	default:
		out, err = convertOpenAI(root)
	}
	if err != nil {
		return Result{Schema: schema, Reason: err.Error()}
	}
	return Result{Schema: out.appendJSON(nil), Strict: true}
}

// notStrict is why a schema cannot be made strict, at a place in it.
func notStrict(path, format string, args ...any) error {
	if path == "" {
		path = "/"
	}
	return fmt.Errorf("at %s: %s", path, fmt.Sprintf(format, args...))
}

// defName is the definition a local reference names, "#/$defs/NAME" (or
// "#/definitions/NAME"), and the map it is in; ok is false for any other
// reference, which the rewrite does not follow.
func defName(ref string) (mapKey, name string, ok bool) {
	for _, m := range []string{"$defs", "definitions"} {
		if rest, found := strings.CutPrefix(ref, "#/"+m+"/"); found && rest != "" && !strings.ContainsAny(rest, "/~%") {
			return m, rest, true
		}
	}
	return "", "", false
}

// resolve follows a schema's local reference into the root's definitions;
// it returns the schema itself when it has no reference, and nil when the
// reference goes anywhere else.
func resolve(root, s *node) *node {
	for range 16 {
		ref, ok := s.get("$ref").str()
		if !ok {
			return s
		}
		m, name, ok := defName(ref)
		if !ok {
			return nil
		}
		if s = root.get(m).get(name); s == nil {
			return nil
		}
	}
	return nil
}

// mayBeNull reports whether a schema may accept null: false only when it
// certainly does not (its type, enum or const leave null out, or every
// branch of its anyOf or oneOf does).
func mayBeNull(root, s *node) bool {
	return mayBeNullWithin(root, s, 0)
}

func mayBeNullWithin(root, s *node, depth int) bool {
	if depth > 32 || s == nil {
		return true
	}
	if s.isFalse() {
		return false
	}
	if !s.object {
		return true
	}
	if s.has("$ref") {
		target := resolve(root, s)
		if target == nil || target == s {
			return true
		}
		if !mayBeNullWithin(root, target, depth+1) {
			return false
		}
	}
	if t := s.get("type"); t != nil {
		if name, ok := t.str(); ok && name != "null" {
			return false
		}
		if t.array && !slices.ContainsFunc(t.items, func(n *node) bool { name, _ := n.str(); return name == "null" }) {
			return false
		}
	}
	if e := s.get("enum"); e != nil && e.array && !slices.ContainsFunc(e.items, (*node).isNull) {
		return false
	}
	if c := s.get("const"); c != nil && !c.isNull() {
		return false
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if branches := s.get(key); branches != nil && branches.array &&
			!slices.ContainsFunc(branches.items, func(b *node) bool { return mayBeNullWithin(root, b, depth+1) }) {
			return false
		}
	}
	if branches := s.get("allOf"); branches != nil && branches.array &&
		slices.ContainsFunc(branches.items, func(b *node) bool { return !mayBeNullWithin(root, b, depth+1) }) {
		return false
	}
	return true
}

// describe appends the keywords a strict schema cannot carry to its
// description, as the Anthropic SDK's transformJSONSchema does:
// "{key: value, ...}", the values as JSON.stringify writes them, after a
// blank line when there is a description already.
func describe(out *node, keys []string, values []*node) {
	if len(keys) == 0 {
		return
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteString(": ")
		b.WriteString(values[i].text())
	}
	b.WriteByte('}')
	text := b.String()
	if existing, ok := out.get("description").str(); ok && existing != "" {
		text = existing + "\n\n" + text
	}
	out.set("description", strNode(text))
}

// typeNames are a schema's type keyword's names; nil when it has none,
// and ok false when the keyword is not a name or a list of names.
func typeNames(s *node) (names []string, ok bool) {
	t := s.get("type")
	if t == nil {
		return nil, true
	}
	if name, isStr := t.str(); isStr {
		return []string{name}, true
	}
	if !t.array || len(t.items) == 0 {
		return nil, false
	}
	for _, item := range t.items {
		name, isStr := item.str()
		if !isStr {
			return nil, false
		}
		names = append(names, name)
	}
	return names, true
}

// requiredNames are an object schema's required keyword's names.
func requiredNames(s *node, path string) ([]string, error) {
	r := s.get("required")
	if r == nil {
		return nil, nil
	}
	if !r.array {
		return nil, notStrict(path, "required is not a list of names")
	}
	names := make([]string, 0, len(r.items))
	for _, item := range r.items {
		name, ok := item.str()
		if !ok {
			return nil, notStrict(path, "required is not a list of names")
		}
		names = append(names, name)
	}
	return names, nil
}

// pointer appends a JSON Pointer token to a path.
func pointer(path string, tokens ...string) string {
	for _, t := range tokens {
		path += "/" + strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
	}
	return path
}
