package strictschema

import (
	"bytes"
)

// StripNulls drops from a tool call's arguments each null sent for an
// optional property whose schema does not take null: what a model in
// OpenAI's strict mode sends for an argument it leaves out, since there
// every property is required and the optional ones nullable. It follows
// properties, array items and references to the schema's definitions,
// not unions (the strict rewrite refuses optional properties in those),
// and takes time linear in the arguments' size. Every other byte of the
// arguments is kept as it was sent. Arguments it cannot read, and
// arguments with no such null, come back as they are; changed says
// whether any null was dropped.
func (sc *Schema) StripNulls(arguments []byte) (out []byte, changed bool) {
	if !bytes.Contains(arguments, []byte("null")) {
		return arguments, false
	}
	args, err := parse(arguments)
	if err != nil || !args.object {
		return arguments, false
	}
	if !sc.stripValue(sc.root, args, 0) {
		return arguments, false
	}
	return args.appendJSON(nil), true
}

func (sc *Schema) stripValue(s, v *node, depth int) (changed bool) {
	if depth > maxDepth {
		return false
	}
	if s = sc.resolve(s); s == nil || !s.object {
		return false
	}
	switch {
	case v.object:
		props := s.get("properties")
		if props == nil || !props.object {
			return false
		}
		isRequired := sc.required[s]
		var drop []bool
		for i, key := range v.keys {
			ps := props.get(key)
			switch {
			case ps == nil:
			case v.values[i].isNull() && !isRequired[key] && !sc.takesNull(ps):
				if drop == nil {
					drop = make([]bool, len(v.keys))
				}
				drop[i] = true
				changed = true
			case sc.stripValue(ps, v.values[i], depth+1):
				changed = true
			}
		}
		if drop != nil {
			v.keep(func(i int) bool { return !drop[i] })
		}
	case v.array:
		items := s.get("items")
		if items == nil || !items.object {
			return false
		}
		for _, item := range v.items {
			if sc.stripValue(items, item, depth+1) {
				changed = true
			}
		}
	}
	return changed
}

// takesNull is mayBeNull of a property's schema, as ParseSchema worked
// it out.
func (sc *Schema) takesNull(property *node) bool {
	if v, ok := sc.propertyNullable[property]; ok {
		return v
	}
	return sc.mayBeNull(property)
}
