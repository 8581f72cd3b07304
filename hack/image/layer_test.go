package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"
)

// A layer is the same bytes whatever order its files come in, with every
// parent directory an entry, sorted, one time, numeric owners, and the
// modes given: executables 0755, /tmp sticky.
func TestLayerTar(t *testing.T) {
	mtime := time.Unix(1700000000, 0)
	tmp := file{path: "/tmp", mode: fs.ModeDir | fs.ModeSticky | 0o777}
	home := dir("/home/nonroot", 0o700)
	home.uid, home.gid = 65532, 65532
	files := []file{
		regular("/usr/local/bin/tool", 0o755, []byte("#!")),
		tmp,
		regular("/etc/passwd", 0o644, []byte("root:x:0:0::/:/sbin/nologin\n")),
		home,
	}
	a, err := layerTar(files, mtime)
	if err != nil {
		t.Fatal(err)
	}
	reversed := []file{files[3], files[2], files[1], files[0]}
	b, err := layerTar(reversed, mtime)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the same files in another order gave other bytes")
	}
	c, err := layerTar(files, mtime.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, c) {
		t.Error("another time gave the same bytes")
	}

	type entry struct {
		name     string
		typ      byte
		mode     int64
		uid, gid int
	}
	want := []entry{
		{"etc/", tar.TypeDir, 0o755, 0, 0},
		{"etc/passwd", tar.TypeReg, 0o644, 0, 0},
		{"home/", tar.TypeDir, 0o755, 0, 0},
		{"home/nonroot/", tar.TypeDir, 0o700, 65532, 65532},
		{"tmp/", tar.TypeDir, 0o1777, 0, 0},
		{"usr/", tar.TypeDir, 0o755, 0, 0},
		{"usr/local/", tar.TypeDir, 0o755, 0, 0},
		{"usr/local/bin/", tar.TypeDir, 0o755, 0, 0},
		{"usr/local/bin/tool", tar.TypeReg, 0o755, 0, 0},
	}
	var got []entry
	tr := tar.NewReader(bytes.NewReader(a))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid})
		if !hdr.ModTime.Equal(mtime) || hdr.Uname != "" || hdr.Gname != "" || hdr.Format != tar.FormatUSTAR {
			t.Errorf("%s: time %v, owner names %q:%q, format %v", hdr.Name, hdr.ModTime, hdr.Uname, hdr.Gname, hdr.Format)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("entries:\n got %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: got %+v, want %+v (mode %o)", i, got[i], want[i], got[i].mode)
		}
	}
}

func TestLayerTarRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []file
		want  string
	}{
		{"relative", []file{regular("etc/passwd", 0o644, nil)}, "absolute"},
		{"root", []file{dir("/", 0o755)}, "absolute"},
		{"twice", []file{regular("/a", 0o644, nil), regular("/a/", 0o644, nil)}, "twice"},
		{"under a file", []file{regular("/a", 0o644, nil), regular("/a/b", 0o644, nil)}, "not a directory"},
	} {
		if _, err := layerTar(tc.files, time.Unix(0, 0)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
