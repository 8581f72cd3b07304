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
	const target = "http://127.0.0.1:8080/mcp"
	// call is a session's call with its headers edited; request is that
	// call with the request edited.
	call := func(edit func(http.Header)) func(t *testing.T) *http.Request {
		return func(t *testing.T) *http.Request {
			h := mcpHeaders()
			edit(h)
			return postRequest(t, target, body, h)
		}
	}
	request := func(edit func(*http.Request)) func(t *testing.T) *http.Request {
		return func(t *testing.T) *http.Request {
			r := postRequest(t, target, body, mcpHeaders())
			edit(r)
			return r
		}
	}
	cases := []struct {
		name  string
		build func(*testing.T) *http.Request
		// own says writeRequest writes it itself, not req.Write.
		own bool
	}{
		{"a session's call", call(func(http.Header) {}), true},
		{"a query, a port-less host and a path to escape", func(t *testing.T) *http.Request {
			return postRequest(t, "http://mcp.example/a%20b/mcp?x=1&y=two", body, mcpHeaders())
		}, true},
		{"several values, spaces around them, a key to sort first", call(func(h http.Header) {
			h["Authorization"] = []string{"  Bearer t0ken\t"}
			h["X-Many"] = []string{"one", "two"}
		}), true},
		{"its own User-Agent", call(func(h http.Header) { h.Set("User-Agent", "mcp-operator/test") }), true},
		{"an empty User-Agent, which sends none", call(func(h http.Header) { h["User-Agent"] = []string{""} }), true},
		{"a User-Agent of blanks, which sends an empty one", call(func(h http.Header) { h["User-Agent"] = []string{" \t ", "second"} }), true},
		{"twenty headers", call(func(h http.Header) {
			for i := range 15 {
				h.Set(fmt.Sprintf("X-Header-%02d", i), fmt.Sprint(i))
			}
		}), true},
		{"headers net/http writes from fields, and a name it drops", call(func(h http.Header) {
			h["Host"] = []string{"elsewhere"}
			h["Content-Length"] = []string{"1"}
			h["Bad Name"] = []string{"dropped"}
		}), true},
		{"a Host of its own", request(func(r *http.Request) { r.Host = "mcp.internal:8080" }), true},
		{"a body in a strings.Reader, set by hand", request(func(r *http.Request) {
			r.Body, r.GetBody = io.NopCloser(strings.NewReader(body)), nil
		}), true},
		{"a body in a bytes.Buffer", func(t *testing.T) *http.Request {
			r, err := http.NewRequest(http.MethodPost, target, bytes.NewBufferString(body))
			if err != nil {
				t.Fatal(err)
			}
			r.Header = mcpHeaders()
			return r
		}, true},
		{"a value with a line break", call(func(h http.Header) { h["X-Broken"] = []string{"a\r\nInjected: yes"} }), false},
		{"a value beyond ASCII", call(func(h http.Header) { h["X-Name"] = []string{"café"} }), false},
		{"a host net/http would not send", request(func(r *http.Request) { r.Host = "bad\"host" }), false},
		{"a host beyond ASCII, which net/http sends in punycode", func(t *testing.T) *http.Request {
			return postRequest(t, "http://café.example/mcp", body, mcpHeaders())
		}, false},
		{"an IPv6 zone", func(t *testing.T) *http.Request {
			return postRequest(t, "http://[fe80::1%25eth0]:8080/mcp", body, mcpHeaders())
		}, false},
		{"Connection: close asked for", request(func(r *http.Request) { r.Close = true }), false},
		{"a control byte in the query", request(func(r *http.Request) { r.URL.RawQuery = "a=\tb" }), false},
		{"a body that is not in memory, GetBody or not", request(func(r *http.Request) {
			r.Body = io.NopCloser(io.MultiReader(strings.NewReader(body)))
		}), false},
		{"a body of unknown length", request(func(r *http.Request) {
			r.Body, r.GetBody, r.ContentLength = io.NopCloser(strings.NewReader(body)), nil, -1
		}), false},
		{"a GET", func(t *testing.T) *http.Request {
			r, err := http.NewRequest(http.MethodGet, target, nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Header = mcpHeaders()
			return r
		}, false},
		{"a client trace", func(t *testing.T) *http.Request {
			r := postRequest(t, target, body, mcpHeaders())
			return r.WithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{}))
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var want bytes.Buffer
			wantErr := tc.build(t).Write(&want)
			var got bytes.Buffer
			bw := bufio.NewWriter(&got)
			req := tc.build(t)
			if _, _, own := plainRequest(req); own != tc.own {
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
		if _, _, own := plainRequest(req); !own {
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
	if _, _, own := plainRequest(req); !own {
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

// postRequest is a request as a 2026-07-28 session makes it (newPost).
func postRequest(t *testing.T, url, body string, header http.Header) *http.Request {
	t.Helper()
	r, err := newPost(context.Background(), url, []byte(body), header)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
