package mcpclient

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// writeRequest writes req on a kept connection's buffer, as req.Write
// writes it, byte for byte, when req has the shape of every request a
// session posts: a POST with a body in memory of a known length, plain
// headers, no trailer, nothing traced. Any other request goes to
// req.Write. Request.Write spent about 7 µs of wall time a call in the
// manager (a header sorter from a pool, a transfer writer, fmt for the
// first lines, each value cleaned through a strings.Replacer), against
// about 1 µs for this (docs/performance-notes.md).
func writeRequest(bw *bufio.Writer, req *http.Request) error {
	host, ok := plainRequest(req)
	if !ok {
		return req.Write(bw)
	}
	defer req.Body.Close() // as req.Write closes it, whatever happens
	_, _ = bw.WriteString("POST ")
	_, _ = bw.WriteString(req.URL.RequestURI())
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(host)
	_, _ = bw.WriteString("\r\n")
	userAgent := "Go-http-client/1.1" // net/http's, unless the header names one
	if values, ok := req.Header["User-Agent"]; ok {
		userAgent = ""
		if len(values) > 0 {
			userAgent = textproto.TrimString(values[0])
		}
	}
	if userAgent != "" {
		_, _ = bw.WriteString("User-Agent: ")
		_, _ = bw.WriteString(userAgent)
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
	if _, err := bw.WriteString("\r\n"); err != nil {
		return err
	}
	// The body, then whatever it holds past its length, as req.Write reads
	// it: a body of another length than it says is an error.
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
// it names: a POST whose body NewRequest made from bytes in memory (it
// has GetBody; net/http sends such a body after the headers, in the same
// write), no Connection: close, transfer coding or trailer asked for, an
// ASCII host that is a valid Host header without a zone (req.Write
// would rewrite any other), a
// request URI and header values without control characters (req.Write
// would refuse or clean them), and no client trace to report to.
func plainRequest(req *http.Request) (string, bool) {
	if req.Method != http.MethodPost || req.Close || len(req.TransferEncoding) > 0 || req.Trailer != nil ||
		req.Body == nil || req.Body == http.NoBody || req.GetBody == nil || req.ContentLength <= 0 ||
		req.URL == nil || req.URL.Opaque != "" || len(req.Header) > 16 || httptrace.ContextClientTrace(req.Context()) != nil {
		return "", false
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if host == "" || !plainText(host) || !httpguts.ValidHostHeader(host) || strings.Contains(host, "%") || !plainText(req.URL.RequestURI()) {
		return "", false
	}
	for _, values := range req.Header {
		for _, v := range values {
			if !plainText(v) {
				return "", false
			}
		}
	}
	return host, true
}

// plainText says s is printable ASCII, spaces and tabs allowed: nothing
// req.Write would clean, encode or refuse.
func plainText(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < ' ' && c != '\t') || c > '~' {
			return false
		}
	}
	return true
}
