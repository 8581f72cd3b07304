package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// install copies the running executable to dest, executable by everyone,
// so that an init container can put the bridge into a volume the server
// container shares. The operator's image is distroless: there is no cp to
// do it, and the binary is static, so the copy runs in any image. The copy
// lands under a temporary name and is renamed into place, so dest is never
// seen half written.
func install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the bridge's own executable: %w", err)
	}
	src, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("opening the bridge's own executable: %w", err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".mcp-bridge-*")
	if err != nil {
		return fmt.Errorf("installing the bridge at %s: %w", dest, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return fmt.Errorf("copying the bridge to %s: %w", dest, err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return fmt.Errorf("making %s executable: %w", dest, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", dest, err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("installing the bridge at %s: %w", dest, err)
	}
	return nil
}
