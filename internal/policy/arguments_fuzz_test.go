package policy

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzDecodeArguments holds the policy's reading of arguments to
// encoding/json's: for every object encoding/json reads, decodeArguments
// reads the same values (whole numbers as ints, exactly), unless it
// refuses the object for a key given twice or keys that differ only in
// case; and it refuses whatever encoding/json does not read as an object.
func FuzzDecodeArguments(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a":1}`, `{"a":"x","b":[1,2.5,-3,1e3,true,false,null],"c":{"d":"\u00e9\n"}}`,
		`{"id":288230376151711745,"big":18446744073709551615,"bigger":1e400}`, `{"a":1,"a":2}`, `{"a":1,"A":2}`,
		`{"k":1,"\u212a":2}`, `{"a\u0000b":"\ud800"}`, "{\"a\xff\":1,\"a\xfe\":2}", ` { "a" : [ ] , "b" : { } } `,
		`[1]`, `"x"`, `{"a":}`, `{"a":1}x`, `{"a":1`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := decodeArguments(raw)
		var want map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		trimmed := bytes.TrimSpace(raw)
		wantErr := dec.Decode(&want) != nil || want == nil || len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0
		if len(trimmed) == 0 || string(trimmed) == "null" {
			wantErr, want = false, map[string]any{}
		}
		if len(trimmed) > MaxArgumentsSize {
			wantErr = true
		}
		switch {
		case wantErr && err == nil:
			t.Fatalf("%q: read %v, which encoding/json does not read as an object", raw, got)
		case wantErr:
			return
		case err != nil && !strings.Contains(err.Error(), "twice") && !strings.Contains(err.Error(), "differ only in case"):
			t.Fatalf("%q: refused (%v), which encoding/json reads as %v", raw, err, want)
		case err == nil && !reflect.DeepEqual(got, exact(want)):
			t.Fatalf("%q: read %#v, encoding/json %#v", raw, got, exact(want))
		}
	})
}

// exact is v with encoding/json's numbers as decodeArguments reads them.
func exact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = exact(e)
		}
	case []any:
		for i, e := range t {
			t[i] = exact(e)
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(string(t), 10, 64); err == nil {
			return u
		}
		f, _ := strconv.ParseFloat(string(t), 64)
		return f
	}
	return v
}
