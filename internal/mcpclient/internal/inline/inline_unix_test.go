//go:build unix && !aix

package inline

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawServer is an HTTP/1.1 server written byte by byte, to give the
// Transport answers net/http's server would not write.
type rawServer struct {
	url      string
	accepted atomic.Int64
	// ended hears each connection the client closed.
	ended chan struct{}
}

// startRaw serves answer for the n-th request (from 0); answer writes the
// whole answer and says whether the connection stays open after it.
func startRaw(t *testing.T, answer func(n int, w io.Writer) bool) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{url: "http://" + ln.Addr().String() + "/mcp", ended: make(chan struct{}, 100)}
	var requests atomic.Int64
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			mu.Lock()
			open = append(open, conn)
			mu.Unlock()
			conns.Go(func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						if errors.Is(err, io.EOF) {
							s.ended <- struct{}{}
						}
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if !answer(int(requests.Add(1)-1), conn) {
						return
					}
				}
			})
		}
	}()
	return s
}

func testInline(headerTimeout, idleTimeout time.Duration) *Transport {
	return New(&http.Transport{DialContext: (&net.Dialer{}).DialContext,
		ResponseHeaderTimeout: headerTimeout, IdleConnTimeout: idleTimeout, MaxIdleConnsPerHost: 64})
}

// post makes one request through tr and returns the answer's body, read
// to its end and closed.
func post(t *testing.T, tr http.RoundTripper, url string) (string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Method", "tools/call")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return "", err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return string(body), err
}

func write(w io.Writer, s string) { _, _ = io.WriteString(w, s) }

// TestInlineKeepsAConnectionOnlyWhenItsAnswerEndedCleanly: a connection
// is reused only after an answer whose end was plain (a length, or a
// chunked body's last chunk), never one the server said it closes, whose
// end is the connection's, or after which the server sent more.
func TestInlineKeepsAConnectionOnlyWhenItsAnswerEndedCleanly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(n int, w io.Writer) bool
		kept   bool
	}{
		{"a length", func(n int, w io.Writer) bool {
			write(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
			return true
		}, true},
		{"chunked", func(n int, w io.Writer) bool {
			write(w, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
			return true
		}, true},
		{"an early hint first", func(n int, w io.Writer) bool {
			write(w, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
			return true
		}, true},
		{"Connection: close", func(n int, w io.Writer) bool {
			write(w, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
			return true // the server keeps it open; the client must not reuse it
		}, false},
		{"ended by the connection's close", func(n int, w io.Writer) bool {
			write(w, "HTTP/1.1 200 OK\r\n\r\n{}")
			return false
		}, false},
		{"more after the answer", func(n int, w io.Writer) bool {
			write(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"x\":1}")
			return true
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startRaw(t, tc.answer)
			tr := testInline(10*time.Second, time.Minute)
			t.Cleanup(tr.CloseIdleConnections)
			for i := range 2 {
				body, err := post(t, tr, srv.url)
				if err != nil || body != "{}" {
					t.Fatalf("answer %d: %q, %v; want {}", i, body, err)
				}
			}
			want := int64(2)
			if tc.kept {
				want = 1
			}
			if got := srv.accepted.Load(); got != want {
				t.Errorf("two requests opened %d connections, want %d", got, want)
			}
		})
	}
}

// TestInlineWaitsForAnAnswerNoLongerThanTheHeaderTimeout: a server that
// takes the request and never answers fails it as a timeout.
func TestInlineWaitsForAnAnswerNoLongerThanTheHeaderTimeout(t *testing.T) {
	hold := make(chan struct{})
	srv := startRaw(t, func(int, io.Writer) bool { <-hold; return false })
	t.Cleanup(func() { close(hold) }) // before the server's cleanup waits for its handlers
	tr := testInline(300*time.Millisecond, time.Minute)
	_, err := post(t, tr, srv.url)
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() || errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want a timeout awaiting the answer", err)
	}
}

// TestInlineClosesConnectionsIdleForTheIdleTimeout: a kept connection
// nobody uses again is closed by the client, as net/http's are.
func TestInlineClosesConnectionsIdleForTheIdleTimeout(t *testing.T) {
	srv := startRaw(t, func(n int, w io.Writer) bool {
		write(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
		return true
	})
	tr := testInline(10*time.Second, 200*time.Millisecond)
	if body, err := post(t, tr, srv.url); err != nil || body != "{}" {
		t.Fatalf("%q, %v", body, err)
	}
	select {
	case <-srv.ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the idle connection was never closed")
	}
}

// TestInlineClosesWhatEndsAfterCloseIdleConnections: a call in flight
// when the session lets its idle connections go (Close, ReleaseIdle)
// closes its connection when it ends instead of keeping it.
func TestInlineClosesWhatEndsAfterCloseIdleConnections(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	srv := startRaw(t, func(n int, w io.Writer) bool {
		if n == 0 {
			close(started)
			<-release
		}
		write(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
		return true
	})
	tr := testInline(10*time.Second, time.Minute)
	done := make(chan error, 1)
	go func() {
		_, err := post(t, tr, srv.url)
		done <- err
	}()
	<-started
	tr.CloseIdleConnections()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the call's connection was kept after CloseIdleConnections")
	}
	tr.mu.Lock()
	kept := len(tr.idle)
	tr.mu.Unlock()
	if kept != 0 {
		t.Errorf("%d connections kept", kept)
	}
}

// TestInlineTakesNoMoreInterimAnswersThanNetHTTP: a server cannot keep
// a request going with 1xx answers; five are read, as net/http reads.
func TestInlineTakesNoMoreInterimAnswersThanNetHTTP(t *testing.T) {
	for _, tc := range []struct {
		interim int
		ok      bool
	}{{maxInterimAnswers, true}, {maxInterimAnswers + 1, false}} {
		t.Run(strconv.Itoa(tc.interim), func(t *testing.T) {
			srv := startRaw(t, func(n int, w io.Writer) bool {
				write(w, strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", tc.interim)+"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
				return true
			})
			tr := testInline(10*time.Second, time.Minute)
			t.Cleanup(tr.CloseIdleConnections)
			body, err := post(t, tr, srv.url)
			if ok := err == nil && body == "{}"; ok != tc.ok {
				t.Errorf("%d interim answers: %q, %v", tc.interim, body, err)
			}
		})
	}
}
