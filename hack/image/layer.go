package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// file is one entry of a layer: a directory or a regular file.
type file struct {
	path     string      // absolute, as the container sees it
	mode     fs.FileMode // permissions, with fs.ModeDir for a directory and fs.ModeSticky if set
	uid, gid int
	data     []byte
}

func dir(p string, perm fs.FileMode) file { return file{path: p, mode: fs.ModeDir | perm} }

func regular(p string, perm fs.FileMode, data []byte) file {
	return file{path: p, mode: perm, data: data}
}

// layerTar writes files as a tar that is the same bytes for the same
// files, whatever their order: every parent directory an entry of its own
// (0755, root), entries sorted by name, one modification time, numeric
// owners only (no user or group names), no access or change times.
func layerTar(files []file, mtime time.Time) ([]byte, error) {
	byPath := make(map[string]file, len(files))
	for _, f := range files {
		p := path.Clean(f.path)
		if !path.IsAbs(p) || p == "/" {
			return nil, fmt.Errorf("%q: a layer's entries are absolute paths below /", f.path)
		}
		if _, dup := byPath[p]; dup {
			return nil, fmt.Errorf("%s: twice in one layer", p)
		}
		f.path = p
		byPath[p] = f
	}
	for p := range byPath {
		for parent := path.Dir(p); parent != "/"; parent = path.Dir(parent) {
			if f, ok := byPath[parent]; ok {
				if !f.mode.IsDir() {
					return nil, fmt.Errorf("%s: its parent %s is not a directory", p, parent)
				}
				continue
			}
			byPath[parent] = dir(parent, 0o755)
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := byPath[p]
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(p, "/"),
			Mode:    int64(f.mode.Perm()),
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: mtime,
			Format:  tar.FormatUSTAR,
		}
		if f.mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000 // c_ISVTX
		}
		if f.mode.IsDir() {
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// newLayer is files as an OCI layer, gzip-compressed at a fixed level (the
// compressed bytes, and so the layer's digest, depend on it).
func newLayer(files []file, mtime time.Time) (v1.Layer, error) {
	b, err := layerTar(files, mtime)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.BestCompression),
		tarball.WithCompressedCaching)
}
