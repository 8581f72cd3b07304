package toolname

import (
	"strings"
	"testing"
)

// FuzzExpose: whatever names a server sends, every exposed name matches the
// documented pattern, the result is deterministic, and no two tools share a
// name.
func FuzzExpose(f *testing.F) {
	for _, seed := range [][2]string{
		{"github", "create_issue"}, {"w", "météo.prévision"}, {"p", "a.b\x00a b"},
		{"p", strings.Repeat("x", 100) + "\x00" + strings.Repeat("x", 100) + "!"}, {"", ""}, {"é", "🙂\x00🙃"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, prefix, joined string) {
		tools := strings.Split(joined, "\x00")
		first := Expose(prefix, tools)
		second := Expose(prefix, tools)
		seen := map[string]bool{}
		duplicates := map[string]bool{}
		for _, tool := range tools {
			if seen[tool] {
				duplicates[tool] = true
			}
			seen[tool] = true
		}
		names := map[string]string{}
		for i, name := range first {
			if name != second[i] {
				t.Fatalf("not deterministic for %q: %q then %q", tools[i], name, second[i])
			}
			if !validName.MatchString(name) {
				t.Fatalf("%q (from %q) does not match %s", name, tools[i], validName)
			}
			if other, taken := names[name]; taken && other != tools[i] && !duplicates[tools[i]] {
				t.Fatalf("%q and %q both exposed as %q", other, tools[i], name)
			}
			names[name] = tools[i]
			// Prefix reads the prefix back from every name Expose left
			// whole, and from no other.
			p, ok := Prefix(name, tools[i])
			whole := name == sanitize("mcp_"+prefix+"_"+tools[i]) && prefix != ""
			if ok != whole || (ok && p != sanitize(prefix)) {
				t.Fatalf("Prefix(%q, %q) = %q, %v; Expose left it whole: %v", name, tools[i], p, ok, whole)
			}
		}
	})
}
