package strictschema

import (
	"slices"
	"strconv"
)

// anthropicFormats are the string formats Anthropic's strict mode takes.
var anthropicFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}

// convertAnthropic rewrites a schema as the Anthropic SDK's
// transformJSONSchema does (src/lib/transform-json-schema.ts in
// @anthropic-ai/sdk 1.10.0), refusing what that would make lossy:
// closing an object that is open, a type list its objects or arrays
// would be turned into text by, recursion, which strict tool use does not
// take, and references it does not follow.
func convertAnthropic(sc *Schema) (*node, error) {
	root := sc.root
	if !root.object {
		return nil, notStrict("", "the schema is not an object schema")
	}
	names, ok := typeNames(root)
	if !ok || (names != nil && !slices.Equal(names, []string{"object"})) {
		return nil, notStrict("", "the root's type is not object")
	}
	if err := checkReferences(sc); err != nil {
		return nil, err
	}
	typed := root
	if names == nil {
		typed = typedObject(root)
	}
	return anthropicSchema(typed, "")
}

func anthropicSchema(s *node, path string) (*node, error) {
	if !s.object {
		return nil, notStrict(path, "the schema is not an object schema")
	}
	// work is what is left to place; what is left at the end goes into
	// the description.
	work := s.shallow()
	pop := func(key string) *node {
		v := work.get(key)
		work.del(key)
		return v
	}
	if names, _ := typeNames(s); slices.Contains(names, "object") || s.has("properties") {
		for _, key := range []string{"anyOf", "oneOf", "allOf", "enum", "const"} {
			if s.has(key) {
				return nil, notStrict(path, "an object with %s beside its properties, which closing the object would change", key)
			}
		}
	}
	if allOf := s.get("allOf"); allOf != nil && allOf.array && len(allOf.items) > 1 {
		return nil, notStrict(path, "an intersection (allOf) of more than one schema, whose objects strict mode would close one by one")
	}
	out := &node{object: true}
	if defs := pop("$defs"); defs != nil {
		if !defs.object {
			return nil, notStrict(path, "$defs is not a map of schemas")
		}
		converted := &node{object: true}
		for i, name := range defs.keys {
			v, err := anthropicSchema(defs.values[i], pointer(path, "$defs", name))
			if err != nil {
				return nil, err
			}
			converted.add(name, defs.rawKeys[i], v)
		}
		out.set("$defs", converted)
	}
	if ref := pop("$ref"); ref != nil {
		out.set("$ref", ref.clone())
		return out, nil
	}
	if e := work.get("enum"); e != nil && e.array && len(e.items) > 0 && !slices.ContainsFunc(e.items, isComposite) {
		out.set("enum", pop("enum").clone())
	}
	if c := work.get("const"); c != nil && !isComposite(c) {
		out.set("const", pop("const").clone())
	}
	hasLiterals := out.has("enum") || out.has("const")
	declared := pop("type")
	var typ *node
	if !hasLiterals {
		typ = declared
	}
	anyOf, oneOf, allOf := pop("anyOf"), pop("oneOf"), pop("allOf")
	pop("$schema")
	for _, union := range []*node{anyOf, oneOf, allOf} {
		if union != nil && !union.array {
			return nil, notStrict(path, "a union or intersection that is not a list of schemas")
		}
	}
	switch {
	case anyOf != nil:
		branches, err := anthropicBranches(anyOf, pointer(path, "anyOf"))
		if err != nil {
			return nil, err
		}
		out.set("anyOf", branches)
	case oneOf != nil:
		branches, err := anthropicBranches(oneOf, pointer(path, "oneOf"))
		if err != nil {
			return nil, err
		}
		out.set("anyOf", branches)
	case allOf != nil:
		branches, err := anthropicBranches(allOf, pointer(path, "allOf"))
		if err != nil {
			return nil, err
		}
		out.set("allOf", branches)
	case !hasLiterals:
		if typ == nil {
			return nil, notStrict(path, "the schema says no type, so it takes a value of any type")
		}
		out.set("type", typ.clone())
	}
	if d := pop("description"); d != nil {
		out.set("description", d.clone())
	}
	if t := pop("title"); t != nil {
		out.set("title", t.clone())
	}
	name, _ := typ.str()
	if typ != nil && typ.array && slices.ContainsFunc(typ.items, func(n *node) bool {
		t, _ := n.str()
		return t == "object" || t == "array"
	}) {
		return nil, notStrict(path, "a list of types with object or array in it, whose properties or items strict mode would not keep")
	}
	switch name {
	case "object":
		if err := anthropicObject(work, out, path, pop); err != nil {
			return nil, err
		}
	case "string":
		if f := pop("format"); f != nil {
			if fs, _ := f.str(); slices.Contains(anthropicFormats, fs) {
				out.set("format", f.clone())
			} else {
				work.set("format", f)
			}
		}
	case "array":
		if items := pop("items"); items != nil {
			if items.array {
				return nil, notStrict(path, "items is a tuple, which strict mode does not take")
			}
			v, err := anthropicSchema(items, pointer(path, "items"))
			if err != nil {
				return nil, err
			}
			out.set("items", v)
		}
		if m := pop("minItems"); m != nil {
			if f, err := strconv.ParseFloat(string(m.raw), 64); err == nil && (f == 0 || f == 1) {
				out.set("minItems", m.clone())
			} else {
				work.set("minItems", m)
			}
		}
	}
	for _, key := range []string{"properties", "items", "additionalProperties", "patternProperties"} {
		if work.has(key) {
			return nil, notStrict(path, "%s where the schema's type does not let strict mode keep it", key)
		}
	}
	describe(out, work.keys, work.values)
	return out, nil
}

// anthropicObject closes an object schema, keeping its required list.
func anthropicObject(work, out *node, path string, pop func(string) *node) error {
	if work.has("patternProperties") {
		return notStrict(path, "the object takes properties it does not declare (patternProperties)")
	}
	props := pop("properties")
	if props == nil {
		if !work.get("additionalProperties").isFalse() {
			return notStrict(path, "an object that declares no properties takes any, which a closed object would not")
		}
		props = &node{object: true}
	}
	if !props.object {
		return notStrict(path, "properties is not a map of schemas")
	}
	converted := &node{object: true}
	for i, name := range props.keys {
		v, err := anthropicSchema(props.values[i], pointer(path, "properties", name))
		if err != nil {
			return err
		}
		converted.add(name, props.rawKeys[i], v)
	}
	out.set("properties", converted)
	if ap := pop("additionalProperties"); ap != nil && !ap.isFalse() {
		return notStrict(path, "the object takes properties it does not declare (additionalProperties)")
	}
	out.set("additionalProperties", &node{raw: []byte("false")})
	if r := pop("required"); r != nil {
		out.set("required", r.clone())
	}
	return nil
}

func anthropicBranches(list *node, path string) (*node, error) {
	out := &node{array: true}
	for i, b := range list.items {
		v, err := anthropicSchema(b, pointer(path, strconv.Itoa(i)))
		if err != nil {
			return nil, err
		}
		out.items = append(out.items, v)
	}
	return out, nil
}

// checkReferences refuses references other than to the root's $defs, and
// definitions that reach themselves: strict tool use takes no recursion.
func checkReferences(sc *Schema) error {
	refs := map[string][]string{}
	var bad error
	var collect func(s *node, from, path string, depth int)
	collect = func(s *node, from, path string, depth int) {
		if s == nil || !s.object || bad != nil || depth > maxDepth {
			return
		}
		if ref := s.get("$ref"); ref != nil {
			r, _ := ref.str()
			m, name, ok := defName(r)
			if !ok || m != "$defs" || sc.root.get("$defs").get(name) == nil {
				bad = notStrict(path, "$ref %q is not a reference to one of the schema's own $defs", r)
				return
			}
			refs[from] = append(refs[from], name)
		}
		subschemas(s, func(keyword string, sub *node, at ...string) {
			if keyword != "$defs" && keyword != "definitions" {
				collect(sub, from, pointer(path, at...), depth+1)
			}
		})
	}
	collect(sc.root, "", "", 0)
	defs := sc.root.get("$defs")
	if defs != nil && defs.object {
		for i, name := range defs.keys {
			collect(defs.values[i], name, pointer("", "$defs", name), 1)
		}
	}
	if bad != nil {
		return bad
	}
	// A definition on a cycle of references is recursive.
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var visit func(name string) bool
	visit = func(name string) bool {
		switch state[name] {
		case active:
			return true
		case done:
			return false
		}
		state[name] = active
		for _, next := range refs[name] {
			if visit(next) {
				return true
			}
		}
		state[name] = done
		return false
	}
	if defs != nil && defs.object {
		for _, name := range defs.keys {
			if visit(name) {
				return notStrict(pointer("", "$defs", name), "a recursive definition, which strict tool use does not take")
			}
		}
	}
	return nil
}
