package toolcatalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
)

// renderByReflection is what render writes, by encoding/json: the oracle
// appendMenu is tested against.
func renderByReflection(vw *view, format string) []byte {
	body := menuBody{Revision: vw.revision, Tools: make([]any, len(vw.menu.Tools))}
	if _, strict := baseFormat(format); strict {
		body.NonStrict = &[]nonStrictJSON{}
	}
	for i := range vw.menu.Tools {
		e := &vw.menu.Tools[i]
		served := schemaIn(e, format)
		if served.reason != "" {
			*body.NonStrict = append(*body.NonStrict, nonStrictJSON{Name: e.Name, Reason: served.reason})
		}
		body.Tools[i] = renderTool(e, format, served)
	}
	for _, c := range vw.menu.Conflicts {
		body.Conflicts = append(body.Conflicts, conflictJSON{Name: c.Name, Servers: c.Servers})
	}
	raw, _ := json.Marshal(body)
	return raw
}

// awkward are strings that exercise every escape encoding/json makes.
var awkward = []string{"", "plain", `quote " and \ backslash`, "<html> & </html>", "tab\there\nnew line\r\x00\x01\x1f\x7f",
	"\b\f", "é ü 日本語 🙂", "line\u2028separator\u2029paragraph", "bad \xff\xfe utf-8 \xc3", "\xe2\x82", strings128()}

func strings128() string {
	var b []byte
	for i := range 128 {
		b = append(b, byte(i))
	}
	return string(b)
}

// TestRenderMatchesEncodingJSON: the menu render appends is byte for byte
// what encoding/json writes for the same tools, in every format.
func TestRenderMatchesEncodingJSON(t *testing.T) {
	var m menu.Menu
	for i, s := range awkward {
		tool := &mcpv1alpha1.Tool{Name: fmt.Sprintf("mcp_t_%d", i), Title: s, Description: "about " + s,
			InputSchema: runtime.RawExtension{Raw: []byte(`{"properties":{"p":{"description":"a <b> \"c\"","type":"string"}},"type":"object"}`)}}
		switch i % 4 {
		case 1:
			tool.OutputSchema = &runtime.RawExtension{Raw: []byte("{\"description\":\"a\u2028b \u20ac & c\",\"type\":\"object\"}")}
		case 2:
			tool.Annotations = &mcpv1alpha1.ToolAnnotations{Title: s, ReadOnlyHint: ptrTo(true)}
		case 3:
			tool.InputSchema.Raw = nil
			tool.OutputSchema = &runtime.RawExtension{}
			tool.Execution = &runtime.RawExtension{}
		}
		if i%3 == 1 {
			tool.Icons = []runtime.RawExtension{{Raw: []byte(`{"src":"https://example.com/a.png?x=1&y=<2>"}`)}, {Raw: []byte("{ \"src\": \"data:image/png;base64,AA==\" }")}}
			tool.Execution = &runtime.RawExtension{Raw: []byte(`{"taskSupport":"optional"}`)}
			var note bytes.Buffer
			enc := json.NewEncoder(&note)
			enc.SetEscapeHTML(false) // <, > and & as they may come
			_ = enc.Encode(s)
			tool.Meta = &runtime.RawExtension{Raw: []byte(`{"note":` + strings.TrimSpace(note.String()) + `, "n":1.50}`)}
		}
		if i == 5 {
			// Not as the API server hands it over, but still written compact.
			tool.InputSchema.Raw = []byte("{ \"type\" : \"object\",\n \"description\": \"spaced out <here>\" }")
		}
		m.Tools = append(m.Tools, menu.Entry{Name: tool.Name + s, Tool: tool, Description: s})
	}
	m.Conflicts = []menu.Conflict{{Name: "mcp_a <x>", Servers: []string{"ns/a", "ns/b&c"}}, {Name: "none"}}
	for _, conflicts := range [][]menu.Conflict{nil, m.Conflicts} {
		withConflicts := m
		withConflicts.Conflicts = conflicts
		vw := &view{menu: withConflicts, revision: "rev<1>"}
		for _, format := range allFormats() {
			got, want := render(vw, format).body, renderByReflection(vw, format)
			if !bytes.Equal(got, want) {
				t.Errorf("%s, %d conflicts:\n got %s\nwant %s", format, len(conflicts), got, want)
			}
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// allFormats are the formats and their strict variants.
func allFormats() []string {
	all := slices.Clone(formats)
	for _, f := range strictFormats {
		all = append(all, f+strictSuffix)
	}
	return all
}
