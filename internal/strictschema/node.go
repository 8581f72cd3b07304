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
// were written and its scalars and keys byte for byte as written: a
// schema's property order is the order a model writes the arguments in,
// the catalog's output must not change between two renderings of one
// schema (ETags), and arguments that lose a null must keep every other
// byte (a string that is not valid UTF-8 included).
type node struct {
	// object members; set (possibly empty) when the value is an object.
	keys []string
	// rawKeys are the keys as written, where they were read; nil entries
	// (keys set here) are written as encoding/json writes them.
	rawKeys [][]byte
	values  []*node
	// index finds a member of an object of more than indexFrom members.
	index  map[string]int
	object bool
	// array elements; set (possibly empty) when the value is an array.
	items []*node
	array bool
	// raw is a scalar as written: a string, number, true, false or null.
	raw json.RawMessage
}

// indexFrom is how many members an object has before it is indexed:
// below it a scan is cheaper than a map.
const indexFrom = 16

// maxDepth bounds how deeply a schema or arguments nest before they are
// refused: a strict schema nests far less (OpenAI's limit is 10 object
// levels), and the bound keeps recursion on hostile input shallow.
const maxDepth = 128

var errDuplicateKey = errors.New("an object names a key twice")

type parser struct {
	data []byte
	dec  *json.Decoder
	// at is where the last token read ended.
	at int64
}

// parse decodes one JSON value, in order, in time linear in its size.
func parse(data []byte) (*node, error) {
	p := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the value")
	}
	return n, nil
}

// token reads the next token and the bytes it was written as.
func (p *parser) token() (json.Token, []byte, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, nil, err
	}
	end := p.dec.InputOffset()
	raw := bytes.TrimLeft(p.data[p.at:end], " \t\r\n:,")
	p.at = end
	return tok, raw, nil
}

func (p *parser) value(depth int) (*node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxDepth)
	}
	tok, raw, err := p.token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{object: true}
			for p.dec.More() {
				kt, rawKey, err := p.token()
				if err != nil {
					return nil, err
				}
				key := kt.(string)
				if n.has(key) {
					return nil, errDuplicateKey
				}
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.add(key, rawKey, v)
			}
			_, _, err := p.token()
			return n, err
		case '[':
			n := &node{array: true}
			for p.dec.More() {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
			_, _, err := p.token()
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return &node{raw: json.RawMessage(raw)}, nil
	}
}

// find is the position of an object's member, -1 when absent.
func (n *node) find(key string) int {
	if n == nil || !n.object {
		return -1
	}
	if n.index != nil {
		if i, ok := n.index[key]; ok {
			return i
		}
		return -1
	}
	return slices.Index(n.keys, key)
}

// get returns an object's member, nil when absent.
func (n *node) get(key string) *node {
	if i := n.find(key); i >= 0 {
		return n.values[i]
	}
	return nil
}

// has reports an object's member.
func (n *node) has(key string) bool { return n.find(key) >= 0 }

// add appends a member the object does not have.
func (n *node) add(key string, rawKey []byte, v *node) {
	n.keys = append(n.keys, key)
	n.rawKeys = append(n.rawKeys, rawKey)
	n.values = append(n.values, v)
	switch {
	case n.index != nil:
		n.index[key] = len(n.keys) - 1
	case len(n.keys) > indexFrom:
		n.reindex()
	}
}

func (n *node) reindex() {
	n.index = nil
	if len(n.keys) > indexFrom {
		n.index = make(map[string]int, len(n.keys))
		for i, k := range n.keys {
			n.index[k] = i
		}
	}
}

// set replaces an object's member, or appends it.
func (n *node) set(key string, v *node) {
	if i := n.find(key); i >= 0 {
		n.values[i] = v
		return
	}
	n.add(key, nil, v)
}

// keep keeps the members of an object keep says to, in one pass.
func (n *node) keep(keep func(i int) bool) {
	kept := 0
	for i := range n.keys {
		if keep(i) {
			n.keys[kept], n.rawKeys[kept], n.values[kept] = n.keys[i], n.rawKeys[i], n.values[i]
			kept++
		}
	}
	n.keys, n.rawKeys, n.values = n.keys[:kept], n.rawKeys[:kept], n.values[:kept]
	n.reindex()
}

// del removes an object's member.
func (n *node) del(key string) {
	if i := n.find(key); i >= 0 {
		n.keep(func(j int) bool { return j != i })
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

// shallow copies an object's member lists, sharing the members.
func (n *node) shallow() *node {
	c := &node{object: true, keys: slices.Clone(n.keys), rawKeys: slices.Clone(n.rawKeys), values: slices.Clone(n.values)}
	c.reindex()
	return c
}

// typedObject is an object schema with "type": "object" first, and its
// members after.
func typedObject(n *node) *node {
	c := &node{object: true}
	c.add("type", nil, strNode("object"))
	for i, k := range n.keys {
		c.add(k, n.rawKeys[i], n.values[i])
	}
	return c
}

// clone copies a value deeply.
func (n *node) clone() *node {
	if n == nil {
		return nil
	}
	c := &node{object: n.object, array: n.array, raw: n.raw}
	if n.object {
		c.keys = slices.Clone(n.keys)
		c.rawKeys = slices.Clone(n.rawKeys)
		c.values = make([]*node, len(n.values))
		for i, v := range n.values {
			c.values[i] = v.clone()
		}
		c.reindex()
	}
	if n.array {
		c.items = make([]*node, len(n.items))
		for i, v := range n.items {
			c.items[i] = v.clone()
		}
	}
	return c
}

// appendJSON appends a value as compact JSON, members in order, keys and
// scalars as they were written.
func (n *node) appendJSON(buf []byte) []byte {
	switch {
	case n.object:
		buf = append(buf, '{')
		for i, k := range n.keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			if i < len(n.rawKeys) && n.rawKeys[i] != nil {
				buf = append(buf, n.rawKeys[i]...)
			} else {
				kb, _ := json.Marshal(k)
				buf = append(buf, kb...)
			}
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
