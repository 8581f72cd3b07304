package toolcatalog

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/policy"
)

// AuthMode says how the catalog decides who may see and call what.
type AuthMode string

const (
	// AuthNone serves everything to everyone: for local runs.
	AuthNone AuthMode = "none"
	// AuthKubernetes requires a bearer token (checked with a TokenReview)
	// and decides with SubjectAccessReviews in the API group
	// mcp.toolmesh.io: get to read a menu, execute to call a tool. With
	// Options.OIDC set too, tokens of that issuer are checked by the
	// catalog itself and every other token with a TokenReview.
	AuthKubernetes AuthMode = "kubernetes"
	// AuthOIDC requires a JWT of the issuer in Options.OIDC, checked by
	// the catalog, and decides with SubjectAccessReviews on the user its
	// claims map to. No TokenReviews.
	AuthOIDC AuthMode = "oidc"
)

// Verbs and resources the catalog asks about.
const (
	verbGet                 = "get"
	verbExecute             = "execute"
	toolCollectionsResource = "toolcollections"
	mcpServersResource      = "mcpservers"
)

// maxCachedDecisions bounds each cache; past it the least recently used
// entry goes, one at a time. Tokens that failed are remembered apart from
// those that passed, so a client sending junk tokens cannot flush anyone
// else's answers.
const maxCachedDecisions = 10000

// caller is who a request comes from.
type caller struct {
	username string
	uid      string
	groups   []string
	extra    map[string]authorizationv1.ExtraValue
	// issuer is the OpenID issuer that vouched for the caller, for the
	// audit trail; empty when a TokenReview did.
	issuer string
	// token is the caller's validated bearer token, kept for one use:
	// an upstream with spec.auth.tokenExchange exchanges it for a token of
	// its own. It never reaches a log, a metric, a trace, the audit trail
	// or an answer, and is never sent upstream itself.
	token string
	// identity is all of the above but the token in one string, the key
	// of the caller's cached decisions: a token of the same user with
	// other extra (a scoped token) may be decided otherwise.
	identity string
	// policy is the caller as a collection's policy reads it.
	policy *policy.Caller
}

type callerKey struct{}

func callerFrom(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// authorizer checks tokens and permissions against the API server and
// remembers the answers briefly, so that a call does not cost two API
// round trips.
type authorizer struct {
	mode   AuthMode
	client client.Client
	ttl    time.Duration
	// oidc checks the JWTs of one issuer; nil without Options.OIDC.
	oidc *oidcValidator
	// resource says which protected resource a request is for, and where
	// its metadata is (see resource.go).
	resources *resources

	// tokens maps a valid token's SHA-256 to a cachedCaller, rejected an
	// invalid one's to its expiry; decisions maps a caller's identity and a
	// resource attribute set to a cachedDecision. All are LRUs, safe for
	// concurrent use.
	tokens    *lru.Cache
	rejected  *lru.Cache
	decisions *lru.Cache
	// asking shares one review among concurrent requests that ask the
	// same question (one token, or one caller and object), so that a
	// burst of first requests costs the API server one round trip.
	asking singleflight.Group
	// refused, if set, hears every request refused for its token.
	refused func(w http.ResponseWriter, r *http.Request, err error)
}

func newAuthorizer(mode AuthMode, reviewer client.Client, ttl time.Duration, capacity int) *authorizer {
	return &authorizer{mode: mode, client: reviewer, ttl: ttl, resources: &resources{},
		tokens: lru.New(capacity), rejected: lru.New(capacity), decisions: lru.New(capacity)}
}

// enabled says callers are authenticated and RBAC decides.
func (a *authorizer) enabled() bool { return a.mode != AuthNone }

type cachedCaller struct {
	caller  *caller
	expires time.Time
}

type cachedDecision struct {
	allowed bool
	expires time.Time
}

// authError answers 401 or 403 with a message that says what is missing,
// never what the token was.
type authError struct {
	code    int
	message string
	// oauthError is the RFC 6750 error code of a 401 for a token that was
	// presented: invalid_token. Empty when none was.
	oauthError string
	// rememberFor, when set, shortens how long the refusal is reused.
	rememberFor time.Duration
}

func (e *authError) Error() string { return e.message }

// authenticate resolves the request's bearer token to a caller. A JWT of
// the OIDC issuer is checked by the catalog against the resource the
// request is for; any other token by a TokenReview (with AuthKubernetes).
// Answers are reused for the cache's TTL, never past the token's exp.
func (a *authorizer) authenticate(ctx context.Context, r *http.Request) (*caller, error) {
	if !a.enabled() {
		return nil, nil
	}
	// The scheme is case-insensitive (RFC 9110).
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return nil, &authError{code: http.StatusUnauthorized, message: "a bearer token is required (Authorization: Bearer <token>)"}
	}
	if len(token) > maxTokenBytes {
		return nil, invalidToken(fmt.Sprintf("the token is longer than %d bytes", maxTokenBytes))
	}
	// A token the catalog checks is checked against the resource it is
	// presented to: answers are that pair's. Looked up first: a call with
	// a known token costs a hash, not a parse.
	key := a.keyOf(r, token)
	now := time.Now()
	if value, hit := a.tokens.Get(key); hit && now.Before(value.(cachedCaller).expires) {
		return value.(cachedCaller).caller, nil
	}
	if value, hit := a.rejected.Get(key); hit && now.Before(value.(rejection).expires) {
		return nil, value.(rejection).err
	}
	expires := now.Add(a.ttl)
	claims := peek(token)
	local := a.oidc != nil && claims.Issuer == a.oidc.opts.IssuerURL
	if !local && a.mode != AuthKubernetes {
		return nil, a.reject(key, expires, invalidToken("the token was not issued by "+a.oidc.opts.IssuerURL))
	}
	if exp := claims.expiry(); !exp.IsZero() && exp.Before(expires) {
		expires = exp
	}
	who, err := a.ask(ctx, "token\x00"+string(key[:]), func(ctx context.Context) (any, error) {
		var who *caller
		if local {
			var exp time.Time
			var err error
			who, exp, err = a.oidc.verify(ctx, token, a.resources.audiences(r, a.oidc.opts.Audiences))
			if err != nil {
				return nil, a.reject(key, expires, err)
			}
			if exp.Before(expires) {
				expires = exp
			}
		} else {
			review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
			if err := a.client.Create(ctx, review); err != nil {
				return nil, &authError{code: http.StatusServiceUnavailable, message: "the token could not be checked with the API server; retry"}
			}
			if !review.Status.Authenticated {
				return nil, a.reject(key, expires, errInvalidToken)
			}
			who = newCaller(review.Status.User, "")
		}
		who.token = token
		a.tokens.Add(key, cachedCaller{caller: who, expires: expires})
		return who, nil
	})
	if err != nil {
		return nil, err
	}
	return who.(*caller), nil
}

// keyOf is the cache key of token presented with r: the SHA-256 of the
// resource r is for and the token.
func (a *authorizer) keyOf(r *http.Request, token string) [sha256.Size]byte {
	h := sha256.New()
	_, _ = io.WriteString(h, a.resources.base(r))
	if a.resources.perEndpoint && isMCPEndpoint(r.URL.Path) {
		_, _ = io.WriteString(h, r.URL.Path)
	}
	_, _ = h.Write([]byte{0})
	_, _ = io.WriteString(h, token)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// rejection is a refused token's answer, reused until it expires.
type rejection struct {
	err     error
	expires time.Time
}

// reject remembers a 401, never a 503 (the provider or API server may be
// back at the next request).
func (a *authorizer) reject(key [sha256.Size]byte, expires time.Time, err error) error {
	if ae, ok := err.(*authError); ok && ae.code == http.StatusUnauthorized { //nolint:errorlint // authError is never wrapped
		if short := time.Now().Add(ae.rememberFor); ae.rememberFor > 0 && short.Before(expires) {
			expires = short
		}
		a.rejected.Add(key, rejection{err: err, expires: expires})
	}
	return err
}

// reviewTimeout bounds one review shared by concurrent requests: it runs
// apart from the cancellation of the request that started it.
const reviewTimeout = 10 * time.Second

// ask runs review once for the concurrent requests that give the same
// key and hands each its answer. The shared review outlives the request
// that started it, so one caller leaving fails no other; each request
// waits no longer than its own context.
func (a *authorizer) ask(ctx context.Context, key string, review func(context.Context) (any, error)) (any, error) {
	answer := a.asking.DoChan(key, func() (answer any, err error) {
		// DoChan re-raises a panic on a goroutine of its own, where
		// nothing recovers it; answered as an error it fails only the
		// requests that share this review.
		defer func() {
			if r := recover(); r != nil {
				logf.FromContext(ctx).Error(fmt.Errorf("%v", r), "A token or access review panicked")
				answer, err = nil, &authError{code: http.StatusServiceUnavailable, message: "the token or permissions could not be checked; retry"}
			}
		}()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reviewTimeout)
		defer cancel()
		return review(ctx)
	})
	select {
	case r := <-answer:
		return r.Val, r.Err
	case <-ctx.Done():
		return nil, &authError{code: http.StatusServiceUnavailable, message: "the request ended while its token or permissions were being checked"}
	}
}

var errInvalidToken = &authError{code: http.StatusUnauthorized, message: "the bearer token is not valid", oauthError: "invalid_token"}

// authenticationUser is a user as a TokenReview would name it.
func authenticationUser(name string, groups []string) authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: name, Groups: groups}
}

// newCaller is the user a TokenReview, or the OIDC validator of issuer,
// vouched for.
func newCaller(user authenticationv1.UserInfo, issuer string) *caller {
	who := &caller{username: user.Username, uid: user.UID, groups: user.Groups, extra: map[string]authorizationv1.ExtraValue{},
		issuer: issuer, policy: &policy.Caller{Name: user.Username, UID: user.UID, Groups: user.Groups, Issuer: issuer, Extra: map[string][]string{}}}
	// Each part length-prefixed, so that two callers never share one.
	id := menu.AppendPart(menu.AppendPart(menu.AppendPart(nil, issuer), user.Username), user.UID)
	id = appendList(id, user.Groups)
	for _, k := range slices.Sorted(maps.Keys(user.Extra)) {
		who.extra[k] = authorizationv1.ExtraValue(user.Extra[k])
		who.policy.Extra[k] = user.Extra[k]
		id = appendList(menu.AppendPart(id, k), user.Extra[k])
	}
	who.identity = string(id)
	return who
}

// appendList appends a list's length and its items, each length-prefixed.
func appendList(buf []byte, items []string) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(items)))
	for _, item := range items {
		buf = menu.AppendPart(buf, item)
	}
	return buf
}

// allowed asks whether the caller may do verb on one object.
func (a *authorizer) allowed(ctx context.Context, who *caller, verb, resource, namespace, name string) (bool, error) {
	if !a.enabled() {
		return true, nil
	}
	if who == nil {
		return false, nil
	}
	key := strings.Join([]string{who.identity, verb, resource, namespace, name}, "\x00")
	now := time.Now()
	if value, hit := a.decisions.Get(key); hit && now.Before(value.(cachedDecision).expires) {
		return value.(cachedDecision).allowed, nil
	}
	allowed, err := a.ask(ctx, "access\x00"+key, func(ctx context.Context) (any, error) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: who.username, UID: who.uid, Groups: who.groups, Extra: who.extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: mcpv1alpha1.GroupVersion.Group, Resource: resource, Verb: verb, Namespace: namespace, Name: name,
			},
		}}
		if err := a.client.Create(ctx, review); err != nil {
			return false, fmt.Errorf("checking permissions with the API server: %w", err)
		}
		a.decisions.Add(key, cachedDecision{allowed: review.Status.Allowed, expires: now.Add(a.ttl)})
		return review.Status.Allowed, nil
	})
	if err != nil {
		return false, err
	}
	return allowed.(bool), nil
}

// require answers nil when the caller may do verb on the object, and an
// authError that names what is missing otherwise.
func (a *authorizer) require(ctx context.Context, verb, resource, namespace, name string) error {
	ok, err := a.allowed(ctx, callerFrom(ctx), verb, resource, namespace, name)
	if err != nil {
		return &authError{code: http.StatusServiceUnavailable, message: "permissions could not be checked with the API server; retry"}
	}
	if !ok {
		who := ""
		if c := callerFrom(ctx); c != nil {
			who = c.username + " "
		}
		return &authError{code: http.StatusForbidden,
			message: fmt.Sprintf("forbidden: %slacks %s on %s/%s in namespace %s", who, verb, resource, name, namespace)}
	}
	return nil
}

// middleware authenticates every request before it reaches a route.
// Protected Resource Metadata is public: it is how a client learns where
// to get a token. So are the console's files: the page asks for a token
// and sends it with every request for data.
func (a *authorizer) middleware(next http.Handler) http.Handler {
	if !a.enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isMetadataPath(r.URL.Path) || isConsolePath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		who, err := a.authenticate(r.Context(), r)
		if err != nil {
			if a.refused != nil {
				a.refused(w, r, err)
			}
			a.challenge(w, r, err)
			writeAuthError(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, who)))
	})
}

// writeAuthError answers an authError; a 401 carries the challenge
// (authorizer.challenge) set before.
func writeAuthError(w http.ResponseWriter, err error) {
	if ae, ok := err.(*authError); ok { //nolint:errorlint // authError is never wrapped
		writeError(w, ae.code, ae.message)
		return
	}
	writeError(w, http.StatusInternalServerError, "internal error")
}
