// Package console serves the catalog's browser console: static files
// embedded in the binary, under /ui/, that read everything they show from
// the catalog's own API with the viewer's token. The files hold no data
// and need no token; every answer carries a strict Content-Security-Policy,
// so that a tool description holding markup can only ever be shown as text.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Config is what the page needs to know about the catalog serving it.
type Config struct {
	// Auth is "none", "kubernetes" or "oidc": whether the page asks for a
	// token. Empty means "none".
	Auth string
	// TryIt is whether the page offers "Try it" forms (--console-try-it).
	TryIt bool
	// OIDC, when set, has the page offer signing in through an OpenID
	// provider: the authorization code flow with PKCE, run by the page
	// itself as a public client (assets/login.js).
	OIDC *OIDC
}

// OIDC is the OpenID provider the page signs its viewer in with.
type OIDC struct {
	// Issuer is the provider's issuer URL, whose discovery document the
	// page reads; the page may connect to its origin.
	Issuer string `json:"issuer"`
	// ClientID is the console's client at the provider: a public client
	// whose redirect URI is the console's /ui/ page.
	ClientID string `json:"clientID"`
	// Scopes the page asks for (default openid).
	Scopes []string `json:"scopes"`
}

// contentSecurityPolicy lets the page run only its own script and style,
// talk only to its own origin (and the OpenID provider's, when it signs in
// through one) and show images only from it or data: URLs (a tool's image
// results); nothing may frame it.
func contentSecurityPolicy(connect string) string {
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src " + connect + "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// hostName is a host a Content-Security-Policy source names as it is: a
// DNS name or an IPv4 address, in ASCII.
var hostName = regexp.MustCompile(`^[A-Za-z0-9.-]+$`)

// CheckIssuer says why the page could not sign in through the OpenID
// provider at issuer, nil when it can: issuer must be an http(s) URL whose
// origin the page's Content-Security-Policy can name as it is, and only
// it. So no user name or password, query or fragment; a host of ASCII
// letters, digits, dots and hyphens (no wildcard, no IPv6 literal, which a
// CSP source cannot name); a port, if any, from 1 to 65535. A path is
// fine (realms, tenants).
func CheckIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	switch {
	case err != nil:
		return errors.New("it is not a URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return errors.New("it is not an http(s) URL")
	case u.Opaque != "" || u.Host == "":
		return errors.New("it names no host")
	case u.User != nil:
		return errors.New("it holds a user name or password")
	case u.RawQuery != "" || u.ForceQuery:
		return errors.New("it holds a query")
	case u.Fragment != "" || strings.Contains(issuer, "#"):
		return errors.New("it holds a fragment")
	case strings.HasPrefix(u.Host, "["):
		return errors.New("its host is an IPv6 address, which a Content-Security-Policy cannot name: use a DNS name")
	case strings.Contains(u.Host, "*"):
		return errors.New("its host holds a wildcard (*)")
	case !hostName.MatchString(u.Hostname()):
		return fmt.Errorf("its host %q may hold only ASCII letters, digits, dots and hyphens", u.Hostname())
	case strings.HasSuffix(u.Host, ":"):
		return errors.New("its port is empty")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return fmt.Errorf("its port %s is not a number from 1 to 65535", port)
		}
	}
	return nil
}

// origin is the scheme, host and port of an issuer CheckIssuer accepts,
// "" for anything else: the one source the page may connect to besides
// its own.
func origin(issuer string) string {
	if CheckIssuer(issuer) != nil {
		return ""
	}
	u, _ := url.Parse(issuer)
	return u.Scheme + "://" + u.Host
}

// contentTypes are the types of the files the console is made of; a file
// of another kind is served as bytes.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".json": "application/json",
	".svg":  "image/svg+xml",
}

// file is one answer the console serves, ready to go out.
type file struct {
	body        []byte
	etag        string
	contentType string
}

func newFile(name string, body []byte) *file {
	sum := sha256.Sum256(body)
	contentType, ok := contentTypes[path.Ext(name)]
	if !ok {
		contentType = "application/octet-stream"
	}
	return &file{body: body, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, contentType: contentType}
}

// Handler serves the console under /ui/ (it expects the full path /ui/...):
// index.html at /ui/, the embedded assets by name, /ui/config.json from
// cfg, and a redirect from /ui to ui/ (/ui/ under any prefix).
func Handler(cfg Config) http.Handler {
	files := map[string]*file{}
	err := fs.WalkDir(assets, "assets", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(name)
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(name, "assets/")] = newFile(name, body)
		return nil
	})
	if err != nil {
		panic("console: reading the embedded assets: " + err.Error()) // they are compiled in
	}
	auth := cfg.Auth
	if auth == "" {
		auth = "none"
	}
	connect := "'self'"
	var oidc *OIDC
	if cfg.OIDC != nil {
		// Without an issuer CheckIssuer accepts, or a client, there is
		// nothing the page could sign in with (the manager's flags refuse
		// both), and no origin is added to the policy.
		if o := origin(cfg.OIDC.Issuer); o != "" && cfg.OIDC.ClientID != "" {
			connect += " " + o
			oidc = &OIDC{Issuer: cfg.OIDC.Issuer, ClientID: cfg.OIDC.ClientID, Scopes: cfg.OIDC.Scopes}
			if len(oidc.Scopes) == 0 {
				oidc.Scopes = []string{"openid"}
			}
		}
	}
	policy := contentSecurityPolicy(connect)
	config, _ := json.Marshal(struct {
		Auth  string `json:"auth"`
		TryIt bool   `json:"tryIt"`
		OIDC  *OIDC  `json:"oidc,omitempty"`
	}{auth, cfg.TryIt, oidc})
	files["config.json"] = newFile("config.json", config)
	files[""] = files["index.html"]

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == "/ui" {
			// Relative (http.Redirect would make it absolute), so that it
			// leads to /ui/ under whatever prefix a proxy serves the
			// catalog at.
			target := "ui/"
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			h.Set("Location", target)
			w.WriteHeader(http.StatusMovedPermanently)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, "/ui/")
		f := files[name]
		if !ok || f == nil {
			http.Error(w, "no such file in the console", http.StatusNotFound)
			return
		}
		h.Set("Content-Type", f.contentType)
		h.Set("ETag", f.etag)
		// ServeContent answers If-None-Match with 304, and HEAD and ranges.
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
	})
}
