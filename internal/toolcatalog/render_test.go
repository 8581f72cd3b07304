package toolcatalog

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// TestALargeMenuIsKeptGzippedAndServedWhole: a menu past
// maxPlainRendering is kept only gzipped, a fraction of its size, and
// every client still gets it byte for byte: gzipped as kept, or inflated
// with its true length for a client that does not take gzip.
func TestALargeMenuIsKeptGzippedAndServedWhole(t *testing.T) {
	f := newMenuFixture(t)
	var srv mcpv1alpha1.MCPServer
	if err := f.reader.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "calc"}, &srv); err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"object","properties":{"path":{"type":"string","description":"` + strings.Repeat("a file to read ", 120) + `"}}}`
	for i := range 5000 {
		name := fmt.Sprintf("tool%04d", i)
		srv.Status.Tools = append(srv.Status.Tools, mcpv1alpha1.Tool{Name: "mcp_calc_" + name, OriginalName: name, Hash: name,
			Description: "Reads one file.", InputSchema: k8sruntime.RawExtension{Raw: []byte(schema)}})
	}
	if err := f.reader.Status().Update(context.Background(), &srv); err != nil {
		t.Fatal(err)
	}
	f.catalog.serverChanged()
	vw, err := f.catalog.menus.view(context.Background(), viewKey{kind: globalView})
	if err != nil {
		t.Fatal(err)
	}
	whole := appendMenu(nil, vw, formatOpenAI)
	if len(whole) <= maxPlainRendering {
		t.Fatalf("the menu is %d bytes, not past %d", len(whole), maxPlainRendering)
	}

	get := func(method, encoding string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/v1/tools", nil)
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		rec := httptest.NewRecorder()
		f.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s /v1/tools: %d %.200s", method, rec.Code, rec.Body)
		}
		return rec
	}
	zipped := get(http.MethodGet, "gzip")
	if zipped.Header().Get("Content-Encoding") != "gzip" {
		t.Fatal("a client taking gzip got the menu unzipped")
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if inflated, err := io.ReadAll(zr); err != nil || !bytes.Equal(inflated, whole) {
		t.Errorf("the gzipped menu inflates to %d bytes (%v), want the %d of the menu", len(inflated), err, len(whole))
	}
	plain := get(http.MethodGet, "")
	if plain.Header().Get("Content-Encoding") != "" || !bytes.Equal(plain.Body.Bytes(), whole) {
		t.Errorf("a client not taking gzip got %d bytes (encoding %q), want the %d of the menu",
			plain.Body.Len(), plain.Header().Get("Content-Encoding"), len(whole))
	}
	if got := plain.Header().Get("Content-Length"); got != strconv.Itoa(len(whole)) {
		t.Errorf("Content-Length %s, want %d", got, len(whole))
	}
	if head := get(http.MethodHead, ""); head.Header().Get("Content-Length") != strconv.Itoa(len(whole)) || head.Body.Len() != 0 {
		t.Errorf("HEAD: Content-Length %s and %d bytes of body, want %d and none", head.Header().Get("Content-Length"), head.Body.Len(), len(whole))
	}

	kept := f.kept()
	if kept == nil {
		t.Fatal("the menu's rendering was not kept")
	}
	if kept.body != nil || len(kept.gzipped) > len(whole)/4 {
		t.Errorf("kept %d bytes plain and %d gzipped of a %d-byte menu, want only gzipped", len(kept.body), len(kept.gzipped), len(whole))
	}
}

// TestRenderWithinKeepsWhatFits: a menu is kept as it is when it fits the
// limit, however its size was estimated, and only gzipped when it does
// not: estimated past the limit, it is rendered straight into gzip (and
// as it is as well if it fits after all); estimated within it but past it
// once its strings are escaped, it is let go once gzipped. Either way both
// encodings are the menu byte for byte, in every format.
func TestRenderWithinKeepsWhatFits(t *testing.T) {
	escaped := benchView(1000)
	for i := range escaped.menu.Tools {
		escaped.menu.Tools[i].Description = strings.Repeat("<&>", 100) // six bytes each, written
	}
	for _, format := range formats {
		for _, tc := range []struct {
			name      string
			vw        *view
			limit     func(estimate, size int) int
			keepsBody bool
		}{
			{"estimated within the limit", benchView(1000), func(estimate, _ int) int { return estimate }, true},
			{"estimated past it but within", benchView(1000), func(_, size int) int { return size }, true},
			{"past it", benchView(1000), func(_, size int) int { return size - 1 }, false},
			{"estimated within it but past it", escaped, func(estimate, _ int) int { return estimate }, false},
			{"only gzipped", benchView(1000), func(int, int) int { return 0 }, false},
		} {
			whole := appendMenu(nil, tc.vw, format)
			limit := tc.limit(menuSize(tc.vw), len(whole))
			if tc.keepsBody != (len(whole) <= limit) {
				t.Fatalf("%s, %s: the limit %d does not set up the case for %d bytes", format, tc.name, limit, len(whole))
			}
			r := renderWithin(tc.vw, format, limit)
			if r.size != len(whole) {
				t.Errorf("%s, %s: size %d, want %d", format, tc.name, r.size, len(whole))
			}
			if kept := r.body != nil; kept != tc.keepsBody || (kept && !bytes.Equal(r.body, whole)) {
				t.Errorf("%s, %s: kept %d bytes as they are, want the menu: %v", format, tc.name, len(r.body), tc.keepsBody)
			}
			zr, err := gzip.NewReader(bytes.NewReader(r.gzipBody()))
			if err != nil {
				t.Fatal(err)
			}
			if inflated, err := io.ReadAll(zr); err != nil || !bytes.Equal(inflated, whole) {
				t.Errorf("%s, %s: gzipped, the menu inflates to %d bytes (%v), want %d", format, tc.name, len(inflated), err, len(whole))
			}
		}
	}
}
