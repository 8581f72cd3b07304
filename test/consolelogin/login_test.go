package consolelogin_test

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolmesh/mcp-operator/internal/testbrowser"
)

// signInButton is the console's button that starts the flow.
const signInButton = `button[data-testid=oidc-signin]`

// serverRow is the row of the server the viewer may read.
var serverRow = `tr[data-testid=server-row][data-name="` + ns + `/` + serverName + `"]`

// claims are the claims of a JWT, read without checking it (the catalog
// checked it: it answered the page with data).
func claims(token string) map[string]any {
	GinkgoHelper()
	parts := strings.Split(token, ".")
	Expect(parts).To(HaveLen(3), "the token is not a JWT")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	Expect(err).NotTo(HaveOccurred())
	var c map[string]any
	Expect(json.Unmarshal(payload, &c)).To(Succeed())
	return c
}

// expectNoCodeInTheAddressBar checks that nothing of the sign-in is left
// where it would persist: in the address bar or the tab's history.
func (t *tab) expectNoCodeInTheAddressBar() {
	GinkgoHelper()
	at := t.address()
	Expect(at.RawQuery).To(BeEmpty(), "the address bar keeps a query: %s", at.Redacted())
	for _, entry := range t.history() {
		u, err := url.Parse(entry)
		Expect(err).NotTo(HaveOccurred())
		if u.Host == at.Host {
			Expect(u.Query()).NotTo(HaveKey("code"), "the tab's history keeps a code")
			Expect(u.Query()).NotTo(HaveKey("state"), "the tab's history keeps a state")
		}
	}
}

// startSignIn opens the console at #/servers, as a viewer without a
// token, and clicks "Sign in with <provider>".
func startSignIn(t *tab) {
	GinkgoHelper()
	t.Do(chromedp.Navigate(catalogURL + "/ui/#/servers"))
	t.waitOnConsole(`form[data-testid=token-form]`)
	t.waitOnConsole(signInButton)
	issuer, err := url.Parse(provider.Issuer)
	Expect(err).NotTo(HaveOccurred())
	Expect(t.Text(signInButton)).To(Equal("Sign in with " + issuer.Host))
	t.Shot(t.Name + "-form")
	t.Click(signInButton)
}

var _ = Describe("Signing in to the console through the OpenID provider", func() {
	It("ends back on the servers page, signed in, with nothing of the flow in the address bar", func() {
		t := openTab("signin")
		logins, exchanges := provider.Logins(), provider.TokenRequests()
		startSignIn(t)

		By("the page shows the server the viewer may read, with the provider's token")
		t.waitOnConsole(serverRow)
		Expect(t.Text(serverRow + ` [data-testid=ready]`)).To(ContainSubstring("True"))
		t.waitOnConsole(`button[data-testid=token-clear]`)
		Expect(provider.Logins()).To(Equal(logins+1), "the provider signed the user in once")
		Expect(provider.TokenRequests()).To(Equal(exchanges+1), "the page exchanged its code once")

		By("the route is the one the viewer started from, and the code and state are gone")
		at := t.address()
		Expect(at.Scheme + "://" + at.Host + at.Path).To(Equal(catalogURL + "/ui/"))
		Expect(at.Fragment).To(Equal("/servers"))
		t.expectNoCodeInTheAddressBar()

		By("the tab keeps the access token, and nothing else of the flow")
		session := t.session()
		Expect(session).To(HaveLen(1), "sessionStorage holds %d items, want only the token", len(session))
		Expect(session).To(HaveKey(testbrowser.TokenKey))
		c := claims(session[testbrowser.TokenKey])
		Expect(c).To(HaveKeyWithValue("iss", provider.Issuer))
		Expect(c).To(HaveKeyWithValue("sub", user))
		Expect(c).To(HaveKeyWithValue("client_id", clientID))
		Expect(c["aud"]).To(ContainElement(catalogURL))
		t.Shot("signed-in")
	})

	It("refuses an answer whose state is not the tab's: an error, no token, and the code never exchanged", func() {
		t := openTab("tampered-state")
		changed := t.tamper("state", "forged-by-someone-else")
		logins, exchanges := provider.Logins(), provider.TokenRequests()
		startSignIn(t)

		t.waitOnConsole(`[data-testid=error]`)
		Expect(changed.Load()).To(BeTrue(), "the redirect back was not tampered with")
		Expect(t.Text(`[data-testid=error]`)).To(ContainSubstring("the state does not match"))
		t.waitOnConsole(`form[data-testid=token-form]`)
		t.waitOnConsole(signInButton)
		Expect(t.session()).To(BeEmpty(), "sessionStorage keeps something of a refused sign-in")
		t.expectNoCodeInTheAddressBar()
		Expect(provider.Logins()).To(Equal(logins+1), "the provider signed the user in")
		Expect(provider.TokenRequests()).To(Equal(exchanges), "the page sent the code to the token endpoint")
		t.Shot("tampered-state")
	})

	It("keeps the token of a signed-in tab when a sign-in answer is replayed to it, and says so at once", func() {
		t := openTab("replayed")
		startSignIn(t)
		t.waitOnConsole(serverRow)
		token := t.session()[testbrowser.TokenKey]
		Expect(token).NotTo(BeEmpty())
		exchanges := provider.TokenRequests()

		// A link to the console carrying an answer of the provider: an old
		// one of this tab, or one someone else crafted.
		t.Do(chromedp.Navigate(catalogURL + "/ui/?code=replayed-code&state=replayed-state#/servers"))
		t.waitOnConsole(`[data-testid=error]`)
		Expect(t.Text(`[data-testid=error]`)).To(ContainSubstring("the state does not match"))
		Expect(t.session()).To(Equal(map[string]string{testbrowser.TokenKey: token}), "the tab lost or changed its token")
		t.waitOnConsole(serverRow)
		t.expectNoCodeInTheAddressBar()
		Expect(provider.TokenRequests()).To(Equal(exchanges), "the replayed code was sent to the token endpoint")
		t.Shot("replayed")
	})

	It("shows the provider's error when the code exchange fails, and keeps no token", func() {
		t := openTab("failed-exchange")
		changed := t.tamper("code", "not-a-code-the-provider-issued")
		exchanges := provider.TokenRequests()
		startSignIn(t)

		t.waitOnConsole(`[data-testid=error]`)
		Expect(changed.Load()).To(BeTrue(), "the redirect back was not tampered with")
		// zitadel's answer: 400 {"error":"invalid_grant","error_description":"invalid code"}.
		Expect(t.Text(`[data-testid=error]`)).To(And(ContainSubstring("invalid_grant"), ContainSubstring("invalid code")))
		t.waitOnConsole(`form[data-testid=token-form]`)
		Expect(t.session()).To(BeEmpty(), "sessionStorage keeps something of a failed sign-in")
		t.expectNoCodeInTheAddressBar()
		Expect(provider.TokenRequests()).To(Equal(exchanges+1), "the page did not ask the token endpoint")
	})
})
