package identity_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/testoidc"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
)

const addCall = `{"name":"` + addTool + `","arguments":{"a":1,"b":2}}`

// The specs run in order: the last one reads what all the others logged.
var _ = Describe("Identity", Ordered, ContinueOnFailure, func() {
	Context("kubernetes mode: the catalog trusts the IdP through the API server", func() {
		It("authenticates a provider token with a TokenReview as idp:<sub> and lets RBAC decide", func() {
			alice, bob, stranger := token("agent-a"), token("agent-b"), token("agent-elsewhere")
			bindUser("alice-calls", "idp:alice")

			By("alice, bound to catalog-caller, reads the menu and calls a tool")
			Eventually(func() int { return call(kubeCatalog.URL, http.MethodGet, menuPath(), alice, "").Code }).
				Should(Equal(http.StatusOK), "RBAC reaches the API server's authorizer and the collection is served")
			menu := call(kubeCatalog.URL, http.MethodGet, menuPath(), alice, "")
			Expect(menu.Code).To(Equal(http.StatusOK))
			Expect(menu.Body).To(ContainSubstring(addTool))
			executed := call(kubeCatalog.URL, http.MethodPost, execPath(), alice, addCall)
			Expect(executed.Code).To(Equal(http.StatusOK), executed.Body)
			Expect(executed.Body).To(ContainSubstring(`"output":"3"`))

			By("bob, with no binding, is refused by name")
			denied := call(kubeCatalog.URL, http.MethodGet, menuPath(), bob, "")
			Expect(denied.Code).To(Equal(http.StatusForbidden))
			Expect(denied.Error).To(Equal("forbidden: idp:bob lacks get on toolcollections/" + collectionName + " in namespace " + ns))
			denied = call(kubeCatalog.URL, http.MethodPost, execPath(), bob, addCall)
			Expect(denied.Code).To(Equal(http.StatusForbidden))
			Expect(denied.Error).To(ContainSubstring("idp:bob lacks"))

			By("a token meant for another resource does not authenticate at the API server")
			refused := call(kubeCatalog.URL, http.MethodGet, menuPath(), stranger, "")
			Expect(refused.Code).To(Equal(http.StatusUnauthorized))
			Expect(refused.Error).To(Equal("the bearer token is not valid"))
			Expect(refused.Challenge).To(ContainSubstring(`error="invalid_token"`))
			none := call(kubeCatalog.URL, http.MethodGet, menuPath(), "", "")
			Expect(none.Code).To(Equal(http.StatusUnauthorized))
			Expect(none.Challenge).To(HavePrefix(`Bearer resource_metadata="` + kubeCatalog.URL + `/.well-known/oauth-protected-resource"`))
			Expect(none.Challenge).NotTo(ContainSubstring("error="))

			By("the audit trail names alice as the API server did, with no issuer")
			Eventually(func() []map[string]any { return auditLines(kubeCatalog.Audit, "idp:alice") }).
				Should(ContainElement(And(HaveKeyWithValue("tool", addTool), HaveKeyWithValue("outcome", "success"),
					Not(HaveKey("issuer")))))
		})
	})

	Context("oidc mode: a stock MCP client does the discovery dance", func() {
		var endpoint string
		BeforeAll(func() {
			endpoint = oidcCatalog.URL + mcpPath()
			bindUser("alice-oidc", provider.Issuer+"#alice")
			// The binding has reached the API server's authorizer and the
			// collection is served, so the client's run is the whole story.
			alice := token("agent-a")
			Eventually(func() int { return call(oidcCatalog.URL, http.MethodGet, menuPath(), alice, "").Code }).
				Should(Equal(http.StatusOK))
		})

		It("gets a 401, reads the metadata, gets a token with client credentials, and calls a tool", func() {
			oidcCatalog.Rec.reset()
			tokensBefore := provider.TokenRequests()
			run := runSDK(endpoint, "agent-a")
			Expect(run.OK).To(BeTrue(), "the client failed: %s %s (%v); stderr: %s", run.Error.Name, run.Error.Message, run.Error.Code, run.Stderr)
			Expect(run.Tools).To(ContainElement(addTool))
			Expect(run.Call.IsError).To(BeFalse())
			Expect(run.Call.Content).To(HaveLen(1))
			Expect(run.Call.Content[0].Text).To(Equal("42"))
			Expect(provider.TokenRequests()-tokensBefore).To(Equal(1), "one token, reused for every request")

			By("the SDK's own discovery, as it made it")
			reqs := run.Requests
			Expect(len(reqs)).To(BeNumerically(">=", 5))
			Expect(reqs[0].Method).To(Equal(http.MethodPost))
			Expect(reqs[0].URL).To(Equal(endpoint))
			Expect(reqs[0].Authorization).To(BeEmpty())
			Expect(reqs[0].Status).To(Equal(http.StatusUnauthorized))
			Expect(reqs[0].WWWAuthenticate).To(Equal(`Bearer resource_metadata="` + oidcCatalog.URL + prmPath() + `"`))
			Expect(reqs[1].Method + " " + reqs[1].URL).To(Equal("GET " + oidcCatalog.URL + prmPath()))
			Expect(reqs[1].Status).To(Equal(http.StatusOK))
			tokenAt := indexOf(reqs, func(r sdkRequest) bool { return r.URL == provider.TokenURL })
			Expect(tokenAt).To(BeNumerically(">", 1), "the SDK asked the provider's token endpoint")
			// RFC 8414 first, then OpenID Connect Discovery, which is what
			// zitadel serves: the fallback is what makes this provider work.
			metadata := reqs[2:tokenAt]
			Expect(metadata).To(HaveLen(2))
			Expect(metadata[0].Method + " " + metadata[0].URL).To(Equal("GET " + provider.Issuer + "/.well-known/oauth-authorization-server"))
			Expect(metadata[0].Status).To(Equal(http.StatusNotFound))
			Expect(metadata[1].Method + " " + metadata[1].URL).To(Equal("GET " + provider.Issuer + "/.well-known/openid-configuration"))
			Expect(metadata[1].Status).To(Equal(http.StatusOK))
			issued := reqs[tokenAt]
			Expect(issued.Method).To(Equal(http.MethodPost))
			Expect(issued.Status).To(Equal(http.StatusOK))
			Expect(issued.Form).To(HaveKeyWithValue("grant_type", "client_credentials"))
			Expect(issued.Form).To(HaveKeyWithValue("resource", endpoint), "RFC 8707: the PRM's resource, verbatim")
			Expect(issued.Form).NotTo(HaveKey("client_secret"))
			Expect(issued.Authorization).To(Equal("Basic"), "client_secret_basic")
			for _, r := range reqs[tokenAt+1:] {
				Expect(r.URL).To(Equal(endpoint))
				Expect(r.Authorization).To(Equal("Bearer"))
				Expect(r.Status).To(BeNumerically("<", 400), "%s", r)
			}
			Expect(reqs[tokenAt+1].RPC).To(Equal("initialize"), "the refused initialize is retried with the token")

			By("the catalog's side: 401 without a token, the metadata, then only accepted requests with one")
			seen := oidcCatalog.Rec.on(mcpPath(), prmPath())
			logExchanges("the oidc catalog answered", seen)
			// Every POST the SDK made reached the catalog; its listening GET,
			// which the SDK opens without waiting, may or may not have
			// been answered before the client closed.
			sdkPosts, catalogPosts := 0, 0
			for _, r := range reqs {
				if r.Method == http.MethodPost && r.URL == endpoint {
					sdkPosts++
				}
			}
			for _, e := range seen {
				if e.Method == http.MethodPost {
					catalogPosts++
				}
			}
			Expect(catalogPosts).To(Equal(sdkPosts))
			Expect(seen[0]).To(MatchFields(mcpPath(), "", http.StatusUnauthorized))
			Expect(seen[1]).To(MatchFields(prmPath(), "", http.StatusOK))
			for _, e := range seen[2:] {
				Expect(e.Path).To(Equal(mcpPath()))
				Expect(e.Auth).To(Equal("Bearer"))
				Expect(e.Status).To(BeNumerically("<", 400), "%s", e)
			}
		})

		It("refuses a client whose provider will not issue a token for this resource", func() {
			oidcCatalog.Rec.reset()
			run := runSDK(endpoint, "agent-elsewhere")
			Expect(run.OK).To(BeFalse())
			Expect(run.Exit).To(Equal(1))
			issued := run.Requests[indexOf(run.Requests, func(r sdkRequest) bool { return r.URL == provider.TokenURL })]
			Expect(issued.Form).To(HaveKeyWithValue("resource", endpoint))
			Expect(issued.Status).To(Equal(http.StatusBadRequest), "the provider refuses a resource the client is not registered for")
			// The SDK maps the provider's invalid_target answer to its own error class.
			Expect(run.Error.Name).To(Equal("InvalidTargetError"))
			Expect(run.Error.Message).To(ContainSubstring(`is not allowed for client "agent-elsewhere"`))
			seen := oidcCatalog.Rec.on(mcpPath())
			logExchanges("the oidc catalog answered", seen)
			Expect(seen).To(ConsistOf(MatchFields(mcpPath(), "", http.StatusUnauthorized)), "the catalog only ever saw the first, tokenless request")
		})

		It("answers invalid_token to a token meant for another resource, and the client gives up", func() {
			oidcCatalog.Rec.reset()
			// Without RFC 8707's resource the provider issues its default
			// audience, another resource: the catalog must refuse it.
			run := runSDK(endpoint, "agent-elsewhere", "NO_RESOURCE=1")
			Expect(run.OK).To(BeFalse())
			Expect(run.Exit).To(Equal(1))
			issued := run.Requests[indexOf(run.Requests, func(r sdkRequest) bool { return r.URL == provider.TokenURL })]
			Expect(issued.Form).NotTo(HaveKey("resource"))
			Expect(issued.Status).To(Equal(http.StatusOK))
			Expect(run.Error.Message).To(ContainSubstring("401"))
			last := run.Requests[len(run.Requests)-1]
			Expect(last.Authorization).To(Equal("Bearer"))
			Expect(last.Status).To(Equal(http.StatusUnauthorized))
			Expect(last.WWWAuthenticate).To(ContainSubstring(`error="invalid_token"`))
			Expect(last.WWWAuthenticate).To(ContainSubstring("not meant for this resource"))

			seen := oidcCatalog.Rec.on(mcpPath())
			logExchanges("the oidc catalog answered", seen)
			Expect(seen).To(HaveLen(2))
			Expect(seen[0]).To(MatchFields(mcpPath(), "", http.StatusUnauthorized))
			Expect(seen[1]).To(MatchFields(mcpPath(), "Bearer", http.StatusUnauthorized))
			Expect(seen[1].Challenge).To(ContainSubstring(`error="invalid_token"`))
		})
	})

	Context("oidc mode: bad tokens over REST", func() {
		BeforeAll(func() { bindUser("alice-oidc-rest", provider.Issuer+"#alice") })

		expectInvalid := func(bearer, reason string) {
			GinkgoHelper()
			a := call(oidcCatalog.URL, http.MethodGet, menuPath(), bearer, "")
			Expect(a.Code).To(Equal(http.StatusUnauthorized), a.Body)
			Expect(a.Challenge).To(HavePrefix(`Bearer resource_metadata="` + oidcCatalog.URL + `/.well-known/oauth-protected-resource"`))
			Expect(a.Challenge).To(ContainSubstring(`error="invalid_token"`))
			Expect(a.Challenge).To(ContainSubstring(reason))
			a = call(oidcCatalog.URL, http.MethodPost, execPath(), bearer, addCall)
			Expect(a.Code).To(Equal(http.StatusUnauthorized), a.Body)
			Expect(a.Challenge).To(ContainSubstring(`error="invalid_token"`))
		}

		It("refuses an expired token", func() {
			provider.SetAccessTokenLifetime(-time.Second)
			expired := token("agent-a")
			provider.SetAccessTokenLifetime(0)
			expectInvalid(expired, "the token has expired")
		})

		It("refuses a token of another issuer", func() {
			other := testoidc.StartT(GinkgoT(), testoidc.Options{Clients: []testoidc.Client{
				{ID: "agent-a", Secret: "other-secret", Subject: "alice", Audience: []string{oidcCatalog.URL}},
			}})
			expectInvalid(tokenOf(other, "agent-a", "other-secret"), "the token was not issued by "+provider.Issuer)
		})

		It("refuses a bearer that is no JWT", func() {
			garbage := "garbage-" + randomHex()
			used.add(garbage)
			expectInvalid(garbage, "the token was not issued by "+provider.Issuer)
		})

		It("answers 503, not 401, while the provider is down, and accepts the token once it is back", func() {
			// A second replica behind the same public URL that has not
			// read the provider's discovery document yet.
			ln, _ := listen()
			fresh := serve(ln, "oidc-fresh", toolcatalog.Options{Auth: toolcatalog.AuthOIDC, PublicURL: oidcCatalog.URL,
				OIDC: &toolcatalog.OIDCOptions{IssuerURL: provider.Issuer, HTTPClient: provider.HTTPClient()}})
			alice := token("agent-a")
			provider.SetDown(true)
			DeferCleanup(provider.SetDown, false)
			for range 2 {
				a := call(fresh.URL, http.MethodGet, menuPath(), alice, "")
				Expect(a.Code).To(Equal(http.StatusServiceUnavailable), a.Body)
				Expect(a.Challenge).To(BeEmpty())
				Expect(a.Error).To(ContainSubstring("could not be reached"))
			}
			provider.SetDown(false)
			back := time.Now()
			Eventually(func() int { return call(fresh.URL, http.MethodGet, menuPath(), alice, "").Code }).
				Should(Equal(http.StatusOK), "discovery is retried")
			GinkgoWriter.Printf("timing: accepted %s after the provider came back\n", time.Since(back).Round(time.Millisecond))
			executed := call(fresh.URL, http.MethodPost, execPath(), alice, addCall)
			Expect(executed.Code).To(Equal(http.StatusOK), executed.Body)
			Expect(executed.Body).To(ContainSubstring(`"output":"3"`))
		})
	})

	It("never writes a token to the logs or the audit trail, and audits who called with the issuer", func() {
		aliceUser := provider.Issuer + "#alice"
		Eventually(func() []map[string]any { return auditLines(oidcCatalog.Audit, aliceUser) }).
			Should(ContainElement(And(HaveKeyWithValue("via", "mcp"), HaveKeyWithValue("tool", addTool),
				HaveKeyWithValue("outcome", "success"), HaveKeyWithValue("issuer", provider.Issuer))))
		Expect(oidcCatalog.Audit.String()).To(ContainSubstring(`"user":"` + aliceUser + `"`))
		Expect(oidcCatalog.Audit.String()).To(ContainSubstring(`"issuer":"` + provider.Issuer + `"`))
		Eventually(func() []map[string]any { return auditLines(audits["oidc-fresh"], aliceUser) }).
			Should(ContainElement(And(HaveKeyWithValue("via", "rest"), HaveKeyWithValue("issuer", provider.Issuer))))

		tokens := used.all()
		Expect(len(tokens)).To(BeNumerically(">=", 10), "the suite saw the tokens it checks for")
		var leaks []string
		for i, t := range tokens {
			for name, text := range map[string]string{"logs": logs.String(), "audit kubernetes": audits["kubernetes"].String(),
				"audit oidc": audits["oidc"].String(), "audit oidc-fresh": audits["oidc-fresh"].String()} {
				if strings.Contains(text, t) {
					// Only the JWT header, which names no one, goes into the message.
					leaks = append(leaks, fmt.Sprintf("token #%d (%.10s…) in %s", i, t, name))
				}
			}
		}
		Expect(leaks).To(BeEmpty())
		GinkgoWriter.Printf("checked %d tokens against %d bytes of logs\n", len(tokens), len(logs.String()))
	})
})

// auditLines are the audit records of one user.
func auditLines(audit interface{ String() string }, user string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(audit.String(), "\n") {
		var record map[string]any
		if json.Unmarshal([]byte(line), &record) == nil && record["user"] == user {
			out = append(out, record)
		}
	}
	return out
}

func indexOf(reqs []sdkRequest, match func(sdkRequest) bool) int {
	for i, r := range reqs {
		if match(r) {
			return i
		}
	}
	Fail("no such request")
	return -1
}

func logExchanges(title string, seen []exchange) {
	GinkgoWriter.Printf("%s:\n", title)
	for i, e := range seen {
		GinkgoWriter.Printf("  %2d. %s\n", i+1, e)
	}
}

// MatchFields matches an exchange's path, Authorization scheme and status.
func MatchFields(path, auth string, status int) OmegaMatcher {
	return And(
		WithTransform(func(e exchange) string { return e.Path }, Equal(path)),
		WithTransform(func(e exchange) string { return e.Auth }, Equal(auth)),
		WithTransform(func(e exchange) int { return e.Status }, Equal(status)),
	)
}
