package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Member reads one member of a JSON object; nil when obj is not an object
// or lacks it.
func Member(obj json.RawMessage, key string) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) != nil {
		return nil
	}
	return fields[key]
}

// SetMember returns obj (an object, or empty or null for none) with key
// set to value and its other members kept. Member order is not kept: it
// is for requests and notifications, never for results whose bytes
// clients compare.
func SetMember(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if len(obj) > 0 {
		if err := json.Unmarshal(obj, &fields); err != nil {
			return nil, fmt.Errorf("reading params: %w", err)
		}
		if fields == nil { // obj was null
			fields = map[string]json.RawMessage{}
		}
	}
	fields[key] = value
	return Marshal(fields)
}

// Marshal encodes v without HTML escaping, so that text passes unchanged.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

const hexDigits = "0123456789abcdef"

// plain are the ASCII bytes a JSON string carries as they are.
var plain = func() (set [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		set[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return set
}()

// AppendString appends s quoted as encoding/json quotes a string: HTML's
// <, > and & escaped, control characters as \u00XX (or their short
// escapes), invalid UTF-8 as U+FFFD, and U+2028 and U+2029 escaped.
func AppendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if plain[b] {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '"', '\\':
				buf = append(buf, '\\', b)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
