package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolmesh/mcp-operator/internal/wire"
)

// In the 2026-07-28 revision a request is one POST and its answer, with no
// session to keep: the operator sends it with its own HTTP client rather
// than mcp-go's transport, which spent a goroutine per request watching
// the caller's context and another reading each event stream, decoded
// every answer into its own types, and made each session hold a client and
// a transport. Answers and failures are classified as they were through
// mcp-go, a 401 or 403 more strictly (the credentials, whatever the body):
// session_test.go and revisions_test.go hold both.

var (
	// errNoAnswer is a request whose answer stream ended without its answer.
	errNoAnswer = errors.New("the answer's event stream ended before the answer")
	// errServerAsked is a call whose server sent a request of its own.
	errServerAsked = errors.New("the server sent a request")
)

// answerBufferSize is the buffer an answer's event stream is read through.
const answerBufferSize = 4 << 10

// post sends one 2026-07-28 request and reads its answer: a JSON body, or
// an event stream whose notifications the exchange's tap hears on the way
// (recordingTransport) and whose first answer is the request's.
func (s *Session) post(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	body, err := requestBody(req)
	if err != nil {
		return nil, err
	}
	// encode made req.Header for this request alone: it is taken, not
	// copied, and made large enough once for what follows.
	header := req.Header
	if header == nil {
		header = make(http.Header, 3+len(s.target.Headers))
	}
	header["Content-Type"] = jsonMediaType
	header["Accept"] = acceptAnswers
	header["Mcp-Protocol-Version"] = statelessVersion
	for k, v := range s.target.Headers {
		header.Set(k, v)
	}
	resp, err := s.send(ctx, body, header)
	if err != nil {
		return nil, err
	}
	// The rest of the body is read (briefly) before it is closed, so that
	// the connection goes back to be reused rather than being dropped.
	answerBody := &endingBody{ReadCloser: resp.Body}
	defer drainAndClose(answerBody)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		// The credentials, whatever the body says (an OAuth error reads
		// as a JSON-RPC error to a lenient decoder).
		return nil, fmt.Errorf("request failed with status %d", resp.StatusCode)
	case resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted:
		// A JSON-RPC error sent with an error status is that error; any
		// other body is explained by the status (the exchange recorded it).
		raw, _ := io.ReadAll(answerBody)
		if answer := rpcErrorAnswer(raw); answer != nil {
			return answer, nil
		}
		return nil, fmt.Errorf("request failed with status %d", resp.StatusCode)
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mediaType {
	case "application/json":
		return decodeAnswer(answerBody)
	case "text/event-stream":
		answer, err := answerOnStream(answerBody)
		if err != nil && ctx.Err() != nil {
			// The stream broke because the request was ended (its timeout,
			// its caller, Close): that is what request reports.
			return nil, ctx.Err()
		}
		return answer, err
	}
	return nil, fmt.Errorf("unexpected content type: %q", resp.Header.Get("Content-Type"))
}

// send makes the HTTP request of a 2026-07-28 request on the session's
// http.Client.
func (s *Session) send(ctx context.Context, body []byte, header http.Header) (*http.Response, error) {
	httpReq, err := newPost(ctx, s.target.URL, body, header)
	if err != nil {
		return nil, err
	}
	return s.http.Do(httpReq)
}

// newPost is the HTTP request of a 2026-07-28 request.
func newPost(ctx context.Context, url string, body []byte, header http.Header) (*http.Request, error) {
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	httpReq.Header = header
	return httpReq, nil
}

// The values of the headers every request carries, shared: a request's
// header map holds them and nothing appends to them.
var (
	jsonMediaType    = []string{"application/json"}
	acceptAnswers    = []string{"application/json, text/event-stream"}
	statelessVersion = []string{RevisionStateless}
)

// decodeAnswer reads a JSON answer: the first JSON-RPC response in the
// body, which must have an id. It is decoded as it arrives, not read
// whole first: a server may send a Content-Length it does not keep to,
// or hold the body open after the answer (drainAndClose then waits briefly for
// the rest), and the answer is the answer all the same.
func decodeAnswer(body *endingBody) (*transport.JSONRPCResponse, error) {
	var answer transport.JSONRPCResponse
	if err := json.NewDecoder(body).Decode(&answer); err != nil {
		return nil, fmt.Errorf("failed to decode response: %w", err)
	}
	if answer.ID.IsNil() {
		return nil, errors.New("the answer has no id")
	}
	return &answer, nil
}

// requestBody encodes req as json.Marshal does. Params the session encoded
// itself (encode) go in as they are: json.Marshal would scan and compact
// them, arguments and all, once more on every call.
func requestBody(req transport.JSONRPCRequest) ([]byte, error) {
	params, ok := req.Params.(json.RawMessage)
	if !ok || len(params) == 0 || req.JSONRPC != mcp.JSONRPC_VERSION {
		return json.Marshal(req)
	}
	id, err := req.ID.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return wire.AppendRequest(make([]byte, 0, len(params)+len(id)+len(req.Method)+48), id, req.Method, params), nil
}

// rpcErrorAnswer is body as a JSON-RPC error answer, or nil when it is not
// one: version 2.0 and an error object.
func rpcErrorAnswer(body []byte) *transport.JSONRPCResponse {
	var shape struct {
		JSONRPC string          `json:"jsonrpc"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &shape) != nil || shape.JSONRPC != "2.0" || !bytes.HasPrefix(bytes.TrimSpace(shape.Error), []byte("{")) {
		return nil
	}
	var answer transport.JSONRPCResponse
	if json.Unmarshal(body, &answer) != nil || answer.Error == nil {
		return nil
	}
	return &answer
}

// drainWait bounds how long the rest of an answer's body is waited for:
// a 2026-07-28 server ends the stream with the answer, so it is there at
// once; one that holds it open loses the connection instead.
const drainWait = 50 * time.Millisecond

// endingBody is an answer's body that tells whether a read reached its
// end. The answer's readers take it rather than an io.Reader, so that none
// reads past it and leaves drainAndClose unaware of the end.
type endingBody struct {
	io.ReadCloser
	ended bool
}

func (b *endingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.ended = true
	}
	return n, err
}

// drainAndClose reads what is left of an answer's body, a little and briefly,
// and closes it: a body closed before its end takes its connection with
// it. A body already read to its end is closed at once, without a timer
// for the call: over HTTP/1.1 net/http reports the end of a body with a
// Content-Length along with its last bytes, so decoding a JSON answer
// reaches it (an HTTP/2 answer's end comes in a read of its own, and the
// bounded read finds it).
func drainAndClose(body *endingBody) {
	if body.ended {
		_ = body.Close()
		return
	}
	stop := time.AfterFunc(drainWait, func() { _ = body.Close() })
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 4<<10))
	stop.Stop()
	_ = body.Close()
}

// answerOnStream reads an answer's event stream up to the answer: the
// first message with an id and no method. A request from the server fails
// the call at once (the operator offers no capabilities to ask of, and
// would otherwise wait for an answer that never comes); a stream that
// ends or breaks off before the answer is a lost stream.
func answerOnStream(r *endingBody) (*transport.JSONRPCResponse, error) {
	var answer *transport.JSONRPCResponse
	var asked string
	var decodeErr error
	readErr := wire.ReadEvents(r, answerBufferSize, func(data []byte) bool {
		var msg struct {
			transport.JSONRPCResponse
			Method string `json:"method"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			decodeErr = fmt.Errorf("failed to decode response: %w", err)
			return false
		}
		switch {
		case msg.ID.IsNil():
			return false // a notification, which the exchange's tap heard
		case msg.Method != "":
			asked = msg.Method
			return true
		}
		answer = &msg.JSONRPCResponse
		return true
	})
	switch {
	case answer != nil:
		return answer, nil
	case asked != "":
		return nil, fmt.Errorf("%w: the server asked %q of the operator, which answers no requests", errServerAsked, asked)
	case errors.Is(readErr, errResponseTooLarge):
		return nil, readErr
	case readErr != nil && !errors.Is(readErr, io.EOF):
		return nil, fmt.Errorf("%w: %w", errStreamLost, readErr)
	case decodeErr != nil:
		return nil, decodeErr
	}
	return nil, fmt.Errorf("%w: %w", errStreamLost, errNoAnswer)
}
