package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// testOptions builds from this module, for this machine's architecture.
func testOptions(t *testing.T) options {
	return options{out: t.TempDir(), version: "v0.0.0-test", revision: "0123456789abcdef", epoch: 1700000000, goarch: runtime.GOARCH, root: "../.."}
}

// Two builds of the pause image (a real go build each, in folders of their
// own) are the same bytes, archive and digest; another time is another
// digest, so the time is the commit's and nothing else's.
func TestPauseImageIsReproducible(t *testing.T) {
	build := func(o options) (string, []byte) {
		t.Helper()
		line, err := buildImage(context.Background(), o, pauseSpec())
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(o.out, "pause.tar"))
		if err != nil {
			t.Fatal(err)
		}
		return line, b
	}
	o := testOptions(t)
	line1, archive1 := build(o)
	o.out = t.TempDir()
	line2, archive2 := build(o)
	if line1 != line2 || !bytes.Equal(archive1, archive2) {
		t.Fatalf("two builds differ:\n%s\n%s", line1, line2)
	}
	if !strings.HasPrefix(line1, "pause.tar registry.k8s.io/pause:3.6 sha256:") {
		t.Errorf("digests.txt line %q", line1)
	}
	a := readOCIArchive(t, archive1)
	if got := a.config.Config.Entrypoint; len(got) != 1 || got[0] != "/pause" {
		t.Errorf("entrypoint %q", got)
	}
	if f := a.files["/pause"]; f.hdr.Mode != 0o755 || len(f.data) == 0 {
		t.Errorf("/pause: mode %o, %d bytes", f.hdr.Mode, len(f.data))
	}

	o.out = t.TempDir()
	o.epoch++
	line3, _ := build(o)
	if line3 == line1 {
		t.Error("another SOURCE_DATE_EPOCH gave the same digest")
	}
}

// The operator's image, assembled twice from the same binaries, is the
// same archive: the base layer (users, CA bundle, /tmp), the config and
// the archive's own entries are fixed.
func TestOperatorImageIsReproducible(t *testing.T) {
	o := testOptions(t)
	spec := operatorSpec(o)
	archive := func() []byte {
		img, err := assemble(spec, stubBinaries(spec), o)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := writeArchive(&buf, img, spec, o); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	if !bytes.Equal(archive(), archive()) {
		t.Error("two assemblies of the same binaries differ")
	}
}

// stubBinaries stands in for spec's binaries: the image's layout and config
// do not depend on what the binaries hold.
func stubBinaries(spec imageSpec) map[string][]byte {
	bins := map[string][]byte{}
	for _, b := range spec.binaries {
		bins[b.path] = []byte("\x7fELF stub of " + b.pkg)
	}
	return bins
}

func TestOptionsAreChecked(t *testing.T) {
	good := options{version: "v1.2.3-rc.1", goarch: "amd64"}
	if err := good.check(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []options{
		{version: "", goarch: "amd64"},
		{version: "-x", goarch: "amd64"},
		{version: "a b", goarch: "amd64"},
		{version: "v1+build", goarch: "amd64"},
		{version: "v1", goarch: "amd64", epoch: -1},
		{version: "v1", goarch: "amd 64"},
	} {
		if err := bad.check(); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}
