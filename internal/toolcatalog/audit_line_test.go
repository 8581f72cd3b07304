package toolcatalog

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// The audit line is appended by hand; what it writes must be what
// json.Marshal writes of the record, which docs/audit.md describes.
func TestAuditLineIsWhatJSONMarshalWrites(t *testing.T) {
	full := AuditRecord{Time: "2026-12-02T01:02:03.123456789Z", RequestID: "0123456789abcdef", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
		User: "system:serviceaccount:team-a:agent", Groups: []string{"system:serviceaccounts", "system:authenticated"}, Issuer: "https://idp.example.com", Via: "mcp",
		Collection: "team-a/all", Tool: "mcp_calc_echo", OriginalName: "echo", Server: "team-a/calc", Outcome: "success",
		Method: "prompts/get", Prompt: "mcp_calc_greet", Resource: "test://calc.team-a/static/a",
		Status: 200, Policy: &AuditPolicy{Decision: "deny", Rule: "oncall-only", Mode: "Audit"}, DurationMs: 1.234, ResultBytes: 42}
	cases := map[string]AuditRecord{
		"every field":       full,
		"only the required": {Time: "t", RequestID: "r", User: "anonymous", Via: "rest", Tool: "x", Outcome: "unknown_tool"},
		"empty groups":      {User: "u", Groups: []string{}},
		"a resource read":   {Time: "t", RequestID: "r", User: "u", Via: "mcp", Method: "resources/read", Resource: "test://a.b/c", Server: "b/a", Outcome: "success"},
		"quotes and backslashes in a caller's tool name": {Tool: `a"b\c`},
		"control characters":                             {Tool: "a\nb\tc\x00d\x1f"},
		"HTML characters":                                {Tool: "<script>&</script>"},
		"invalid UTF-8":                                  {Tool: "a\xffb\xc3"},
		"non-ASCII":                                      {User: "müller", Groups: []string{"équipe", "チーム"}},
		"line separators":                                {Tool: "a\u2028b\u2029c"},
		"NUL bytes and an ellipsis":                      {Tool: "mcp_" + string(make([]byte, 10)) + "…"},
		"zero duration":                                  {DurationMs: 0},
		"a tiny duration":                                {DurationMs: 1e-7},
		"a whole duration":                               {DurationMs: 1500},
		"a huge duration":                                {DurationMs: 1e22},
		"a negative status":                              {Status: -1, ResultBytes: -5},
		"a third of a ms":                                {DurationMs: 1.0 / 3},
		"a policy's default decided":                     {Policy: &AuditPolicy{Decision: "allow", Mode: "Enforce"}},
		"a rule name with quotes":                        {Policy: &AuditPolicy{Decision: "deny", Rule: `a"b`, Mode: "Enforce"}},
	}
	// A field added to AuditRecord must be added to appendJSON: the case
	// with every field must have them all set.
	record := reflect.ValueOf(full)
	for i := range record.NumField() {
		if record.Field(i).IsZero() {
			t.Fatalf("the every-field case leaves %s unset", record.Type().Field(i).Name)
		}
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.appendJSON([]byte("kept")); string(got) != "kept"+string(want) {
				t.Errorf("appendJSON wrote\n%s\njson.Marshal writes\n%s", got[4:], want)
			}
		})
	}
	// JSON has no NaN: json.Marshal refuses the record, the line says 0.
	nan := AuditRecord{DurationMs: math.NaN()}
	var back map[string]any
	if err := json.Unmarshal(nan.appendJSON(nil), &back); err != nil || back["durationMs"] != 0.0 {
		t.Errorf("a NaN duration wrote %v (%v), want durationMs 0", back, err)
	}
}

func FuzzAuditLine(f *testing.F) {
	f.Add("tool", "user", "group", 1.5, 200)
	f.Add("a\"\\<\xff\u2028", "é", "", 1e-9, 0)
	f.Fuzz(func(t *testing.T, tool, user, group string, duration float64, status int) {
		if math.IsNaN(duration) || math.IsInf(duration, 0) {
			return // json.Marshal refuses them (see above)
		}
		r := AuditRecord{Tool: tool, User: user, Groups: []string{group}, DurationMs: duration, Status: status, Server: group}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.appendJSON(nil); string(got) != string(want) {
			t.Errorf("appendJSON wrote\n%s\njson.Marshal writes\n%s", got, want)
		}
	})
}
