package strictschema

import (
	"math"
	"slices"
	"strconv"
)

// OpenAI's limits on a strict schema (Structured Outputs).
const (
	openAIMaxObjectDepth = 10
	openAIMaxProperties  = 5000
	openAIMaxEnumValues  = 1000
	// An enum of more than openAIManyEnumValues strings may spell them in
	// openAIMaxEnumChars characters at most.
	openAIManyEnumValues = 250
	openAIMaxEnumChars   = 15000
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
	*Schema
	// underAnyOf are the definitions a reference inside an anyOf reaches;
	// reached, those any reference reaches.
	underAnyOf map[string]bool
	reached    map[string]struct{}
	properties int
}

func convertOpenAI(sc *Schema) (*node, error) {
	root := sc.root
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
	if err := openAILimits(sc); err != nil {
		return nil, err
	}
	c := &openAIConverter{Schema: sc, underAnyOf: map[string]bool{}, reached: map[string]struct{}{}}
	c.markUnderAnyOf(root, false)
	typed := root
	if names == nil {
		// Tool arguments are an object whatever the root says.
		typed = typedObject(root)
	}
	return c.schema(typed, "", false)
}

// openAILimits refuses a schema past what Structured Outputs takes: objects
// nested deeper than 10 (through references too), more than 1,000 enum
// values in all, a long enum spelled in more than 15,000 characters, and
// numbers no float64 holds.
func openAILimits(sc *Schema) error {
	enumValues := 0
	var err error
	var visit func(s *node, path string, depth int)
	visit = func(s *node, path string, depth int) {
		if err != nil || s == nil || !s.object || depth > maxDepth {
			return
		}
		for i, key := range s.keys {
			if holdsSchemas(key) || key == "description" || key == "title" || key == "default" || key == "examples" || key == "$comment" {
				continue
			}
			if !finite(s.values[i]) {
				err = notStrict(path, "%s holds a number no float64 holds", key)
				return
			}
		}
		if e := s.get("enum"); e != nil && e.array {
			enumValues += len(e.items)
			if enumValues > openAIMaxEnumValues {
				err = notStrict(path, "more than %d enum values in all, more than strict mode takes", openAIMaxEnumValues)
				return
			}
			if len(e.items) > openAIManyEnumValues {
				chars := 0
				for _, v := range e.items {
					if str, ok := v.str(); ok {
						chars += len([]rune(str))
					}
				}
				if chars > openAIMaxEnumChars {
					err = notStrict(path, "an enum of %d values spelled in %d characters, more than strict mode takes", len(e.items), chars)
					return
				}
			}
		}
		subschemas(s, func(_ string, sub *node, at ...string) { visit(sub, pointer(path, at...), depth+1) })
	}
	visit(sc.root, "", 0)
	if err != nil {
		return err
	}
	recursive := false
	depth := sc.objectDepth(sc.root, map[string]int{}, &recursive)
	switch {
	case recursive:
		return notStrict("", "a definition reaches itself, so how deep objects nest has no bound to check against strict mode's")
	case depth > openAIMaxObjectDepth:
		return notStrict("", "objects nest %d deep, through references too, more than the %d strict mode takes", depth, openAIMaxObjectDepth)
	}
	return nil
}

// finite reports a value holds no number outside float64's range.
func finite(v *node) bool {
	switch {
	case v.object:
		return !slices.ContainsFunc(v.values, func(n *node) bool { return !finite(n) })
	case v.array:
		return !slices.ContainsFunc(v.items, func(n *node) bool { return !finite(n) })
	case len(v.raw) > 0 && (v.raw[0] == '-' || (v.raw[0] >= '0' && v.raw[0] <= '9')):
		f, err := strconv.ParseFloat(string(v.raw), 64)
		return err == nil && !math.IsInf(f, 0)
	}
	return true
}

// objectDepth is how deeply objects nest in a schema, following
// references; recursive is set when a definition reaches itself, whose
// depth has no bound. memo holds each definition's depth (-1 while it is
// being measured).
func (sc *Schema) objectDepth(s *node, memo map[string]int, recursive *bool) int {
	if s == nil || !s.object {
		return 0
	}
	deepest := 0
	if ref, ok := s.get("$ref").str(); ok {
		if m, name, ok := defName(ref); ok {
			key := m + "/" + name
			d, seen := memo[key]
			switch {
			case !seen:
				memo[key] = -1
				d = sc.objectDepth(sc.definition(key), memo, recursive)
				memo[key] = d
			case d < 0:
				*recursive = true
				d = 0
			}
			deepest = max(deepest, d)
		}
	}
	subschemas(s, func(keyword string, sub *node, _ ...string) {
		if keyword != "$defs" && keyword != "definitions" {
			deepest = max(deepest, sc.objectDepth(sub, memo, recursive))
		}
	})
	if names, _ := typeNames(s); slices.Contains(names, "object") || s.has("properties") {
		return deepest + 1
	}
	return deepest
}

// markUnderAnyOf notes which definitions are reached from inside an
// anyOf: an optional property there is refused, since the null a strict
// model sends for it could not be told apart from a branch's value.
func (c *openAIConverter) markUnderAnyOf(s *node, inAnyOf bool) {
	if s == nil || !s.object {
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
				c.markUnderAnyOf(c.definition(key), inAnyOf)
			}
		}
	}
	subschemas(s, func(keyword string, sub *node, _ ...string) {
		if keyword != "$defs" && keyword != "definitions" {
			c.markUnderAnyOf(sub, inAnyOf || keyword == "anyOf")
		}
	})
}

// schema rewrites one schema.
func (c *openAIConverter) schema(s *node, path string, inAnyOf bool) (*node, error) {
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
	if isObject {
		for _, key := range []string{"anyOf", "enum", "const"} {
			if s.has(key) {
				return nil, notStrict(path, "an object with %s beside its properties, which closing the object would change", key)
			}
		}
	}
	for _, key := range []string{"enum", "const"} {
		if v := s.get(key); v != nil && (isComposite(v) && key == "const" || v.array && slices.ContainsFunc(v.items, isComposite)) {
			return nil, notStrict(path, "%s holds an object or a list, which strict mode does not take", key)
		}
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
			item, err := c.schema(v, pointer(path, "items"), inAnyOf)
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
				converted, err := c.schema(b, pointer(path, "anyOf", strconv.Itoa(j)), true)
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
		if err := c.object(s, out, path, inAnyOf); err != nil {
			return nil, err
		}
	}
	if slices.Contains(names, "array") && !s.has("items") {
		return nil, notStrict(path, "an array that does not say what its items are")
	}
	describe(out, movedKeys, moved)
	return out, nil
}

// reference rewrites a schema that is a reference to a definition. One
// with nothing beside it stays a reference; strict mode refuses keywords
// beside a reference, so one with a description or a title beside it (as
// pydantic writes a documented field) becomes a union of the reference
// alone, which carries them: the shape the Agents SDK gives a nullable
// reference, without copying the definition.
func (c *openAIConverter) reference(s, ref *node, path string) (*node, error) {
	target, _ := ref.str()
	if _, _, ok := defName(target); !ok || c.resolve(s) == nil {
		return nil, notStrict(path, "$ref %q is not a reference to one of the schema's own definitions", target)
	}
	out := &node{object: true}
	for i, key := range s.keys {
		switch {
		case key == "$ref", slices.Contains(annotationsDropped, key):
		case key == "description", key == "title":
			out.add(key, s.rawKeys[i], s.values[i].clone())
		default:
			return nil, notStrict(path, "%s beside $ref", key)
		}
	}
	only := object("$ref", ref.clone())
	if len(out.keys) == 0 {
		return only, nil
	}
	out.set("anyOf", &node{array: true, items: []*node{only}})
	return out, nil
}

// definitions rewrites the root's $defs (or definitions).
func (c *openAIConverter) definitions(mapKey string, defs *node) (*node, error) {
	if !defs.object {
		return nil, notStrict("/"+mapKey, "not a map of schemas")
	}
	out := &node{object: true}
	for i, name := range defs.keys {
		converted, err := c.schema(defs.values[i], pointer("", mapKey, name), c.underAnyOf[mapKey+"/"+name])
		if err != nil {
			return nil, err
		}
		out.add(name, defs.rawKeys[i], converted)
	}
	return out, nil
}

// object closes an object schema and makes each of its properties
// required, the optional ones nullable.
func (c *openAIConverter) object(s, out *node, path string, inAnyOf bool) error {
	if ap := s.get("additionalProperties"); ap != nil && !ap.isFalse() {
		return notStrict(path, "the object takes properties it does not declare (additionalProperties)")
	}
	props := s.get("properties")
	if props == nil {
		if !s.get("additionalProperties").isFalse() {
			return notStrict(path, "an object that declares no properties takes any, which a closed object would not")
		}
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
	isRequired := make(map[string]bool, len(required))
	for _, name := range required {
		isRequired[name] = true
	}
	converted := &node{object: true}
	for i, name := range props.keys {
		original := props.values[i]
		at := pointer(path, "properties", name)
		v, err := c.schema(original, at, inAnyOf)
		if err != nil {
			return err
		}
		if !isRequired[name] {
			switch {
			case inAnyOf:
				return notStrict(at, "an optional property inside a union (anyOf): a null sent for it could not be told from a value")
			case !c.mayBeNull(original):
				v = nullable(v)
			case !original.get("default").isNull():
				return notStrict(at, "an optional property that takes null too: a null sent for it could not be told from the property left out")
			}
		}
		converted.add(name, props.rawKeys[i], v)
	}
	out.set("properties", converted)
	requiredOut := &node{array: true}
	for i := range props.keys {
		raw := props.rawKeys[i]
		if raw == nil {
			requiredOut.items = append(requiredOut.items, strNode(props.keys[i]))
		} else {
			requiredOut.items = append(requiredOut.items, &node{raw: raw})
		}
	}
	out.set("required", requiredOut)
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
	if branches := s.get("anyOf"); branches != nil && branches.array && onlyAnnotations(s, "anyOf") {
		branches.items = append(branches.items, object("type", strNode("null")))
		return s
	}
	wrapper := &node{object: true}
	if d := s.get("description"); d != nil {
		wrapper.set("description", d)
		s.del("description")
	}
	wrapper.set("anyOf", &node{array: true, items: []*node{s, object("type", strNode("null"))}})
	return wrapper
}

// onlyAnnotations reports a schema has nothing but keyword, a description
// and a title.
func onlyAnnotations(s *node, keyword string) bool {
	for _, key := range s.keys {
		if key != keyword && key != "description" && key != "title" {
			return false
		}
	}
	return true
}
