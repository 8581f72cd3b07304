package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// corednsImage is the tag of the CoreDNS this program builds: a local
// name, since it is not the CoreDNS project's image.
const corednsImage = "localhost/mcp-e2e/coredns:v" + corednsVersion

// imageCommand packs one static binary as an image archive, for images
// a test needs beyond make image's:
//
//	cluster image --binary BIN --tag TAG --out FILE [-- ARG...]
func imageCommand(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	bin := fs.String("binary", "", "the static binary")
	tag := fs.String("tag", "", "the image's tag")
	out := fs.String("out", "", "the archive to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" || *tag == "" || *out == "" {
		return errors.New("image needs --binary, --tag and --out")
	}
	return writeImage(*out, *tag, *bin, "/"+path.Base(*bin), fs.Args())
}

// writeImage writes an archive (docker save's format, which ctr import
// reads) of an image that holds only the binary at entrypoint, run as
// UID 65532, with an empty /tmp. The config names os and architecture,
// without which containerd refuses the image, and the binary's mode is
// written by hand: go-containerregistry's in-memory layers drop the
// execute bit.
func writeImage(out, tag, binary, entrypoint string, args []string) error {
	data, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	epoch := time.Unix(0, 0)
	entries := []struct {
		hdr  tar.Header
		data []byte
	}{
		{tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: epoch}, nil},
		{tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(entrypoint, "/"), Mode: 0o755, Size: int64(len(data)), ModTime: epoch}, data},
	}
	for _, e := range entries {
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	raw := layer.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.Entrypoint = []string{entrypoint}
	cfg.Config.Cmd = args
	cfg.Config.User = "65532:65532"
	cfg.Config.Env = []string{"PATH=/"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}
	return tarball.WriteToFile(out, ref, img)
}
