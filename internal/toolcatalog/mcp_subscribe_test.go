package toolcatalog

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"

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
		// It returns when its stream ends: Unsubscribe ends it.
		if err := s.session.Subscribe(context.WithoutCancel(ctx), &sdk.SubscribeParams{URI: uri}); err != nil {
			GinkgoWriter.Println("the subscription's stream ended:", err)
		}
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
			// One more round of each: an update told to the wrong stream
			// would have reached it before the next one its own stream
			// carries.
			heardA, heardB := len(a.heard()), len(b.heard())
			Eventually(func() int {
				Expect(up.Server.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: "file:///watched.txt"})).To(Succeed())
				return len(a.heard())
			}).Should(BeNumerically(">", heardA))
			Eventually(func() int {
				Expect(up.Server.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: "file:///other.txt"})).To(Succeed())
				return len(b.heard())
			}).Should(BeNumerically(">", heardB))
			Expect(a.heard()).To(HaveEach(watched), "a did not subscribe to the other resource")
			Expect(b.heard()).To(HaveEach(other), "b did not subscribe to the watched resource")

			By("unsubscribing ends the catalog's subscription with the server, once nobody listens")
			watching := func(uri string) func() bool {
				return func() bool {
					subs := catalogUnderTest.mcp.subs
					subs.mu.Lock()
					defer subs.mu.Unlock()
					return subs.watches[watchKey{server: ns + "/files", uri: uri}] != nil
				}
			}
			Expect(watching("file:///watched.txt")()).To(BeTrue())
			Expect(a.session.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: watched})).To(Succeed())
			Eventually(watching("file:///watched.txt")).Should(BeFalse())
			Expect(watching("file:///other.txt")()).To(BeTrue(), "b still listens")
			if revision != "2026-07-28" {
				// A 2026-07-28 server hears the end of its stream instead.
				Expect(up.subscriptions()).To(ContainElements("resources/subscribe file:///watched.txt", "resources/subscribe file:///other.txt"))
				Eventually(up.subscriptions).Should(ContainElement("resources/unsubscribe file:///watched.txt"))
				Expect(up.subscriptions()).NotTo(ContainElement("resources/unsubscribe file:///other.txt"), "b still listens")
			}
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
		err = caller.session.Subscribe(ctx, &sdk.SubscribeParams{URI: "file://files." + ns + "//" + strings.Repeat("a", maxSubscribedURI)})
		Expect(err).To(MatchError(ContainSubstring("a URI of more than 2048 bytes cannot be subscribed to")))
		Expect(up.subscriptions()).To(BeEmpty(), "nothing reached a server")

		By("a request that says it was forwarded by a replica is recorded all the same")
		recorded := testutil.ToFloat64(surfaceRequests.WithLabelValues("resources/unsubscribe", "success"))
		answer := postJSON(url, map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": caller.session.ID(), forwardedHeader: "1"},
			`{"jsonrpc":"2.0","id":9,"method":"resources/unsubscribe","params":{"uri":"`+plainURI+`"}}`)
		Expect(answer).To(MatchJSON(`{"jsonrpc":"2.0","id":9,"result":{}}`))
		Expect(testutil.ToFloat64(surfaceRequests.WithLabelValues("resources/unsubscribe", "success"))).To(Equal(recorded + 1))

		By("a 2026-07-28 caller is told to subscribe with subscriptions/listen")
		answer = postJSON(url, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/subscribe"},
			`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"`+plainURI+`","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
		Expect(answer).To(ContainSubstring(`"code":-32601`))
		Expect(answer).To(ContainSubstring("resourceSubscriptions of subscriptions/listen"))

		By("a 2026-07-28 stream is acknowledged only the resources it may hear of")
		listen := postJSON(url, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"},
			`{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["`+plainURI+`","file://files.`+ns+`//watched.txt"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
		Expect(listen).To(ContainSubstring(`"resourceSubscriptions":["file://files.` + ns + `//watched.txt"]`))

		By("a 2026-07-28 stream naming more than 16 resources is refused")
		many := make([]string, 17)
		for i := range many {
			many[i] = fmt.Sprintf(`"file://files.%s//%d.txt"`, ns, i)
		}
		listen = postJSON(url, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"},
			`{"jsonrpc":"2.0","id":"l2","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[`+strings.Join(many, ",")+`]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
		Expect(listen).To(ContainSubstring(`"code":-32602`))
		Expect(listen).To(ContainSubstring("a stream subscribes to 16 resources at most"))
	})
})

// rawPost posts a JSON-RPC body with headers, as a client that takes
// JSON or an event stream; the caller closes the answer.
func rawPost(ctx context.Context, url string, headers map[string]string, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

// postJSON posts body and returns the first event's or the body's text:
// a listen stream is read until its acknowledgment.
func postJSON(url string, headers map[string]string, body string) string {
	resp, err := rawPost(ctx, url, headers, body)
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

// unitSubscriptions is a replica's subscriptions table whose watches open
// nothing: the catalog it belongs to has stopped.
func unitSubscriptions() *subscriptions {
	stopped, stop := context.WithCancel(context.Background())
	stop()
	return newSubscriptions(&Catalog{streams: stopped, log: logr.Discard()})
}

func subscriptionTo(uri string) subscription {
	return subscription{watch: watchKey{server: "ns/files", uri: uri}, exposed: "x://files.ns/" + uri}
}

// A caller's subscriptions are bounded by session and by caller, so that
// sessions it makes up cannot grow the table, nor take another's room; past
// the caller's most its sessions that subscribed least recently are
// forgotten (sessions end without a word), and their streams told no more.
func TestSubscriptionsAreBoundedPerSessionAndCaller(t *testing.T) {
	s := unitSubscriptions()
	stream := &streamWriter{}
	release := s.legacyOpened("alice/s1", "alice", stream)
	for i := range maxSubscriptionsPerListener {
		if err := s.subscribe("alice/s1", "alice", subscriptionTo(fmt.Sprint(i))); err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
	}
	if err := s.subscribe("alice/s1", "alice", subscriptionTo("0")); err != nil {
		t.Errorf("subscribing again to the same resource: %v", err)
	}
	if err := s.subscribe("alice/s1", "alice", subscriptionTo("one more")); err == nil || !strings.Contains(err.Error(), "this session subscribes to 16 resources") {
		t.Errorf("past the session's most: %v", err)
	}
	for i := maxSubscriptionsPerListener; i < maxCallerSubscriptions; i++ {
		if err := s.subscribe(fmt.Sprint("alice/s", 2+i/maxSubscriptionsPerListener), "alice", subscriptionTo(fmt.Sprint(i))); err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
	}
	if err := s.subscribe("bob/s1", "bob", subscriptionTo("0")); err != nil {
		t.Errorf("another caller: %v", err)
	}
	if len(s.watches) != maxSubscriptionsPerListener || len(s.callerWatches["alice"]) != maxSubscriptionsPerListener {
		t.Fatalf("alice's stream of s1 hears %d resources (%d counted), want %d", len(s.watches), len(s.callerWatches["alice"]), maxSubscriptionsPerListener)
	}
	if err := s.subscribe("alice/another", "alice", subscriptionTo("past")); err != nil {
		t.Errorf("past the caller's most: %v", err)
	}
	if s.sessions["alice/s1"] != nil || s.sessions["alice/another"] == nil || s.sessions["bob/s1"] == nil {
		t.Errorf("alice's session that subscribed least recently is the one forgotten: s1 %v, another %v, bob's %v",
			s.sessions["alice/s1"] != nil, s.sessions["alice/another"] != nil, s.sessions["bob/s1"] != nil)
	}
	if len(s.watches) != 0 || len(s.callerWatches) != 0 {
		t.Errorf("the forgotten session's stream still hears %d resources", len(s.watches))
	}
	s.unsubscribe("alice/another", subscriptionTo("past").exposed)
	s.endSession("bob/s1")
	if got := s.callerSubs; got["alice"] != maxCallerSubscriptions-maxSubscriptionsPerListener || got["bob"] != 0 {
		t.Errorf("counts after forgetting, unsubscribing and ending sessions: %v", got)
	}
	release()
	if len(s.sessionStreams) != 0 || len(s.streamCaller) != 0 {
		t.Errorf("a closed stream is still kept: %v, %v", s.sessionStreams, s.streamCaller)
	}
}

// Past the table's bytes, the sessions that subscribed least recently are
// forgotten, and their streams here hear of their resources no more.
func TestSubscriptionsForgetTheOldestSessionsPastTheirBytes(t *testing.T) {
	s := unitSubscriptions()
	stream := &streamWriter{}
	release := s.legacyOpened("caller-0/s0", "caller-0", stream)
	defer release()
	long := strings.Repeat("u", maxSubscribedURI-20)
	per := 2*len(long) + 128
	callers := maxSubscriptionBytes/(per*maxCallerSubscriptions) + 2
	for c := range callers {
		for i := range maxCallerSubscriptions {
			session := fmt.Sprintf("caller-%d/s%d", c, i/maxSubscriptionsPerListener)
			if c == 0 && i >= maxSubscriptionsPerListener {
				break // caller-0 has one session, and its stream
			}
			sub := subscription{watch: watchKey{server: "ns/files", uri: fmt.Sprint(c, "-", i, long)}, exposed: fmt.Sprint(c, "-", i, long)}
			if err := s.subscribe(session, fmt.Sprint("caller-", c), sub); err != nil {
				t.Fatalf("caller %d, subscription %d: %v", c, i, err)
			}
			if c == 0 && len(s.watches) != i+1 {
				t.Fatalf("the open stream of caller-0's session hears %d resources, want %d", len(s.watches), i+1)
			}
		}
	}
	if s.bytes > maxSubscriptionBytes {
		t.Errorf("the table holds %d bytes, over %d", s.bytes, maxSubscriptionBytes)
	}
	if s.sessions["caller-0/s0"] != nil {
		t.Fatal("the session that subscribed first is still kept")
	}
	if len(s.watches) != 0 || len(s.callerWatches["caller-0"]) != 0 || s.callerSubs["caller-0"] != 0 {
		t.Errorf("its stream still hears %d resources (caller counts %v, %v)", len(s.watches), s.callerWatches["caller-0"], s.callerSubs["caller-0"])
	}
	if s.sessions[fmt.Sprintf("caller-%d/s0", callers-1)] == nil {
		t.Error("the session that subscribed last was forgotten")
	}
}

// A caller's streams hear of at most maxCallerWatches resources on a
// replica, counted as they open, one at a time; another caller's are not
// held back by them, and nothing is kept once they close.
func TestStreamsOfACallerHearOfABoundedNumberOfResources(t *testing.T) {
	s := unitSubscriptions()
	subs := make([]subscription, maxCallerWatches+5)
	for i := range subs {
		subs[i] = subscriptionTo(fmt.Sprint(i))
	}
	var releases []func()
	for i := 0; i < maxCallerWatches; i += maxSubscriptionsPerListener {
		n, release := s.listenOpened(&streamWriter{}, "alice", json.RawMessage(`1`), subs[i:i+maxSubscriptionsPerListener])
		if n != maxSubscriptionsPerListener {
			t.Fatalf("stream %d hears of %d resources, want %d", i/maxSubscriptionsPerListener, n, maxSubscriptionsPerListener)
		}
		releases = append(releases, release)
	}
	n, release := s.listenOpened(&streamWriter{}, "alice", json.RawMessage(`2`), append(subs[:2:2], subs[maxCallerWatches:]...))
	if n != 2 {
		t.Errorf("alice, at her most: her new stream hears of %d resources, want the 2 her streams hear of already", n)
	}
	releases = append(releases, release)
	n, release = s.listenOpened(&streamWriter{}, "bob", json.RawMessage(`3`), subs[maxCallerWatches:])
	if n != 5 {
		t.Errorf("bob: %d, want 5", n)
	}
	releases = append(releases, release)
	for _, release := range releases {
		release()
	}
	if len(s.watches) != 0 || len(s.callerWatches) != 0 || len(s.streamCaller) != 0 {
		t.Errorf("kept after every stream closed: %d watches, %v, %d streams", len(s.watches), s.callerWatches, len(s.streamCaller))
	}
}
