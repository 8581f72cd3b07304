package testmcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/toolmesh/mcp-operator/internal/loopback"
)

// PeersEnv names the folder hack/npm-peers.sh installed the npm MCP servers
// into; `make test` sets it.
const PeersEnv = "MCP_NPM_PEERS"

// Everything is a running @modelcontextprotocol/server-everything, the MCP
// reference server from npm, kept on 127.0.0.1.
type Everything struct {
	cmd  *exec.Cmd
	addr string
	mode string
}

// StartEverything starts the reference server in mode "sse" or
// "streamableHttp" and waits until it accepts connections.
func StartEverything(mode string) (*Everything, error) {
	peers := os.Getenv(PeersEnv)
	if peers == "" {
		return nil, fmt.Errorf("%s is not set: run `make test`, which installs the npm MCP servers", PeersEnv)
	}
	addr, err := loopback.FreeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	entry := filepath.Join(peers, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	cmd := exec.Command("node", "--require", filepath.Join(peers, "loopback.cjs"), entry, mode)
	cmd.Env = append(os.Environ(), "PORT="+port)
	// Its own process group, so that Stop ends it and anything it spawned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting server-everything: %w", err)
	}
	e := &Everything{cmd: cmd, addr: addr, mode: mode}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", e.addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return e, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.Stop()
	return nil, errors.New("server-everything did not accept connections within 30s")
}

// URL is its MCP endpoint for the mode it runs in.
func (e *Everything) URL() string {
	if e.mode == "sse" {
		return "http://" + e.addr + "/sse"
	}
	return "http://" + e.addr + "/mcp"
}

// Stop kills its process group and waits for it.
func (e *Everything) Stop() {
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	_ = e.cmd.Wait()
}

// Inspector runs the MCP Inspector CLI (npm @modelcontextprotocol/inspector),
// a real MCP client nobody here wrote, with the given arguments after --cli,
// and returns what it printed.
func Inspector(ctx context.Context, args ...string) (string, error) {
	peers := os.Getenv(PeersEnv)
	if peers == "" {
		return "", fmt.Errorf("%s is not set: run `make test`, which installs the npm MCP peers", PeersEnv)
	}
	home, err := os.MkdirTemp("", "mcp-inspector-home-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	launcher := filepath.Join(peers, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	cmd := exec.CommandContext(ctx, "node", append([]string{launcher, "--cli"}, args...)...)
	// It writes ~/.mcp-inspector: keep that out of the real home.
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
