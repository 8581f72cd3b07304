package mcpclient

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// writeRequest writes req on a kept connection's buffer, as req.Write
// writes it, byte for byte, when req has the shape of every request a
// session posts: a POST of a body in memory, plain headers, no trailer,
// nothing traced. Any other request goes to req.Write. Request.Write
// took about 7 µs of wall time a call in the manager (a header sorter
// from a pool, a transfer writer, fmt for the first lines, each value
// cleaned through a strings.Replacer); this takes about 4, measured the
// same way (docs/performance-notes.md).
//
// One difference is meant: a failed write of the body comes back as it
// is, where req.Write wraps it as an error reading the body (net/http's
// Transport unwraps it again), so that classify reads a broken
// connection as one; a request that goes to req.Write still has it
// wrapped. The 4 µs were measured of 7fa21ee's version, before the
// checks of plainRequest grew (inMemory, visibleText); with them, a
// session's call takes 0.85–0.94 µs of CPU and 2 allocations, against
// 1.47–1.60 µs and 8 for req.Write, in a microbenchmark of the write
// alone.
func writeRequest(bw *bufio.Writer, req *http.Request) error {
	host, uri, ok := plainRequest(req)
	if !ok {
		return req.Write(bw)
	}
	_, _ = bw.WriteString("POST ")
	_, _ = bw.WriteString(uri)
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(host)
	_, _ = bw.WriteString("\r\n")
	userAgent := "Go-http-client/1.1" // net/http's, unless the header names one
	if values, ok := req.Header["User-Agent"]; ok {
		// A value of blanks is sent, empty: only an empty one is not.
		userAgent = ""
		if len(values) > 0 {
			userAgent = values[0]
		}
	}
	if userAgent != "" {
		_, _ = bw.WriteString("User-Agent: ")
		_, _ = bw.WriteString(textproto.TrimString(userAgent))
		_, _ = bw.WriteString("\r\n")
	}
	_, _ = bw.WriteString("Content-Length: ")
	var digits [20]byte
	_, _ = bw.Write(strconv.AppendInt(digits[:0], req.ContentLength, 10))
	_, _ = bw.WriteString("\r\n")
	var stack [16]string
	keys := stack[:0]
	for k := range req.Header {
		if !excludedHeader[k] && httpguts.ValidHeaderFieldName(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			_, _ = bw.WriteString(k)
			_, _ = bw.WriteString(": ")
			_, _ = bw.WriteString(textproto.TrimString(v))
			_, _ = bw.WriteString("\r\n")
		}
	}
	_, err := bw.WriteString("\r\n")
	if err == nil {
		err = writeBody(bw, req)
	}
	// Closed whatever happened, as req.Write closes it. The body is in
	// an io.NopCloser (inMemory), whose Close cannot fail.
	_ = req.Body.Close()
	return err
}

// writeBody writes the body, then reads whatever it holds past its
// length, as req.Write does: a body of another length than it says is an
// error.
func writeBody(bw *bufio.Writer, req *http.Request) error {
	n, err := io.Copy(bw, io.LimitReader(req.Body, req.ContentLength))
	if err != nil {
		return err
	}
	extra, err := io.Copy(io.Discard, req.Body)
	if err != nil {
		return err
	}
	if n+extra != req.ContentLength {
		return fmt.Errorf("http: ContentLength=%d with Body length %d", req.ContentLength, n+extra)
	}
	return nil
}

// excludedHeader are the header keys req.Write writes from the request's
// own fields, or not at all, rather than from its Header.
var excludedHeader = map[string]bool{"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// plainRequest reports whether writeRequest may write req, and the host
// and request URI it names: a POST of a known length whose body is bytes
// in memory (as NewRequest makes it from a bytes.Reader: req.Write sends
// such a body after the headers in the same write, and flushes the
// headers first before any other), req.Close not set, no transfer coding
// or trailer, a host that is plain ASCII and a valid Host header with no
// "%" (req.Write would rewrite or blank any other), a request URI of
// visible ASCII and header values of printable ASCII (req.Write would
// refuse or clean others), and no client trace to report to.
func plainRequest(req *http.Request) (host, uri string, ok bool) {
	if req.Method != http.MethodPost || req.Close || len(req.TransferEncoding) > 0 || req.Trailer != nil ||
		req.ContentLength <= 0 || !inMemory(req.Body) || req.URL == nil || req.URL.Opaque != "" ||
		httptrace.ContextClientTrace(req.Context()) != nil {
		return "", "", false
	}
	host = req.Host
	if host == "" {
		host = req.URL.Host
	}
	// ValidHostHeader takes ASCII only, no control bytes or spaces.
	if host == "" || !httpguts.ValidHostHeader(host) || strings.Contains(host, "%") {
		return "", "", false
	}
	if uri = req.URL.RequestURI(); !visibleText(uri) {
		return "", "", false
	}
	for _, values := range req.Header {
		for _, v := range values {
			if !plainText(v) {
				return "", "", false
			}
		}
	}
	return host, uri, true
}

// The types io.NopCloser wraps a reader in: with and without WriteTo.
var nopClosers = []reflect.Type{reflect.TypeOf(io.NopCloser(&bytes.Reader{})), reflect.TypeOf(io.NopCloser(struct{ io.Reader }{}))}

// inMemory says body is a bytes.Reader, bytes.Buffer or strings.Reader,
// in the io.NopCloser NewRequest puts it in: what net/http knows to be
// in memory (its isKnownInMemoryReader) and sends with its headers.
func inMemory(body io.ReadCloser) bool {
	if body == nil || body == http.NoBody || !slices.Contains(nopClosers, reflect.TypeOf(body)) {
		return false
	}
	switch reflect.ValueOf(body).Field(0).Interface().(type) {
	case *bytes.Reader, *bytes.Buffer, *strings.Reader:
		return true
	}
	return false
}

// plainText says s is printable ASCII, spaces and tabs allowed: nothing
// req.Write would clean or encode in a header.
func plainText(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < ' ' && c != '\t') || c > '~' {
			return false
		}
	}
	return true
}

// visibleText says s is visible ASCII, no spaces or control bytes: a
// request URI req.Write sends as it is.
func visibleText(s string) bool {
	for i := range len(s) {
		if c := s[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}
