package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// assemble is spec's image FROM scratch: the base layer when spec asks for
// it, then one layer of the binaries (bins, by their path in the image;
// 0755, root), with OCI media types and a config that names os and
// architecture (containerd refuses an image whose config does not).
func assemble(spec imageSpec, bins map[string][]byte, o options) (v1.Image, error) {
	created := v1.Time{Time: o.created()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	var adds []mutate.Addendum
	if spec.base {
		files, err := baseFiles()
		if err != nil {
			return nil, err
		}
		layer, err := newLayer(files, created.Time)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.Addendum{Layer: layer, History: v1.History{
			Created:   created,
			CreatedBy: "hack/image: users, groups, nsswitch.conf, CA bundle, homes, /tmp (distroless static nonroot's, for a static Go program)",
		}})
	}
	var files []file
	for _, b := range spec.binaries {
		data, ok := bins[b.path]
		if !ok {
			return nil, fmt.Errorf("%s was not built", b.path)
		}
		files = append(files, regular(b.path, 0o755, data))
	}
	if len(files) != len(bins) {
		return nil, fmt.Errorf("built %s, the image holds %d binaries", strings.Join(slices.Sorted(maps.Keys(bins)), ", "), len(files))
	}
	layer, err := newLayer(files, created.Time)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, b := range spec.binaries {
		paths = append(paths, b.path)
	}
	adds = append(adds, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   created,
		CreatedBy: "hack/image: " + strings.Join(paths, ", ") + " (go build, static)",
	}})
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = o.goarch
	cf.Created = created
	cf.Config = v1.Config{
		Entrypoint: spec.entrypoint,
		Env:        spec.env,
		User:       spec.user,
		WorkingDir: spec.workdir,
		Labels:     spec.labels,
	}
	return mutate.ConfigFile(img, cf)
}
