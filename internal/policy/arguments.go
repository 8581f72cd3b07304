package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// decodeArguments decodes a call's arguments as the expressions read them:
// a JSON object, absent or null read as {}. Whole numbers that fit 64
// bits are ints (an id of 2^58+1 stays itself), other numbers doubles.
//
// The server is sent the arguments as the caller wrote them, so they must
// mean to it what they meant to the policy: arguments another JSON reader
// could read otherwise are refused (an error, which counts against the
// caller), namely a key given twice in one object (readers keep the first
// or the last), and two keys that differ only in case (Go's encoding/json
// fills a struct field from either). Arguments over MaxArgumentsSize are
// not read, so that no evaluation costs more than its estimate.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	if len(raw) > MaxArgumentsSize {
		return nil, fmt.Errorf("the arguments are over %d bytes, more than a policy reads", MaxArgumentsSize)
	}
	// json.Valid holds the grammar (and encoding/json's nesting limit),
	// so that the parser below need not.
	if raw[0] != '{' || !json.Valid(raw) {
		return nil, errors.New("the arguments are not a JSON object")
	}
	p := parser{raw: raw}
	args, err := p.object()
	if err != nil {
		return nil, err
	}
	return args, nil
}

// parser reads valid JSON into the values CEL takes: maps, lists,
// strings, int64 (uint64 past it), float64, bool and nil. It is a quarter
// of what encoding/json's decoding into interfaces costs, and checks the
// keys of each object as it reads them.
type parser struct {
	raw []byte
	i   int
}

func (p *parser) space() {
	for p.i < len(p.raw) {
		switch p.raw[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value() (any, error) {
	p.space()
	switch p.raw[p.i] {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		return p.string(), nil
	case 't':
		p.i += len("true")
		return true, nil
	case 'f':
		p.i += len("false")
		return false, nil
	case 'n':
		p.i += len("null")
		return nil, nil
	}
	return p.number(), nil
}

func (p *parser) object() (map[string]any, error) {
	p.i++ // {
	object := map[string]any{}
	var keys level
	for {
		p.space()
		if p.raw[p.i] == '}' {
			p.i++
			return object, nil
		}
		if p.raw[p.i] == ',' {
			p.i++
			p.space()
		}
		key := p.string()
		if err := keys.add(key); err != nil {
			return nil, err
		}
		p.space()
		p.i++ // :
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		object[key] = v
	}
}

func (p *parser) array() ([]any, error) {
	p.i++ // [
	list := []any{}
	for {
		p.space()
		switch p.raw[p.i] {
		case ']':
			p.i++
			return list, nil
		case ',':
			p.i++
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
}

// string reads a string as encoding/json does: escapes undone, and bytes
// that are not UTF-8 replaced, so that two keys a Go server reads alike
// are alike here.
func (p *parser) string() string {
	start := p.i
	plain := true
	p.i++
	for ; p.raw[p.i] != '"'; p.i++ {
		switch c := p.raw[p.i]; {
		case c == '\\':
			plain = false
			p.i++
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	p.i++
	if plain {
		return string(p.raw[start+1 : p.i-1])
	}
	var s string
	_ = json.Unmarshal(p.raw[start:p.i], &s)
	return s
}

// number reads a whole number that fits 64 bits as an int64 (a uint64
// past it), any other as a float64.
func (p *parser) number() any {
	start := p.i
	for p.i < len(p.raw) && strings.IndexByte("+-0123456789.eE", p.raw[p.i]) >= 0 {
		p.i++
	}
	token := string(p.raw[start:p.i])
	if i, err := strconv.ParseInt(token, 10, 64); err == nil {
		return i
	}
	if u, err := strconv.ParseUint(token, 10, 64); err == nil {
		return u
	}
	f, _ := strconv.ParseFloat(token, 64)
	return f
}

// level is the keys of an object the parser is in: add refuses a key
// given twice, or two that differ only in case (as strings.EqualFold and
// encoding/json compare them).
type level struct {
	// keys are the object's keys so far; past a few, folded holds them by
	// foldKey, so that an object of many keys costs a map lookup a key
	// rather than a comparison with every other.
	keys   []string
	folded map[string]string
}

// manyKeys is how many keys an object has before they are looked up in
// a map.
const manyKeys = 16

// add adds an object's key, unless it is ambiguous.
func (l *level) add(key string) error {
	ambiguous := func(other string) error {
		if other == key {
			return fmt.Errorf("the arguments give the key %q twice", key)
		}
		return fmt.Errorf("the arguments give the keys %q and %q, which differ only in case", other, key)
	}
	if l.folded != nil {
		fold := foldKey(key)
		if other, ok := l.folded[fold]; ok {
			return ambiguous(other)
		}
		l.folded[fold] = key
		return nil
	}
	for _, other := range l.keys {
		if strings.EqualFold(other, key) {
			return ambiguous(other)
		}
	}
	l.keys = append(l.keys, key)
	if len(l.keys) == manyKeys {
		l.folded = make(map[string]string, 2*manyKeys)
		for _, k := range l.keys {
			l.folded[foldKey(k)] = k
		}
	}
	return nil
}

// foldKey is a key with every letter replaced by the smallest of its case
// variants (as unicode.SimpleFold orders them): two keys have the same
// foldKey exactly when strings.EqualFold says they are equal.
func foldKey(key string) string {
	var b strings.Builder
	for _, r := range key {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}
