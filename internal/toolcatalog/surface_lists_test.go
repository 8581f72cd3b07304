package toolcatalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// The listings kept stay within their byte budget, the least recently
// used going first, and one too large is not kept at all.
func TestSurfaceListsKeepWithinTheirBudget(t *testing.T) {
	l := newSurfaceLists(nil)
	listing := func(size int) *keptListing {
		item := json.RawMessage(`"` + strings.Repeat("x", size-2) + `"`)
		list := mcpclient.SurfaceList{Items: []json.RawMessage{item}, Keys: []string{"k"}}
		return &keptListing{list: list, size: sizeOf(list)}
	}
	const each = 3 << 20
	for i := range maxKeptBytes/each + 5 {
		l.keep(fmt.Sprint(i), listing(each))
		if l.bytes > maxKeptBytes {
			t.Fatalf("after %d listings, %d bytes kept, over %d", i+1, l.bytes, maxKeptBytes)
		}
	}
	if want := maxKeptBytes / each * each; l.bytes != want || l.kept.Len() != maxKeptBytes/each {
		t.Errorf("%d listings of %d bytes kept (%d bytes), want %d bytes", l.kept.Len(), each, l.bytes, want)
	}
	if _, ok := l.kept.Get("0"); ok {
		t.Error("the oldest listing is still kept")
	}
	if _, ok := l.kept.Get(fmt.Sprint(maxKeptBytes/each + 4)); !ok {
		t.Error("the newest listing is not kept")
	}
	before := l.bytes
	l.keep("huge", listing(maxKeptListingBytes+1))
	if _, ok := l.kept.Get("huge"); ok || l.bytes != before {
		t.Error("a listing over maxKeptListingBytes was kept")
	}
	l.keep("1000", listing(10))
	l.keep("1000", listing(10))
	if l.bytes > maxKeptBytes {
		t.Errorf("%d bytes kept after keeping one key twice", l.bytes)
	}
}

func TestRecordedURIKeepsNoSecrets(t *testing.T) {
	for uri, want := range map[string]string{
		"test://a.b/files/readme?token=s3cret#x": "test://a.b/files/readme",
		"https://user:tok@host/x":                "https://host/x",
		"https://user:tok@host":                  "https://host",
		"ftp://u@h/p/q@r":                        "ftp://h/p/q@r",
		"urn:a.b:isbn:1":                         "urn:a.b:isbn:1",
		"file://a.b//home/x":                     "file://a.b//home/x",
	} {
		if got := recordedURI(uri); got != want {
			t.Errorf("recordedURI(%q) = %q, want %q", uri, got, want)
		}
	}
}
