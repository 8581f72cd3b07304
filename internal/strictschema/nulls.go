package strictschema

import (
	"bytes"
	"slices"
)

// StripNulls drops from a tool call's arguments each null sent for an
// optional property whose schema does not take null: what a model in
// OpenAI's strict mode sends for an argument it leaves out, since there
// every property is required and the optional ones nullable. It follows
// properties, array items and references to the schema's definitions,
// not unions (the strict rewrite refuses optional properties in those).
// Arguments it cannot read, and arguments with no such null, come back
// as they are; changed says whether any null was dropped.
func StripNulls(schema, arguments []byte) (out []byte, changed bool) {
	if !bytes.Contains(arguments, []byte("null")) {
		return arguments, false
	}
	root, err := parse(schema)
	if err != nil {
		return arguments, false
	}
	args, err := parse(arguments)
	if err != nil || !args.object {
		return arguments, false
	}
	if !stripValue(root, root, args, 0) {
		return arguments, false
	}
	return args.appendJSON(nil), true
}

func stripValue(root, s, v *node, depth int) (changed bool) {
	if depth > maxDepth {
		return false
	}
	if s = resolve(root, s); s == nil || !s.object {
		return false
	}
	switch {
	case v.object:
		props := s.get("properties")
		if props == nil || !props.object {
			return false
		}
		required, _ := requiredNames(s, "")
		for i := 0; i < len(v.keys); i++ {
			key := v.keys[i]
			ps := props.get(key)
			if ps == nil {
				continue
			}
			if v.values[i].isNull() && !slices.Contains(required, key) && !mayBeNull(root, ps) {
				v.del(key)
				i--
				changed = true
				continue
			}
			if stripValue(root, ps, v.values[i], depth+1) {
				changed = true
			}
		}
	case v.array:
		items := s.get("items")
		if items == nil || !items.object {
			return false
		}
		for _, item := range v.items {
			if stripValue(root, items, item, depth+1) {
				changed = true
			}
		}
	}
	return changed
}
