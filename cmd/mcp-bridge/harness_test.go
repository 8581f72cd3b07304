package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolmesh/mcp-operator/internal/testenv"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// The binaries under test, built once by TestMain.
var bridgeBin, demoBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcp-bridge-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bridgeBin, demoBin = filepath.Join(dir, "mcp-bridge"), filepath.Join(dir, "demo-mcp-server")
	if err := goBuild(bridgeBin, ".", nil, raceFlags...); err != nil {
		fmt.Fprintln(os.Stderr, "building mcp-bridge:", err)
		os.Exit(1)
	}
	if err := goBuild(demoBin, "github.com/toolmesh/mcp-operator/cmd/demo-mcp-server", nil); err != nil {
		fmt.Fprintln(os.Stderr, "building demo-mcp-server:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func goBuild(out, pkg string, env []string, flags ...string) error {
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// The stdio servers the bridge is tested in front of.

func peers(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(testmcp.PeersEnv)
	if dir == "" {
		t.Fatalf("%s is not set: run `make test`, or set it to the folder hack/npm-peers.sh prints", testmcp.PeersEnv)
	}
	return dir
}

func everythingCommand(t *testing.T) []string {
	return []string{"node", filepath.Join(peers(t), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"}
}

func filesystemCommand(t *testing.T, root string) []string {
	return []string{"node", filepath.Join(peers(t), "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"), root}
}

func demoCommand() []string { return []string{demoBin, "--stdio"} }

func script(name string) string {
	path, _ := filepath.Abs(filepath.Join("testdata", name))
	return path
}

// bridgeProc is a running mcp-bridge process.
type bridgeProc struct {
	t       testing.TB
	cmd     *exec.Cmd
	log     *testenv.LockedBuffer
	addr    string
	exited  chan struct{}
	stopped bool
}

// startBridge runs mcp-bridge on a free loopback port in front of command
// and waits until it listens. It is stopped (SIGTERM) when the test ends.
func startBridge(t testing.TB, env, flags []string, command ...string) *bridgeProc {
	t.Helper()
	return startBridgeBinary(t, bridgeBin, env, flags, command...)
}

// startBridgeBinary is startBridge with the bridge binary at bin.
func startBridgeBinary(t testing.TB, bin string, env, flags []string, command ...string) *bridgeProc {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	args := append([]string{"--listen", "127.0.0.1:0", "--addr-file", addrFile}, flags...)
	cmd := exec.Command(bin, append(append(args, "--"), command...)...)
	b := &bridgeProc{t: t, cmd: cmd, log: &testenv.LockedBuffer{}, exited: make(chan struct{})}
	// The race detector waits a second at exit by default.
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=100"), env...)
	cmd.Stdout, cmd.Stderr = b.log, b.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting mcp-bridge: %v", err)
	}
	go func() { _ = cmd.Wait(); close(b.exited) }()
	t.Cleanup(b.stop)
	eventually(t, 30*time.Second, "the bridge to listen", func() bool {
		select {
		case <-b.exited:
			t.Fatalf("mcp-bridge exited before listening:\n%s", b.log)
		default:
		}
		addr, err := os.ReadFile(addrFile)
		b.addr = string(addr)
		return err == nil
	})
	return b
}

func (b *bridgeProc) url(path string) string { return "http://" + b.addr + path }

// stop sends SIGTERM and waits for the bridge to exit (SIGKILL if it does
// not within a minute), then fails the test if the race detector spoke.
func (b *bridgeProc) stop() {
	if !b.stopped {
		b.stopped = true
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(time.Minute):
			_ = b.cmd.Process.Kill()
			<-b.exited
			b.t.Errorf("mcp-bridge did not stop within a minute of SIGTERM")
		}
	}
	if strings.Contains(b.log.String(), "WARNING: DATA RACE") {
		b.t.Errorf("the race detector found a race in mcp-bridge:\n%s", b.log)
	}
	if b.t.Failed() {
		b.t.Logf("mcp-bridge log:\n%s", b.log)
	}
}

// waitLog waits until the bridge's log has a line matching pattern.
func (b *bridgeProc) waitLog(pattern string) { b.waitLogAfter(0, pattern) }

// logMark is how much the bridge has logged so far.
func (b *bridgeProc) logMark() int { return len(b.log.String()) }

// waitLogAfter waits for a line matching pattern logged after mark.
func (b *bridgeProc) waitLogAfter(mark int, pattern string) {
	b.t.Helper()
	re := regexp.MustCompile(pattern)
	eventually(b.t, 60*time.Second, "the log to match "+pattern, func() bool { return re.MatchString(b.log.String()[mark:]) })
}

// probe GETs /healthz or /readyz.
func (b *bridgeProc) probe(path string) (int, string) {
	b.t.Helper()
	resp, err := http.Get(b.url(path))
	if err != nil {
		b.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var pidPattern = regexp.MustCompile(`pid (\d+)`)

// childPID is the running server's pid, as /healthz tells it.
func (b *bridgeProc) childPID() int {
	b.t.Helper()
	status, body := b.probe("/healthz")
	m := pidPattern.FindStringSubmatch(body)
	if status != http.StatusOK || m == nil {
		b.t.Fatalf("/healthz: %d %s", status, body)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// eventually polls cond until it holds, failing the test after timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Clients: mcp-go's own, over both transports.

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// notes collects the notifications a client receives.
type notes struct {
	mu     sync.Mutex
	all    []mcp.JSONRPCNotification
	signal chan struct{} // gets a value (without blocking) per notification
}

func newNotes() *notes { return &notes{signal: make(chan struct{}, 1)} }

func (n *notes) add(note mcp.JSONRPCNotification) {
	n.mu.Lock()
	n.all = append(n.all, note)
	n.mu.Unlock()
	select {
	case n.signal <- struct{}{}:
	default:
	}
}

// of returns the notifications received with method.
func (n *notes) of(method string) []mcp.JSONRPCNotification {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, note := range n.all {
		if note.Method == method {
			out = append(out, note)
		}
	}
	return out
}

// waitFor waits until a notification with method has arrived.
func (n *notes) waitFor(t testing.TB, method string) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for len(n.of(method)) == 0 {
		select {
		case <-n.signal:
		case <-timeout:
			t.Fatalf("timed out waiting for a %s notification", method)
		}
	}
}

type clientKind string

const (
	streamable clientKind = "streamable"
	sse        clientKind = "sse"
)

// connect opens an initialized mcp-go client session through the bridge.
// A Streamable HTTP client listens on the GET stream. revision "" lets
// mcp-go negotiate as it does by default (it probes server/discover first).
func connect(t testing.TB, b *bridgeProc, kind clientKind, revision string) (*client.Client, *notes) {
	t.Helper()
	var (
		c   *client.Client
		err error
	)
	if kind == sse {
		c, err = client.NewSSEMCPClient(b.url("/sse"), transport.WithSSELogger(quiet))
	} else {
		// The listening GET stream is what list_changed travels on before
		// 2026-07-28, which the bridge speaks; the operator uses it too.
		c, err = client.NewStreamableHttpClient(b.url("/mcp"),
			transport.WithContinuousListening(), //nolint:staticcheck // see above
			transport.WithHTTPLogger(quiet))
	}
	if err != nil {
		t.Fatal(err)
	}
	received := newNotes()
	c.OnNotification(received.add)
	streamCtx, endStream := context.WithCancel(context.Background())
	t.Cleanup(func() { _ = c.Close(); endStream() })
	if err := c.Start(streamCtx); err != nil {
		t.Fatalf("starting the %s client: %v", kind, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: revision,
		ClientInfo:      mcp.Implementation{Name: "bridge-test", Version: "1"},
	}}); err != nil {
		t.Fatalf("initializing the %s client: %v", kind, err)
	}
	return c, received
}

// callText calls a tool and returns the text of its first content item.
func callText(ctx context.Context, c *client.Client, tool string, args map[string]any) (string, error) {
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", fmt.Errorf("%s returned no content", tool)
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		return "", fmt.Errorf("%s returned %T, not text", tool, res.Content[0])
	}
	if res.IsError {
		return text.Text, fmt.Errorf("%s failed: %s", tool, text.Text)
	}
	return text.Text, nil
}

func timeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
