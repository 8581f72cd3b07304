// Command asker is a stdio MCP server for the bridge's tests that sends
// requests to its client. Its tool ask sends ping, roots/list and
// sampling/createMessage, and answers with what came back for each. Its
// tool ask-then-cancel sends sampling/createMessage (id "cancel-me"), then
// cancels it, and never answers.
package main

import (
	"bufio"
	"encoding/json"
	"os"
)

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

var asks = map[string]string{"ask-ping": "ping", "ask-roots": "roots/list", "ask-sampling": "sampling/createMessage"}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	var asking json.RawMessage // the id of the tools/call waiting for answers
	answers := map[string]json.RawMessage{}
	for in.Scan() {
		var m message
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Method == "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(m.Params, &p)
			reply(out, m.ID, map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "asker", "version": "1"}})
		case m.Method == "tools/list":
			reply(out, m.ID, map[string]any{"tools": []any{
				map[string]any{"name": "ask", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "ask-then-cancel", "inputSchema": map[string]any{"type": "object"}},
			}})
		case m.Method == "tools/call" && toolName(m.Params) == "ask-then-cancel":
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": "cancel-me", "method": "sampling/createMessage",
				"params": map[string]any{"messages": []any{}, "maxTokens": 1}})
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
				"params": map[string]any{"requestId": "cancel-me", "reason": "changed my mind"}})
		case m.Method == "tools/call":
			asking = m.ID
			for id, method := range asks {
				_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": map[string]any{}})
			}
		case m.Method != "":
			// notifications, and nothing else is asked of it
		default:
			var id string
			_ = json.Unmarshal(m.ID, &id)
			answer, _ := json.Marshal(map[string]json.RawMessage{"result": m.Result, "error": m.Error})
			answers[asks[id]] = answer
			if len(answers) == len(asks) {
				text, _ := json.Marshal(answers)
				reply(out, asking, map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}})
				answers = map[string]json.RawMessage{}
			}
		}
	}
}

func toolName(params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Name
}

func reply(out *json.Encoder, id json.RawMessage, result any) {
	_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}
