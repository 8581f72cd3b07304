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

// TestBlindSetsFrozen fails when any file of a blind set changes: each was
// frozen before any ranker ran on it, and a change to one must be a
// deliberate one, with the new digest and the reason in its README.md,
// never a fit to the ranker's misses.
func TestBlindSetsFrozen(t *testing.T) {
	for _, set := range labelledSets {
		if !set.blind {
			continue
		}
		dir := filepath.Dir(set.queries)
		want, err := os.ReadFile(filepath.Join(dir, "FROZEN"))
		if err != nil {
			t.Fatal(err)
		}
		if got := blindDigest(t, dir); got != strings.TrimSpace(string(want)) {
			t.Errorf("%s changed: its digest is %s, %s/FROZEN says %s", dir, got, dir, strings.TrimSpace(string(want)))
		}
	}
}

// blindDigest is the SHA-256 of a blind set's queries and fixtures, each
// named, in name order.
func blindDigest(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "corpus", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("finding the corpus of %s: %v (%d files)", dir, err, len(files))
	}
	files = append(files, filepath.Join(dir, "queries.json"))
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
