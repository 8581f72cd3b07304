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

	"github.com/mark3labs/mcp-go/client/transport"
)

// In the 2026-07-28 revision a request is one POST and its answer, with no
// session to keep: the operator sends it with its own HTTP client rather
// than mcp-go's transport, which spent a goroutine per request watching
// the caller's context, another reading each event stream, and decoded
// every answer into its own types (a third of the client's CPU on the
// call path). What the answer is, and every failure, reads as it did
// through mcp-go: session_test.go and revisions_test.go hold both.

// errNoAnswer is a request whose answer stream ended without its answer.
var errNoAnswer = errors.New("the answer's event stream ended before the answer")

// answerBufferSize is the buffer an answer's event stream is read through.
const answerBufferSize = 4 << 10

// post sends one 2026-07-28 request and reads its answer: a JSON body, or
// an event stream whose notifications the exchange's tap hears on the way
// (recordingTransport) and whose first answer is the request's.
func (s *Session) post(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, s.target.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if req.Header != nil {
		httpReq.Header = req.Header.Clone()
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "application/json, text/event-stream")
	httpReq.Header.Set("MCP-Protocol-Version", RevisionModern)
	for k, v := range s.target.Headers {
		httpReq.Header.Set(k, v)
	}
	resp, err := s.http.Do(httpReq)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		// A JSON-RPC error sent with an error status is that error; any
		// other body is explained by the status (the exchange recorded it).
		raw, _ := io.ReadAll(resp.Body)
		var answer transport.JSONRPCResponse
		if json.Unmarshal(raw, &answer) == nil && answer.Error != nil {
			return &answer, nil
		}
		return nil, fmt.Errorf("request failed with status %d", resp.StatusCode)
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mediaType {
	case "application/json":
		var answer transport.JSONRPCResponse
		if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
			return nil, fmt.Errorf("failed to decode response: %w", err)
		}
		if answer.ID.IsNil() {
			return nil, errors.New("the answer has no id")
		}
		return &answer, nil
	case "text/event-stream":
		return answerOnStream(resp.Body)
	}
	return nil, fmt.Errorf("unexpected content type: %q", resp.Header.Get("Content-Type"))
}

// answerOnStream reads an answer's event stream up to the answer: the
// first message with an id and no method (a request from the server, which
// the operator does not take, has both). A stream that breaks off fails
// with what broke it.
func answerOnStream(r io.Reader) (*transport.JSONRPCResponse, error) {
	var answer *transport.JSONRPCResponse
	var decodeErr error
	readErr := readEvents(r, answerBufferSize, func(data []byte) bool {
		var msg struct {
			transport.JSONRPCResponse
			Method string `json:"method"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			decodeErr = fmt.Errorf("failed to decode response: %w", err)
			return false
		}
		if msg.ID.IsNil() || msg.Method != "" {
			return false
		}
		answer = &msg.JSONRPCResponse
		return true
	})
	switch {
	case answer != nil:
		return answer, nil
	case readErr != nil && !errors.Is(readErr, io.EOF):
		return nil, readErr
	case decodeErr != nil:
		return nil, decodeErr
	}
	return nil, errNoAnswer
}
