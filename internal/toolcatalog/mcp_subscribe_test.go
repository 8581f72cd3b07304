package toolcatalog

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/resourceuri"
	"github.com/toolmesh/mcp-operator/internal/testmcp"
)

// subscriber is a go-sdk client that records the resource updates it hears.
type subscriber struct {
	session *sdk.ClientSession
	mu      sync.Mutex
	updated []string
}

func subscriberOf(url, revision string) *subscriber {
	s := &subscriber{}
	client := sdk.NewClient(&sdk.Implementation{Name: "subscriber", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			s.mu.Lock()
			s.updated = append(s.updated, r.Params.URI)
			s.mu.Unlock()
		},
	})
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, &sdk.ClientSessionOptions{ProtocolVersion: revision})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(session.Close)
	s.session = session
	return s
}

// subscribe subscribes to uri. In 2026-07-28 go-sdk's Subscribe holds a
// subscriptions/listen stream until Unsubscribe, so it runs on its own.
func (s *subscriber) subscribe(uri, revision string) {
	if revision != "2026-07-28" {
		Expect(s.session.Subscribe(ctx, &sdk.SubscribeParams{URI: uri})).To(Succeed())
		return
	}
	go func() {
		defer GinkgoRecover()
		_ = s.session.Subscribe(context.WithoutCancel(ctx), &sdk.SubscribeParams{URI: uri})
	}()
}

func (s *subscriber) heard() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.updated)
}

// watchedServer is a go-sdk server with two resources that offers
// subscriptions, and what it was sent about them.
type watchedServer struct {
	*testmcp.GoSDK
	mu   sync.Mutex
	sent []string
}

func startWatchedServer(mode testmcp.GoSDKMode) *watchedServer {
	w := &watchedServer{}
	w.GoSDK = testmcp.StartGoSDK(mode, testmcp.GoSDKOptions{Subscriptions: func(s string) {
		w.mu.Lock()
		w.sent = append(w.sent, s)
		w.mu.Unlock()
	}})
	DeferCleanup(w.Stop)
	w.AddRawTool("noop", "Does nothing.", `{"type":"object"}`, func(json.RawMessage) string { return "ok" })
	for _, uri := range []string{"file:///watched.txt", "file:///other.txt"} {
		w.Server.AddResource(&sdk.Resource{URI: uri, Name: uri}, func(_ context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: r.Params.URI, Text: "now"}}}, nil
		})
	}
	return w
}

func (w *watchedServer) subscriptions() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.sent)
}

var _ = Describe("Resource subscriptions through the catalog", func() {
	for _, revision := range []string{"2025-11-25", "2026-07-28"} {
		It("tells a "+revision+" caller of the updates of the resources it subscribed to, and nobody else", func() {
			mode := testmcp.GoSDKSessions
			if revision == "2026-07-28" {
				mode = testmcp.GoSDKStateless
			}
			up := startWatchedServer(mode)
			ns := env.Namespace()
			srv := readyServer(ns, "files", up.URL())
			Eventually(func() bool {
				info := env.Fetch(srv).Status.ServerInfo
				return info != nil && info.ResourceSubscriptions
			}).Should(BeTrue(), "status says the server sends updates")
			collection(ns, "kit", "files")
			url := catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/kit/mcp"
			exposed := func(uri string) string {
				out, err := resourceuri.Expose(resourceuri.Server{Namespace: ns, Name: "files"}, uri)
				Expect(err).NotTo(HaveOccurred())
				return out
			}
			watched, other := exposed("file:///watched.txt"), exposed("file:///other.txt")

			a, b := subscriberOf(url, revision), subscriberOf(url, revision)
			if revision != "2026-07-28" {
				Expect(a.session.InitializeResult().Capabilities.Resources.Subscribe).To(BeTrue())
			}
			Eventually(func() []string {
				var uris []string
				for _, r := range allResources(a.session) {
					uris = append(uris, r.URI)
				}
				return uris
			}).Should(ContainElements(watched, other))

			By("each caller subscribes to its own resource")
			a.subscribe(watched, revision)
			b.subscribe(other, revision)

			By("an update of one resource reaches its subscriber, as the endpoint names it")
			Eventually(func() []string {
				Expect(up.Server.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: "file:///watched.txt"})).To(Succeed())
				return a.heard()
			}).Should(ContainElement(watched))
			Eventually(func() []string {
				Expect(up.Server.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: "file:///other.txt"})).To(Succeed())
				return b.heard()
			}).Should(ContainElement(other))
			Expect(a.heard()).To(HaveEach(watched), "a did not subscribe to the other resource")
			Expect(b.heard()).To(HaveEach(other), "b did not subscribe to the watched resource")

			if revision == "2026-07-28" {
				return
			}
			By("unsubscribing ends the catalog's subscription with the server, once nobody listens")
			Expect(up.subscriptions()).To(ContainElements("resources/subscribe file:///watched.txt", "resources/subscribe file:///other.txt"))
			Expect(a.session.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: watched})).To(Succeed())
			Eventually(up.subscriptions).Should(ContainElement("resources/unsubscribe file:///watched.txt"))
			Expect(up.subscriptions()).NotTo(ContainElement("resources/unsubscribe file:///other.txt"), "b still listens")
		})
	}

	It("refuses what it cannot deliver, saying why", func() {
		up := startWatchedServer(testmcp.GoSDKSessions)
		plain, err := testmcp.Start(testmcp.Options{Transport: testmcp.StreamableHTTP, Surfaces: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(plain.Stop)
		plain.AddTools("echo")
		plain.MCP.AddResource(mcp.NewResource("test://static/a", "a"), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "a"}}, nil
		})
		ns := env.Namespace()
		readyServer(ns, "files", up.URL())
		readyServer(ns, "plain", plain.URL())
		collection(ns, "kit", "files", "plain")
		url := catalog.URL + "/v1/namespaces/" + ns + "/toolcollections/kit/mcp"
		caller := subscriberOf(url, "2025-11-25")
		plainURI, err := resourceuri.Expose(resourceuri.Server{Namespace: ns, Name: "plain"}, "test://static/a")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return len(allResources(caller.session)) }).Should(Equal(3))

		err = caller.session.Subscribe(ctx, &sdk.SubscribeParams{URI: "file://files." + ns + "//missing.txt"})
		Expect(err).To(MatchError(ContainSubstring("not found")))
		err = caller.session.Subscribe(ctx, &sdk.SubscribeParams{URI: plainURI})
		Expect(err).To(MatchError(ContainSubstring("MCPServer " + ns + "/plain does not send updates of its resources")))
		Expect(up.subscriptions()).To(BeEmpty(), "nothing reached a server")

		By("a 2026-07-28 caller is told to subscribe with subscriptions/listen")
		answer := postJSON(url, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/subscribe"},
			`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"`+plainURI+`","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
		Expect(answer).To(ContainSubstring(`"code":-32601`))
		Expect(answer).To(ContainSubstring("resourceSubscriptions of subscriptions/listen"))

		By("a 2026-07-28 stream is acknowledged only the resources it may hear of")
		listen := postJSON(url, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"},
			`{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["`+plainURI+`","file://files.`+ns+`//watched.txt"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
		Expect(listen).To(ContainSubstring(`"resourceSubscriptions":["file://files.` + ns + `//watched.txt"]`))
	})
})

// postJSON posts body and returns the first event's or the body's text:
// a listen stream is read until its acknowledgment.
func postJSON(url string, headers map[string]string, body string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		got, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return string(got)
	}
	buf := make([]byte, 64<<10)
	var got []byte
	for {
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil || strings.Contains(string(got), "subscriptions/acknowledged") {
			return string(got)
		}
	}
}
