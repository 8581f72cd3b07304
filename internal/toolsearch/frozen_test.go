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
// never a fit to the ranker's misses. Every FROZEN file under testdata
// must belong to a set measured as blind, so that no frozen set can lose
// the rules (no misses printed) by being listed as an ordinary one.
func TestBlindSetsFrozen(t *testing.T) {
	frozen, err := filepath.Glob("testdata/*/FROZEN")
	if err != nil || len(frozen) == 0 {
		t.Fatalf("finding the frozen sets: %v (%d)", err, len(frozen))
	}
	checked := map[string]bool{}
	for _, set := range labelledSets {
		if !set.blind {
			continue
		}
		file := filepath.Join(filepath.Dir(set.queries), "FROZEN")
		checked[file] = true
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("blind set %s: %v", set.name, err)
		}
		if got := blindDigest(t, set); got != strings.TrimSpace(string(want)) {
			t.Errorf("blind set %s changed: its digest is %s, %s says %s", set.name, got, file, strings.TrimSpace(string(want)))
		}
	}
	for _, file := range frozen {
		if !checked[file] {
			t.Errorf("%s is frozen but no blind set of labelledSets reads it", filepath.Dir(file))
		}
	}
}

// blindDigest is the SHA-256 of a blind set's queries and the fixtures of
// its corpus, each named, in name order.
func blindDigest(t *testing.T, set labelledSet) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(set.corpus, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("finding the corpus of %s: %v (%d files)", set.name, err, len(files))
	}
	files = append(files, set.queries)
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
