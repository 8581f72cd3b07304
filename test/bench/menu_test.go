package bench

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

const (
	bigServers        = 100
	bigToolsPerServer = 100
)

var bigOnce sync.Once

// bigMenu puts 10,000 tools over 100 servers in the global menu (once).
func (r *rig) bigMenu(b *testing.B) {
	bigOnce.Do(func() {
		up, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP})
		if err != nil {
			b.Fatal(err)
		}
		names := make([]string, bigToolsPerServer)
		for i := range names {
			names[i] = fmt.Sprintf("tool%03d", i)
		}
		up.AddTools(names...)
		ns := r.namespace(b)
		for i := range bigServers {
			r.serverKept(b, ns, fmt.Sprintf("big%03d", i), up.URL())
		}
		r.waitReady(b, ns, bigServers, bigToolsPerServer, 3*time.Minute)
		r.bigNamespace = ns
	})
}

// request GETs url with the headers; the caller closes the body.
func request(b *testing.B, url string, headers ...string) *http.Response {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := restClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	return resp
}

func get(b *testing.B, url string, headers ...string) (int, []byte) {
	resp := request(b, url, headers...)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// fetch GETs url and discards the body, so that the client side of the
// benchmark costs as little as it can.
func fetch(b *testing.B, url string, headers ...string) int {
	resp := request(b, url, headers...)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// BenchmarkMenu serves the 10,000-tool global menu, against serving the
// same pre-rendered bytes with http.ServeContent.
func BenchmarkMenu(b *testing.B) {
	r := setup(b)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r.bigMenu(b)
	menuURL := r.catalog.URL + "/v1/tools?namespace=" + r.bigNamespace
	code, rendered := get(b, menuURL, "Accept-Encoding", "identity")
	if code != http.StatusOK || !bytes.Contains(rendered, []byte("mcp_big099_tool099")) {
		b.Fatalf("menu: status %d", code)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)

	baseline := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.ServeContent(w, req, "menu.json", time.Time{}, bytes.NewReader(rendered))
	}))
	b.Cleanup(baseline.Close)

	serve := func(b *testing.B, url string, wantCode int, headers ...string) {
		b.SetBytes(int64(len(rendered)))
		for b.Loop() {
			if code := fetch(b, url, headers...); code != wantCode {
				b.Fatalf("status %d, want %d", code, wantCode)
			}
		}
	}
	b.Run("servecontent", func(b *testing.B) { serve(b, baseline.URL, http.StatusOK, "Accept-Encoding", "identity") })
	b.Run("catalog", func(b *testing.B) { serve(b, menuURL, http.StatusOK, "Accept-Encoding", "identity") })
	b.Run("catalog-304", func(b *testing.B) {
		req, _ := http.NewRequest(http.MethodGet, menuURL, nil)
		resp, err := restClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		serve(b, menuURL, http.StatusNotModified, "If-None-Match", resp.Header.Get("ETag"))
	})
	b.Run("catalog-gzip", func(b *testing.B) {
		_, zipped := get(b, menuURL, "Accept-Encoding", "gzip")
		zr, err := gzip.NewReader(bytes.NewReader(zipped))
		if err != nil {
			b.Fatal(err)
		}
		plain, _ := io.ReadAll(zr)
		if !bytes.Equal(plain, rendered) {
			b.Fatal("the gzipped menu differs")
		}
		serve(b, menuURL, http.StatusOK, "Accept-Encoding", "gzip")
		b.ReportMetric(float64(len(zipped)), "gzip-bytes")
	})
	// Heap held for the menu beyond the informer cache's status objects is
	// bounded above by what the whole process gained, test servers included.
	b.Run("heap-per-tool", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(bigServers*bigToolsPerServer), "process-heap-B/tool")
	})
}
