package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/toolmesh/mcp-operator/internal/console"
	"github.com/toolmesh/mcp-operator/internal/toolcatalog"
)

// bindIdentityFlags binds how the catalog presents itself as an OAuth
// protected resource and checks JWTs of an OpenID provider (docs/auth.md).
func bindIdentityFlags(fs *flag.FlagSet, cfg *config) {
	opts, oidc := &cfg.catalog, &cfg.oidc
	fs.StringVar(&opts.PublicURL, "catalog-public-url", "", "The catalog's URL as callers reach it (behind an ingress, the ingress's), e.g. https://tools.example.com: the resource its Protected Resource Metadata and 401 challenges name, and the audience JWTs checked by the catalog must have. Required with --catalog-oidc-issuer-url.")
	fs.Func("catalog-authorization-servers", "Comma-separated authorization server URLs advertised in the Protected Resource Metadata (default: --catalog-oidc-issuer-url).", func(v string) error {
		opts.AuthorizationServers = append(opts.AuthorizationServers, commaList(v)...)
		return nil
	})
	fs.Func("catalog-scopes", "Comma-separated scopes advertised in the metadata and in 401 challenges.", func(v string) error {
		opts.Scopes = append(opts.Scopes, commaList(v)...)
		return nil
	})
	fs.Func("token-exchange-urls", "Comma-separated token endpoint URLs (exactly as in spec.auth.tokenExchange.tokenURL) that callers' tokens may be sent to for an exchange. A namespace's tenant chooses an MCPServer's tokenURL, and a caller's token is a credential: it goes only where this flag says. Default: none, and tool calls to tokenExchange servers are answered 502.", func(v string) error {
		for _, u := range commaList(v) {
			if parsed, err := url.Parse(u); err != nil || parsed.Host == "" || (parsed.Scheme != "https" && parsed.Scheme != "http") {
				return fmt.Errorf("%q is not an absolute http(s) URL", u)
			}
			cfg.tokenExchangeURLs = append(cfg.tokenExchangeURLs, u)
		}
		return nil
	})
	fs.StringVar(&oidc.IssuerURL, "catalog-oidc-issuer-url", "", "An OpenID provider whose JWTs the catalog checks itself (issuer discovery, JWKS with rotation, aud, exp, nbf, signature algorithm).")
	fs.StringVar(&cfg.oidcCAFile, "catalog-oidc-ca-file", "", "PEM CA bundle to trust for the OpenID provider instead of the system roots.")
	fs.Func("catalog-oidc-audiences", "Comma-separated audiences a JWT may name besides the endpoint it is presented to and --catalog-public-url (for providers that put a client id in aud).", func(v string) error {
		oidc.Audiences = append(oidc.Audiences, commaList(v)...)
		return nil
	})
	fs.StringVar(&oidc.UsernameClaim, "catalog-oidc-username-claim", "sub", "The JWT claim naming the user, as the API server's --oidc-username-claim.")
	fs.StringVar(&oidc.UsernamePrefix, "catalog-oidc-username-prefix", "", "Put before every user name, as the API server's --oidc-username-prefix: default the issuer URL and '#' (nothing for the email claim); '-' for none.")
	fs.StringVar(&oidc.GroupsClaim, "catalog-oidc-groups-claim", "", "The JWT claim listing the user's groups; empty maps none.")
	fs.StringVar(&oidc.GroupsPrefix, "catalog-oidc-groups-prefix", "", "Put before every group name.")
	fs.Func("catalog-oidc-signing-algs", "Comma-separated JWT signing algorithms accepted (default RS256,ES256; asymmetric ones only).", func(v string) error {
		oidc.SigningAlgorithms = append(oidc.SigningAlgorithms, commaList(v)...)
		return toolcatalog.CheckSigningAlgorithms(oidc.SigningAlgorithms)
	})
	consoleOpts := &opts.Console
	fs.StringVar(&consoleOpts.OIDCClientID, "console-oidc-client-id", "", "The console's client at --catalog-oidc-issuer-url: the console then offers to sign in through that provider (the authorization code flow with PKCE, in the browser). Register it at the provider as a public client whose redirect URI is --catalog-public-url followed by /ui/.")
	consoleOpts.OIDCScopes = []string{"openid"}
	fs.Var(&scopesFlag{list: &consoleOpts.OIDCScopes}, "console-oidc-scopes", "Comma-separated scopes the console asks the provider for when it signs a viewer in.")
}

// scopesFlag is a comma-separated list of OAuth scopes with a default,
// replaced (not appended to) when the flag is given.
type scopesFlag struct {
	list *[]string
	set  bool
}

func (f *scopesFlag) String() string {
	if f == nil || f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f *scopesFlag) Set(v string) error {
	if !f.set {
		*f.list = nil
	}
	f.set = true
	for _, scope := range commaList(v) {
		// RFC 6749 §3.3: printable ASCII but space, " and \.
		if strings.ContainsFunc(scope, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '\\' }) {
			return fmt.Errorf("%q is not a scope: separate scopes with commas", scope)
		}
		*f.list = append(*f.list, scope)
	}
	return nil
}

// checkIdentity refuses identity flags that cannot work together.
func (cfg *config) checkIdentity() error {
	if err := cfg.checkConsoleSignIn(); err != nil {
		return err
	}
	if cfg.oidc.IssuerURL == "" {
		switch {
		case cfg.catalog.Auth == toolcatalog.AuthOIDC:
			return errors.New("--catalog-auth=oidc needs --catalog-oidc-issuer-url")
		case cfg.oidcCAFile != "":
			return errors.New("--catalog-oidc-ca-file needs --catalog-oidc-issuer-url")
		}
		return nil
	}
	if cfg.catalog.Auth == toolcatalog.AuthNone {
		return errors.New("--catalog-oidc-issuer-url needs --catalog-auth=oidc or kubernetes")
	}
	if cfg.catalog.PublicURL == "" {
		return errors.New("--catalog-oidc-issuer-url needs --catalog-public-url: the catalog accepts only tokens meant for it")
	}
	return nil
}

// checkConsoleSignIn refuses console sign-in flags that cannot work: the
// console signs in through the provider the catalog trusts, from its page.
func (cfg *config) checkConsoleSignIn() error {
	opts := cfg.catalog.Console
	if opts.OIDCClientID == "" {
		if len(opts.OIDCScopes) != 1 || opts.OIDCScopes[0] != "openid" {
			return errors.New("--console-oidc-scopes needs --console-oidc-client-id")
		}
		return nil
	}
	if cfg.oidc.IssuerURL == "" {
		return errors.New("--console-oidc-client-id needs --catalog-oidc-issuer-url: the console signs in through the provider the catalog trusts")
	}
	// The page may connect to the issuer's origin: its Content-Security-
	// Policy must be able to name it, and only it (console.Handler refuses
	// the same issuers).
	if err := console.CheckIssuer(cfg.oidc.IssuerURL); err != nil {
		return fmt.Errorf("--console-oidc-client-id cannot sign in through --catalog-oidc-issuer-url %q: %w", cfg.oidc.IssuerURL, err)
	}
	switch {
	case !opts.Enabled:
		return errors.New("--console-oidc-client-id needs the console (--console)")
	case len(opts.OIDCScopes) == 0:
		return errors.New("--console-oidc-scopes needs at least one scope (openid, usually)")
	}
	return nil
}

// setUpOIDC gives the catalog the OIDC options, with a client that trusts
// --catalog-oidc-ca-file; nothing without an issuer.
func (cfg *config) setUpOIDC() error {
	if cfg.oidc.IssuerURL == "" {
		return nil
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if cfg.oidcCAFile != "" {
		pem, err := os.ReadFile(cfg.oidcCAFile)
		if err != nil {
			return fmt.Errorf("--catalog-oidc-ca-file: %w", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--catalog-oidc-ca-file %s holds no PEM certificate", cfg.oidcCAFile)
		}
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		client.Transport = transport
	}
	cfg.oidc.HTTPClient = client
	cfg.catalog.OIDC = &cfg.oidc
	return nil
}
