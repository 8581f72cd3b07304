package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// options are what one run builds: which version, from which commit, at
// which time, for which architecture, from which module, into which folder.
type options struct {
	out      string
	version  string
	revision string
	epoch    int64
	goarch   string
	root     string // the module's root
}

// tagPattern is what a registry accepts as a tag.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// goarchPattern keeps -goarch to a word go build can take.
var goarchPattern = regexp.MustCompile(`^[a-z0-9]+$`)

func (o options) check() error {
	if !tagPattern.MatchString(o.version) {
		return fmt.Errorf("version %q is not an image tag (letters, digits, '.', '_', '-', at most 128)", o.version)
	}
	if o.epoch < 0 {
		return fmt.Errorf("epoch %d is before 1970", o.epoch)
	}
	if !goarchPattern.MatchString(o.goarch) {
		return fmt.Errorf("goarch %q is not an architecture", o.goarch)
	}
	return nil
}

// created is the time every file, layer and config of one run carries.
func (o options) created() time.Time { return time.Unix(o.epoch, 0).UTC() }

// run builds every image into o.out, prints one line per image and writes
// the same lines to digests.txt: archive, reference, manifest digest.
func run(ctx context.Context, o options, w io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var lines []string
	for _, spec := range imageSpecs(o) {
		line, err := buildImage(ctx, o, spec)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.ref(), err)
		}
		fmt.Fprintln(w, line)
		lines = append(lines, line)
	}
	return writeFileAtomic(filepath.Join(o.out, "digests.txt"), func(w io.Writer) error {
		_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
		return err
	})
}

// buildImage builds spec's binaries, assembles the image and writes its
// archive, <out>/<name>.tar; it returns the line digests.txt holds for it.
func buildImage(ctx context.Context, o options, spec imageSpec) (string, error) {
	tmp, err := os.MkdirTemp("", "mcp-operator-image-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	bins := make(map[string][]byte, len(spec.binaries))
	for _, b := range spec.binaries {
		data, err := goBuild(ctx, o, b, tmp)
		if err != nil {
			return "", err
		}
		bins[b.path] = data
	}
	img, err := assemble(spec, bins, o)
	if err != nil {
		return "", err
	}
	archive := filepath.Join(o.out, spec.name+".tar")
	var digest string
	err = writeFileAtomic(archive, func(w io.Writer) error {
		d, err := writeArchive(w, img, spec, o)
		digest = d.String()
		return err
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s %s", filepath.Base(archive), spec.ref(), digest), nil
}

// writeFileAtomic writes a file under a temporary name beside path and
// renames it into place, so that path is never seen half written.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, there is nothing to remove
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
