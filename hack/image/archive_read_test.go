package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"path"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// readArchive is an archive writeArchive wrote, read back the way a
// runtime reads it: index.json to the manifest, the manifest to the config
// and layers, every blob checked against its digest, the layers' files
// merged in order.
type readArchive struct {
	index    v1.IndexManifest
	digest   v1.Hash // the manifest's
	manifest v1.Manifest
	config   v1.ConfigFile
	files    map[string]tarFile // by absolute path
}

type tarFile struct {
	hdr  tar.Header
	data []byte
}

func readOCIArchive(t *testing.T, archive []byte) *readArchive {
	t.Helper()
	entries := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("archive entry %s: owner %d:%d (%q:%q), want 0:0 and no names", hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries[hdr.Name] = b
	}
	for name, b := range entries {
		if hexDigest, ok := strings.CutPrefix(name, "blobs/sha256/"); ok {
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hexDigest {
				t.Errorf("blob %s holds bytes of digest %x", name, sum)
			}
		}
	}
	if got := string(entries["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", got)
	}
	a := &readArchive{files: map[string]tarFile{}}
	unmarshal(t, entries["index.json"], &a.index)
	if len(a.index.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(a.index.Manifests))
	}
	a.digest = a.index.Manifests[0].Digest
	raw := entries[blobPath(a.digest)]
	if int64(len(raw)) != a.index.Manifests[0].Size {
		t.Errorf("manifest is %d bytes, the index says %d", len(raw), a.index.Manifests[0].Size)
	}
	unmarshal(t, raw, &a.manifest)
	unmarshal(t, entries[blobPath(a.manifest.Config.Digest)], &a.config)
	if len(a.config.RootFS.DiffIDs) != len(a.manifest.Layers) {
		t.Fatalf("config has %d diff_ids for %d layers", len(a.config.RootFS.DiffIDs), len(a.manifest.Layers))
	}
	var layerPaths []string
	for i, l := range a.manifest.Layers {
		layerPaths = append(layerPaths, blobPath(l.Digest))
		zr, err := gzip.NewReader(bytes.NewReader(entries[blobPath(l.Digest)]))
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		uncompressed, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		if sum := sha256.Sum256(uncompressed); "sha256:"+hex.EncodeToString(sum[:]) != a.config.RootFS.DiffIDs[i].String() {
			t.Errorf("layer %d: diff_id %s, its bytes are sha256:%x", i, a.config.RootFS.DiffIDs[i], sum)
		}
		lr := tar.NewReader(bytes.NewReader(uncompressed))
		for {
			hdr, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("layer %d: %v", i, err)
			}
			b, err := io.ReadAll(lr)
			if err != nil {
				t.Fatal(err)
			}
			a.files[path.Clean("/"+hdr.Name)] = tarFile{hdr: *hdr, data: b}
		}
	}
	// Docker's manifest.json names the same config and layers.
	var docker []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	unmarshal(t, entries["manifest.json"], &docker)
	if len(docker) != 1 || docker[0].Config != blobPath(a.manifest.Config.Digest) ||
		strings.Join(docker[0].Layers, " ") != strings.Join(layerPaths, " ") {
		t.Errorf("manifest.json %+v does not name the OCI manifest's config and layers", docker)
	}
	if len(docker) == 1 && (len(docker[0].RepoTags) != 1 || docker[0].RepoTags[0] != a.index.Manifests[0].Annotations[annotationContainerdName]) {
		t.Errorf("manifest.json tags %v, the index names %q", docker[0].RepoTags, a.index.Manifests[0].Annotations[annotationContainerdName])
	}
	return a
}

func unmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if b == nil {
		t.Fatalf("missing from the archive: the %T", v)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
