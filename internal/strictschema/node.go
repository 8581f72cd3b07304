package strictschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// node is a JSON value that keeps its object members in the order they
// were written: a schema's property order is the order a model writes
// the arguments in, and the catalog's output must not change between two
// renderings of one schema (ETags).
type node struct {
	// object members; set (possibly empty) when the value is an object.
	keys   []string
	values []*node
	object bool
	// array elements; set (possibly empty) when the value is an array.
	items []*node
	array bool
	// raw is a scalar as written: a string, number, true, false or null.
	raw json.RawMessage
}

// maxDepth bounds how deeply a schema nests before it is refused: a
// strict schema nests far less (OpenAI's limit is 10 object levels), and
// the bound keeps recursion on hostile input shallow.
const maxDepth = 128

var errDuplicateKey = errors.New("an object names a key twice")

// parse decodes one JSON value, in order.
func parse(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the schema")
	}
	return n, nil
}

func parseValue(dec *json.Decoder, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{object: true}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key := kt.(string)
				if slices.Contains(n.keys, key) {
					return nil, errDuplicateKey
				}
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, key)
				n.values = append(n.values, v)
			}
			_, err := dec.Token()
			return n, err
		case '[':
			n := &node{array: true}
			for dec.More() {
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
			_, err := dec.Token()
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		raw, _ := json.Marshal(t)
		return &node{raw: raw}, nil
	case json.Number:
		return &node{raw: json.RawMessage(t)}, nil
	case bool:
		if t {
			return &node{raw: json.RawMessage("true")}, nil
		}
		return &node{raw: json.RawMessage("false")}, nil
	default:
		return &node{raw: json.RawMessage("null")}, nil
	}
}

// get returns an object's member, nil when absent.
func (n *node) get(key string) *node {
	if n == nil || !n.object {
		return nil
	}
	if i := slices.Index(n.keys, key); i >= 0 {
		return n.values[i]
	}
	return nil
}

// has reports an object's member.
func (n *node) has(key string) bool { return n.get(key) != nil }

// set replaces an object's member, or appends it.
func (n *node) set(key string, v *node) {
	if i := slices.Index(n.keys, key); i >= 0 {
		n.values[i] = v
		return
	}
	n.keys = append(n.keys, key)
	n.values = append(n.values, v)
}

// del removes an object's member.
func (n *node) del(key string) {
	if i := slices.Index(n.keys, key); i >= 0 {
		n.keys = slices.Delete(n.keys, i, i+1)
		n.values = slices.Delete(n.values, i, i+1)
	}
}

// str is a string scalar's value; ok is false for anything else.
func (n *node) str() (string, bool) {
	if n == nil || len(n.raw) == 0 || n.raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(n.raw, &s) != nil {
		return "", false
	}
	return s, true
}

func (n *node) isNull() bool  { return n != nil && string(n.raw) == "null" }
func (n *node) isFalse() bool { return n != nil && string(n.raw) == "false" }
func (n *node) isTrue() bool  { return n != nil && string(n.raw) == "true" }

func strNode(s string) *node {
	raw, _ := json.Marshal(s)
	return &node{raw: raw}
}

func stringList(ss ...string) *node {
	n := &node{array: true}
	for _, s := range ss {
		n.items = append(n.items, strNode(s))
	}
	return n
}

func object(pairs ...any) *node {
	n := &node{object: true}
	for i := 0; i+1 < len(pairs); i += 2 {
		n.set(pairs[i].(string), pairs[i+1].(*node))
	}
	return n
}

// clone copies a value deeply.
func (n *node) clone() *node {
	if n == nil {
		return nil
	}
	c := &node{object: n.object, array: n.array, raw: n.raw}
	if n.object {
		c.keys = slices.Clone(n.keys)
		c.values = make([]*node, len(n.values))
		for i, v := range n.values {
			c.values[i] = v.clone()
		}
	}
	if n.array {
		c.items = make([]*node, len(n.items))
		for i, v := range n.items {
			c.items[i] = v.clone()
		}
	}
	return c
}

// appendJSON appends a value as compact JSON, members in order.
func (n *node) appendJSON(buf []byte) []byte {
	switch {
	case n.object:
		buf = append(buf, '{')
		for i, k := range n.keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			kb, _ := json.Marshal(k)
			buf = append(buf, kb...)
			buf = append(buf, ':')
			buf = n.values[i].appendJSON(buf)
		}
		return append(buf, '}')
	case n.array:
		buf = append(buf, '[')
		for i, v := range n.items {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = v.appendJSON(buf)
		}
		return append(buf, ']')
	default:
		return append(buf, n.raw...)
	}
}

// text is a value as JavaScript's JSON.stringify writes it (no HTML
// escaping), for the descriptions constraints are moved into.
func (n *node) text() string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(json.RawMessage(n.appendJSON(nil)))
	return string(bytes.TrimRight(buf.Bytes(), "\n"))
}
