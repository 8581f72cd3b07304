package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
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
			if err := tc.build().Write(&want); err != nil {
				t.Fatalf("req.Write: %v", err)
			}
			var got bytes.Buffer
			bw := bufio.NewWriter(&got)
			req := tc.build()
			closed := &closeCounter{ReadCloser: req.Body}
			if req.Body != nil {
				req.Body = closed
			}
			if err := writeRequest(bw, req); err != nil {
				t.Fatalf("writeRequest: %v", err)
			}
			if err := bw.Flush(); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("writeRequest wrote\n%q\nreq.Write writes\n%q", got.String(), want.String())
			}
			if _, own := plainRequest(tc.build()); own != tc.own {
				t.Errorf("written by writeRequest itself: %v, want %v", own, tc.own)
			}
			if req.Body != nil && closed.n != 1 {
				t.Errorf("the body was closed %d times, want once, as req.Write closes it", closed.n)
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
		err := writeRequest(bufio.NewWriter(io.Discard), req)
		if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
			t.Errorf("Content-Length %d of a 10-byte body: got %v, req.Write says %v", length, err, wantErr)
		}
	}
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

// closeCounter counts the closes of a request's body.
type closeCounter struct {
	io.ReadCloser
	n int
}

func (c *closeCounter) Close() error {
	c.n++
	return c.ReadCloser.Close()
}
