package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The annotations an OCI layout's index names an image by. containerd's
// import (ctr images import, kind load image-archive) takes the full
// reference from the first; the second is the OCI spec's, the tag alone,
// as containerd's own export writes it.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

// writeArchive writes img as a tar of an OCI image layout (oci-layout,
// index.json, blobs/sha256/...) naming spec.ref(), plus Docker's
// manifest.json, so that the one file loads everywhere: containerd 1.6
// reads the OCI layout when oci-layout is there (and keeps the manifest,
// so the digest it shows is this one), and docker load reads either.
// Entries are sorted, with one time and root as owner. It returns the
// image's manifest digest.
func writeArchive(w io.Writer, img v1.Image, spec imageSpec, o options) (v1.Hash, error) {
	manifest, err := img.RawManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	configName, err := img.ConfigName()
	if err != nil {
		return v1.Hash{}, err
	}
	mediaType, err := img.MediaType()
	if err != nil {
		return v1.Hash{}, err
	}
	entries := map[string][]byte{
		blobPath(digest):     manifest,
		blobPath(configName): config,
	}
	layers, err := img.Layers()
	if err != nil {
		return v1.Hash{}, err
	}
	var layerPaths []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return v1.Hash{}, err
		}
		rc, err := l.Compressed()
		if err != nil {
			return v1.Hash{}, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return v1.Hash{}, err
		}
		entries[blobPath(d)] = b
		layerPaths = append(layerPaths, blobPath(d))
	}

	index := v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: mediaType,
			Digest:    digest,
			Size:      int64(len(manifest)),
			Platform:  &v1.Platform{OS: "linux", Architecture: o.goarch},
			Annotations: map[string]string{
				annotationContainerdName: spec.ref(),
				annotationRefName:        spec.tag,
			},
		}},
	}
	if entries["index.json"], err = json.Marshal(index); err != nil {
		return v1.Hash{}, err
	}
	entries["oci-layout"] = []byte(`{"imageLayoutVersion":"1.0.0"}`)
	dockerManifest := []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: blobPath(configName), RepoTags: []string{spec.ref()}, Layers: layerPaths}}
	if entries["manifest.json"], err = json.Marshal(dockerManifest); err != nil {
		return v1.Hash{}, err
	}

	tw := tar.NewWriter(w)
	mtime := o.created()
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: mtime, Format: tar.FormatUSTAR}); err != nil {
			return v1.Hash{}, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		data := entries[name]
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(hdr); err != nil {
			return v1.Hash{}, fmt.Errorf("%s: %w", name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return v1.Hash{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	return digest, tw.Close()
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
