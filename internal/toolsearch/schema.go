package toolsearch

import (
	"encoding/json"
	"sort"
)

// maxSchemaDepth bounds the walk into nested schemas: deep levels add little
// to search, and a hostile or recursive-looking schema must not cost more.
const maxSchemaDepth = 6

// schemaNode is the part of a JSON Schema that describes parameters in words.
// Nested parts stay raw so that only the levels within the bound are decoded.
type schemaNode struct {
	Title       string                     `json:"title"`
	Description string                     `json:"description"`
	Enum        []json.RawMessage          `json:"enum"`
	Properties  map[string]json.RawMessage `json:"properties"`
	Items       json.RawMessage            `json:"items"`
	Defs        map[string]json.RawMessage `json:"$defs"`
	Definitions map[string]json.RawMessage `json:"definitions"`
	AnyOf       []json.RawMessage          `json:"anyOf"`
	OneOf       []json.RawMessage          `json:"oneOf"`
	AllOf       []json.RawMessage          `json:"allOf"`
}

// paramTexts holds what a tool's input schema says in words.
type paramTexts struct {
	names []string // property names, to be split like identifiers
	texts []string // titles, descriptions and string enum values
}

// schemaTexts walks an input schema: properties, nested objects, items,
// $defs/definitions and the anyOf/oneOf/allOf branches. A schema that does
// not decode contributes nothing: the tool is still found by its name.
func schemaTexts(raw json.RawMessage) paramTexts {
	var p paramTexts
	p.walk(raw, 0)
	return p
}

func (p *paramTexts) walk(raw json.RawMessage, depth int) {
	if depth > maxSchemaDepth || len(raw) == 0 || raw[0] != '{' {
		return // absent, a boolean schema, or an items tuple's array
	}
	var n schemaNode
	if json.Unmarshal(raw, &n) != nil {
		return
	}
	p.add(n.Title)
	p.add(n.Description)
	for _, e := range n.Enum {
		var s string
		if json.Unmarshal(e, &s) == nil {
			p.add(s)
		}
	}
	// Sorted, so that a document's terms do not depend on map order.
	for _, name := range sortedKeys(n.Properties) {
		p.names = append(p.names, name)
		p.walk(n.Properties[name], depth+1)
	}
	p.walk(n.Items, depth+1)
	if len(n.Items) > 0 && n.Items[0] == '[' {
		var tuple []json.RawMessage
		if json.Unmarshal(n.Items, &tuple) == nil {
			for _, s := range tuple {
				p.walk(s, depth+1)
			}
		}
	}
	for _, defs := range []map[string]json.RawMessage{n.Defs, n.Definitions} {
		for _, name := range sortedKeys(defs) {
			p.walk(defs[name], depth+1)
		}
	}
	for _, branches := range [][]json.RawMessage{n.AnyOf, n.OneOf, n.AllOf} {
		for _, s := range branches {
			p.walk(s, depth+1)
		}
	}
}

func (p *paramTexts) add(text string) {
	if text != "" {
		p.texts = append(p.texts, text)
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
