package toolname

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

var validName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)

func hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

func TestExpose(t *testing.T) {
	long := strings.Repeat("x", 100)
	exact := strings.Repeat("y", 64-len("mcp_p_"))
	tests := []struct {
		name   string
		prefix string
		tools  []string
		want   []string
	}{
		{"plain names are prefixed", "github", []string{"create_issue", "list-repos"},
			[]string{"mcp_github_create_issue", "mcp_github_list-repos"}},
		{"dots and spaces become underscores", "p", []string{"files.read", "read file"},
			[]string{"mcp_p_files_read", "mcp_p_read_file"}},
		{"each unicode code point becomes one underscore", "w", []string{"météo.prévision"},
			[]string{"mcp_w_m_t_o_pr_vision"}},
		{"emoji is one code point, one underscore", "e", []string{"a🙂b"},
			[]string{"mcp_e_a_b"}},
		{"prefix is sanitized too", "my.server", []string{"t"},
			[]string{"mcp_my_server_t"}},
		{"64 characters are kept whole", "p", []string{exact},
			[]string{"mcp_p_" + exact}},
		{"longer names keep 55 characters and the hash of the original", "p", []string{long},
			[]string{("mcp_p_" + long)[:55] + "_" + hash8(long)}},
		{"collisions each get the hash of their original name", "p", []string{"a.b", "a b", "c"},
			[]string{"mcp_p_a_b_" + hash8("a.b"), "mcp_p_a_b_" + hash8("a b"), "mcp_p_c"}},
		{"a long collision is cut to stay at 64", "p", []string{long + ".", long + " "},
			[]string{("mcp_p_" + long)[:55] + "_" + hash8(long+"."), ("mcp_p_" + long)[:55] + "_" + hash8(long+" ")}},
		{"empty list", "p", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Expose(tt.prefix, tt.tools)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d names, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("tool %q: got %q, want %q", tt.tools[i], got[i], tt.want[i])
				}
				if !validName.MatchString(got[i]) {
					t.Errorf("tool %q: %q does not match %s", tt.tools[i], got[i], validName)
				}
			}
		})
	}
}

func TestExposeIsStableAndUnique(t *testing.T) {
	tools := []string{"a.b", "a b", "a_b", "a-b", "a\u200bb", strings.Repeat("z", 90), strings.Repeat("z", 90) + "!"}
	first := Expose("srv", tools)
	second := Expose("srv", tools)
	seen := map[string]bool{}
	for i, name := range first {
		if name != second[i] {
			t.Errorf("tool %q: %q then %q", tools[i], name, second[i])
		}
		if seen[name] {
			t.Errorf("%q exposed twice", name)
		}
		seen[name] = true
		if !validName.MatchString(name) || len(name) > MaxLength {
			t.Errorf("%q is not a valid exposed name", name)
		}
	}
}

func TestANameListedTwiceIsExposedWithoutPanicking(t *testing.T) {
	got := Expose("p", []string{"a.b", "a.b", "c"})
	if got[2] != "mcp_p_c" {
		t.Errorf("an unrelated name changed: %q", got[2])
	}
	for _, name := range got {
		if !validName.MatchString(name) {
			t.Errorf("%q is not a valid exposed name", name)
		}
	}
}

func TestPrefix(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		prefix, tool string
		ok           bool
	}{
		{"github", "get_issue", true},
		{"demo-sse", "days between", true},
		{"my_prefix", "a.b/c", true},
		{"p", long, false}, // cut to fit, with a hash
	}
	for _, tc := range tests {
		exposed := Expose(tc.prefix, []string{tc.tool})[0]
		got, ok := Prefix(exposed, tc.tool)
		if ok != tc.ok || (ok && got != tc.prefix) {
			t.Errorf("Prefix(%q, %q) = %q, %v; want %q, %v", exposed, tc.tool, got, ok, tc.prefix, tc.ok)
		}
	}
	// Names that collided get a hash, and names not made from the
	// original give no prefix.
	colliding := Expose("p", []string{"a.b", "a_b"})
	for i, original := range []string{"a.b", "a_b"} {
		if _, ok := Prefix(colliding[i], original); ok {
			t.Errorf("Prefix(%q, %q) found a prefix in a name with a hash", colliding[i], original)
		}
	}
	for _, tc := range [][2]string{{"mcp_github_get_issue", "list_issues"}, {"github_get_issue", "get_issue"}, {"mcp__get_issue", "get_issue"}, {"mcp_get_issue", "get_issue"}} {
		if p, ok := Prefix(tc[0], tc[1]); ok {
			t.Errorf("Prefix(%q, %q) = %q, want none", tc[0], tc[1], p)
		}
	}
}
