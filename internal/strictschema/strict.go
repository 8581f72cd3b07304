// Package strictschema rewrites a tool's input schema into the subset a
// model API's strict mode takes (OpenAI's Structured Outputs for function
// tools, Anthropic's strict tool use), and says when it cannot.
//
// A rewrite is served as strict only when it is lossless: every set of
// arguments the tool accepts can still be written under the strict
// schema, and every constraint the strict subset has no keyword for is
// kept in the description, where the model reads it, and still enforced,
// since the catalog validates arguments against the tool's own schema
// before a call. An object that declares its properties is closed: the
// one convention the rewrite assumes is that such an object takes no
// others (one that declares none takes any object, and is refused); for
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
	"errors"
	"fmt"
	"slices"
	"strconv"
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

// Version names the rewrite: it changes whenever what Convert writes
// for a schema may change, so that a cached strict menu is told apart
// from the one a later catalog writes (ETags).
const Version = "1"

// Convert rewrites a tool's input schema for a dialect.
func Convert(schema []byte, d Dialect) Result {
	sc, err := ParseSchema(schema)
	if err != nil {
		return Result{Schema: schema, Reason: err.Error()}
	}
	var out *node
	switch d {
	case Anthropic:
		out, err = convertAnthropic(sc)
	default:
		out, err = convertOpenAI(sc)
	}
	if err != nil {
		return Result{Schema: schema, Reason: err.Error()}
	}
	return Result{Schema: out.appendJSON(nil), Strict: true}
}

// Schema is a tool's input schema, read once: safe to share between
// goroutines, since nothing changes it after ParseSchema.
type Schema struct {
	root *node
	// nullable says of each definition ("$defs/NAME") whether it may
	// take null.
	nullable map[string]bool
	// required are the names each object schema requires, and
	// propertyNullable says of each property's schema whether it may take
	// null: worked out once, since StripNulls asks for each object and
	// each null of arguments that may hold thousands.
	required         map[*node]map[string]bool
	propertyNullable map[*node]bool
}

// ParseSchema reads a schema, in time linear in its size.
func ParseSchema(raw []byte) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("the tool has no input schema")
	}
	root, err := parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the schema cannot be read: %w", err)
	}
	sc := &Schema{root: root, nullable: map[string]bool{}, required: map[*node]map[string]bool{}, propertyNullable: map[*node]bool{}}
	sc.findNullable()
	sc.findProperties(root)
	return sc, nil
}

// findProperties works out, for every object schema below s, the names
// it requires and whether each of its properties may take null.
func (sc *Schema) findProperties(s *node) {
	if s == nil || !s.object {
		return
	}
	if props := s.get("properties"); props != nil && props.object {
		names, _ := requiredNames(s, "")
		required := make(map[string]bool, len(names))
		for _, name := range names {
			required[name] = true
		}
		sc.required[s] = required
		for _, p := range props.values {
			sc.propertyNullable[p] = sc.mayBeNull(p)
		}
	}
	subschemas(s, func(_ string, sub *node, _ ...string) { sc.findProperties(sub) })
}

// findNullable works out, once for each definition, whether it may take
// null; a definition on a cycle of references may.
func (sc *Schema) findNullable() {
	const (
		computing = 1
		done      = 2
	)
	state := map[string]int8{}
	var refNullable func(key string) bool
	refNullable = func(key string) bool {
		switch state[key] {
		case computing:
			return true
		case done:
			return sc.nullable[key]
		}
		state[key] = computing
		target := sc.definition(key)
		v := target == nil || mayBeNullWithin(target, 0, refNullable)
		sc.nullable[key] = v
		state[key] = done
		return v
	}
	for _, m := range []string{"$defs", "definitions"} {
		if defs := sc.root.get(m); defs != nil && defs.object {
			for _, name := range defs.keys {
				refNullable(m + "/" + name)
			}
		}
	}
}

// definition is the schema a definition key ("$defs/NAME") names.
func (sc *Schema) definition(key string) *node {
	m, name, _ := strings.Cut(key, "/")
	return sc.root.get(m).get(name)
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
func (sc *Schema) resolve(s *node) *node {
	for range 16 {
		ref, ok := s.get("$ref").str()
		if !ok {
			return s
		}
		m, name, ok := defName(ref)
		if !ok {
			return nil
		}
		if s = sc.root.get(m).get(name); s == nil {
			return nil
		}
	}
	return nil
}

// mayBeNull reports whether a schema may accept null: false only when it
// certainly does not (its type, enum or const leave null out, or every
// branch of its anyOf or oneOf does).
func (sc *Schema) mayBeNull(s *node) bool {
	return mayBeNullWithin(s, 0, func(key string) bool {
		v, ok := sc.nullable[key]
		return !ok || v
	})
}

// mayBeNullWithin is mayBeNull, with refNullable saying it of a
// definition a reference names.
func mayBeNullWithin(s *node, depth int, refNullable func(key string) bool) bool {
	if depth > maxDepth || s == nil {
		return true
	}
	if s.isFalse() {
		return false
	}
	if !s.object {
		return true
	}
	if ref := s.get("$ref"); ref != nil {
		r, _ := ref.str()
		if m, name, ok := defName(r); ok && !refNullable(m+"/"+name) {
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
			!slices.ContainsFunc(branches.items, func(b *node) bool { return mayBeNullWithin(b, depth+1, refNullable) }) {
			return false
		}
	}
	if branches := s.get("allOf"); branches != nil && branches.array &&
		slices.ContainsFunc(branches.items, func(b *node) bool { return !mayBeNullWithin(b, depth+1, refNullable) }) {
		return false
	}
	return true
}

// subschemas calls visit with each schema a schema holds in a keyword
// (not through references): its properties, items, branches and so on,
// never literal values such as an enum's or a default. at is where the
// schema is below its parent, as JSON Pointer tokens.
func subschemas(s *node, visit func(keyword string, sub *node, at ...string)) {
	if s == nil || !s.object {
		return
	}
	for i, key := range s.keys {
		v := s.values[i]
		switch key {
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
			if v.object {
				for j, sub := range v.values {
					visit(key, sub, key, v.keys[j])
				}
			}
		case "items", "prefixItems", "anyOf", "oneOf", "allOf":
			if v.array {
				for j, sub := range v.items {
					visit(key, sub, key, strconv.Itoa(j))
				}
			} else if v.object {
				visit(key, v, key)
			}
		case "not", "if", "then", "else", "additionalProperties", "additionalItems", "contains",
			"propertyNames", "unevaluatedItems", "unevaluatedProperties":
			if v.object {
				visit(key, v, key)
			}
		}
	}
}

// holdsSchemas reports a keyword subschemas reads schemas from.
func holdsSchemas(keyword string) bool {
	switch keyword {
	case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "items", "prefixItems",
		"anyOf", "oneOf", "allOf", "not", "if", "then", "else", "additionalProperties", "additionalItems",
		"contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties":
		return true
	}
	return false
}

// isComposite reports an object or array value.
func isComposite(n *node) bool { return n.object || n.array }

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
