// Command agent is what an agent in a pod does with the catalog, and no
// more: it reads its ServiceAccount token, reads a collection's menu and
// calls one tool, and prints what it got as JSON lines for the test to read
// from the pod's log. test/cluster packs it as an image of its own.
//
//	agent CATALOG_URL NAMESPACE COLLECTION TOOL ARGUMENTS_JSON
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

const tokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// step is one request and its answer, one line of the log.
type step struct {
	Step   string          `json:"step"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body,omitempty"`
	Text   string          `json:"text,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: agent CATALOG_URL NAMESPACE COLLECTION TOOL ARGUMENTS_JSON")
		os.Exit(2)
	}
	catalog, ns, collection, tool, arguments := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent: reading the token:", err)
		os.Exit(1)
	}
	base := fmt.Sprintf("%s/v1/namespaces/%s/toolcollections/%s", strings.TrimRight(catalog, "/"), ns, collection)
	call, _ := json.Marshal(map[string]any{
		"id": "call_1", "type": "function",
		"function": map[string]string{"name": tool, "arguments": arguments},
	})
	out := json.NewEncoder(os.Stdout)
	_ = out.Encode(request("menu", http.MethodGet, base+"/tools", nil, string(token)))
	_ = out.Encode(request("call", http.MethodPost, base+"/execute", call, string(token)))
}

func request(name, method, url string, body []byte, token string) step {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return step{Step: name, Error: err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return step{Step: name, Error: err.Error()}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return step{Step: name, Status: resp.StatusCode, Error: err.Error()}
	}
	s := step{Step: name, Status: resp.StatusCode}
	if json.Valid(raw) {
		s.Body = raw
	} else {
		s.Text = string(raw)
	}
	return s
}
