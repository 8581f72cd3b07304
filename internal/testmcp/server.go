// Package testmcp starts real MCP servers (mark3labs/mcp-go's server side)
// over real HTTP on 127.0.0.1 for tests: SSE or Streamable HTTP, with tools
// that can be added and removed at runtime, an optional required header, a
// count of initialize requests, and stop/restart on the same address.
package testmcp

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Transport of a test server.
type Transport string

const (
	SSE            Transport = "SSE"
	StreamableHTTP Transport = "StreamableHTTP"
)

// Options configure a test server.
type Options struct {
	Transport Transport
	// PageSize paginates tools/list when above zero.
	PageSize int
	// ListChanged announces tools.listChanged.
	ListChanged bool
	// RequireHeader, when Name is set, answers 401 to requests without
	// that header value.
	RequireHeader struct{ Name, Value string }
	// Delay holds every request this long before serving it: a slow server.
	Delay time.Duration
	// TLS serves HTTPS with a certificate for 127.0.0.1 from a CA of its
	// own (CAPEM).
	TLS bool
	// Surfaces announces prompts and resources from the start (with list
	// changes when ListChanged is set); without it, adding a prompt or
	// resource announces them without list changes, as mcp-go does.
	Surfaces bool
	// Refuse names methods the server answers with the JSON-RPC error
	// "method not found" (-32601), as a server that offers a capability but
	// not one of its methods does (Streamable HTTP only).
	Refuse []string
	// Fail names methods the server answers with HTTP 500, as a server
	// whose backend is down does (Streamable HTTP only); SetFailing
	// changes them.
	Fail []string
}

// Server is a running MCP server. Stop it with Stop (tests register it with
// their cleanup).
type Server struct {
	MCP         *server.MCPServer
	opts        Options
	addr        string
	initializes atomic.Int64
	lists       atomic.Int64
	listeners   atomic.Int64
	connects    atomic.Int64
	required    atomic.Pointer[[2]string]
	failing     atomic.Pointer[[]string]
	slow        atomic.Pointer[slowMethod]
	seenMu      sync.Mutex
	seen        map[string][]string

	tlsConfig *tls.Config
	caPEM     []byte

	mu   sync.Mutex
	http *http.Server
	sse  *server.SSEServer
	live *server.StreamableHTTPServer
}

// Start starts a server on a free loopback port.
func Start(opts Options) (*Server, error) {
	s := &Server{opts: opts}
	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(context.Context, any, *mcp.InitializeRequest, *mcp.InitializeResult) {
		s.initializes.Add(1)
	})
	hooks.AddAfterListTools(func(context.Context, any, *mcp.ListToolsRequest, *mcp.ListToolsResult) {
		s.lists.Add(1)
	})
	serverOpts := []server.ServerOption{server.WithToolCapabilities(opts.ListChanged), server.WithHooks(hooks)}
	if opts.PageSize > 0 {
		serverOpts = append(serverOpts, server.WithPaginationLimit(opts.PageSize))
	}
	if opts.Surfaces {
		serverOpts = append(serverOpts, server.WithPromptCapabilities(opts.ListChanged), server.WithResourceCapabilities(false, opts.ListChanged))
	}
	s.MCP = server.NewMCPServer("testmcp", "1.0.0", serverOpts...)
	if opts.RequireHeader.Name != "" {
		s.SetRequiredHeader(opts.RequireHeader.Name, opts.RequireHeader.Value)
	}
	if opts.TLS {
		if err := s.makeCertificate(); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	return s, nil
}

// URL is the MCP endpoint: /sse for SSE, /mcp for Streamable HTTP.
func (s *Server) URL() string {
	path := "/mcp"
	if s.opts.Transport == SSE {
		path = "/sse"
	}
	return s.base() + path
}

func (s *Server) base() string {
	if s.opts.TLS {
		return "https://" + s.addr
	}
	return "http://" + s.addr
}

// CAPEM is the PEM certificate of the CA that signed a TLS server's
// certificate.
func (s *Server) CAPEM() []byte { return s.caPEM }

// makeCertificate creates a CA and a certificate for 127.0.0.1 signed by it.
func (s *Server) makeCertificate() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testmcp CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	s.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}}
	return nil
}

// Initializes counts the initialize requests served so far.
func (s *Server) Initializes() int64 { return s.initializes.Load() }

// Listeners counts the event streams open right now (GET streams, and
// subscriptions/listen in 2026-07-28): a client that holds one hears
// list_changed.
func (s *Server) Listeners() int64 { return s.listeners.Load() }

// Connects counts the connections clients opened: initialize requests,
// and server/discover for clients of the 2026-07-28 revision, which have
// no initialize.
func (s *Server) Connects() int64 { return s.connects.Load() }

// peekMethod reads the JSON-RPC method of a POST and puts the body back.
func peekMethod(r *http.Request) string {
	if r.Method != http.MethodPost || r.Body == nil {
		return ""
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	if err != nil {
		return ""
	}
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method
}

// ToolLists counts the tools/list requests (pages) served so far.
func (s *Server) ToolLists() int64 { return s.lists.Load() }

// SetRequiredHeader changes the header value requests must carry.
func (s *Server) SetRequiredHeader(name, value string) {
	s.required.Store(&[2]string{name, value})
}

// AddTool adds a tool whose input schema is the given JSON, kept as it is.
func (s *Server) AddTool(name, description, inputSchema string) {
	tool := mcp.NewToolWithRawSchema(name, description, json.RawMessage(inputSchema))
	s.MCP.AddTool(tool, echoHandler(name))
}

// HeaderValues lists every value of a header any request carried.
func (s *Server) HeaderValues(name string) []string {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	return append([]string(nil), s.seen[http.CanonicalHeaderKey(name)]...)
}

// AddToolFunc adds a tool with its own handler.
func (s *Server) AddToolFunc(name, description, inputSchema string, handler server.ToolHandlerFunc) {
	s.MCP.AddTool(mcp.NewToolWithRawSchema(name, description, json.RawMessage(inputSchema)), handler)
}

// AddTools adds many tools with a small schema, announcing them once.
func (s *Server) AddTools(names ...string) {
	tools := make([]server.ServerTool, len(names))
	for i, name := range names {
		tools[i] = server.ServerTool{
			Tool:    mcp.NewToolWithRawSchema(name, "tool "+name, json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)),
			Handler: echoHandler(name),
		}
	}
	s.MCP.AddTools(tools...)
}

func echoHandler(name string) server.ToolHandlerFunc {
	return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, _ := json.Marshal(req.GetArguments())
		return mcp.NewToolResultText(fmt.Sprintf("%s %s", name, args)), nil
	}
}

func (s *Server) serve(ln net.Listener) {
	mux := http.NewServeMux()
	if s.opts.Transport == SSE {
		// A relative message endpoint, so that a client reaching the server
		// through a proxy posts through the proxy too.
		sse := server.NewSSEServer(s.MCP, server.WithUseFullURLForMessageEndpoint(false), server.WithKeepAlive(false))
		mux.Handle("/sse", sse.SSEHandler())
		mux.Handle("/message", sse.MessageHandler())
		s.sse = sse
	} else {
		live := server.NewStreamableHTTPServer(s.MCP, server.WithEndpointPath("/mcp"))
		mux.Handle("/mcp", live)
		s.live = live
	}
	srv := &http.Server{Handler: s.requireHeader(s.refuse(mux)), ReadHeaderTimeout: 5 * time.Second}
	s.mu.Lock()
	s.http = srv
	s.mu.Unlock()
	if s.tlsConfig != nil {
		ln = tls.NewListener(ln, s.tlsConfig)
	}
	go func() { _ = srv.Serve(ln) }()
}

// SetFailing makes the server answer these methods with HTTP 500 from now
// on (none: serve them again).
func (s *Server) SetFailing(methods ...string) { s.failing.Store(&methods) }

// slowMethod is a method the server holds each request of for a while.
type slowMethod struct {
	method string
	delay  time.Duration
}

// SetSlow makes the server hold each request of method for delay before
// serving it, from now on ("" serves every method at once again).
func (s *Server) SetSlow(method string, delay time.Duration) {
	s.slow.Store(&slowMethod{method: method, delay: delay})
}

// refuse answers the methods Options.Refuse names, and those failing, and
// holds those slowed.
func (s *Server) refuse(next http.Handler) http.Handler {
	s.SetFailing(s.opts.Fail...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := peekMethod(r)
		if slow := s.slow.Load(); slow != nil && slow.method != "" && slow.method == method {
			select {
			case <-time.After(slow.delay):
			case <-r.Context().Done():
				return
			}
		}
		switch {
		case slices.Contains(*s.failing.Load(), method):
			http.Error(w, "the backend is down", http.StatusInternalServerError)
		case slices.Contains(s.opts.Refuse, method):
			body, _ := io.ReadAll(r.Body)
			var msg struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(body, &msg)
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, msg.ID)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func (s *Server) requireHeader(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.seenMu.Lock()
		if s.seen == nil {
			s.seen = map[string][]string{}
		}
		for name, values := range r.Header {
			s.seen[name] = append(s.seen[name], values...)
		}
		s.seenMu.Unlock()
		if s.opts.Delay > 0 {
			select {
			case <-time.After(s.opts.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if req := s.required.Load(); req != nil && r.Method != http.MethodDelete && r.Header.Get(req[0]) != req[1] {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch method := peekMethod(r); {
		case r.Method == http.MethodGet || method == "subscriptions/listen":
			s.listeners.Add(1)
			defer s.listeners.Add(-1)
		case method == "initialize" || method == "server/discover":
			s.connects.Add(1)
		}
		next.ServeHTTP(w, r)
	})
}

// Stop closes the listener and every open connection and stream.
func (s *Server) Stop() {
	s.mu.Lock()
	srv, sse, live := s.http, s.sse, s.live
	s.http = nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if sse != nil {
		sse.CloseSessions()
	}
	if live != nil {
		live.CloseSessions(ctx)
	}
	_ = srv.Close()
}

// Restart serves again on the same address after Stop, keeping the tools.
func (s *Server) Restart() error {
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			s.serve(ln)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.Join(fmt.Errorf("listening again on %s", s.addr), err)
}
