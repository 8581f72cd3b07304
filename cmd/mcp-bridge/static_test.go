package main

import (
	"debug/elf"
	"path/filepath"
	"testing"
)

// The operator copies the bridge into images it knows nothing about
// (distroless, Alpine's musl, scratch), so it must need no C library.
func TestTheBinaryIsStatic(t *testing.T) {
	out := filepath.Join(t.TempDir(), "mcp-bridge")
	if err := goBuild(out, ".", []string{"CGO_ENABLED=0"}); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v", err)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary names a dynamic loader")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary links %v (%v)", libs, err)
	}
}
