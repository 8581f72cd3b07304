package toolsearch

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBlindSetFrozen fails when any file of testdata/blind changes: the
// blind set was frozen before the ranker was tuned with it in the
// repository, and a change to it must be a deliberate one, with the new
// digest and the reason in testdata/blind/README.md, never a fit to the
// ranker's misses.
func TestBlindSetFrozen(t *testing.T) {
	want, err := os.ReadFile("testdata/blind/FROZEN")
	if err != nil {
		t.Fatal(err)
	}
	if got := blindDigest(t); got != strings.TrimSpace(string(want)) {
		t.Errorf("testdata/blind changed: its digest is %s, testdata/blind/FROZEN says %s", got, strings.TrimSpace(string(want)))
	}
}

// blindDigest is the SHA-256 of the blind set's queries and fixtures, each
// named, in name order.
func blindDigest(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob("testdata/blind/corpus/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("finding the blind corpus: %v (%d files)", err, len(files))
	}
	files = append(files, "testdata/blind/queries.json")
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(filepath.ToSlash(f) + "\x00"))
		h.Write(raw)
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
