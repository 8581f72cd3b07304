package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The operator's init container runs `mcp-bridge --install
// /mcp-bridge/mcp-bridge` and the server container then runs the copy: it
// must be whole, executable by any user (the server may run as another
// user than the installer), in place without leftovers, and work as the
// bridge.
func TestInstallCopiesAWorkingBridge(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "mcp-bridge")
	if out, err := exec.Command(bridgeBin, "--install", dest).CombinedOutput(); err != nil {
		t.Fatalf("mcp-bridge --install: %v\n%s", err, out)
	}
	want, err := os.ReadFile(bridgeBin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the copy differs from the bridge: %d bytes, want %d", len(got), len(want))
	}
	info, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o755 {
		t.Errorf("the copy's mode is %v, want -rwxr-xr-x", info.Mode())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the folder holds %d entries, want only the bridge: %v", len(entries), entries)
	}

	b := startBridgeBinary(t, dest, nil, nil, demoCommand()...)
	eventually(t, 30*time.Second, "the installed bridge to be ready", func() bool {
		status, _ := b.probe("/readyz")
		return status == http.StatusOK
	})
	c, _ := connect(t, b, streamable, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("listing tools through the installed bridge: %v", err)
	}
	if len(tools.Tools) == 0 {
		t.Fatal("the installed bridge lists no tools of the demo server")
	}
}

// Installing over an earlier copy (an init container that ran again after
// a pod restart) replaces it.
func TestInstallReplacesAnEarlierCopy(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "mcp-bridge")
	if err := os.WriteFile(dest, []byte("an older bridge"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bridgeBin, "--install", dest).CombinedOutput(); err != nil {
		t.Fatalf("mcp-bridge --install: %v\n%s", err, out)
	}
	got, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := os.ReadFile(bridgeBin); !bytes.Equal(got, want) {
		t.Fatal("the earlier copy was not replaced")
	}
}

func TestInstallFailsClearly(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a server command as well", []string{"--install", filepath.Join(t.TempDir(), "b"), "--", "node", "server.js"},
			"--install copies the bridge and exits; it takes no server command"},
		{"a folder that does not exist", []string{"--install", filepath.Join(t.TempDir(), "missing", "b")},
			"installing the bridge at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(bridgeBin, tt.args...).CombinedOutput()
			if err == nil {
				t.Fatalf("mcp-bridge %v succeeded:\n%s", tt.args, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("output %q does not say %q", out, tt.want)
			}
		})
	}
}
