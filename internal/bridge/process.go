package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// stdinQueue bounds the messages waiting to be written to the child.
	stdinQueue = 256
	// maxStderrLine is the longest stderr line logged whole; longer ones
	// are logged cut.
	maxStderrLine = 64 * 1024
	// drainAfterExit is how long output still in the pipes is read after
	// the child exited, before what is left of its process group is killed.
	drainAfterExit = 2 * time.Second
)

var errExited = errors.New("the MCP server process has exited")

// child is one run of the server process: its pipes, the goroutines that
// move lines through them, and its exit.
type child struct {
	cmd   *exec.Cmd
	pid   int
	log   *slog.Logger
	queue chan outgoing

	// reaped is closed once the process has exited, when nothing more is
	// written to its stdin; exited once its output is read too and the
	// writer has stopped, so what was written is known for good.
	reaped    chan struct{}
	stdinDone chan struct{}
	exited    chan struct{}
	exitErr   error // why it exited; set before exited is closed
	stopOne   sync.Once
}

// outgoing is one message for the child's stdin. written, if not nil, is set
// once any of it went into the pipe: from then on the child may have read it
// and acted on it. A message never written can go to the next child.
type outgoing struct {
	msg     []byte
	written *atomic.Bool
}

// lineHandlers receive what a child writes to stdout.
type lineHandlers struct {
	line      func(*child, []byte)
	oversized func(*child, *oversized)
}

// startChild starts argv in its own process group (so signals reach
// anything it starts, and nothing of it outlives a restart) with the
// bridge's environment. It dies with the bridge (Pdeathsig).
func startChild(argv []string, maxLine int, log *slog.Logger, out lineHandlers) (*child, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	// The child holds its own copies of these ends; the bridge's copies
	// would keep stdout from ever reaching EOF.
	closeAll(inR, outW, errW)
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	c := &child{cmd: cmd, pid: cmd.Process.Pid, log: log.With("pid", cmd.Process.Pid),
		queue: make(chan outgoing, stdinQueue), reaped: make(chan struct{}), stdinDone: make(chan struct{}), exited: make(chan struct{})}
	stdoutDone := make(chan struct{})
	stderrDone := make(chan struct{})
	go c.writeStdin(inW)
	go func() { defer close(stdoutDone); c.readStdout(outR, maxLine, out) }()
	go func() { defer close(stderrDone); c.readStderr(errR) }()
	go c.wait(inW, outR, errR, stdoutDone, stderrDone)
	return c, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// send queues one message for the child's stdin; written (if not nil) tells
// whether it was written. errExited means it will never be.
func (c *child) send(ctx context.Context, msg []byte, written *atomic.Bool) error {
	select {
	case c.queue <- outgoing{msg: msg, written: written}:
		return nil
	case <-c.reaped:
		return errExited
	case <-ctx.Done():
		return fmt.Errorf("waiting to write to the MCP server: %w", ctx.Err())
	}
}

// trySend queues one message if there is room, without waiting.
func (c *child) trySend(msg []byte) bool {
	select {
	case c.queue <- outgoing{msg: msg}:
		return true
	default:
		return false
	}
}

// writeStdin is the only writer of the child's stdin, so messages never
// interleave. A child that stops reading its stdin cannot be served, so a
// failed write stops it and the supervisor restarts it. Nothing is written
// once the process has exited, even if a process it started holds the pipe.
func (c *child) writeStdin(w *os.File) {
	defer close(c.stdinDone)
	defer w.Close()
	for {
		select {
		case out := <-c.queue:
			select {
			case <-c.reaped:
				return
			default:
			}
			n, err := w.Write(append(out.msg, '\n'))
			if n > 0 && out.written != nil {
				out.written.Store(true)
			}
			if err != nil {
				c.log.Error("Writing to the MCP server failed; stopping it", "error", err)
				c.signal(syscall.SIGKILL)
				return
			}
		case <-c.reaped:
			return
		}
	}
}

func (c *child) readStdout(r io.Reader, maxLine int, out lineHandlers) {
	lines := newLineReader(r, maxLine)
	for {
		line, big, err := lines.next()
		switch {
		case err != nil:
			return
		case big != nil:
			out.oversized(c, big)
		case len(line) > 0:
			out.line(c, line)
		}
	}
}

// readStderr logs the child's stderr line by line.
func (c *child) readStderr(r io.Reader) {
	lines := newLineReader(r, maxStderrLine)
	for {
		line, big, err := lines.next()
		switch {
		case err != nil:
			return
		case big != nil:
			c.log.Info("MCP server stderr", "line", string(big.head), "cut", true, "bytes", big.size)
		case len(line) > 0:
			c.log.Info("MCP server stderr", "line", string(line))
		}
	}
}

// wait reaps the child, reads what it wrote before exiting, then kills any
// process it left behind in its group and closes the pipes, which ends the
// readers and the writer even if such a process held them open.
func (c *child) wait(inW, outR, errR *os.File, stdoutDone, stderrDone <-chan struct{}) {
	err := c.cmd.Wait()
	close(c.reaped)
	drained := time.NewTimer(drainAfterExit)
	defer drained.Stop()
	for _, done := range []<-chan struct{}{stdoutDone, stderrDone} {
		select {
		case <-done:
		case <-drained.C:
		}
	}
	_ = syscall.Kill(-c.pid, syscall.SIGKILL)
	closeAll(inW, outR, errR)
	<-stdoutDone
	<-stderrDone
	<-c.stdinDone
	if err == nil {
		err = errors.New("exit status 0")
	}
	c.exitErr = err
	close(c.exited)
}

// signal signals the child's whole process group.
func (c *child) signal(sig syscall.Signal) {
	if err := syscall.Kill(-c.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		c.log.Error("Signalling the MCP server failed", "signal", sig, "error", err)
	}
}

// stop asks the child to stop with SIGTERM, kills it after grace, and
// returns once it has exited.
func (c *child) stop(grace time.Duration) {
	c.stopOne.Do(func() {
		c.log.Info("Stopping the MCP server", "signal", "SIGTERM", "grace", grace)
		c.signal(syscall.SIGTERM)
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-c.exited:
		case <-timer.C:
			c.log.Warn("The MCP server did not stop within its grace period; killing it", "grace", grace)
			c.signal(syscall.SIGKILL)
		}
	})
	<-c.exited
}

// running reports whether the process has not exited yet.
func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}
