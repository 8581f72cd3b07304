package strictschema

import (
	"slices"
	"strconv"
)

// OpenAI's limits on a strict schema (Structured Outputs).
const (
	openAIMaxObjectDepth = 10
	openAIMaxProperties  = 5000
	openAIMaxEnumValues  = 1000
)

// openAIFormats are the string formats Structured Outputs takes.
var openAIFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}

// openAIKept are the keywords a strict schema keeps as they are.
var openAIKept = []string{"const", "description", "title", "pattern", "multipleOf", "maximum",
	"exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems"}

// annotationsDropped are keywords that constrain nothing and tell a model
// nothing: they are left out.
var annotationsDropped = []string{"$schema", "$comment", "readOnly", "writeOnly", "deprecated"}

// unrepresentable are keywords whose meaning no strict schema can carry
// and whose loss would let through, or turn away, arguments the tool
// judges otherwise; a schema using one is served as it is.
var unrepresentable = []string{"allOf", "oneOf", "not", "if", "then", "else", "patternProperties",
	"propertyNames", "dependentRequired", "dependentSchemas", "dependencies", "prefixItems",
	"additionalItems", "contains", "minContains", "maxContains", "unevaluatedItems",
	"unevaluatedProperties", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "$anchor"}

type openAIConverter struct {
	root *node
	// underAnyOf are the definitions a reference inside an anyOf reaches;
	// reached, those any reference reaches.
	underAnyOf map[string]bool
	reached    map[string]struct{}
	properties int
}

func convertOpenAI(root *node) (*node, error) {
	if !root.object {
		return nil, notStrict("", "the schema is not an object schema")
	}
	if root.has("anyOf") {
		return nil, notStrict("", "the root is a union (anyOf), which strict mode does not take")
	}
	names, ok := typeNames(root)
	if !ok || (names != nil && !slices.Equal(names, []string{"object"})) {
		return nil, notStrict("", "the root's type is not object")
	}
	c := &openAIConverter{root: root, underAnyOf: map[string]bool{}, reached: map[string]struct{}{}}
	c.markUnderAnyOf(root, false, 0)
	typed := root
	if names == nil {
		// Tool arguments are an object whatever the root says.
		typed = &node{object: true, keys: append([]string{"type"}, root.keys...),
			values: append([]*node{strNode("object")}, root.values...)}
	}
	return c.schema(typed, "", 0, false)
}

// markUnderAnyOf notes which definitions are reached from inside an
// anyOf: an optional property there is refused, since the null a strict
// model sends for it could not be told apart from a branch's value.
func (c *openAIConverter) markUnderAnyOf(s *node, inAnyOf bool, depth int) {
	if s == nil || !s.object || depth > maxDepth {
		return
	}
	if ref, ok := s.get("$ref").str(); ok {
		if m, name, ok := defName(ref); ok {
			// Each definition is walked at most twice: once reached from
			// outside a union, once from inside one.
			key := m + "/" + name
			if _, seen := c.reached[key]; !seen || (inAnyOf && !c.underAnyOf[key]) {
				c.reached[key] = struct{}{}
				if inAnyOf {
					c.underAnyOf[key] = true
				}
				c.markUnderAnyOf(c.root.get(m).get(name), inAnyOf, depth+1)
			}
		}
	}
	if props := s.get("properties"); props != nil && props.object {
		for _, v := range props.values {
			c.markUnderAnyOf(v, inAnyOf, depth+1)
		}
	}
	c.markUnderAnyOf(s.get("items"), inAnyOf, depth+1)
	if branches := s.get("anyOf"); branches != nil && branches.array {
		for _, b := range branches.items {
			c.markUnderAnyOf(b, true, depth+1)
		}
	}
}

// schema rewrites one schema; depth counts the objects it is inside.
func (c *openAIConverter) schema(s *node, path string, depth int, inAnyOf bool) (*node, error) {
	if !s.object {
		if s.isTrue() {
			return nil, notStrict(path, "the schema takes any value")
		}
		return nil, notStrict(path, "the schema is not an object schema")
	}
	for _, key := range s.keys {
		if slices.Contains(unrepresentable, key) {
			return nil, notStrict(path, "%s has no strict equivalent", key)
		}
	}
	if s.has("$id") && path != "" {
		return nil, notStrict(path, "a nested $id starts a schema resource of its own")
	}
	if ref := s.get("$ref"); ref != nil {
		return c.reference(s, ref, path)
	}
	names, ok := typeNames(s)
	if !ok {
		return nil, notStrict(path, "type is not a type name or a list of them")
	}
	for _, name := range names {
		if !slices.Contains([]string{"string", "number", "integer", "boolean", "object", "array", "null"}, name) {
			return nil, notStrict(path, "unknown type %q", name)
		}
	}
	if names == nil && !s.has("enum") && !s.has("const") && !s.has("anyOf") {
		return nil, notStrict(path, "the schema says no type, so it takes a value of any type")
	}
	isObject := slices.Contains(names, "object")
	if !isObject && (s.has("properties") || s.has("required")) {
		return nil, notStrict(path, "properties or required on a schema that is not an object")
	}

	out := &node{object: true}
	var movedKeys []string
	var moved []*node
	move := func(key string, v *node) {
		movedKeys = append(movedKeys, key)
		moved = append(moved, v)
	}
	for i, key := range s.keys {
		v := s.values[i]
		switch {
		case key == "type":
			if len(names) == 1 {
				out.set(key, strNode(names[0]))
			} else {
				out.set(key, v.clone())
			}
		case key == "properties", key == "required", key == "additionalProperties":
			// Set with the object, below; held in its place meanwhile.
			if isObject {
				out.set(key, v)
			}
		case key == "items":
			if !slices.Contains(names, "array") {
				move(key, v)
				continue
			}
			if v.array {
				return nil, notStrict(path, "items is a tuple, which strict mode does not take")
			}
			item, err := c.schema(v, pointer(path, "items"), depth, inAnyOf)
			if err != nil {
				return nil, err
			}
			out.set(key, item)
		case key == "anyOf":
			if !v.array || len(v.items) == 0 {
				return nil, notStrict(path, "anyOf is not a list of schemas")
			}
			branches := &node{array: true}
			for j, b := range v.items {
				converted, err := c.schema(b, pointer(path, "anyOf", strconv.Itoa(j)), depth, true)
				if err != nil {
					return nil, err
				}
				branches.items = append(branches.items, converted)
			}
			out.set(key, branches)
		case key == "$defs" || key == "definitions":
			if path != "" {
				return nil, notStrict(path, "%s below the root", key)
			}
			defs, err := c.definitions(key, v)
			if err != nil {
				return nil, err
			}
			out.set(key, defs)
		case key == "enum":
			if !v.array || len(v.items) == 0 {
				return nil, notStrict(path, "enum is not a list of values")
			}
			if len(v.items) > openAIMaxEnumValues {
				return nil, notStrict(path, "enum lists %d values, more than the %d strict mode takes", len(v.items), openAIMaxEnumValues)
			}
			out.set(key, v.clone())
		case key == "format":
			if f, _ := v.str(); slices.Contains(openAIFormats, f) && slices.Contains(names, "string") {
				out.set(key, v.clone())
			} else {
				move(key, v)
			}
		case key == "$id", slices.Contains(annotationsDropped, key):
		case key == "default" && v.isNull():
		case slices.Contains(openAIKept, key):
			out.set(key, v.clone())
		default:
			move(key, v)
		}
	}
	if isObject {
		if err := c.object(s, out, path, depth+1, inAnyOf); err != nil {
			return nil, err
		}
	}
	if slices.Contains(names, "array") && !s.has("items") {
		return nil, notStrict(path, "an array that does not say what its items are")
	}
	describe(out, movedKeys, moved)
	return out, nil
}

// reference rewrites a schema that is a reference to a definition.
func (c *openAIConverter) reference(s, ref *node, path string) (*node, error) {
	target, _ := ref.str()
	if _, _, ok := defName(target); !ok || resolve(c.root, s) == nil {
		return nil, notStrict(path, "$ref %q is not a reference to one of the schema's own definitions", target)
	}
	out := &node{object: true}
	for i, key := range s.keys {
		switch {
		case key == "$ref", key == "description", key == "title":
			out.set(key, s.values[i].clone())
		case slices.Contains(annotationsDropped, key):
		default:
			return nil, notStrict(path, "%s beside $ref", key)
		}
	}
	return out, nil
}

// definitions rewrites the root's $defs (or definitions).
func (c *openAIConverter) definitions(mapKey string, defs *node) (*node, error) {
	if !defs.object {
		return nil, notStrict("/"+mapKey, "not a map of schemas")
	}
	out := &node{object: true}
	for i, name := range defs.keys {
		// A definition is an object's property, or an item, wherever it
		// is used: its objects nest at least one level below the root.
		converted, err := c.schema(defs.values[i], pointer("", mapKey, name), 1, c.underAnyOf[mapKey+"/"+name])
		if err != nil {
			return nil, err
		}
		out.set(name, converted)
	}
	return out, nil
}

// object closes an object schema and makes each of its properties
// required, the optional ones nullable.
func (c *openAIConverter) object(s, out *node, path string, depth int, inAnyOf bool) error {
	if depth > openAIMaxObjectDepth {
		return notStrict(path, "objects nest more than %d deep, more than strict mode takes", openAIMaxObjectDepth)
	}
	if ap := s.get("additionalProperties"); ap != nil && !ap.isFalse() {
		return notStrict(path, "the object takes properties it does not declare (additionalProperties)")
	}
	props := s.get("properties")
	if props == nil {
		props = &node{object: true}
	}
	if !props.object {
		return notStrict(path, "properties is not a map of schemas")
	}
	required, err := requiredNames(s, path)
	if err != nil {
		return err
	}
	for _, name := range required {
		if !props.has(name) {
			return notStrict(path, "requires %q, which it does not declare", name)
		}
	}
	c.properties += len(props.keys)
	if c.properties > openAIMaxProperties {
		return notStrict(path, "more than %d properties in all, more than strict mode takes", openAIMaxProperties)
	}
	converted := &node{object: true}
	for i, name := range props.keys {
		original := props.values[i]
		at := pointer(path, "properties", name)
		v, err := c.schema(original, at, depth, inAnyOf)
		if err != nil {
			return err
		}
		if !slices.Contains(required, name) {
			switch {
			case inAnyOf:
				return notStrict(at, "an optional property inside a union (anyOf): a null sent for it could not be told from a value")
			case !mayBeNull(c.root, original):
				v = nullable(v)
			case !original.get("default").isNull():
				return notStrict(at, "an optional property that takes null too: a null sent for it could not be told from the property left out")
			}
		}
		converted.set(name, v)
	}
	out.set("properties", converted)
	out.set("required", stringList(props.keys...))
	out.set("additionalProperties", &node{raw: []byte("false")})
	return nil
}

// nullable makes a rewritten schema take null as well: a type gains
// "null", anything else is wrapped in an anyOf with a null branch that
// takes over its description.
func nullable(s *node) *node {
	if t := s.get("type"); t != nil && !s.has("enum") && !s.has("const") {
		if name, ok := t.str(); ok {
			s.set("type", stringList(name, "null"))
			return s
		}
		if t.array {
			t.items = append(t.items, strNode("null"))
			return s
		}
	}
	wrapper := &node{object: true}
	if d := s.get("description"); d != nil {
		wrapper.set("description", d)
		s.del("description")
	}
	wrapper.set("anyOf", &node{array: true, items: []*node{s, object("type", strNode("null"))}})
	return wrapper
}
