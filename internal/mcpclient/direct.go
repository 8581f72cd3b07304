package mcpclient

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// directPost makes a 2026-07-28 session's POSTs straight on its
// inlineTransport, past http.NewRequest, http.Client and
// recordingTransport's RoundTrip. On the call path of every tool call
// those layers parsed the URL again and copied the request's headers for
// redirects that are never followed: 9 allocations and about 2 µs of a
// 35 µs exchange with a server that answers at once, in a warm
// microbenchmark on the two-core benchmark machine (more in the manager,
// whose caches are cold; docs/performance-notes.md, "Where a stateless
// /mcp call's time goes").
// It keeps what they do that a session relies on: the same bytes on the
// wire (TestDirectPostWritesWhatClientDoWould), the trace headers, the
// exchange's record of an error answer and the capped and tapped body
// (recordingTransport.answered), the retry of a request that never left
// (inlineTransport.send), and failures wrapped in the *url.Error that
// http.Client gives, which classify reads.
type directPost struct {
	inline *inlineTransport
	record *recordingTransport
	// target is the parsed URL, shared by every request and never
	// changed; host is its Host as http.NewRequest sets it, addr the
	// address dialed, and text the URL as http.Client names it in errors.
	target *url.URL
	host   string
	addr   string
	text   string
}

// newDirectPost is the direct path of client's POSTs to rawURL, or nil
// when they need what it skips: anything but a plain-HTTP target on an
// inlineTransport of the session's own, and a URL with user info, which
// http.Client turns into an Authorization header.
func newDirectPost(client *http.Client, rawURL string) *directPost {
	// The shared check is a guard no test reaches: httpClient never puts
	// an inlineTransport under a listening session's shared pool.
	record, ok := client.Transport.(*recordingTransport)
	if !ok {
		return nil
	}
	inline, ok := record.next.(*inlineTransport)
	if !ok || record.shared {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Host == "" {
		return nil
	}
	// As http.NewRequest does: an empty port is no port, in the Host
	// header and in the URL that errors name.
	u.Host = strings.TrimSuffix(u.Host, ":")
	return &directPost{inline: inline, record: record, target: u,
		host: u.Host, addr: canonicalAddr(u), text: u.String()}
}

// post sends body with header, which is the request's own and may be
// changed, under ctx, and returns the answer as http.Client.Do would,
// with two differences: a 3xx whose Location header does not parse comes
// back as the answer it is, read as a session reads any answer, as a 3xx
// with a good Location comes back from the session's http.Client (which
// follows no redirect but fails a bad Location first: a server that
// misbehaves so is told apart by it, as an HTTP status rather than by
// what its body says); and the answer's Request has no context and
// shares the target URL, so nothing reads or changes it.
func (d *directPost) post(ctx context.Context, body []byte, header http.Header) (*http.Response, error) {
	if traced(ctx) {
		injectTrace(ctx, header)
	}
	req := d.request(body, header)
	resp, err := d.inline.send(ctx, req, d.addr)
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: d.text, Err: err}
	}
	return d.record.answered(ctx, req, resp), nil
}

// request is the request http.NewRequest makes of body and header, with
// no context: inlineTransport.send takes it apart. An empty body is
// NewRequest's NoBody, sent with a Content-Length of 0 (sessions send
// none; a body net/http cannot see is empty would go chunked).
func (d *directPost) request(body []byte, header http.Header) *http.Request {
	req := &http.Request{Method: http.MethodPost, URL: d.target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, Host: d.host, Body: http.NoBody, GetBody: func() (io.ReadCloser, error) { return http.NoBody, nil }}
	if len(body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
	}
	return req
}

// listenStream says a request with header opens the subscriptions/listen
// stream, which lives as long as the session: net/http's, not the inline
// transport's, and so never on the direct path.
func listenStream(header http.Header) bool {
	return header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen)
}
