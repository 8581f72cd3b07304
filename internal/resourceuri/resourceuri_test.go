package resourceuri

import (
	"errors"
	"strings"
	"testing"
)

func TestExposeAndResolve(t *testing.T) {
	files := Server{Namespace: "tools", Name: "files"}
	dotted := Server{Namespace: "team-a", Name: "github.v2"}
	tests := []struct {
		server       Server
		uri, exposed string
	}{
		{files, "file:///home/a.txt", "file://files.tools//home/a.txt"},
		{files, "test://static/resource/1", "test://files.tools/static/resource/1"},
		{files, "ui://weather/view.html", "ui://files.tools/weather/view.html"},
		{files, "https://example.com/a?b=c#d", "https://files.tools/example.com/a?b=c#d"},
		{files, "s://host", "s://files.tools/host"},
		{files, "s://", "s://files.tools/"},
		{files, "urn:isbn:0451450523", "urn:files.tools:isbn:0451450523"},
		{files, "data:,", "data:files.tools:,"},
		{files, "mailto:", "mailto:files.tools:"},
		{dotted, "repo://{owner}/{repo}/contents{/path*}", "repo://github.v2.team-a/{owner}/{repo}/contents{/path*}"},
		{dotted, "file:///{path}", "file://github.v2.team-a//{path}"},
	}
	for _, tt := range tests {
		got, err := Expose(tt.server, tt.uri)
		if err != nil || got != tt.exposed {
			t.Errorf("Expose(%v, %q) = %q, %v; want %q", tt.server, tt.uri, got, err, tt.exposed)
			continue
		}
		s, uri, ok := Resolve(got)
		if !ok || s != tt.server || uri != tt.uri {
			t.Errorf("Resolve(%q) = %v, %q, %v; want %v, %q", got, s, uri, ok, tt.server, tt.uri)
		}
	}
}

// A template rewritten and then expanded is the expansion rewritten: the
// rewrite only inserts text after a literal scheme.
func TestTemplatesExpandToExposedURIs(t *testing.T) {
	s := Server{Namespace: "tools", Name: "files"}
	template, err := Expose(s, "file:///{path}")
	if err != nil {
		t.Fatal(err)
	}
	expanded := strings.Replace(template, "{path}", "home/a.txt", 1)
	want, _ := Expose(s, "file:///home/a.txt")
	if expanded != want {
		t.Fatalf("expanded %q, exposed %q", expanded, want)
	}
}

func TestURIsWithoutAScheme(t *testing.T) {
	for _, uri := range []string{"", "relative/path", "/abs", "{+uri}", "1abc:x", ":x", "a b:c", "{scheme}://x"} {
		if got, err := Expose(Server{Namespace: "n", Name: "s"}, uri); !errors.Is(err, ErrNoScheme) {
			t.Errorf("Expose(%q) = %q, %v; want ErrNoScheme", uri, got, err)
		}
	}
}

func TestResolveRefusesWhatExposeDidNotWrite(t *testing.T) {
	for _, exposed := range []string{
		"", "file:///home/a.txt", // no server: an empty key
		"test://nodot/x", "test://trailing./x", "test://.leading/x", "urn:nokey", "urn:nodot:x", "noscheme",
		"test://files.tools", // a key but no slash after it
		// The opaque form of a hierarchical URI: an alias Expose never
		// writes, which would get past a filter on the exposed one.
		"file:files.tools:///secrets/key", "test:files.tools://secret/key",
	} {
		if s, uri, ok := Resolve(exposed); ok {
			t.Errorf("Resolve(%q) = %v, %q; want refused", exposed, s, uri)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	for _, seed := range []string{"file:///a", "test://static/1", "urn:x:y", "s:", "ui://w/v.html?x=1", "A+b-c.d://e"} {
		f.Add("files", "tools", seed)
	}
	f.Fuzz(func(t *testing.T, name, namespace, uri string) {
		// What Kubernetes allows: the namespace a DNS label, the name a
		// DNS subdomain (dots allowed, no ':' or '/').
		if !label(namespace) || name == "" || strings.ContainsAny(name, ":/") || strings.HasPrefix(name, ".") {
			return
		}
		s := Server{Namespace: namespace, Name: name}
		exposed, err := Expose(s, uri)
		if err != nil {
			return
		}
		got, original, ok := Resolve(exposed)
		if !ok || got != s || original != uri {
			t.Fatalf("Expose(%v, %q) = %q, which resolves to %v, %q, %v", s, uri, exposed, got, original, ok)
		}
	})
}

func label(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		lower, digit, inner := 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-' && i > 0 && i < len(s)-1
		if !lower && !digit && !inner {
			return false
		}
	}
	return true
}
