package mcpclient

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestParamsWithMeta: the request params a session sends are the call's
// params with its _meta, whatever shape the params came in.
func TestParamsWithMeta(t *testing.T) {
	meta := json.RawMessage(`{"traceparent":"00-1-2-01"}`)
	for _, tc := range []struct {
		name   string
		params any
		want   string // "" for an error
	}{
		{"no params", nil, `{"_meta":{"traceparent":"00-1-2-01"}}`},
		{"a call", struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}{"add", json.RawMessage(`{"a":1,"_meta":"an argument named _meta"}`)},
			`{"name":"add","arguments":{"a":1,"_meta":"an argument named _meta"},"_meta":{"traceparent":"00-1-2-01"}}`},
		{"an empty object", json.RawMessage(`{ }`), `{"_meta":{"traceparent":"00-1-2-01"}}`},
		{"raw, with space around", json.RawMessage(" {\"cursor\":\"c\"}\n"), `{"cursor":"c","_meta":{"traceparent":"00-1-2-01"}}`},
		{"a _meta of its own is replaced", json.RawMessage(`{"cursor":"c","_meta":{"old":true}}`), `{"cursor":"c","_meta":{"traceparent":"00-1-2-01"}}`},
		{"not an object", json.RawMessage(`[1]`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := paramsWithMeta(tc.params, meta)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("paramsWithMeta = %s, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotV, wantV any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatalf("not JSON: %s", got)
			}
			_ = json.Unmarshal([]byte(tc.want), &wantV)
			if !reflect.DeepEqual(gotV, wantV) {
				t.Errorf("paramsWithMeta = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestStandardHeaders: a tool call's headers, built from the name in hand,
// are what mcp-go derives from the encoded params.
func TestStandardHeaders(t *testing.T) {
	for _, name := range []string{"add", "名前", "with space", "a\nb", ""} {
		params, err := paramsWithMeta(struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}{name, json.RawMessage(`{"x":1}`)}, json.RawMessage(`{"k":"v"}`))
		if err != nil {
			t.Fatal(err)
		}
		got := standardHeaders(call{method: "tools/call", tool: name}, params)
		want := mcp.StandardHeaders(RevisionStateless, mcp.MethodToolsCall, params)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: headers %v, mcp-go says %v", name, got, want)
		}
	}
}

// TestRequestBodyIsWhatMarshalWrites: the request body built around the
// params a session encoded is byte for byte what json.Marshal writes for
// the same request, whatever the arguments hold.
func TestRequestBodyIsWhatMarshalWrites(t *testing.T) {
	for _, tc := range []struct {
		name      string
		id        mcp.RequestId
		method    string
		arguments string
	}{
		{"a call", mcp.NewRequestId("op-1"), "tools/call", `{"a":1}`},
		{"no arguments", mcp.NewRequestId("op-2"), "tools/call", `{}`},
		{"strings to escape", mcp.NewRequestId("op-3"), "tools/call", `{"q":"<b>&\"é\u2028\\n"}`},
		{"spaced arguments", mcp.NewRequestId(int64(7)), "tools/call", " {\n \"a\" : [1, 2] }\t"},
		{"a method to quote", mcp.NewRequestId("op-4"), `odd"method`, `{"nested":{"_meta":null}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params, err := paramsWithMeta(struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}{"echo", json.RawMessage(tc.arguments)}, statelessMeta)
			if err != nil {
				t.Fatal(err)
			}
			req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: tc.id, Method: tc.method, Params: params}
			got, err := requestBody(req)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("requestBody =\n%s\nwant\n%s", got, want)
			}
		})
	}
	// Params not encoded by the session go through json.Marshal.
	req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("op-5"), Method: "tools/list",
		Params: map[string]any{"cursor": "c"}}
	got, err := requestBody(req)
	want, _ := json.Marshal(req)
	if err != nil || string(got) != string(want) {
		t.Errorf("requestBody = %s, %v; want %s", got, err, want)
	}
}

// TestDecodeAnswer: a JSON answer is the first JSON-RPC response in the
// body, with an id.
func TestDecodeAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       string // the result, or the error's text
	}{
		{"an answer", `{"jsonrpc":"2.0","id":"op-1","result":{"content":[]}}`, `{"content":[]}`},
		{"an answer and more", `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n" + `{"x":1} junk`, `{}`},
		{"an error", `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}`, `error -32602 bad`},
		{"no id", `{"jsonrpc":"2.0","result":{}}`, "the answer has no id"},
		{"cut short", `{"jsonrpc":"2.0","id":4,"res`, "failed to decode response: unexpected EOF"},
		{"not JSON", `<html>`, "failed to decode response: invalid character '<' looking for beginning of value"},
	} {
		answer, err := decodeAnswer(&endingBody{ReadCloser: io.NopCloser(strings.NewReader(tc.body))})
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case answer.Error != nil:
			got = fmt.Sprintf("error %d %s", answer.Error.Code, answer.Error.Message)
		default:
			got = string(answer.Result)
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestAJSONAnswerIsReadToItsEnd: net/http reports the end of a body with
// a Content-Length along with its last bytes, so decoding a JSON answer
// reaches the end, which is what lets drainAndClose close it without its timer.
func TestAJSONAnswerIsReadToItsEnd(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"op-1","result":{"content":[]}}`)
	}))
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body := &endingBody{ReadCloser: resp.Body}
	defer drainAndClose(body)
	if _, err := decodeAnswer(body); err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength < 0 || !body.ended {
		t.Errorf("Content-Length %d, end reached %v: want a length, and its end reached by the decode", resp.ContentLength, body.ended)
	}
}

// TestFinishLeavesAnEndedBodyUnread: a body whose end was read is closed
// as it is, and one whose end was not is read on (up to drainAndClose's bound).
func TestFinishLeavesAnEndedBodyUnread(t *testing.T) {
	for _, ended := range []bool{true, false} {
		counted := &countingBody{}
		drainAndClose(&endingBody{ReadCloser: counted, ended: ended})
		wantReads := int64(0)
		if !ended {
			wantReads = 1
		}
		if counted.reads.Load() != wantReads || !counted.closed.Load() {
			t.Errorf("ended %v: %d reads, closed %v; want %d reads and closed", ended, counted.reads.Load(), counted.closed.Load(), wantReads)
		}
	}
}

// countingBody is an empty body that counts its reads. drainAndClose's timer
// may close it from a goroutine of its own.
type countingBody struct {
	reads  atomic.Int64
	closed atomic.Bool
}

func (c *countingBody) Read([]byte) (int, error) { c.reads.Add(1); return 0, io.EOF }
func (c *countingBody) Close() error             { c.closed.Store(true); return nil }
