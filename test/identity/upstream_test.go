package identity_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
	"github.com/toolmesh/mcp-operator/internal/upstreamauth"
)

// The upstream half of identity (docs/auth.md, "Upstreams"): the catalog
// gets each MCPServer with spec.auth a token of the suite's provider, the
// server's own (oauth2ClientCredentials) or one exchanged for the caller's
// (tokenExchange), and the server, which accepts nothing else, says whom it
// saw. The specs run in order over servers made in BeforeAll.
var _ = Describe("Upstream identity", Ordered, ContinueOnFailure, func() {
	var (
		up *upstream
		// exch exchanges callers' tokens for the upstream; refused asks
		// for an audience the exchanger may not have; slow is exch with
		// a 2s timeout; svc has the server's own identity.
		exch, refused, slow, svc *mcpv1alpha1.MCPServer
		// wrongSecret is a client secret the provider does not know.
		wrongSecret = randomHex()
	)

	BeforeAll(func() {
		started := time.Now()
		up = startUpstream()
		createOAuthFixtures(wrongSecret)
		createUpstreamCollection()
		bindUser("upstream-alice", provider.Issuer+"#alice")
		bindUser("upstream-bob", provider.Issuer+"#bob")
		bindUser("upstream-carol", provider.Issuer+"#carol")

		exch = authServer("exch", exchangeAuth(upstreamURL))
		refused = authServer("refused", exchangeAuth(refusedAudience))
		slow = authServer("slow", exchangeAuth(upstreamURL), func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Timeout = &metav1.Duration{Duration: slowTimeout}
		})
		svc = authServer("svc", clientCredentialsAuth(serviceSecretName, upstreamURL))
		for _, srv := range []*mcpv1alpha1.MCPServer{exch, refused, slow, svc} {
			Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"), readyMessage(srv))
		}
		GinkgoWriter.Printf("timing: four servers with spec.auth discovered in %s\n", time.Since(started).Round(time.Millisecond))
	})

	It("discovers a tokenExchange server as the exchanging client, then calls it as each caller, caching the exchanged tokens", func() {
		By("discovery had no caller: the upstream saw the exchanger's own client credentials token")
		Expect(up.requests()).To(ContainElement(And(
			HaveField("RPC", "tools/list"), HaveField("Sub", exchangerID), HaveField("Act", ""))))
		Expect(env.Fetch(exch).Status.Tools).To(ContainElement(And(HaveField("OriginalName", whoamiTool), HaveField("Name", toolOf("exch")))))

		alice, bob := token("agent-a"), token("agent-b")
		waitServed(oidcCatalog.URL, alice, "exch")

		By("alice over REST and over MCP: the upstream sees alice, acted for by the exchanger")
		calls := up.toolCalls()
		executed := executeTool(oidcCatalog.URL, alice, "exch")
		Expect(executed.Code).To(Equal(http.StatusOK), executed.Body)
		Expect(outputOf(executed)).To(Equal("alice"))
		Expect(up.toolCallsSince(calls)).To(ConsistOf(And(HaveField("Sub", "alice"), HaveField("Act", exchangerID))))

		tokensBefore := provider.TokenRequests()
		calls = up.toolCalls()
		again := executeTool(oidcCatalog.URL, alice, "exch")
		Expect(again.Code).To(Equal(http.StatusOK), again.Body)
		Expect(outputOf(again)).To(Equal("alice"))
		result := mcpToolCall(oidcCatalog.URL, alice, toolOf("exch"))
		Expect(result.IsError).To(BeFalse(), result.Text)
		Expect(result.Text).To(Equal("alice"))
		Expect(provider.TokenRequests()).To(Equal(tokensBefore), "alice's exchanged token is reused: no request to the token endpoint")
		Expect(up.toolCallsSince(calls)).To(HaveExactElements(
			And(HaveField("Sub", "alice"), HaveField("Act", exchangerID)),
			And(HaveField("Sub", "alice"), HaveField("Act", exchangerID))))

		By("bob: a second caller, a second subject, a token of his own")
		calls = up.toolCalls()
		tokensBefore = provider.TokenRequests()
		executed = executeTool(oidcCatalog.URL, bob, "exch")
		Expect(executed.Code).To(Equal(http.StatusOK), executed.Body)
		Expect(outputOf(executed)).To(Equal("bob"))
		result = mcpToolCall(oidcCatalog.URL, bob, toolOf("exch"))
		Expect(result.IsError).To(BeFalse(), result.Text)
		Expect(result.Text).To(Equal("bob"))
		Expect(provider.TokenRequests()-tokensBefore).To(Equal(1), "one exchange for bob, reused by his second call")
		Expect(up.toolCallsSince(calls)).To(HaveExactElements(
			And(HaveField("Sub", "bob"), HaveField("Act", exchangerID)),
			And(HaveField("Sub", "bob"), HaveField("Act", exchangerID))))

		By("each upstream session is one caller's, and no caller's own token reached the upstream")
		up.log()
		Expect(up.crossedSessions()).To(BeEmpty())
		Expect(up.sessionsOf("alice")).NotTo(BeEmpty())
		Expect(up.sessionsOf("bob")).NotTo(BeEmpty())
		Expect(up.sessionsOf("alice")).NotTo(ContainElement(BeElementOf(up.sessionsOf("bob"))))
		Expect(up.presented()).NotTo(ContainElement(BeElementOf(alice, bob)))
		Expect(up.refusals()).To(BeEmpty())
	})

	It("answers a refused exchange with 403 naming the OAuth error, over REST and MCP, and says no secret", func() {
		alice := token("agent-a")
		waitServed(oidcCatalog.URL, alice, "refused")
		calls := up.toolCalls()

		tokensBefore := provider.TokenRequests()
		a := executeTool(oidcCatalog.URL, alice, "refused")
		Expect(a.Code).To(Equal(http.StatusForbidden), a.Body)
		Expect(a.Error).To(ContainSubstring("invalid_target"))
		GinkgoWriter.Printf("the refused call was answered: %s\n", a.Body)
		expectCallerSafe(a.Body, alice)
		Expect(provider.TokenRequests()-tokensBefore).To(Equal(1), "one exchange asked for, and refused")

		result := mcpToolCall(oidcCatalog.URL, alice, toolOf("refused"))
		Expect(result.IsError).To(BeTrue(), result.Text)
		Expect(result.Text).To(ContainSubstring("invalid_target"))
		GinkgoWriter.Printf("the refused MCP call was answered: %s\n", result.Text)
		expectCallerSafe(result.Text, alice)
		Expect(provider.TokenRequests()-tokensBefore).To(Equal(2), "a refusal is not remembered: it is asked again")

		Expect(up.toolCallsSince(calls)).To(BeEmpty(), "a call without a token is never sent")
		Eventually(func() []map[string]any { return auditLines(oidcCatalog.Audit, provider.Issuer+"#alice") }).
			Should(ContainElement(And(HaveKeyWithValue("tool", toolOf("refused")), HaveKeyWithValue("outcome", "upstream_auth_refused"))))
	})

	It("answers 502 while the token service is down, and calls once it is back", func() {
		// carol has called nothing yet: she has no exchanged token to reuse.
		carol := token("agent-c")
		waitServed(oidcCatalog.URL, carol, "slow")

		provider.SetDown(true)
		DeferCleanup(provider.SetDown, false)
		a := executeTool(oidcCatalog.URL, carol, "slow")
		GinkgoWriter.Printf("while down, the call was answered: %s\n", a.Body)
		Expect(a.Code).To(Equal(http.StatusBadGateway), a.Body)
		Expect(a.Error).To(ContainSubstring("token endpoint"))
		expectCallerSafe(a.Body, carol)
		result := mcpToolCall(oidcCatalog.URL, carol, toolOf("slow"))
		GinkgoWriter.Printf("while down, the MCP call was answered: %s\n", result.Text)
		Expect(result.IsError).To(BeTrue(), result.Text)
		Expect(result.Text).To(ContainSubstring("token endpoint"))
		expectCallerSafe(result.Text, carol)

		provider.SetDown(false)
		back := time.Now()
		Eventually(func(g Gomega) {
			a := executeTool(oidcCatalog.URL, carol, "slow")
			g.Expect(a.Code).To(Equal(http.StatusOK), a.Body)
			g.Expect(outputOf(a)).To(Equal("carol"))
		}).Should(Succeed())
		GinkgoWriter.Printf("timing: carol's call succeeded %s after the provider came back\n", time.Since(back).Round(time.Millisecond))
	})

	It("answers a timely 502/504 while the token service is slower than spec.timeout, and calls once it is not", func() {
		// bob has no exchanged token for slow (only for exch): a fresh
		// exchange is needed.
		bob := token("agent-b")
		waitServed(oidcCatalog.URL, bob, "slow")

		provider.SetDelay(slowDelay)
		DeferCleanup(provider.SetDelay, time.Duration(0))
		asked := time.Now()
		a := executeTool(oidcCatalog.URL, bob, "slow")
		took := time.Since(asked)
		GinkgoWriter.Printf("timing: while slow, the call was answered in %s: %s\n", took.Round(time.Millisecond), a.Body)
		Expect(a.Code).To(BeElementOf(http.StatusBadGateway, http.StatusGatewayTimeout), a.Body)
		Expect(a.Error).To(ContainSubstring("token endpoint"))
		Expect(took).To(BeNumerically("<", slowBound), "bounded by spec.timeout (%s), not by the token service", slowTimeout)
		expectCallerSafe(a.Body, bob)

		asked = time.Now()
		result := mcpToolCall(oidcCatalog.URL, bob, toolOf("slow"))
		took = time.Since(asked)
		GinkgoWriter.Printf("timing: while slow, the MCP call was answered in %s: %s\n", took.Round(time.Millisecond), result.Text)
		Expect(result.IsError).To(BeTrue(), result.Text)
		Expect(result.Text).To(ContainSubstring("token endpoint"))
		Expect(took).To(BeNumerically("<", slowBound))
		expectCallerSafe(result.Text, bob)

		provider.SetDelay(0)
		Eventually(func(g Gomega) {
			a := executeTool(oidcCatalog.URL, bob, "slow")
			g.Expect(a.Code).To(Equal(http.StatusOK), a.Body)
			g.Expect(outputOf(a)).To(Equal("bob"))
		}).Should(Succeed())
	})

	It("calls an oauth2ClientCredentials server as itself, with one token for many concurrent calls", func() {
		By("discovery and calls carry the server's own identity")
		Expect(up.requests()).To(ContainElement(And(
			HaveField("RPC", "tools/list"), HaveField("Sub", serviceID), HaveField("Act", ""))))
		alice, bob := token("agent-a"), token("agent-b")
		waitServed(oidcCatalog.URL, alice, "svc")

		calls := up.toolCalls()
		tokensBefore := provider.TokenRequests()
		const concurrent = 20
		answers := make([]answer, concurrent)
		var wg sync.WaitGroup
		for i := range concurrent {
			wg.Go(func() {
				defer GinkgoRecover()
				caller := alice
				if i%2 == 1 {
					caller = bob
				}
				answers[i] = executeTool(oidcCatalog.URL, caller, "svc")
			})
		}
		wg.Wait()
		for _, a := range answers {
			Expect(a.Code).To(Equal(http.StatusOK), a.Body)
			Expect(outputOf(a)).To(Equal(serviceID))
		}
		requested := provider.TokenRequests() - tokensBefore
		GinkgoWriter.Printf("%d concurrent calls made %d token requests\n", concurrent, requested)
		Expect(requested).To(BeNumerically("<=", 1), "the catalog's first call fetches the token once, however many wait")
		result := mcpToolCall(oidcCatalog.URL, alice, toolOf("svc"))
		Expect(result.IsError).To(BeFalse(), result.Text)
		Expect(result.Text).To(Equal(serviceID))
		Expect(provider.TokenRequests()-tokensBefore).To(Equal(requested), "and reuses it")

		seen := up.toolCallsSince(calls)
		Expect(seen).To(HaveLen(concurrent + 1))
		Expect(seen).To(HaveEach(And(HaveField("Sub", serviceID), HaveField("Act", ""))))
		Expect(up.presented()).NotTo(ContainElement(BeElementOf(alice, bob)))
	})

	It("exchanges a caller's token again once the exchanged one is within 30s of its expiry", func() {
		// A server of its own, so that no other spec's calls hold its
		// session once its tokens run short.
		carol := token("agent-c")
		srv := authServer("expiry", exchangeAuth(upstreamURL))
		Eventually(env.ReadyOf(srv)).Should(Equal("True/ToolsDiscovered"), readyMessage(srv))
		waitServed(oidcCatalog.URL, carol, "expiry")

		// Tokens issued from now on are reused for (lifetime - Early).
		provider.SetAccessTokenLifetime(upstreamauth.Early + reuseFor)
		DeferCleanup(provider.SetAccessTokenLifetime, time.Duration(0))
		before := provider.TokenRequests()
		calls := up.toolCalls()
		a := executeTool(oidcCatalog.URL, carol, "expiry")
		exchanged := time.Now()
		Expect(a.Code).To(Equal(http.StatusOK), a.Body)
		Expect(outputOf(a)).To(Equal("carol"))
		Expect(provider.TokenRequests() - before).To(Equal(1))
		a = executeTool(oidcCatalog.URL, carol, "expiry")
		Expect(a.Code).To(Equal(http.StatusOK), a.Body)
		Expect(time.Since(exchanged)).To(BeNumerically("<", reuseFor), "the machine was too slow to tell reuse from renewal")
		Expect(provider.TokenRequests()-before).To(Equal(1), "reused while more than Early from its expiry")

		Eventually(func(g Gomega) {
			a := executeTool(oidcCatalog.URL, carol, "expiry")
			g.Expect(a.Code).To(Equal(http.StatusOK), a.Body)
			g.Expect(outputOf(a)).To(Equal("carol"))
			g.Expect(provider.TokenRequests()-before).To(Equal(2), "exchanged again")
		}).WithPolling(500 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("timing: exchanged again %s after the first exchange\n", time.Since(exchanged).Round(time.Millisecond))
		// expires_in is whole seconds, rounded down.
		Expect(time.Since(exchanged)).To(BeNumerically(">=", reuseFor-2*time.Second), "not renewed long before Early")
		Expect(up.toolCallsSince(calls)).To(HaveEach(And(HaveField("Sub", "carol"), HaveField("Act", exchangerID))))
		Expect(up.crossedSessions()).To(BeEmpty())
	})

	It("says AuthUnavailable with invalid_client when the token service refuses discovery, and never the secret", func() {
		bad := env.CreateServer(ns, "badsecret", upstreamURL, func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Auth = clientCredentialsAuth(wrongSecretName, upstreamURL)
		})
		Eventually(env.ReadyOf(bad)).Should(Equal("False/" + mcpv1alpha1.ReasonAuthUnavailable))
		got := env.Fetch(bad)
		ready := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionReady)
		GinkgoWriter.Printf("Ready of %s: %s\n", bad.Name, ready.Message)
		Expect(ready.Message).To(ContainSubstring("invalid_client"))
		status, err := json.Marshal(got.Status)
		Expect(err).NotTo(HaveOccurred())
		expectNoSecrets(string(status), wrongSecret)

		By("the Warning Event says why, and no Event in the namespace holds a secret")
		Eventually(func(g Gomega) {
			var list eventsv1.EventList
			g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(ContainElement(And(
				HaveField("Regarding.Name", bad.Name), HaveField("Type", corev1.EventTypeWarning),
				HaveField("Reason", mcpv1alpha1.ReasonAuthUnavailable), HaveField("Note", ContainSubstring("invalid_client")))))
		}).Should(Succeed())
		var modern eventsv1.EventList
		Expect(env.Client.List(ctx, &modern, client.InNamespace(ns))).To(Succeed())
		var legacy corev1.EventList
		Expect(env.Client.List(ctx, &legacy, client.InNamespace(ns))).To(Succeed())
		raw, err := json.Marshal([]any{modern, legacy})
		Expect(err).NotTo(HaveOccurred())
		expectNoSecrets(string(raw), wrongSecret)
		GinkgoWriter.Printf("checked %d Events for secrets\n", len(modern.Items)+len(legacy.Items))
	})

	It("says why a spec.auth that cannot work does not: a missing Secret, an untrusted or unusable CA, a second Authorization", func() {
		garbage := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idp-ca-garbage"},
			Data: map[string]string{caKey: "no certificate here"}}
		Expect(env.Client.Create(ctx, garbage)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(env.Client.Delete(env.Ctx, garbage))).To(Succeed()) })

		missing := env.CreateServer(ns, "nosecret", upstreamURL, func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Auth = clientCredentialsAuth("no-such-secret", upstreamURL)
		})
		untrusted := env.CreateServer(ns, "noca", upstreamURL, func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Auth = clientCredentialsAuth(serviceSecretName, upstreamURL)
			s.Spec.Auth.OAuth2ClientCredentials.TLS = nil // the system roots do not know the provider's CA
		})
		unusable := env.CreateServer(ns, "garbageca", upstreamURL, func(s *mcpv1alpha1.MCPServer) {
			s.Spec.Auth = exchangeAuth(upstreamURL)
			s.Spec.Auth.TokenExchange.TLS.CAConfigMapRef.Name = garbage.Name
		})
		Eventually(env.ReadyOf(missing)).Should(Equal("False/" + mcpv1alpha1.ReasonSecretNotFound))
		Eventually(env.ReadyOf(untrusted)).Should(Equal("False/" + mcpv1alpha1.ReasonAuthUnavailable))
		Eventually(env.ReadyOf(unusable)).Should(Equal("False/" + mcpv1alpha1.ReasonAuthMisconfigured))
		for srv, says := range map[*mcpv1alpha1.MCPServer]string{missing: "no-such-secret", untrusted: "not trusted", unusable: "no PEM certificate"} {
			got := env.Fetch(srv)
			ready := meta.FindStatusCondition(got.Status.Conditions, mcpv1alpha1.ConditionReady)
			GinkgoWriter.Printf("Ready of %s: %s: %s\n", srv.Name, ready.Reason, ready.Message)
			Expect(ready.Message).To(ContainSubstring(says))
			status, err := json.Marshal(got.Status)
			Expect(err).NotTo(HaveOccurred())
			expectNoSecrets(string(status))
		}
		stalled := meta.FindStatusCondition(env.Fetch(unusable).Status.Conditions, mcpv1alpha1.ConditionStalled)
		Expect(stalled).NotTo(BeNil())
		Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		Expect(stalled.Reason).To(Equal(mcpv1alpha1.ReasonAuthMisconfigured))

		By("the API server refuses spec.headers setting Authorization beside spec.auth")
		bearer := "Bearer not-a-token"
		both := &mcpv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "both"},
			Spec: mcpv1alpha1.MCPServerSpec{URL: upstreamURL, Auth: clientCredentialsAuth(serviceSecretName, upstreamURL),
				Headers: []mcpv1alpha1.HeaderSpec{{Name: "authorization", Value: &bearer}}}}
		err := env.Client.Create(ctx, both)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.headers may not set it too"))
	})

	It("refuses to call a tokenExchange server from a catalog without authentication, and says why", func() {
		ln, _ := listen()
		none := serve(ln, "none", toolcatalog.Options{Auth: toolcatalog.AuthNone})
		waitServed(none.URL, "", "exch")

		calls := up.toolCalls()
		a := executeTool(none.URL, "", "exch")
		GinkgoWriter.Printf("without authentication, the call was answered: %s\n", a.Body)
		Expect(a.Code).To(Equal(http.StatusForbidden), a.Body)
		Expect(a.Error).To(ContainSubstring("no authenticated caller"))
		Expect(a.Error).To(ContainSubstring("--catalog-auth=none"))
		result := mcpToolCall(none.URL, "", toolOf("exch"))
		Expect(result.IsError).To(BeTrue(), result.Text)
		Expect(result.Text).To(ContainSubstring("--catalog-auth=none"))
		Expect(up.toolCallsSince(calls)).To(BeEmpty())

		By("a server with its own identity needs no caller")
		a = executeTool(none.URL, "", "svc")
		Expect(a.Code).To(Equal(http.StatusOK), a.Body)
		Expect(outputOf(a)).To(Equal(serviceID))
	})

	It("sends no caller's token to a token endpoint the operator did not list (--token-exchange-urls)", func() {
		ln, _ := listen()
		unlisted := serve(ln, "unlisted", toolcatalog.Options{Auth: toolcatalog.AuthOIDC, PublicURL: oidcCatalog.URL,
			OIDC:        &toolcatalog.OIDCOptions{IssuerURL: provider.Issuer, HTTPClient: provider.HTTPClient()},
			AuthSources: upstreamauth.NewSources("https://idp.example.com/oauth/v2/token")})
		alice := token("agent-a")
		waitServed(unlisted.URL, alice, "exch")

		requests, calls := provider.TokenRequests(), up.toolCalls()
		a := executeTool(unlisted.URL, alice, "exch")
		Expect(a.Code).To(Equal(http.StatusBadGateway), a.Body)
		Expect(a.Error).To(ContainSubstring("--token-exchange-urls"))
		Expect(provider.TokenRequests()).To(Equal(requests), "alice's token went to the token endpoint")
		Expect(up.toolCallsSince(calls)).To(BeEmpty())
	})

	It("never logs, audits or answers a token or a client secret, and the upstream refused nothing", func() {
		Expect(up.refusals()).To(BeEmpty(), "every request the catalog and the controller sent carried a token minted for the upstream")
		Expect(up.crossedSessions()).To(BeEmpty())
		presented := up.presented()
		Expect(presented).NotTo(BeEmpty())
		needles := map[string]string{}
		for i, t := range presented {
			needles[fmt.Sprintf("token #%d the upstream was sent (%.10s…)", i, t)] = t
		}
		for i, t := range used.all() {
			needles[fmt.Sprintf("token #%d of the suite (%.10s…)", i, t)] = t
		}
		for _, id := range []string{exchangerID, serviceID} {
			needles["client secret of "+id] = secrets[id]
		}
		needles["wrong client secret"] = wrongSecret
		texts := map[string]string{"logs": logs.String()}
		for name, audit := range audits {
			texts["audit "+name] = audit.String()
		}
		var leaks []string
		for what, needle := range needles {
			for where, text := range texts {
				if strings.Contains(text, needle) {
					leaks = append(leaks, what+" in "+where)
				}
			}
		}
		Expect(leaks).To(BeEmpty())
		GinkgoWriter.Printf("checked %d tokens and secrets against %d bytes of logs\n", len(needles), len(logs.String()))
	})
})
