package upstreamauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/lru"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// issued is a token and when to stop using it.
type issued struct {
	value     string // the Authorization header value
	refreshAt time.Time
}

// client is one OAuth client at a token endpoint.
type client struct {
	cfg  Config
	http *http.Client
	now  func() time.Time
}

// refreshAt is when a token issued now, valid for expiresIn (0: not
// said), stops being used.
func (c *client) refreshAt(expiresIn time.Duration) time.Time {
	now := c.now()
	if expiresIn <= 0 {
		return now.Add(DefaultLifetime)
	}
	return now.Add(expiresIn - Early)
}

// authorization is the header value of a token of tokenType.
func authorization(accessToken, tokenType string) (string, bool) {
	switch {
	case tokenType == "", strings.EqualFold(tokenType, "bearer"), tokenType == "N_A":
		// N_A: RFC 8693's "not an access token" for a JWT or an ID token
		// asked for by requestedTokenType, which the server takes as a
		// bearer token all the same.
		return "Bearer " + accessToken, true
	}
	return "", false
}

// fetch runs get once for the concurrent requests that give the same key
// and hands each its answer. The shared request runs apart from the
// cancellation of the request that started it, bounded by the token
// endpoint's timeout, so that one caller leaving fails no other; each
// request waits no longer than its own context.
func (c *client) fetch(ctx context.Context, group *singleflight.Group, key string, get func(context.Context) (issued, error)) (issued, error) {
	answer := group.DoChan(key, func() (v any, err error) {
		// DoChan re-raises a panic on a goroutine of its own, where
		// nothing recovers it; answered as an error it fails only the
		// requests that share this fetch.
		defer func() {
			if r := recover(); r != nil {
				v, err = issued{}, c.cfg.unavailable("could not be asked: the request for a token failed", fmt.Errorf("panic: %v", r))
			}
		}()
		shared, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.timeout())
		defer cancel()
		return get(shared)
	})
	select {
	case r := <-answer:
		tok, _ := r.Val.(issued)
		return tok, r.Err
	case <-ctx.Done():
		return issued{}, c.cfg.unavailable("was still being asked for a token when the request ended", ctx.Err())
	}
}

// clientCredentials gets a token with the client credentials grant.
func (c *client) clientCredentials(ctx context.Context) (issued, error) {
	const doing = "the client credentials grant"
	params := url.Values{}
	if c.cfg.Audience != "" {
		params.Set("audience", c.cfg.Audience)
	}
	if c.cfg.Resource != "" {
		params.Set("resource", c.cfg.Resource)
	}
	conf := &clientcredentials.Config{
		ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret, TokenURL: c.cfg.TokenURL,
		Scopes: c.cfg.Scopes, EndpointParams: params, AuthStyle: oauth2.AuthStyleInHeader,
	}
	tok, err := conf.Token(context.WithValue(ctx, oauth2.HTTPClient, c.http))
	if err != nil {
		return issued{}, c.cfg.failure(doing, err, c.cfg.ClientSecret)
	}
	value, ok := authorization(tok.AccessToken, tok.TokenType)
	if !ok {
		return issued{}, c.cfg.unavailable(fmt.Sprintf("answered %s with a token of type %q, which is not a bearer token", doing, cleanCode(tok.TokenType)), nil)
	}
	// expires_in as sent, read on the client's clock; oauth2 made Expiry
	// of it on the wall clock.
	var lifetime time.Duration
	switch raw := tok.Extra("expires_in"); v := raw.(type) {
	case float64:
		lifetime = time.Duration(v * float64(time.Second))
	case string:
		lifetime, _ = seconds(json.RawMessage(strconv.Quote(v)))
	}
	if lifetime <= 0 && !tok.Expiry.IsZero() {
		lifetime = max(time.Until(tok.Expiry), time.Nanosecond) // expired already: not reused
	}
	return issued{value: value, refreshAt: c.refreshAt(lifetime)}, nil
}

// doingExchange names the token exchange in messages, and tells its
// refusals from the client credentials grant's.
const doingExchange = "the token exchange"

// maxAnswer bounds the token endpoint's answer.
const maxAnswer = 1 << 20

// exchange exchanges subject, a caller's token, for a token for the
// server (RFC 8693 section 2).
func (c *client) exchange(ctx context.Context, subject string) (issued, error) {
	const doing = doingExchange
	requested := c.cfg.RequestedTokenType
	if requested == "" {
		requested = TokenTypeAccessToken
	}
	form := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {subject},
		"subject_token_type":   {TokenTypeAccessToken},
		"requested_token_type": {requested},
	}
	if c.cfg.Audience != "" {
		form.Set("audience", c.cfg.Audience)
	}
	if c.cfg.Resource != "" {
		form.Set("resource", c.cfg.Resource)
	}
	if len(c.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(c.cfg.Scopes, " "))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return issued{}, c.cfg.unavailable("is not a usable URL", nil)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// client_secret_basic, encoded as RFC 6749 section 2.3.1 says.
	req.SetBasicAuth(url.QueryEscape(c.cfg.ClientID), url.QueryEscape(c.cfg.ClientSecret))
	resp, err := c.http.Do(req)
	if err != nil {
		return issued{}, c.cfg.failure(doing, err, subject, c.cfg.ClientSecret)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return issued{}, c.cfg.failure(doing, err, subject, c.cfg.ClientSecret)
	}
	var answer struct {
		AccessToken     string          `json:"access_token"`
		IssuedTokenType string          `json:"issued_token_type"`
		TokenType       string          `json:"token_type"`
		ExpiresIn       json.RawMessage `json:"expires_in"`
		Error           string          `json:"error"`
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	decoded := json.Unmarshal(body, &answer) == nil
	if resp.StatusCode != http.StatusOK || answer.Error != "" {
		code := ""
		if decoded {
			code = cleanCode(answer.Error, subject, c.cfg.ClientSecret)
		}
		return issued{}, c.cfg.answered(doing, resp.StatusCode, code)
	}
	if !decoded || (mediaType != "" && mediaType != "application/json") {
		return issued{}, c.cfg.unavailable("answered "+doing+" with something that is not a token", nil)
	}
	if answer.AccessToken == "" {
		return issued{}, c.cfg.failure(doing, errNotAToken)
	}
	value, ok := authorization(answer.AccessToken, answer.TokenType)
	if !ok {
		return issued{}, c.cfg.unavailable(fmt.Sprintf("answered %s with a token of type %q, which is not a bearer token", doing,
			cleanCode(answer.TokenType, subject, c.cfg.ClientSecret)), nil)
	}
	expiresIn, err := seconds(answer.ExpiresIn)
	if err != nil {
		return issued{}, c.cfg.failure(doing, errNotAToken)
	}
	return issued{value: value, refreshAt: c.refreshAt(expiresIn)}, nil
}

// seconds reads expires_in: a number of seconds, or a string of one
// (some token services quote it); absent is 0.
func seconds(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var text string
	if json.Unmarshal(raw, &text) != nil {
		text = string(raw)
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || n < 0 || n > 1e9 {
		return 0, errors.New("expires_in is not a number of seconds")
	}
	return time.Duration(n * float64(time.Second)), nil
}

// serviceToken is the client's own token (client credentials), reused
// until Early before it expires.
type serviceToken struct {
	c        *client
	mu       sync.Mutex
	current  issued
	fetching singleflight.Group
}

func (s *serviceToken) cached() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current.value != "" && s.c.now().Before(s.current.refreshAt) {
		return s.current.value, true
	}
	return "", false
}

func (s *serviceToken) Authorization(ctx context.Context) (string, error) {
	if value, ok := s.cached(); ok {
		return value, nil
	}
	tok, err := s.c.fetch(ctx, &s.fetching, "", func(ctx context.Context) (issued, error) {
		// A fetch that ended just before this one began left its token.
		if value, ok := s.cached(); ok {
			return issued{value: value}, nil
		}
		tok, err := s.c.clientCredentials(ctx)
		if err != nil {
			return issued{}, err
		}
		s.mu.Lock()
		s.current = tok
		s.mu.Unlock()
		return tok, nil
	})
	return tok.value, err
}

func (s *serviceToken) PerCaller() bool { return false }

// Forget drops the token if it is value, which the server refused (it
// was revoked, or the server's keys rotated): the next request gets a new
// one instead of failing until the token would have been refreshed.
func (s *serviceToken) Forget(_ context.Context, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current.value == value {
		s.current = issued{}
	}
}

// exchanged is the Credentials of a server whose tokens are exchanged per
// caller. Its exchanged tokens are kept in tokens, shared by every such
// server of a Sources, keyed by callerToken.
type exchanged struct {
	c       *client
	service *serviceToken
	tokens  *lru.Cache
	// exchanging shares one exchange among the concurrent first requests
	// of one caller.
	exchanging singleflight.Group
	// allowed: the token endpoint is one the operator lets callers'
	// tokens go to (NewSources). Discovery, which sends none, works
	// either way.
	allowed bool
}

// callerToken keys a caller's exchanged token for one server: per
// subject token, not only per user, since two tokens of one user (an
// IDE's, an automation's read-only one) may be granted different things.
type callerToken struct {
	server   *exchanged
	identity string
	subject  [sha256.Size]byte
}

func (e *exchanged) PerCaller() bool { return true }

// Forget drops the caller's exchanged token if it is value, which the
// server refused; the service's, for discovery.
func (e *exchanged) Forget(ctx context.Context, value string) {
	caller, ok := CallerOf(ctx)
	if !ok {
		e.service.Forget(ctx, value)
		return
	}
	key := e.keyOf(caller)
	if v, found := e.tokens.Get(key); found && v.(issued).value == value {
		e.tokens.Remove(key)
	}
}

func (e *exchanged) Authorization(ctx context.Context) (string, error) {
	caller, ok := CallerOf(ctx)
	switch {
	case ok && caller.Token == "":
		return "", &mcpclient.CredentialsError{Kind: mcpclient.ErrAuthRefused, Err: errNoCaller,
			Message: "the server's tokens are exchanged for the caller's, and this call's caller has no token to exchange (is the catalog run with --catalog-auth=none?)"}
	case ok:
		return e.forCaller(ctx, caller)
	case isService(ctx):
		return e.service.Authorization(ctx)
	}
	return "", &mcpclient.CredentialsError{Kind: mcpclient.ErrAuthRefused, Err: errNoCaller,
		Message: "the server's tokens are exchanged for the caller's, and this call has no authenticated caller"}
}

func (e *exchanged) forCaller(ctx context.Context, caller Caller) (string, error) {
	if !e.allowed {
		return "", &mcpclient.CredentialsError{Kind: mcpclient.ErrAuthUnavailable, Err: errNotAllowed,
			Message: "spec.auth.tokenExchange.tokenURL " + e.c.cfg.endpoint() + " is not a token endpoint the operator sends callers' tokens to (--token-exchange-urls)",
			Public:  "spec.auth.tokenExchange.tokenURL is not a token endpoint the operator sends callers' tokens to (--token-exchange-urls)"}
	}
	key := e.keyOf(caller)
	if value, ok := e.cached(key); ok {
		return value, nil
	}
	tok, err := e.c.fetch(ctx, &e.exchanging, string(key.subject[:])+caller.Identity, func(ctx context.Context) (issued, error) {
		if value, ok := e.cached(key); ok {
			return issued{value: value}, nil
		}
		tok, err := e.c.exchange(ctx, caller.Token)
		if err != nil {
			return issued{}, err
		}
		e.tokens.Add(key, tok)
		return tok, nil
	})
	return tok.value, err
}

// keyOf is where the caller's exchanged token is kept: the subject
// token's digest tells callers apart even when no identity is said.
func (e *exchanged) keyOf(caller Caller) callerToken {
	return callerToken{server: e, identity: caller.Identity, subject: sha256.Sum256([]byte(caller.Token))}
}

func (e *exchanged) cached(key callerToken) (string, bool) {
	v, ok := e.tokens.Get(key)
	if !ok {
		return "", false
	}
	// An expired token is left to be replaced by the next exchange:
	// removing it here could remove the one a concurrent exchange just
	// added.
	tok := v.(issued)
	if !e.c.now().Before(tok.refreshAt) {
		return "", false
	}
	return tok.value, true
}
