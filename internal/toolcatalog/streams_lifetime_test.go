package toolcatalog

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// The long life of listening streams and legacy sessions: abandoned
// sessions are reclaimed, streams outlive the server's timeouts and are
// kept alive, a stream that reopens learns its lists changed, and a
// replica holds only as many streams as it may.

const legacyInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// legacySession initializes a 2025-11-25 session at the endpoint and
// returns its id.
func legacySession(base, path string, headers ...string) string {
	init := callTo(base, path, legacyInit, append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, headers...)...)
	Expect(init.code).To(Equal(http.StatusOK), string(init.body))
	session := init.header.Get("Mcp-Session-Id")
	Expect(session).NotTo(BeEmpty())
	r := callTo(base, path, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, append([]string{"Content-Type", "application/json",
		"Accept", "application/json, text/event-stream", "Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25"}, headers...)...)
	Expect(r.code).To(Equal(http.StatusAccepted), string(r.body))
	return session
}

// stream is a listening stream as a client reads it: every line, comments
// included.
type stream struct {
	status int
	header http.Header
	body   string // of a refusal
	lines  chan string
	close  context.CancelFunc
	mu     sync.Mutex
	seen   []string
}

// openStream opens a legacy session's GET stream (session set) or a
// 2026-07-28 subscriptions/listen for tool list changes (session "").
func openStream(base, path, session string, headers ...string) *stream {
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	var req *http.Request
	var err error
	if session == "" {
		body := `{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"}},"notifications":{"toolsListChanged":true}}}`
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	s := &stream{status: resp.StatusCode, header: resp.Header, lines: make(chan string, 1024), close: cancel}
	if resp.StatusCode != http.StatusOK {
		raw := new(strings.Builder)
		_, _ = bufio.NewReader(resp.Body).WriteTo(raw)
		_ = resp.Body.Close()
		s.body = raw.String()
		close(s.lines)
		return s
	}
	go func() {
		defer close(s.lines)
		defer func() { _ = resp.Body.Close() }()
		scanner := bufio.NewScanner(resp.Body)
		for scanner.Scan() {
			s.mu.Lock()
			s.seen = append(s.seen, scanner.Text())
			s.mu.Unlock()
		}
	}()
	return s
}

// count is how many lines so far have the prefix and contain the text.
func (s *stream) count(prefix, text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.seen {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, text) {
			n++
		}
	}
	return n
}

// data is the stream's messages so far.
func (s *stream) data() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.seen {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// ended says whether the catalog closed the stream.
func (s *stream) ended() bool {
	select {
	case _, open := <-s.lines:
		return !open
	default:
		return false
	}
}

const toolsChanged = `"method":"notifications/tools/list_changed"`

var _ = Describe("Listening streams and legacy sessions over time", func() {
	var ns, path string
	BeforeEach(func() {
		ns = env.Namespace()
		readyServer(ns, "calc", calcServer().URL())
		collection(ns, "kit", "calc")
		path = "/v1/namespaces/" + ns + "/toolcollections/kit/mcp"
	})

	// exclude changes the collection's menu: one more tool left out.
	exclude := func(tool string) {
		var tc mcpv1alpha1.ToolCollection
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kit"}, &tc)).To(Succeed())
		before := tc.DeepCopy()
		if tc.Spec.Tools == nil {
			tc.Spec.Tools = &mcpv1alpha1.ToolSelection{}
		}
		tc.Spec.Tools.Exclude = append(tc.Spec.Tools.Exclude, tool)
		Expect(env.Client.Patch(ctx, &tc, client.MergeFrom(before))).To(Succeed())
	}

	It("ends abandoned legacy sessions after the idle timeout, never one a stream holds, and their ids go on working", func() {
		_, srv := newCatalog(Options{SessionIdleTimeout: 500 * time.Millisecond})
		sessions := func() float64 {
			return testutil.ToFloat64(catalogSessions.WithLabelValues("collection " + ns + "/kit"))
		}
		var abandoned []string
		for range 5 {
			abandoned = append(abandoned, legacySession(srv.URL, path))
		}
		held := legacySession(srv.URL, path)
		listening := openStream(srv.URL, path, held)
		Expect(listening.status).To(Equal(http.StatusOK))

		Eventually(sessions).Should(Equal(1.0), "the five sessions no request names are ended")
		Consistently(sessions, 2*time.Second).Should(Equal(1.0), "the session a stream holds is kept, however long it is silent")
		exclude("mcp_calc_fail")
		Eventually(func() int { return listening.count("data: ", toolsChanged) }).Should(BeNumerically(">=", 2),
			"the held session still hears of changes (after the stream's opening list change)")

		// ping is mcp-go's to answer, for a session it let go of.
		r := callTo(srv.URL, path, `{"jsonrpc":"2.0","id":7,"method":"ping"}`,
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream",
			"Mcp-Session-Id", abandoned[0], "MCP-Protocol-Version", "2025-11-25")
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Expect(string(r.body)).To(MatchJSON(`{"jsonrpc":"2.0","id":7,"result":{}}`), "an ended session's id is served as before")

		listening.close()
		Eventually(sessions).Should(BeZero(), "once its stream closes, the held session is idle too")
	})

	It("keeps at most --catalog-max-sessions legacy sessions without a stream, ending the least recently used, whose ids go on working", func() {
		c, srv := newCatalog(Options{MaxSessions: 10})
		sessions := func() float64 {
			return testutil.ToFloat64(catalogSessions.WithLabelValues("collection " + ns + "/kit"))
		}
		kept := func(id string) bool {
			c.mcp.idle.mu.Lock()
			defer c.mcp.idle.mu.Unlock()
			_, ok := c.mcp.idle.known[sessionKey{c.mcp.handlerFor(viewKey{kind: collectionView, namespace: ns, name: "kit"}), id}]
			return ok
		}
		held := legacySession(srv.URL, path)
		listening := openStream(srv.URL, path, held)
		Expect(listening.status).To(Equal(http.StatusOK))
		var older []string
		for range 9 {
			older = append(older, legacySession(srv.URL, path))
		}
		// Ten without a stream: at the cap (the one a stream holds counts
		// against the stream cap).
		last := legacySession(srv.URL, path)
		Consistently(sessions, time.Second).Should(Equal(11.0))
		// One past it: the sessions without a stream go back to nine
		// tenths of it, the two least recently named ended.
		legacySession(srv.URL, path)
		Eventually(sessions).Should(Equal(10.0))
		Consistently(sessions, time.Second).Should(Equal(10.0))
		Expect(kept(older[0]) || kept(older[1])).To(BeFalse(), "the least recently named are ended")
		Expect(kept(held) && kept(older[2]) && kept(last)).To(BeTrue(), "the one a stream holds and the more recent are kept")
		Expect(listening.ended()).To(BeFalse())

		// Its client, and the ended sessions' clients, are served as before,
		// by the catalog (tools/list) and by mcp-go (ping, setLevel).
		inSession := func(id, body string) response {
			return callTo(srv.URL, path, body, "Content-Type", "application/json", "Accept", "application/json, text/event-stream",
				"Mcp-Session-Id", id, "MCP-Protocol-Version", "2025-11-25")
		}
		for _, id := range append(older, held, last) {
			r := inSession(id, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
			Expect(r.code).To(Equal(http.StatusOK), string(r.body))
			Expect(string(r.body)).To(ContainSubstring(`"mcp_calc_add"`))
			r = inSession(id, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
			Expect(string(r.body)).To(MatchJSON(`{"jsonrpc":"2.0","id":8,"result":{}}`))
			r = inSession(id, `{"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"debug"}}`)
			Expect(string(r.body)).To(MatchJSON(`{"jsonrpc":"2.0","id":9,"result":{}}`))
		}
		// mcp-go keeps a level for every id it accepts until its DELETE:
		// none for the ended sessions, or a client sending setLevel
		// without end would grow it again.
		levels := reflect.ValueOf(c.mcp.handlerFor(viewKey{kind: collectionView, namespace: ns, name: "kit"}).http).
			Elem().FieldByName("sessionLogLevels").Elem().FieldByName("logs")
		Expect(levels.Len()).To(Equal(9), "levels kept by mcp-go: the nine sessions it holds that set one, none of the two it let go")
		r := doAt(srv.URL, http.MethodDelete, path, "", "Mcp-Session-Id", older[0], "MCP-Protocol-Version", "2025-11-25")
		Expect(r.code).To(Equal(http.StatusOK), "an ended session's DELETE is answered as any")
		exclude("mcp_calc_fail")
		Eventually(func() int { return listening.count("data: ", toolsChanged) }).Should(BeNumerically(">=", 2),
			"the held session still hears of changes")
	})

	It("keeps a session's records and streams at each endpoint apart, and a stream registers no session", func() {
		collection(ns, "other", "calc")
		other := "/v1/namespaces/" + ns + "/toolcollections/other/mcp"
		_, srv := newCatalog(Options{SessionIdleTimeout: 500 * time.Millisecond})
		sessions := func(name string) float64 {
			return testutil.ToFloat64(catalogSessions.WithLabelValues("collection " + ns + "/" + name))
		}
		session := legacySession(srv.URL, path)
		elsewhere := openStream(srv.URL, other, session)
		Expect(elsewhere.status).To(Equal(http.StatusOK))
		Eventually(func() float64 { return sessions("kit") }).Should(BeZero(),
			"the session is reclaimed at the endpoint that issued it: its stream is at another")
		Consistently(func() float64 { return sessions("other") }, time.Second).Should(BeZero(), "a stream registers no session")
		Expect(elsewhere.ended()).To(BeFalse())

		end := func(at string) {
			r := doAt(srv.URL, http.MethodDelete, at, "", "Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25")
			Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		}
		end(path)
		Consistently(elsewhere.ended, time.Second).Should(BeFalse(), "a DELETE at one endpoint leaves the session's stream at another")
		end(other)
		Eventually(elsewhere.ended).Should(BeTrue(), "the session's DELETE at its stream's endpoint ends it")
	})

	It("keeps streams open past the server's timeouts, alive with comments, and delivers every change", func() {
		const timeout = time.Second
		cat, plain := newCatalog(Options{StreamKeepAlive: 200 * time.Millisecond})
		srv := cat.newServer()
		srv.ReadTimeout, srv.WriteTimeout = timeout, timeout
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Close)
		base := "http://" + ln.Addr().String()

		opened := time.Now()
		legacy := openStream(base, path, legacySession(plain.URL, path))
		listen := openStream(base, path, "")
		Expect(legacy.status).To(Equal(http.StatusOK))
		Expect(listen.status).To(Equal(http.StatusOK))
		Eventually(func() bool {
			return time.Since(opened) > 5*timeout/2 && legacy.count(":", "keep-alive") >= 3 && listen.count(":", "keep-alive") >= 3
		}).Should(BeTrue(), "silent streams get comments, and outlive the server's timeouts")

		for i, tool := range []string{"mcp_calc_fail", "mcp_calc_broken"} {
			exclude(tool)
			for _, s := range []*stream{legacy, listen} {
				Eventually(func() int { return s.count("data: ", toolsChanged) }).Should(BeNumerically(">", i+1),
					"change %d reaches the stream, after its opening list change", i+1)
			}
		}
		Expect(legacy.ended() || listen.ended()).To(BeFalse())
	})

	It("begins every stream by saying its lists changed, and ends a session's streams with its DELETE", func() {
		session := legacySession(catalog.URL, path)
		By("a legacy stream, on the replica that issued its session")
		first := openStream(catalog.URL, path, session)
		Expect(first.status).To(Equal(http.StatusOK))
		Eventually(first.data).Should(ContainElements(
			ContainSubstring(toolsChanged),
			ContainSubstring(`"method":"notifications/prompts/list_changed"`),
			ContainSubstring(`"method":"notifications/resources/list_changed"`)))

		By("a 2026-07-28 stream: after the acknowledgment, tagged, for what it asked")
		listen := openStream(catalog.URL, path, "")
		Expect(listen.status).To(Equal(http.StatusOK))
		Eventually(listen.data).Should(HaveLen(2))
		Expect(listen.data()[0]).To(ContainSubstring(`"method":"notifications/subscriptions/acknowledged"`))
		Expect(listen.data()[1]).To(MatchJSON(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l"}}}`))

		By("two streams of the session on a replica that did not issue it: each lives its own life, until the session's DELETE there")
		_, otherSrv := newCatalog(Options{})
		one := openStream(otherSrv.URL, path, session)
		Eventually(func() int { return one.count("data: ", toolsChanged) }).Should(Equal(1))
		overlapping := openStream(otherSrv.URL, path, session)
		Eventually(func() int { return overlapping.count("data: ", toolsChanged) }).Should(Equal(1))
		one.close()
		Consistently(overlapping.ended, time.Second).Should(BeFalse(), "a stream's close ends no other")
		r := doAt(otherSrv.URL, http.MethodDelete, path, "", "Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25")
		Expect(r.code).To(Equal(http.StatusOK), string(r.body))
		Eventually(overlapping.ended).Should(BeTrue(), "the session's DELETE ends its streams on the replica it was sent to")
		Expect(first.ended()).To(BeFalse(), "the session's stream at the replica that issued it is another's")

		By("a GET naming an id the catalog never issued")
		made := openStream(catalog.URL, path, "mcp-session-made-up")
		Expect(made.status).To(Equal(http.StatusNotFound), made.body)
	})

	It("ends a deleted collection's streams", func() {
		legacy := openStream(catalog.URL, path, legacySession(catalog.URL, path))
		listen := openStream(catalog.URL, path, "")
		for _, s := range []*stream{legacy, listen} {
			Expect(s.status).To(Equal(http.StatusOK))
			Eventually(func() int { return s.count("data: ", toolsChanged) }).Should(Equal(1))
		}
		Expect(env.Client.Delete(ctx, &mcpv1alpha1.ToolCollection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kit"}})).To(Succeed())
		Eventually(legacy.ended).Should(BeTrue(), "the endpoint went with its collection")
		Eventually(listen.ended).Should(BeTrue())
		Expect(listen.data()[len(listen.data())-1]).To(ContainSubstring(`"resultType":"complete"`), "a 2026-07-28 stream ends with its request's result")
		Expect(openStream(catalog.URL, path, "").status).To(Equal(http.StatusNotFound), "and its client, reconnecting, learns why")
	})

	It("holds a stream on no goroutine of its own, and ends it with its client's connection", func() {
		const n = 100
		session := legacySession(catalog.URL, path)
		host := strings.TrimPrefix(catalog.URL, "http://")
		listen := `{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"}},"notifications":{"toolsListChanged":true}}}`
		before := runtime.NumGoroutine()
		var conns []net.Conn
		DeferCleanup(func() {
			for _, conn := range conns {
				_ = conn.Close()
			}
		})
		for i := range n {
			// A raw connection, which costs this process no goroutine.
			conn, err := net.Dial("tcp", host)
			Expect(err).NotTo(HaveOccurred())
			conns = append(conns, conn)
			request := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + session + "\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
			if i%2 == 1 {
				request = "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMcp-Method: subscriptions/listen\r\nMCP-Protocol-Version: 2026-07-28\r\nContent-Length: " + strconv.Itoa(len(listen)) + "\r\n\r\n" + listen
			}
			_, err = conn.Write([]byte(request))
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			Expect(err).NotTo(HaveOccurred())
			Expect(line).To(Equal("event: message\n"), "the stream began")
		}
		// Three a stream when net/http's and mcp-go's held it, one when a
		// goroutine waited for each stream's close.
		Eventually(func() int { return runtime.NumGoroutine() - before }).Should(BeNumerically("<", n/4))
		held := func() int {
			return len(catalogUnderTest.mcp.held.of(catalogUnderTest.mcp.handlerFor(viewKey{kind: collectionView, namespace: ns, name: "kit"})))
		}
		Expect(held()).To(Equal(n))
		for _, conn := range conns {
			Expect(conn.Close()).To(Succeed())
		}
		Eventually(held).Should(BeZero(), "a stream ends with its connection")
	})

	It("holds as many streams as it may, answering 503 past the replica's cap and 429 past a caller's", func() {
		env.InstallCatalogRoles()
		hasty := serviceAccountToken(ns, "hasty")
		bind(ns, "hasty", "catalog-caller", "hasty")
		calm := serviceAccountToken(ns, "calm")
		bind(ns, "calm", "catalog-caller", "calm")
		_, srv := newCatalog(Options{Auth: AuthKubernetes, AuthCacheTTL: 100 * time.Millisecond, MaxStreams: 3, MaxCallerStreams: 2})
		as := func(token string) []string { return []string{"Authorization", "Bearer " + token} }
		for _, token := range []string{hasty, calm} {
			Eventually(func() int {
				return callTo(srv.URL, path, legacyInit, append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, as(token)...)...).code
			}).Should(Equal(http.StatusOK), "the caller's binding took effect")
		}
		open := func(token string, legacy bool) *stream {
			session := ""
			if legacy {
				session = legacySession(srv.URL, path, as(token)...)
			}
			return openStream(srv.URL, path, session, as(token)...)
		}
		first, second := open(hasty, true), open(hasty, false)
		Expect(first.status).To(Equal(http.StatusOK))
		Expect(second.status).To(Equal(http.StatusOK))

		third := open(hasty, true)
		Expect(third.status).To(Equal(http.StatusTooManyRequests), third.body)
		Expect(third.header.Get("Retry-After")).To(Equal("5"))
		Expect(third.body).To(ContainSubstring("system:serviceaccount:" + ns + ":hasty holds as many listening streams on this replica as one caller may (2, --catalog-max-caller-streams)"))

		calmOne := open(calm, false)
		Expect(calmOne.status).To(Equal(http.StatusOK), "another caller is not held back")
		full := open(calm, true)
		Expect(full.status).To(Equal(http.StatusServiceUnavailable), full.body)
		Expect(full.header.Get("Retry-After")).To(Equal("5"))
		Expect(full.body).To(ContainSubstring("this replica holds as many listening streams as it may (3, --catalog-max-streams)"))

		r := callTo(srv.URL, "/v1/namespaces/"+ns+"/toolcollections/kit/execute", `{"name":"mcp_calc_add","arguments":{"a":1,"b":2}}`, as(calm)...)
		Expect(r.code).To(Equal(http.StatusOK), "calls are not streams: %s", r.body)

		first.close()
		Eventually(func() int { return open(calm, true).status }).Should(Equal(http.StatusOK), "a closed stream makes room")
	})
})
