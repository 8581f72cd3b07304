package strictschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
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
		name: "an object that declares it has no properties takes no arguments",
		in:   `{"type":"object","properties":{}}`,
		want: `{"type":"object","properties":{},"required":[],"additionalProperties":false}`,
	}, {
		name: "a root without a type is an object",
		in:   `{"properties":{"a":{"type":"boolean"}},"required":["a"]}`,
		want: `{"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"],"additionalProperties":false}`,
	}, {
		name: "references to definitions are kept and their objects closed",
		in:   `{"type":"object","properties":{"p":{"$ref":"#/$defs/Point"},"q":{"$ref":"#/$defs/Point"}},"required":["q"],"$defs":{"Point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x"]}}}`,
		want: `{"type":"object","properties":{"p":{"anyOf":[{"$ref":"#/$defs/Point"},{"type":"null"}]},"q":{"$ref":"#/$defs/Point"}},"required":["p","q"],"$defs":{"Point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":["number","null"]}},"required":["x","y"],"additionalProperties":false}},"additionalProperties":false}`,
	}, {
		name: "a reference with a description beside it, which strict mode refuses, becomes a union of the reference",
		in:   `{"type":"object","properties":{"p":{"$ref":"#/$defs/Unit","description":"Which unit"},"q":{"$ref":"#/$defs/Unit","description":"Or this"}},"required":["p"],"$defs":{"Unit":{"type":"string","enum":["c","f"],"title":"Unit"}}}`,
		want: `{"type":"object","properties":{"p":{"description":"Which unit","anyOf":[{"$ref":"#/$defs/Unit"}]},"q":{"description":"Or this","anyOf":[{"$ref":"#/$defs/Unit"},{"type":"null"}]}},"required":["p","q"],"$defs":{"Unit":{"type":"string","enum":["c","f"],"title":"Unit"}},"additionalProperties":false}`,
	}, {
		name:   "a recursive definition",
		in:     `{"type":"object","properties":{"t":{"$ref":"#/$defs/T"}},"required":["t"],"$defs":{"T":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/T"}}},"required":["kids"]}}}`,
		reason: "a definition reaches itself",
	}, {
		name: "keys and strings as written",
		in:   `{"type":"object","properties":{"caf\u00e9":{"type":"string","description":"<b>\ud83d\ude00</b>"}},"required":["caf\u00e9"]}`,
		want: `{"type":"object","properties":{"caf\u00e9":{"type":"string","description":"<b>\ud83d\ude00</b>"}},"required":["caf\u00e9"],"additionalProperties":false}`,
	}, {
		name: "definitions that share references are read once each",
		in:   sharedReferences(9),
		want: "",
	}, {
		name:   "an open object",
		in:     `{"type":"object","properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}},"required":["env"]}`,
		reason: "at /properties/env: the object takes properties it does not declare (additionalProperties)",
	}, {
		name:   "an object that declares no properties",
		in:     `{"type":"object","properties":{"headers":{"type":"object"}},"required":["headers"]}`,
		reason: "at /properties/headers: an object that declares no properties takes any",
	}, {
		name:   "a root that declares no properties",
		in:     `{"type":"object"}`,
		reason: "at /: an object that declares no properties takes any",
	}, {
		name:   "an object beside a union",
		in:     `{"type":"object","properties":{"x":{"type":"object","anyOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"string"}},"required":["b"]}]}},"required":["x"]}`,
		reason: "at /properties/x: an object with anyOf beside its properties",
	}, {
		name:   "an enum of objects",
		in:     `{"type":"object","properties":{"o":{"enum":[{"a":1}]}},"required":["o"]}`,
		reason: "at /properties/o: enum holds an object or a list",
	}, {
		name:   "more than 1,000 enum values in all",
		in:     `{"type":"object","properties":{"a":{"type":"integer","enum":` + numbers(600) + `},"b":{"type":"integer","enum":` + numbers(600) + `}},"required":["a","b"]}`,
		reason: "more than 1000 enum values in all",
	}, {
		name:   "objects nested too deep through a reference",
		in:     `{"type":"object","properties":{"d":{"$ref":"#/$defs/D"}},"required":["d"],"$defs":{"D":` + nested(10) + `}}`,
		reason: "objects nest 11 deep, through references too",
	}, {
		name:   "a number no float64 holds",
		in:     `{"type":"object","properties":{"n":{"type":"number","maximum":1e400}},"required":["n"]}`,
		reason: "at /properties/n: maximum holds a number no float64 holds",
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
		reason: "objects nest 11 deep",
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
			if !got.Strict || (tc.want != "" && string(got.Schema) != tc.want) {
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

// numbers is a JSON list of n numbers.
func numbers(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	return b.String() + "]"
}

// sharedReferences is a schema of levels definitions, each a union of
// eight references to the next: read naively, 8^levels paths.
func sharedReferences(levels int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"p":{"$ref":"#/$defs/D0"}},"$defs":{`)
	for i := range levels {
		fmt.Fprintf(&b, `"D%d":{"anyOf":[`, i)
		for j := range 8 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"$ref":"#/$defs/D%d"}`, i+1)
		}
		b.WriteString(`]},`)
	}
	fmt.Fprintf(&b, `"D%d":{"type":"string"}}}`, levels)
	return b.String()
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
		name: "a property named $ref is a property",
		in:   `{"type":"object","properties":{"$ref":{"type":"string"}},"required":["$ref"]}`,
		want: `{"type":"object","properties":{"$ref":{"type":"string"}},"additionalProperties":false,"required":["$ref"]}`,
	}, {
		name:   "an intersection of objects",
		in:     `{"type":"object","properties":{"o":{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"string"}}}]}}}`,
		reason: "at /properties/o: an intersection (allOf) of more than one schema",
	}, {
		name:   "an object beside a union",
		in:     `{"type":"object","properties":{"x":{"type":"object","anyOf":[{"properties":{"a":{"type":"string"}}}]}}}`,
		reason: "at /properties/x: an object with anyOf beside its properties",
	}, {
		name:   "an object that declares no properties",
		in:     `{"type":"object","properties":{"h":{"type":"object"}}}`,
		reason: "at /properties/h: an object that declares no properties takes any",
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
	schema := mustParse(t, `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"q":{"type":["string","null"]},"p":{"$ref":"#/$defs/P"},"list":{"type":"array","items":{"$ref":"#/$defs/P"}},"s":{"type":"string"}},"required":["city"],"$defs":{"P":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x"]}}}`)
	cases := []struct{ in, want string }{
		// A null for an optional property that does not take null goes,
		// the order and spelling of the rest stay.
		{`{"city":"Oslo","days":null,"q":null}`, `{"city":"Oslo","q":null}`},
		// Inside referenced objects and array items too.
		{`{"city":"Oslo","p":{"x":1.50,"y":null},"list":[{"x":1,"y":null},{"x":2,"y":3}]}`, `{"city":"Oslo","p":{"x":1.50},"list":[{"x":1},{"x":2,"y":3}]}`},
		// A null for a required property is the caller's mistake, left for
		// validation to name; so is a null where the schema declares nothing.
		{`{"city":null,"other":null}`, `{"city":null,"other":null}`},
		// Every other byte as sent: escapes, a lone surrogate, bytes that
		// are not UTF-8, HTML characters, numbers as spelled.
		{"{\"city\":\"\\ud800x <&> \xff\xfe\",\"days\":null,\"p\":{\"x\":1.0e+400},\"s\":\"\\u00e9\"}", "{\"city\":\"\\ud800x <&> \xff\xfe\",\"p\":{\"x\":1.0e+400},\"s\":\"\\u00e9\"}"},
	}
	for _, tc := range cases {
		got, changed := schema.StripNulls([]byte(tc.in))
		if string(got) != tc.want || changed != (tc.in != tc.want) {
			t.Errorf("StripNulls(%s) = %s, %v; want %s", tc.in, got, changed, tc.want)
		}
	}
	// Arguments with no null are handed back without being read.
	in := []byte(`{"city":"Oslo"}`)
	if got, changed := schema.StripNulls(in); changed || &got[0] != &in[0] {
		t.Errorf("arguments without null were rewritten")
	}
}

// Wide arguments and wide schemas are read in linear time: at quadratic
// cost these would take minutes.
func TestWideInputs(t *testing.T) {
	const n = 200000
	var props, args strings.Builder
	props.WriteString(`{"type":"object","properties":{`)
	args.WriteString(`{`)
	for i := range n {
		if i > 0 {
			props.WriteByte(',')
			args.WriteByte(',')
		}
		fmt.Fprintf(&props, `"p%d":{"type":"string"}`, i)
		if i%2 == 0 {
			fmt.Fprintf(&args, `"p%d":null`, i)
		} else {
			fmt.Fprintf(&args, `"p%d":"v"`, i)
		}
	}
	props.WriteString(`}}`)
	args.WriteString(`}`)
	schema := mustParse(t, props.String())
	got, changed := schema.StripNulls([]byte(args.String()))
	if !changed || strings.Contains(string(got), "null") || !strings.Contains(string(got), `"p199999":"v"`) {
		t.Fatalf("the nulls of wide arguments were not all dropped")
	}
	if r := Convert([]byte(props.String()), Anthropic); !r.Strict {
		t.Fatalf("a wide schema: %s", r.Reason)
	}
	if r := Convert([]byte(props.String()), OpenAI); r.Strict || !strings.Contains(r.Reason, "more than 5000 properties") {
		t.Fatalf("a schema wider than OpenAI takes was served strict=%v (%s)", r.Strict, r.Reason)
	}
}

func mustParse(t testing.TB, schema string) *Schema {
	t.Helper()
	sc, err := ParseSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// FuzzConvert: a strict rewrite loses nothing the tool accepts. Whatever
// instance the original schema accepts with no property its objects do
// not declare (an object that declares its properties takes no others:
// the one convention a rewrite assumes), the rewrite accepts too (for
// OpenAI with a null for each optional property left out, as a strict
// model writes it), and StripNulls turns that back into arguments the
// original accepts. A rewrite is also a fixed point of itself.
func FuzzConvert(f *testing.F) {
	for _, seed := range []struct{ schema, instance string }{
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"$ref":"#/$defs/B"}},"$defs":{"B":{"anyOf":[{"type":"number"},{"type":"null"}]}}}`, `{"a":"x"}`},
		{`{"type":"object","properties":{"p":{"$ref":"#/$defs/P"},"n":{"type":"integer","minimum":1}},"required":["n"],"$defs":{"P":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"string","enum":["a","b"]}},"required":["x"]}}}`, `{"n":2,"p":{"x":1}}`},
		{`{"type":"object","properties":{"h":{"type":"object"}}}`, `{"h":{"k":"v"}}`},
		{`{"type":"object","properties":{"x":{"type":"object","anyOf":[{"properties":{"a":{"type":"string"}},"required":["a"]}]}}}`, `{"x":{"a":"s"}}`},
		{`{"type":"object","properties":{"o":{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"string"}}}]}}}`, `{"o":{"a":"1","b":"2"}}`},
		{`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}}}}}}`, `{"l":[{},{"k":"v"}]}`},
		{nested(12), `{}`},
	} {
		f.Add([]byte(seed.schema), []byte(seed.instance))
	}
	f.Fuzz(func(t *testing.T, schema, instance []byte) {
		original, declared := compileSchema(schema), compileSchema(closeDeclared(schema))
		var value any
		accepted := original != nil && declared != nil && json.Unmarshal(instance, &value) == nil && declared.Validate(value) == nil
		// Tool arguments are an object, whatever the root takes.
		if _, isObject := value.(map[string]any); !isObject {
			accepted = false
		}
		for _, d := range []Dialect{OpenAI, Anthropic} {
			got := Convert(schema, d)
			if !got.Strict {
				continue
			}
			if again := Convert(got.Schema, d); !again.Strict || canonical(t, again.Schema) != canonical(t, got.Schema) {
				t.Fatalf("%s: %s rewrote to %s, then to strict=%v %s (%s)", d, schema, got.Schema, again.Strict, again.Schema, again.Reason)
			}
			if !accepted {
				continue
			}
			rewritten := compileSchema(got.Schema)
			if rewritten == nil {
				t.Fatalf("%s: the rewrite %s does not compile", d, got.Schema)
			}
			sent := value
			if d == OpenAI {
				sent = fillNulls(t, got.Schema, instance)
			}
			if err := rewritten.Validate(sent); err != nil {
				t.Fatalf("%s: %s accepts %s, its rewrite %s refuses %v: %v", d, schema, instance, got.Schema, sent, err)
			}
			if d == OpenAI {
				raw, _ := json.Marshal(sent)
				stripped, _ := mustParse(t, string(schema)).StripNulls(raw)
				var back any
				if err := json.Unmarshal(stripped, &back); err != nil || original.Validate(back) != nil {
					t.Fatalf("%s: %s sent as %s came back from StripNulls as %s, which it refuses", d, instance, raw, stripped)
				}
			}
		}
	})
}

// closeDeclared is a schema with each object that declares properties,
// and says nothing of others, closed to others.
func closeDeclared(schema []byte) []byte {
	root, err := parse(schema)
	if err != nil {
		return schema
	}
	var walk func(s *node, depth int)
	walk = func(s *node, depth int) {
		if depth > maxDepth || s == nil || !s.object {
			return
		}
		if s.has("properties") && !s.has("additionalProperties") {
			s.set("additionalProperties", &node{raw: []byte("false")})
		}
		subschemas(s, func(_ string, sub *node, _ ...string) { walk(sub, depth+1) })
	}
	walk(root, 0)
	return root.appendJSON(nil)
}

// compileSchema compiles a schema as the catalog validates arguments; nil
// when it does not compile.
func compileSchema(schema []byte) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if c.AddResource("mem:///s.json", doc) != nil {
		return nil
	}
	compiled, err := c.Compile("mem:///s.json")
	if err != nil {
		return nil
	}
	return compiled
}

// fillNulls is an instance as a strict model writes it for a rewritten
// schema: null for each property left out.
func fillNulls(t *testing.T, rewritten, instance []byte) any {
	sc := mustParse(t, string(rewritten))
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(instance))
	if err != nil {
		t.Fatal(err)
	}
	var fill func(s *node, v any, depth int) any
	fill = func(s *node, v any, depth int) any {
		if s = sc.resolve(s); s == nil || depth > maxDepth {
			return v
		}
		// The wrapper a rewrite puts around an optional property.
		if branches := s.get("anyOf"); branches != nil && len(branches.items) == 2 && v != nil {
			if t, _ := branches.items[1].get("type").str(); t == "null" {
				return fill(branches.items[0], v, depth+1)
			}
		}
		switch value := v.(type) {
		case map[string]any:
			props := s.get("properties")
			if props == nil || !props.object {
				return v
			}
			for i, key := range props.keys {
				if got, ok := value[key]; ok {
					value[key] = fill(props.values[i], got, depth+1)
				} else {
					value[key] = nil
				}
			}
		case []any:
			if items := s.get("items"); items != nil {
				for i := range value {
					value[i] = fill(items, value[i], depth+1)
				}
			}
		}
		return v
	}
	return fill(sc.root, v, 0)
}
