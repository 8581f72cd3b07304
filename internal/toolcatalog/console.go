package toolcatalog

import (
	"net/http"
	"strings"

	"github.com/toolmesh/mcp-operator/internal/console"
)

// ConsoleOptions configure the console: a web page for people, served by
// the catalog under /ui/ (internal/console). The page is static and
// public; every piece of data it shows comes from the API routes, with
// the viewer's token and the same authorization as any client's.
type ConsoleOptions struct {
	// Enabled serves the console.
	Enabled bool
	// TryIt offers forms that call a tool from the page, to viewers who
	// may execute the collection's tools. Off, the page offers none; the
	// execute route is unchanged either way.
	TryIt bool
	// OIDCClientID, when set, has the page offer signing in through the
	// OpenID provider of Options.OIDC (the authorization code flow with
	// PKCE): the console's client at the provider, a public client whose
	// redirect URI is the console's page (PublicURL + "/ui/"). The page may
	// then connect to the provider's origin too. Without Options.OIDC it is
	// ignored, and said so in the log.
	OIDCClientID string
	// OIDCScopes the page asks the provider for (default openid).
	OIDCScopes []string
}

// consolePrefix is where the console is served.
const consolePrefix = "/ui"

// isConsolePath says path is the console's: its files need no token.
func isConsolePath(path string) bool {
	return path == consolePrefix || strings.HasPrefix(path, consolePrefix+"/")
}

// mountConsole serves the console when it is enabled.
func (c *Catalog) mountConsole(mux *http.ServeMux) {
	if !c.opts.Console.Enabled {
		return
	}
	cfg := console.Config{Auth: string(c.opts.Auth), TryIt: c.opts.Console.TryIt}
	if id := c.opts.Console.OIDCClientID; id != "" {
		if c.opts.OIDC != nil {
			cfg.OIDC = &console.OIDC{Issuer: c.opts.OIDC.IssuerURL, ClientID: id, Scopes: c.opts.Console.OIDCScopes}
		} else {
			c.log.Error(nil, "The console has an OIDC client but the catalog trusts no OpenID provider: the page offers no sign-in through one")
		}
	}
	page := console.Handler(cfg)
	mux.Handle("GET "+consolePrefix, page)
	mux.Handle("GET "+consolePrefix+"/", page)
}
