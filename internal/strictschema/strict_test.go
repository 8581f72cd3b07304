package strictschema

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOpenAI(t *testing.T) {
	cases := []struct {
		name, in, want, reason string
	}{{
		name: "optional properties become required and nullable, objects close",
		in:   `{"type":"object","properties":{"city":{"type":"string","description":"City"},"days":{"type":"integer","minimum":1},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}`,
		want: `{"type":"object","properties":{"city":{"type":"string","description":"City"},"days":{"type":["integer","null"],"minimum":1},"unit":{"anyOf":[{"type":"string","enum":["c","f"]},{"type":"null"}]}},"required":["city","days","unit"],"additionalProperties":false}`,
	}, {
		name: "constraints the subset lacks move into the description; annotations go",
		in:   `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"url":{"type":"string","format":"uri","minLength":1,"description":"Page"},"n":{"type":"number","default":10}},"required":["url","n"],"additionalProperties":false}`,
		want: `{"type":"object","properties":{"url":{"type":"string","description":"Page\n\n{format: \"uri\", minLength: 1}"},"n":{"type":"number","description":"{default: 10}"}},"required":["url","n"],"additionalProperties":false}`,
	}, {
		name: "an optional property that takes null and defaults to it stays nullable",
		in:   `{"type":"object","properties":{"q":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null}}}`,
		want: `{"type":"object","properties":{"q":{"anyOf":[{"type":"string"},{"type":"null"}]}},"required":["q"],"additionalProperties":false}`,
	}, {
		name: "an empty object schema takes no arguments",
		in:   `{"type":"object"}`,
		want: `{"type":"object","properties":{},"required":[],"additionalProperties":false}`,
	}, {
		name: "a root without a type is an object",
		in:   `{"properties":{"a":{"type":"boolean"}},"required":["a"]}`,
		want: `{"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"],"additionalProperties":false}`,
	}, {
		name: "references to definitions are kept and their objects closed",
		in:   `{"type":"object","properties":{"p":{"$ref":"#/$defs/Point","description":"Where"}},"$defs":{"Point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x"]}}}`,
		want: `{"type":"object","properties":{"p":{"description":"Where","anyOf":[{"$ref":"#/$defs/Point"},{"type":"null"}]}},"$defs":{"Point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":["number","null"]}},"required":["x","y"],"additionalProperties":false}},"required":["p"],"additionalProperties":false}`,
	}, {
		name:   "an open object",
		in:     `{"type":"object","properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}},"required":["env"]}`,
		reason: "at /properties/env: the object takes properties it does not declare (additionalProperties)",
	}, {
		name:   "an optional property that takes null without defaulting to it",
		in:     `{"type":"object","properties":{"q":{"type":["string","null"]}}}`,
		reason: "at /properties/q: an optional property that takes null too",
	}, {
		name:   "a value of any type",
		in:     `{"type":"object","properties":{"v":{"description":"anything"}},"required":["v"]}`,
		reason: "at /properties/v: the schema says no type",
	}, {
		name:   "oneOf",
		in:     `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"number"}]}},"required":["v"]}`,
		reason: "at /properties/v: oneOf has no strict equivalent",
	}, {
		name:   "an array of anything",
		in:     `{"type":"object","properties":{"v":{"type":"array"}},"required":["v"]}`,
		reason: "at /properties/v: an array that does not say what its items are",
	}, {
		name:   "an optional property inside a union",
		in:     `{"type":"object","properties":{"v":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"string"}]}},"required":["v"]}`,
		reason: "at /properties/v/anyOf/0/properties/a: an optional property inside a union",
	}, {
		name:   "an optional property of a definition used inside a union",
		in:     `{"type":"object","properties":{"v":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"string"}]}},"required":["v"],"$defs":{"A":{"type":"object","properties":{"a":{"type":"string"}}}}}`,
		reason: "at /$defs/A/properties/a: an optional property inside a union",
	}, {
		name:   "an optional property of a definition a definition uses inside a union",
		in:     `{"type":"object","properties":{"v":{"$ref":"#/$defs/A"}},"required":["v"],"$defs":{"A":{"type":"object","properties":{"w":{"anyOf":[{"$ref":"#/$defs/B"},{"type":"null"}]}},"required":["w"]},"B":{"type":"object","properties":{"b":{"type":"string"}}}}}`,
		reason: "at /$defs/B/properties/b: an optional property inside a union",
	}, {
		name:   "a root union",
		in:     `{"anyOf":[{"type":"object"}]}`,
		reason: "at /: the root is a union",
	}, {
		name:   "objects nested too deep",
		in:     nested(11),
		reason: "objects nest more than 10 deep",
	}, {
		name:   "a remote reference",
		in:     `{"type":"object","properties":{"v":{"$ref":"https://example.com/s.json"}},"required":["v"]}`,
		reason: `at /properties/v: $ref "https://example.com/s.json" is not a reference`,
	}, {
		name:   "a duplicate key",
		in:     `{"type":"object","type":"object"}`,
		reason: "the schema cannot be read: an object names a key twice",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Convert([]byte(tc.in), OpenAI)
			if tc.reason != "" {
				if got.Strict || !strings.Contains(got.Reason, tc.reason) || string(got.Schema) != tc.in {
					t.Fatalf("got strict=%v reason %q schema %s; want not strict, reason containing %q, the schema as it was", got.Strict, got.Reason, got.Schema, tc.reason)
				}
				return
			}
			if !got.Strict || string(got.Schema) != tc.want {
				t.Fatalf("got strict=%v (%s)\n%s\nwant\n%s", got.Strict, got.Reason, got.Schema, tc.want)
			}
			// The rewrite is a fixed point: rewriting it again changes nothing.
			if again := Convert(got.Schema, OpenAI); !again.Strict || canonical(t, again.Schema) != canonical(t, got.Schema) {
				t.Fatalf("rewriting the rewrite gave strict=%v (%s) %s", again.Strict, again.Reason, again.Schema)
			}
		})
	}
}

// canonical is JSON with its members in sorted order.
func canonical(t *testing.T, doc []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// nested is an object schema with objects depth levels deep.
func nested(depth int) string {
	s := `{"type":"string"}`
	for range depth {
		s = `{"type":"object","properties":{"a":` + s + `},"required":["a"]}`
	}
	return s
}

func TestNestingAtTheLimitIsStrict(t *testing.T) {
	if got := Convert([]byte(nested(10)), OpenAI); !got.Strict {
		t.Fatalf("10 levels: %s", got.Reason)
	}
}

func TestAnthropic(t *testing.T) {
	cases := []struct {
		name, in, want, reason string
	}{{
		name: "objects close, optional properties stay optional, the rest moves to the description",
		in:   `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"url":{"type":"string","format":"uri","maxLength":2048},"tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"minItems":2},"n":{"type":"integer","minimum":1,"default":5,"description":"How many"}},"required":["url"]}`,
		want: `{"type":"object","properties":{"url":{"type":"string","format":"uri","description":"{maxLength: 2048}"},"tags":{"type":"array","items":{"enum":["a","b"]},"description":"{minItems: 2}"},"n":{"type":"integer","description":"How many\n\n{minimum: 1, default: 5}"}},"additionalProperties":false,"required":["url"]}`,
	}, {
		name: "oneOf becomes anyOf; references keep only themselves",
		in:   `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"$ref":"#/$defs/N","description":"dropped"}]}},"$defs":{"N":{"type":"number"}}}`,
		want: `{"$defs":{"N":{"type":"number"}},"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/N"}]}},"additionalProperties":false}`,
	}, {
		name:   "an open object",
		in:     `{"type":"object","properties":{},"additionalProperties":true}`,
		reason: "at /: the object takes properties it does not declare (additionalProperties)",
	}, {
		name:   "recursion",
		in:     `{"type":"object","properties":{"t":{"$ref":"#/$defs/T"}},"$defs":{"T":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/T"}}}}}}`,
		reason: "at /$defs/T: a recursive definition",
	}, {
		name:   "a nullable object",
		in:     `{"type":"object","properties":{"o":{"type":["object","null"],"properties":{}}}}`,
		reason: "at /properties/o: a list of types with object or array in it",
	}, {
		name:   "no type",
		in:     `{"type":"object","properties":{"v":{}}}`,
		reason: "at /properties/v: the schema says no type",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Convert([]byte(tc.in), Anthropic)
			if tc.reason != "" {
				if got.Strict || !strings.Contains(got.Reason, tc.reason) {
					t.Fatalf("got strict=%v reason %q; want not strict, reason containing %q", got.Strict, got.Reason, tc.reason)
				}
				return
			}
			if !got.Strict || string(got.Schema) != tc.want {
				t.Fatalf("got strict=%v (%s)\n%s\nwant\n%s", got.Strict, got.Reason, got.Schema, tc.want)
			}
			if again := Convert(got.Schema, Anthropic); !again.Strict || canonical(t, again.Schema) != canonical(t, got.Schema) {
				t.Fatalf("rewriting the rewrite gave strict=%v (%s) %s", again.Strict, again.Reason, again.Schema)
			}
		})
	}
}

func TestStripNulls(t *testing.T) {
	schema := `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"q":{"type":["string","null"]},"p":{"$ref":"#/$defs/P"},"list":{"type":"array","items":{"$ref":"#/$defs/P"}}},"required":["city"],"$defs":{"P":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x"]}}}`
	cases := []struct{ in, want string }{
		// A null for an optional property that does not take null goes,
		// the order and spelling of the rest stay.
		{`{"city":"Oslo","days":null,"q":null}`, `{"city":"Oslo","q":null}`},
		// Inside referenced objects and array items too.
		{`{"city":"Oslo","p":{"x":1.50,"y":null},"list":[{"x":1,"y":null},{"x":2,"y":3}]}`, `{"city":"Oslo","p":{"x":1.50},"list":[{"x":1},{"x":2,"y":3}]}`},
		// A null for a required property is the caller's mistake, left for
		// validation to name; so is a null where the schema declares nothing.
		{`{"city":null,"other":null}`, `{"city":null,"other":null}`},
	}
	for _, tc := range cases {
		got, changed := StripNulls([]byte(schema), []byte(tc.in))
		if string(got) != tc.want || changed != (tc.in != tc.want) {
			t.Errorf("StripNulls(%s) = %s, %v; want %s", tc.in, got, changed, tc.want)
		}
	}
	// Arguments with no null are handed back without being read.
	in := []byte(`{"city":"Oslo"}`)
	if got, changed := StripNulls([]byte(schema), in); changed || &got[0] != &in[0] {
		t.Errorf("arguments without null were rewritten")
	}
}

func FuzzConvert(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"$ref":"#/$defs/B"}},"$defs":{"B":{"anyOf":[{"type":"number"},{"type":"null"}]}}}`))
	f.Add([]byte(nested(12)))
	f.Fuzz(func(t *testing.T, schema []byte) {
		for _, d := range []Dialect{OpenAI, Anthropic} {
			got := Convert(schema, d)
			if !got.Strict {
				continue
			}
			// A strict rewrite is valid JSON and rewrites to itself, as
			// the providers' helpers, which compare members in any order.
			if again := Convert(got.Schema, d); !again.Strict || canonical(t, again.Schema) != canonical(t, got.Schema) {
				t.Fatalf("%s: %s rewrote to %s, then to strict=%v %s (%s)", d, schema, got.Schema, again.Strict, again.Schema, again.Reason)
			}
		}
	})
}
