package toolsearch

import (
	"encoding/json"
	"sort"
)

// maxSchemaDepth bounds the walk into nested schemas: deep levels add little
// to search, and a hostile or recursive-looking schema must not cost more.
const maxSchemaDepth = 6

// paramTexts holds what a tool's input schema says in words.
type paramTexts struct {
	names []string // property names, to be split like identifiers
	texts []string // titles, descriptions and string enum values
}

// schemaTexts walks an input schema: properties, nested objects, items,
// $defs/definitions and the anyOf/oneOf/allOf branches. The schema is
// decoded once, untyped, so that a keyword of an unexpected type (a boolean
// schema, a numeric title) costs only itself; a schema that does not decode
// at all contributes nothing, and the tool is still found by its name.
func schemaTexts(raw json.RawMessage) paramTexts {
	var p paramTexts
	var schema any
	if len(raw) > 0 && json.Unmarshal(raw, &schema) == nil {
		p.walk(schema, 0)
	}
	return p
}

func (p *paramTexts) walk(node any, depth int) {
	n, ok := node.(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return // a boolean schema, or too deep
	}
	p.add(n["title"])
	p.add(n["description"])
	if enum, ok := n["enum"].([]any); ok {
		for _, e := range enum {
			p.add(e)
		}
	}
	props, _ := n["properties"].(map[string]any)
	// Sorted, so that a document's terms do not depend on map order.
	for _, name := range sortedKeys(props) {
		p.names = append(p.names, name)
		p.walk(props[name], depth+1)
	}
	switch items := n["items"].(type) {
	case map[string]any:
		p.walk(items, depth+1)
	case []any: // a tuple
		for _, s := range items {
			p.walk(s, depth+1)
		}
	}
	for _, key := range []string{"$defs", "definitions"} {
		defs, _ := n[key].(map[string]any)
		for _, name := range sortedKeys(defs) {
			p.walk(defs[name], depth+1)
		}
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		branches, _ := n[key].([]any)
		for _, s := range branches {
			p.walk(s, depth+1)
		}
	}
}

// add keeps a value that is text; other JSON values say nothing to search.
func (p *paramTexts) add(v any) {
	if s, ok := v.(string); ok && s != "" {
		p.texts = append(p.texts, s)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
