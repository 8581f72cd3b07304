package mcpclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireLog records the JSON-RPC requests a test server was sent: each
// method's params and headers, and how many times it was asked.
type wireLog struct {
	mu      sync.Mutex
	params  map[string][]json.RawMessage
	headers map[string][]http.Header
}

func (w *wireLog) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
				w.mu.Lock()
				if w.params == nil {
					w.params, w.headers = map[string][]json.RawMessage{}, map[string][]http.Header{}
				}
				w.params[msg.Method] = append(w.params[msg.Method], msg.Params)
				w.headers[msg.Method] = append(w.headers[msg.Method], r.Header.Clone())
				w.mu.Unlock()
			}
		}
		next.ServeHTTP(rw, r)
	})
}

// asked is how many times method was sent.
func (w *wireLog) asked(method string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.params[method])
}

// last is the params and headers of the last request of method.
func (w *wireLog) last(t *testing.T, method string) (json.RawMessage, http.Header) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.params[method])
	if n == 0 {
		t.Fatalf("the server was never sent %s", method)
	}
	return w.params[method][n-1], w.headers[method][n-1]
}

// serveHTTP serves handler on 127.0.0.1 until the test ends; closing the
// clients' connections first ends the streams they hold.
func serveHTTP(t *testing.T, handler http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

// startMCPGoServer serves an mcp-go server over Streamable HTTP (/mcp) or
// HTTP+SSE (/sse), recording what it is sent; it returns its endpoint.
func startMCPGoServer(t *testing.T, s *server.MCPServer, sse bool, log *wireLog) string {
	t.Helper()
	mux := http.NewServeMux()
	if sse {
		handler := server.NewSSEServer(s, server.WithUseFullURLForMessageEndpoint(false), server.WithKeepAlive(false))
		mux.Handle("/sse", handler.SSEHandler())
		mux.Handle("/message", log.record(handler.MessageHandler()))
		return serveHTTP(t, mux).URL + "/sse"
	}
	mux.Handle("/mcp", log.record(server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp"))))
	return serveHTTP(t, mux).URL + "/mcp"
}

// colours completes the colour argument of the greet prompt.
type colours struct{}

var colourNames = []string{"blue", "green", "grey", "red"}

func completeColour(value string) []string {
	var out []string
	for _, c := range colourNames {
		if strings.HasPrefix(c, value) {
			out = append(out, c)
		}
	}
	return out
}

func (colours) CompletePromptArgument(_ context.Context, prompt string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if prompt != "greet" || arg.Name != "colour" {
		return &mcp.Completion{Values: []string{}}, nil
	}
	return &mcp.Completion{Values: completeColour(arg.Value)}, nil
}

func greeting(arguments map[string]string) string {
	return fmt.Sprintf("Hello %s, in %s", arguments["name"], arguments["colour"])
}

func notes(uri string) string {
	switch {
	case uri == "file:///notes.txt":
		return "remember"
	case uri == "file:///todo.txt":
		return "buy milk"
	case strings.HasPrefix(uri, "file:///logs/"):
		return "log of " + strings.TrimPrefix(uri, "file:///logs/")
	}
	return ""
}

// mcpGoSurface is an mcp-go server with three prompts (greet takes
// arguments), two resources, a template and completion of greet's colour,
// paginating every listing one item a page.
func mcpGoSurface() *server.MCPServer {
	s := server.NewMCPServer("mcpgo-surface", "1.0.0",
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(colours{}),
		server.WithPaginationLimit(1))
	prompt := func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("A greeting", []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(greeting(req.Params.Arguments))),
		}), nil
	}
	s.AddPrompt(mcp.NewPrompt("greet", mcp.WithPromptDescription("Greets someone."),
		mcp.WithArgument("name", mcp.RequiredArgument()), mcp.WithArgument("colour")), prompt)
	s.AddPrompt(mcp.NewPrompt("plain", mcp.WithPromptDescription("Plain.")), prompt)
	s.AddPrompt(mcp.NewPrompt("review", mcp.WithPromptDescription("Reviews.")), prompt)
	read := func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: notes(req.Params.URI)}}, nil
	}
	s.AddResource(mcp.NewResource("file:///notes.txt", "notes", mcp.WithMIMEType("text/plain")), read)
	s.AddResource(mcp.NewResource("file:///todo.txt", "todo", mcp.WithMIMEType("text/plain")), read)
	s.AddResourceTemplate(mcp.NewResourceTemplate("file:///logs/{day}", "logs"), read)
	return s
}

// goSDKSurface is the same surface served by a go-sdk server that speaks
// only 2026-07-28.
func goSDKSurface() *sdk.Server {
	g := sdk.NewServer(&sdk.Implementation{Name: "gosdk-surface", Version: "1.0.0"}, &sdk.ServerOptions{
		SupportedProtocolVersions: []string{"2026-07-28"},
		PageSize:                  1,
		CompletionHandler: func(_ context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			values := []string{}
			if req.Params.Ref.Name == "greet" && req.Params.Argument.Name == "colour" {
				values = completeColour(req.Params.Argument.Value)
			}
			return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: values}}, nil
		},
	})
	prompt := func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Description: "A greeting",
			Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: greeting(req.Params.Arguments)}}}}, nil
	}
	g.AddPrompt(&sdk.Prompt{Name: "greet", Description: "Greets someone.",
		Arguments: []*sdk.PromptArgument{{Name: "name", Required: true}, {Name: "colour"}}}, prompt)
	g.AddPrompt(&sdk.Prompt{Name: "plain", Description: "Plain."}, prompt)
	g.AddPrompt(&sdk.Prompt{Name: "review", Description: "Reviews."}, prompt)
	read := func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: notes(req.Params.URI)}}}, nil
	}
	g.AddResource(&sdk.Resource{URI: "file:///notes.txt", Name: "notes", MIMEType: "text/plain"}, read)
	g.AddResource(&sdk.Resource{URI: "file:///todo.txt", Name: "todo", MIMEType: "text/plain"}, read)
	g.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "file:///logs/{day}", Name: "logs"}, read)
	return g
}

// surfaceFixture is a running server with the surface above.
type surfaceFixture struct {
	target   Target
	log      *wireLog
	revision string
	want     Capabilities
	// describePlain changes the plain prompt's description.
	describePlain func(string)
}

var surfaceServers = []struct {
	name  string
	start func(t *testing.T) surfaceFixture
}{
	{"mcp-go, 2026-07-28", func(t *testing.T) surfaceFixture { return startMCPGoSurface(t, Target{}, false, RevisionStateless) }},
	{"mcp-go, 2025-11-25", func(t *testing.T) surfaceFixture {
		return startMCPGoSurface(t, Target{Revision: "2025-11-25"}, false, "2025-11-25")
	}},
	{"mcp-go, HTTP+SSE", func(t *testing.T) surfaceFixture {
		return startMCPGoSurface(t, Target{Transport: TransportSSE}, true, "2025-11-25")
	}},
	{"go-sdk, 2026-07-28 only", func(t *testing.T) surfaceFixture {
		g, log := goSDKSurface(), &wireLog{}
		handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return g }, &sdk.StreamableHTTPOptions{Stateless: true})
		url := serveHTTP(t, log.record(handler)).URL
		return surfaceFixture{target: Target{URL: url}, log: log, revision: RevisionStateless,
			// go-sdk announces resources.subscribe only with a subscribe handler.
			want: Capabilities{Prompts: true, PromptsListChanged: true, Resources: true, ResourcesListChanged: true, Completions: true},
			describePlain: func(d string) {
				g.AddPrompt(&sdk.Prompt{Name: "plain", Description: d}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
					return &sdk.GetPromptResult{}, nil
				})
			}}
	}},
}

func startMCPGoSurface(t *testing.T, target Target, sse bool, revision string) surfaceFixture {
	s, log := mcpGoSurface(), &wireLog{}
	target.URL = startMCPGoServer(t, s, sse, log)
	return surfaceFixture{target: target, log: log, revision: revision,
		want: Capabilities{Prompts: true, PromptsListChanged: true, Resources: true, ResourcesSubscribe: true, ResourcesListChanged: true, Completions: true},
		describePlain: func(d string) {
			s.AddPrompt(mcp.NewPrompt("plain", mcp.WithPromptDescription(d)), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return mcp.NewGetPromptResult("", nil), nil
			})
		}}
}

// digestOf is SurfaceList.Digest as documented.
func digestOf(items []json.RawMessage) [sha256.Size]byte {
	h := sha256.New()
	for _, item := range items {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(item))))
		h.Write(item)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// member decodes one member of a JSON object into v.
func member(t *testing.T, raw json.RawMessage, path string, v any) {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if err := json.Unmarshal(fields[path], v); err != nil {
		t.Fatalf("%s of %s: %v", path, raw, err)
	}
}

// TestTheSurfaceBesidesToolsComesBackAsSent: against real servers of both
// SDKs, in the stateless revision and those with a session, capabilities
// are read; prompts, resources and templates list across pages with their
// keys, each item as the server sent it; the digest tells a changed item;
// a prompt, a resource and a completion come back as the server answered,
// with the caller's _meta relayed and, in 2026-07-28, the headers that
// revision requires.
func TestTheSurfaceBesidesToolsComesBackAsSent(t *testing.T) {
	for _, srv := range surfaceServers {
		t.Run(srv.name, func(t *testing.T) {
			f := srv.start(t)
			s := connectT(t, f.target, func() {})
			ctx := context.Background()
			if got := s.Info(); got.ProtocolVersion != f.revision || got.Capabilities != f.want || got.ListChanged {
				t.Fatalf("connected at %s with %+v (tools listChanged %v), want %s with %+v and no tools", got.ProtocolVersion, got.Capabilities, got.ListChanged, f.revision, f.want)
			}

			prompts, err := s.ListPrompts(ctx, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"greet", "plain", "review"}; !slices.Equal(prompts.Keys, want) || len(prompts.Items) != len(want) || prompts.Truncated {
				t.Fatalf("prompts %q (%d items, truncated %v), want %q", prompts.Keys, len(prompts.Items), prompts.Truncated, want)
			}
			if pages := f.log.asked("prompts/list"); pages < 3 {
				t.Errorf("prompts listed in %d pages, want one a prompt", pages)
			}
			for i, item := range prompts.Items {
				var name string
				if member(t, item, "name", &name); name != prompts.Keys[i] {
					t.Errorf("item %d is %s, keyed %q", i, item, prompts.Keys[i])
				}
			}
			var arguments []struct {
				Name     string `json:"name"`
				Required bool   `json:"required"`
			}
			if member(t, prompts.Items[0], "arguments", &arguments); len(arguments) != 2 || arguments[0].Name != "name" || !arguments[0].Required || arguments[1].Name != "colour" {
				t.Errorf("greet's arguments as listed: %s", prompts.Items[0])
			}
			if prompts.Digest != digestOf(prompts.Items) {
				t.Error("the digest is not the documented SHA-256 of the items")
			}
			again, err := s.ListPrompts(ctx, DefaultLimits)
			if err != nil || again.Digest != prompts.Digest {
				t.Errorf("a second listing of the same prompts: digest changed %v, %v", again.Digest != prompts.Digest, err)
			}
			f.describePlain("Plainer.")
			changed, err := s.ListPrompts(ctx, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if changed.Digest == prompts.Digest || !slices.Equal(changed.Keys, prompts.Keys) || !strings.Contains(string(changed.Items[1]), `"Plainer."`) {
				t.Errorf("after a prompt changed: keys %q, plain %s, digest changed %v", changed.Keys, changed.Items[1], changed.Digest != prompts.Digest)
			}

			resources, err := s.ListResources(ctx, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"file:///notes.txt", "file:///todo.txt"}; !slices.Equal(resources.Keys, want) || f.log.asked("resources/list") < 2 {
				t.Fatalf("resources %q in %d pages, want %q in two or more", resources.Keys, f.log.asked("resources/list"), want)
			}
			var mimeType string
			if member(t, resources.Items[1], "mimeType", &mimeType); mimeType != "text/plain" || !strings.Contains(string(resources.Items[1]), `"name":"todo"`) {
				t.Errorf("the second resource as listed: %s", resources.Items[1])
			}
			templates, err := s.ListResourceTemplates(ctx, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if len(templates.Items) != 1 || !slices.Equal(templates.Keys, []string{"file:///logs/{day}"}) || !strings.Contains(string(templates.Items[0]), `"name":"logs"`) {
				t.Fatalf("templates %q: %s", templates.Keys, templates.Items)
			}

			meta := map[string]any{"tenant": "t1", "progressToken": "theirs", "io.modelcontextprotocol/clientInfo": "theirs"}
			got, err := s.GetPrompt(ctx, "greet", map[string]string{"name": "Ada", "colour": "green"}, meta)
			if err != nil {
				t.Fatal(err)
			}
			var prompt struct {
				Messages []struct {
					Role    string `json:"role"`
					Content struct {
						Type string `json:"type"`
						Text string `json:"text"`
					} `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(got, &prompt); err != nil || len(prompt.Messages) != 1 || prompt.Messages[0].Content.Text != "Hello Ada, in green" || prompt.Messages[0].Role != "user" {
				t.Errorf("prompt: %s (%v)", got, err)
			}
			params, header := f.log.last(t, "prompts/get")
			var sent struct {
				Meta map[string]any `json:"_meta"`
			}
			_ = json.Unmarshal(params, &sent)
			if sent.Meta["tenant"] != "t1" || sent.Meta["progressToken"] != nil || sent.Meta["io.modelcontextprotocol/clientInfo"] == "theirs" {
				t.Errorf("prompts/get went with _meta %v, want the caller's tenant and none of the protocol's keys it sent", sent.Meta)
			}
			if f.revision == RevisionStateless && (header.Get("Mcp-Method") != "prompts/get" || header.Get("Mcp-Name") != "greet") {
				t.Errorf("prompts/get carried Mcp-Method %q, Mcp-Name %q", header.Get("Mcp-Method"), header.Get("Mcp-Name"))
			}

			for uri, text := range map[string]string{"file:///todo.txt": "buy milk", "file:///logs/monday": "log of monday"} {
				got, err := s.ReadResource(ctx, uri, nil)
				if err != nil {
					t.Fatal(err)
				}
				var read struct {
					Contents []struct {
						URI  string `json:"uri"`
						Text string `json:"text"`
					} `json:"contents"`
				}
				if err := json.Unmarshal(got, &read); err != nil || len(read.Contents) != 1 || read.Contents[0].URI != uri || read.Contents[0].Text != text {
					t.Errorf("reading %s: %s (%v)", uri, got, err)
				}
				if _, header := f.log.last(t, "resources/read"); f.revision == RevisionStateless && header.Get("Mcp-Name") != uri {
					t.Errorf("resources/read of %s carried Mcp-Name %q", uri, header.Get("Mcp-Name"))
				}
			}

			// No meta of the caller's: in the revisions before 2026-07-28
			// there is no _meta of the session's to replace the one in params.
			got, err = s.Complete(ctx, json.RawMessage(`{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"colour","value":"gr"},"_meta":{"planted":"x"}}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			var completion struct {
				Completion struct {
					Values []string `json:"values"`
				} `json:"completion"`
			}
			if err := json.Unmarshal(got, &completion); err != nil || !slices.Equal(completion.Completion.Values, []string{"green", "grey"}) {
				t.Errorf("completion: %s (%v)", got, err)
			}
			params, _ = f.log.last(t, "completion/complete")
			sent.Meta = nil
			_ = json.Unmarshal(params, &sent)
			if sent.Meta["planted"] != nil {
				t.Errorf("completion/complete went with _meta %v, want none of the one in its params", sent.Meta)
			}
		})
	}
}

// TestAServerWithoutPromptsSaysSo: a server that offers no prompts says
// so in its capabilities, and its refusal of prompts/list comes back as
// its JSON-RPC error.
func TestAServerWithoutPromptsSaysSo(t *testing.T) {
	for _, tt := range []struct {
		name   string
		target Target
		sse    bool
	}{
		{"2026-07-28", Target{}, false},
		{"2025-11-25", Target{Revision: "2025-11-25"}, false},
		{"HTTP+SSE", Target{Transport: TransportSSE}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := server.NewMCPServer("tools-only", "1.0.0", server.WithToolCapabilities(false))
			s.AddTool(mcp.NewToolWithRawSchema("echo", "Echoes.", json.RawMessage(`{"type":"object"}`)), echoTool)
			tt.target.URL = startMCPGoServer(t, s, tt.sse, &wireLog{})
			session := connectT(t, tt.target, nil)
			if caps := session.Info().Capabilities; caps != (Capabilities{}) {
				t.Errorf("capabilities %+v, want none", caps)
			}
			list, err := session.ListPrompts(context.Background(), DefaultLimits)
			code, _, ok := RPCErrorOf(err)
			if !ok || code != mcp.METHOD_NOT_FOUND || KindOf(err) != ErrProtocol || !strings.HasPrefix(err.Error(), "listing prompts: ") {
				t.Fatalf("got %+v, %v (%s, code %d), want the server's method not found", list, err, KindOf(err), code)
			}
		})
	}
}

func echoTool(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText(fmt.Sprint(req.GetArguments())), nil
}

// TestPromptAndResourceListChangesAreHeard: a server whose prompts or
// resources change while a session is held tells it, in every revision,
// and the session's owner hears it as it hears tool changes.
func TestPromptAndResourceListChangesAreHeard(t *testing.T) {
	for _, tt := range []struct {
		name     string
		target   Target
		sse      bool
		revision string
	}{
		{"2026-07-28 subscription", Target{}, false, RevisionStateless},
		{"2025-11-25 GET stream", Target{Revision: "2025-11-25"}, false, "2025-11-25"},
		{"HTTP+SSE", Target{Transport: TransportSSE}, true, "2025-11-25"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := server.NewMCPServer("changing", "1.0.0", server.WithPromptCapabilities(true), server.WithResourceCapabilities(false, true))
			tt.target.URL = startMCPGoServer(t, s, tt.sse, &wireLog{})
			changed := make(chan struct{}, 8)
			session := connectT(t, tt.target, func() { changed <- struct{}{} })
			info := session.Info()
			if info.ProtocolVersion != tt.revision {
				t.Fatalf("connected at %s, want %s", info.ProtocolVersion, tt.revision)
			}
			if info.ListChanged || !info.Capabilities.PromptsListChanged || !info.Capabilities.ResourcesListChanged || !session.Listening() {
				t.Fatalf("tools listChanged %v, %+v, listening %v: want prompts and resources pushed", info.ListChanged, info.Capabilities, session.Listening())
			}
			heard := func(what string) {
				t.Helper()
				select {
				case <-changed:
				case <-time.After(20 * time.Second):
					t.Fatalf("no list change was heard after %s", what)
				}
			}
			s.AddPrompt(mcp.NewPrompt("new"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return mcp.NewGetPromptResult("", nil), nil
			})
			heard("a prompt was added")
			list, err := session.ListPrompts(context.Background(), DefaultLimits)
			if err != nil || !slices.Equal(list.Keys, []string{"new"}) {
				t.Fatalf("listed %q after the change: %v", list.Keys, err)
			}
			s.AddResource(mcp.NewResource("file:///new.txt", "new"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return nil, nil
			})
			heard("a resource was added")
		})
	}
}

// TestAListingThatBreaksTheProtocolFails: an answer to prompts/list that
// repeats a nextCursor, or lists an item without its key, fails the
// listing; an item listed twice is kept once; the limits truncate.
func TestAListingThatBreaksTheProtocolFails(t *testing.T) {
	pages := func(pages map[string]string) func(cursor string) string {
		return func(cursor string) string { return pages[cursor] }
	}
	for _, tt := range []struct {
		name   string
		answer func(cursor string) string
		limits Limits
		says   string // the error, or "" for none
		keys   []string
		trunc  bool
	}{
		{"a repeated nextCursor", pages(map[string]string{"": `{"prompts":[{"name":"a"}],"nextCursor":"again"}`, "again": `{"prompts":[{"name":"b"}],"nextCursor":"again"}`}),
			DefaultLimits, "listing prompts: http://127.0.0.1", nil, false},
		{"an item without a name", pages(map[string]string{"": `{"prompts":[{"name":"a"},{"description":"nameless"}]}`}), DefaultLimits, "sent an item with no name", nil, false},
		{"a name that is not a string", pages(map[string]string{"": `{"prompts":[{"name":3}]}`}), DefaultLimits, "sent an item with no name", nil, false},
		{"an item listed twice", pages(map[string]string{"": `{"prompts":[{"name":"a","v":1}],"nextCursor":"c"}`, "c": `{"prompts":[{"name":"a","v":2},{"name":"b"}]}`}),
			DefaultLimits, "", []string{"a", "b"}, false},
		{"more items than allowed", pages(map[string]string{"": `{"prompts":[{"name":"a"},{"name":"b"},{"name":"c"}]}`}), Limits{MaxPages: 10, MaxTools: 2}, "", []string{"a", "b"}, true},
		{"more pages than allowed", pages(map[string]string{"": `{"prompts":[{"name":"a"}],"nextCursor":"c"}`, "c": `{"prompts":[{"name":"b"}]}`}), Limits{MaxPages: 1, MaxTools: 10}, "", []string{"a"}, true},
		{"more bytes than allowed", pages(map[string]string{
			"":  `{"prompts":[{"name":"a","description":"` + strings.Repeat("x", MaxListingBytes*3/5) + `"}],"nextCursor":"c"}`,
			"c": `{"prompts":[{"name":"b","description":"` + strings.Repeat("y", MaxListingBytes*3/5) + `"}]}`}),
			DefaultLimits, "", []string{"a"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			backend := startMCPGoServer(t, server.NewMCPServer("fronted", "1.0.0", server.WithPromptCapabilities(false)), false, &wireLog{})
			url := front(t, backend, func(w http.ResponseWriter, r *http.Request, pass http.Handler) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var req struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params struct {
						Cursor string `json:"cursor"`
					} `json:"params"`
				}
				if json.Unmarshal(body, &req) != nil || req.Method != "prompts/list" {
					pass.ServeHTTP(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, tt.answer(req.Params.Cursor))
			}, nil)
			list, err := connectT(t, Target{URL: url}, nil).ListPrompts(context.Background(), tt.limits)
			if tt.says != "" {
				if KindOf(err) != ErrProtocol || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("got %+v, %v (%s), want a protocol error saying %q", list, err, KindOf(err), tt.says)
				}
				if tt.name == "a repeated nextCursor" && !strings.HasSuffix(err.Error(), "sent the same nextCursor twice") {
					t.Errorf("got %v", err)
				}
				return
			}
			if err != nil || !slices.Equal(list.Keys, tt.keys) || list.Truncated != tt.trunc || len(list.Items) != len(tt.keys) {
				t.Fatalf("got %q (truncated %v), %v; want %q (truncated %v)", list.Keys, list.Truncated, err, tt.keys, tt.trunc)
			}
			if list.Digest != digestOf(list.Items) {
				t.Error("the digest is not the documented SHA-256 of the items kept")
			}
			if tt.name == "an item listed twice" && !strings.Contains(string(list.Items[0]), `"v":1`) {
				t.Errorf("kept %s, want the first listing of a", list.Items[0])
			}
		})
	}
}

// TestAResourceErrorDoesNotRepeatItsURI: a server that quotes the URI it
// could not read in its error is not repeated: the URI's query may carry
// a secret.
func TestAResourceErrorDoesNotRepeatItsURI(t *testing.T) {
	for _, tt := range []struct {
		name   string
		target Target
	}{
		{"2026-07-28", Target{}},
		{"2025-11-25", Target{Revision: "2025-11-25"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.target.URL = startMCPGoServer(t, mcpGoSurface(), false, &wireLog{})
			s := connectT(t, tt.target, nil)
			_, err := s.ReadResource(context.Background(), "file:///missing.txt?token=s3cret", nil)
			code, message, ok := RPCErrorOf(err)
			var e *Error
			if !ok || code == 0 || !errors.As(err, &e) || !strings.HasPrefix(err.Error(), "reading resource: ") {
				t.Fatalf("got %v (code %d), want the server's JSON-RPC error", err, code)
			}
			for _, told := range []string{err.Error(), message, e.Named("notes-server").Error()} {
				if strings.Contains(told, "s3cret") || strings.Contains(told, "missing.txt") {
					t.Errorf("an error repeats the URI: %s", told)
				}
			}
		})
	}
}

// TestCompleteRefusesParamsThatAreNotAnObject: nothing is sent.
func TestCompleteRefusesParamsThatAreNotAnObject(t *testing.T) {
	log := &wireLog{}
	s := connectT(t, Target{URL: startMCPGoServer(t, mcpGoSurface(), false, log)}, nil)
	for _, params := range []string{``, `[]`, `"ref"`, `{"ref":`} {
		if _, err := s.Complete(context.Background(), json.RawMessage(params), nil); KindOf(err) != ErrProtocol {
			t.Errorf("params %q: got %v, want a protocol error", params, err)
		}
	}
	if n := log.asked("completion/complete"); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}
