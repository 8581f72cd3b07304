package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"syscall"
	"testing"
)

// TestWriteRequestWritesWhatRequestWriteWrites holds writeRequest to
// net/http's bytes, for the requests it writes itself and for those it
// hands to req.Write.
func TestWriteRequestWritesWhatRequestWriteWrites(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":"op-1","method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
	mcpHeaders := func() http.Header {
		return http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
			"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo"}}
	}
	cases := []struct {
		name  string
		build func() *http.Request
		// own says writeRequest writes it itself, not req.Write.
		own bool
	}{
		{"a session's call", func() *http.Request { return postRequest(t, "http://127.0.0.1:8080/mcp", body, mcpHeaders()) }, true},
		{"a query, a port-less host and a path to escape", func() *http.Request {
			return postRequest(t, "http://mcp.example/a%20b/mcp?x=1&y=two", body, mcpHeaders())
		}, true},
		{"several values, spaces around them, a key to sort first", func() *http.Request {
			h := mcpHeaders()
			h["Authorization"] = []string{"  Bearer t0ken\t"}
			h["X-Many"] = []string{"one", "two"}
			return postRequest(t, "http://127.0.0.1:8080/mcp", body, h)
		}, true},
		{"its own User-Agent", func() *http.Request {
			h := mcpHeaders()
			h.Set("User-Agent", "mcp-operator/test")
			return postRequest(t, "http://127.0.0.1:8080/mcp", body, h)
		}, true},
		{"an empty User-Agent, which sends none", func() *http.Request {
			h := mcpHeaders()
			h["User-Agent"] = []string{""}
			return postRequest(t, "http://127.0.0.1:8080/mcp", body, h)
		}, true},
		{"a User-Agent of blanks, which sends an empty one", func() *http.Request {
			h := mcpHeaders()
			h["User-Agent"] = []string{" \t ", "second"}
			return postRequest(t, "http://127.0.0.1:8080/mcp", body, h)
		}, true},
		{"twenty headers", func() *http.Request {
			h := mcpHeaders()
			for i := range 15 {
				h.Set(fmt.Sprintf("X-Header-%02d", i), fmt.Sprint(i))
			}
			return postRequest(t, "http://127.0.0.1:8080/mcp", body, h)
		}, true},
		{"a body in a strings.Reader, set by hand", func() *http.Request {
			r := postRequest(t, "http://127.0.0.1:8080/mcp", body, mcpHeaders())
			r.Body, r.GetBody = io.NopCloser(strings.NewReader(body)), nil
			return r
		}, true},
		{"headers net/http writes from fields, and a name it drops", func() *http.Request {
			h := mcpHeaders()
			h["Host"] = []string{"elsewhere"}
			h["Content-Length"] = []string{"1"}
			h["Bad Name"] = []string{"dropped"}
			return postRequest(t, "http://127.0.0.1:8080/mcp", body, h)
		}, true},
		{"a Host of its own", func() *http.Request {
			r := postRequest(t, "http://127.0.0.1:8080/mcp", body, mcpHeaders())
			r.Host = "mcp.internal:8080"
			return r
		}, true},
		{"a value with a line break", func() *http.Request {
			h := mcpHeaders()
			h["X-Broken"] = []string{"a\r\nInjected: yes"}
			return postRequest(t, "http://127.0.0.1:8080/mcp", body, h)
		}, false},
		{"a value beyond ASCII", func() *http.Request {
			h := mcpHeaders()
			h["X-Name"] = []string{"café"}
			return postRequest(t, "http://127.0.0.1:8080/mcp", body, h)
		}, false},
		{"a host net/http would not send", func() *http.Request {
			r := postRequest(t, "http://127.0.0.1:8080/mcp", body, mcpHeaders())
			r.Host = "bad\"host"
			return r
		}, false},
		{"an IPv6 zone", func() *http.Request {
			return postRequest(t, "http://[fe80::1%25eth0]:8080/mcp", body, mcpHeaders())
		}, false},
		{"Connection: close asked for", func() *http.Request {
			r := postRequest(t, "http://127.0.0.1:8080/mcp", body, mcpHeaders())
			r.Close = true
			return r
		}, false},
		{"a control byte in the query", func() *http.Request {
			r := postRequest(t, "http://127.0.0.1:8080/mcp", body, mcpHeaders())
			r.URL.RawQuery = "a=\tb"
			return r
		}, false},
		{"a body that is not in memory, GetBody or not", func() *http.Request {
			r := postRequest(t, "http://127.0.0.1:8080/mcp", body, mcpHeaders())
			r.Body = io.NopCloser(io.MultiReader(strings.NewReader(body)))
			return r
		}, false},
		{"a body of unknown length", func() *http.Request {
			r := postRequest(t, "http://127.0.0.1:8080/mcp", body, mcpHeaders())
			r.Body, r.GetBody, r.ContentLength = io.NopCloser(strings.NewReader(body)), nil, -1
			return r
		}, false},
		{"a GET", func() *http.Request {
			r, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:8080/mcp", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Header = mcpHeaders()
			return r
		}, false},
		{"a client trace", func() *http.Request {
			r := postRequest(t, "http://127.0.0.1:8080/mcp", body, mcpHeaders())
			return r.WithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{}))
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var want bytes.Buffer
			wantErr := tc.build().Write(&want)
			var got bytes.Buffer
			bw := bufio.NewWriter(&got)
			req := tc.build()
			if _, own := plainRequest(req); own != tc.own {
				t.Errorf("written by writeRequest itself: %v, want %v", own, tc.own)
			}
			if err := writeRequest(bw, req); fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("writeRequest: %v; req.Write: %v", err, wantErr)
			}
			if err := bw.Flush(); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("writeRequest wrote\n%q\nreq.Write writes\n%q", got.String(), want.String())
			}
		})
	}
}

// TestWriteRequestRefusesABodyOfAnotherLength: a body shorter or longer
// than its Content-Length is an error, as req.Write makes it.
func TestWriteRequestRefusesABodyOfAnotherLength(t *testing.T) {
	for _, length := range []int64{5, 50} {
		req := postRequest(t, "http://127.0.0.1:8080/mcp", strings.Repeat("x", 10), http.Header{"Content-Type": {"application/json"}})
		req.ContentLength = length
		want := req.Clone(context.Background())
		want.Body, _ = req.GetBody()
		wantErr := want.Write(io.Discard)
		if _, own := plainRequest(req); !own {
			t.Fatal("the request must take writeRequest's own path")
		}
		err := writeRequest(bufio.NewWriter(io.Discard), req)
		if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
			t.Errorf("Content-Length %d of a 10-byte body: got %v, req.Write says %v", length, err, wantErr)
		}
	}
}

// TestWriteRequestReturnsABrokenWriteAsItIs: a connection that breaks
// while the body goes out is reported as the connection's error, for
// classify to read as one (req.Write would wrap it as a body read error).
func TestWriteRequestReturnsABrokenWriteAsItIs(t *testing.T) {
	broken := &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	req := postRequest(t, "http://127.0.0.1:8080/mcp", strings.Repeat("x", 64<<10), http.Header{"Content-Type": {"application/json"}})
	if _, own := plainRequest(req); !own {
		t.Fatal("the request must take writeRequest's own path")
	}
	err := writeRequest(bufio.NewWriter(&breakingWriter{after: 8 << 10, err: broken}), req)
	var opErr *net.OpError
	if !errors.As(err, &opErr) || opErr != broken {
		t.Errorf("got %#v, want the connection's own error", err)
	}
}

// breakingWriter fails every write once after bytes went through.
type breakingWriter struct {
	after int
	err   error
}

func (w *breakingWriter) Write(p []byte) (int, error) {
	if w.after <= 0 {
		return 0, w.err
	}
	n := min(len(p), w.after)
	w.after -= n
	return n, nil
}

func postRequest(t *testing.T, url, body string, header http.Header) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	r.Header = header
	return r
}
