// Package e2e runs what a newcomer runs: `make demo`, end to end, with the
// real control plane, manager, demo MCP server, kubectl and curl.
package e2e

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolmesh/mcp-operator/internal/loopback"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// fetch GETs url and returns its body; any status but 200 is an error.
func fetch(url string) (string, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // a loopback URL of the test's own
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status)
	}
	return string(body), err
}

func listening(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err == nil {
		conn.Close()
	}
	return err == nil
}

// TestDemo runs the demo until it says it is running, checks what it
// printed, then presses Ctrl-C and checks that nothing it started is left.
func TestDemo(t *testing.T) {
	catalogAddr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "hack", "demo.sh"))
	cmd.Env = append(os.Environ(), "CATALOG_ADDR="+catalogAddr, "DEMO_EXIT=0",
		// make test runs beside other control planes on two cores: the
		// objects get longer to become Ready than at a quiet terminal.
		"DEMO_READY_TIMEOUT=240s")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// One goroutine reads everything the demo prints, then reaps it.
	lines := make(chan string, 1024)
	done := make(chan error, 1)
	go func() {
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
		done <- cmd.Wait()
	}()
	stopped := false
	defer func() {
		if stopped {
			return
		}
		// The test stopped early: Ctrl-C lets the script's trap stop what it
		// started (each in a session of its own, out of reach of a kill of
		// this group); only then is the group killed.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		go func() {
			for range lines { //nolint:revive // drained so the reader can finish
			}
		}()
		select {
		case err := <-done:
			t.Logf("the demo, stopped early, ended with %v", err)
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()

	var printed strings.Builder
	for line := range lines {
		printed.WriteString(line + "\n")
		if strings.Contains(line, "Press Ctrl-C") {
			break
		}
	}
	text := printed.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`mcpserver.mcp.toolmesh.io/demo\s+True\s+6\s+StreamableHTTP`),
		regexp.MustCompile(`mcpserver.mcp.toolmesh.io/demo-sse\s+True\s+2\s+SSE`),
		regexp.MustCompile(`mcpserver.mcp.toolmesh.io/demo-private\s+True\s+6\s+StreamableHTTP`),
		regexp.MustCompile(`mcpserver.mcp.toolmesh.io/demo-stdio\s+True\s+6\s+StreamableHTTP`),
		regexp.MustCompile(`mcp_stdio_time_now\s+The current date and time`),
		regexp.MustCompile(`toolcollection.mcp.toolmesh.io/assistant\s+True\s+2\s+7\s+0`),
		regexp.MustCompile(`convert\s+Converts length, mass and temperature`),
		regexp.MustCompile(`"output": "42.1648 km"`),
		regexp.MustCompile(`"tool_call_id": "call_1"`),
		regexp.MustCompile(`export KUBECONFIG=(\S+)`),
		regexp.MustCompile(`Console:\s+http://` + regexp.QuoteMeta(catalogAddr) + `/ui/\s`),
	} {
		if !want.MatchString(text) {
			t.Fatalf("the demo did not print %s; it printed:\n%s", want, text)
		}
	}
	workDir := filepath.Dir(regexp.MustCompile(`export KUBECONFIG=(\S+)`).FindStringSubmatch(text)[1])
	if !listening(catalogAddr) {
		t.Fatalf("the catalog is not listening on %s while the demo runs", catalogAddr)
	}

	// The console it printed is served: the page, and the data it shows.
	for path, want := range map[string]string{"/ui/": "<html", "/v1/namespaces/default/toolcollections/assistant": `"kind":"ToolCollection"`} {
		body, err := fetch("http://" + catalogAddr + path)
		if err != nil || !strings.Contains(body, want) {
			t.Fatalf("GET %s: %v, want a body with %s; got:\n%s", path, err, want, body)
		}
	}

	// Ctrl-C goes to the whole foreground process group.
	stopped = true
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	go func() {
		// Drain what it prints while it stops.
		for range lines { //nolint:revive // an empty body is the point
		}
	}()
	select {
	case err := <-done:
		// Interrupted, the script exits 130 on purpose.
		var exit *exec.ExitError
		if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 130) {
			t.Errorf("the demo ended with %v after Ctrl-C, want exit status 130", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the demo did not stop within 60s of Ctrl-C")
	}
	for _, addr := range []string{catalogAddr, "127.0.0.1:8765", "127.0.0.1:8766"} {
		if listening(addr) {
			t.Errorf("%s is still listening after Ctrl-C", addr)
		}
	}
	if _, err := os.Stat(workDir); !os.IsNotExist(err) {
		t.Errorf("the demo left %s behind", workDir)
	}
}
