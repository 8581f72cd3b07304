package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
)

// goBuild builds b as the images hold it and returns the executable's
// bytes: static (CGO_ENABLED=0), for linux/o.goarch, with -trimpath and no
// VCS stamp (the version is stamped by -ldflags; the commit is the
// revision label), so that the bytes depend on the source, the flags and
// the Go toolchain only. GOFLAGS is cleared: flags from the environment
// (-race, -tags, -cover) would change what the image holds.
func goBuild(ctx context.Context, o options, b binary, dir string) ([]byte, error) {
	out := filepath.Join(dir, path.Base(b.path))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags="+b.ldflags, "-o", out, "./"+b.pkg)
	cmd.Dir = o.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.goarch, "GOFLAGS=")
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build ./%s: %w", b.pkg, err)
	}
	return os.ReadFile(out)
}
