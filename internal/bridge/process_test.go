package bridge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Nothing is written to a child's stdin once its process has exited, even
// while a process it started holds the pipe and reads it: a message sent then
// is never marked written, so the bridge can send it to the next child
// without it having reached this one. A message written before is marked.
func TestNothingIsWrittenToAChildThatExited(t *testing.T) {
	got := filepath.Join(t.TempDir(), "stdin")
	// cat, a process of its own beside sleep (the one the bridge started
	// and waits for), reads the child's stdin (kept as fd 3) into a file.
	argv := []string{"sh", "-c", `exec 3<&0; cat <&3 >"$0" & exec sleep 600 3<&-`, got}
	ignore := lineHandlers{line: func(*child, []byte) {}, oversized: func(*child, *oversized) {}}
	proc, err := startChild(argv, 1024, slog.New(slog.NewTextHandler(io.Discard, nil)), ignore)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.stop(time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var before atomic.Bool
	if err := proc.send(ctx, []byte(`{"sent":"before"}`), &before); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the first message to be written", before.Load)
	waitUntil(t, "cat to read it", func() bool { return bytes.Contains(readFile(got), []byte("before")) })

	if err := syscall.Kill(proc.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-proc.reaped
	var after atomic.Bool
	if err := proc.send(ctx, []byte(`{"sent":"after"}`), &after); err != nil && !errors.Is(err, errExited) {
		t.Fatal(err)
	}
	<-proc.exited // the writer has stopped: what was written is final
	if after.Load() {
		t.Error("a message sent after the process exited was marked written")
	}
	if content := readFile(got); bytes.Contains(content, []byte("after")) {
		t.Errorf("a message sent after the process exited reached what it left behind: %s", content)
	}
}

func readFile(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
