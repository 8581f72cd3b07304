// Signing in through the OpenID provider the catalog trusts: the OAuth 2.0
// authorization code flow with PKCE (RFC 7636, method S256), run by this
// page as a public client. The code verifier and the state wait in this
// tab's sessionStorage while the browser is at the provider; the code is
// taken out of the address bar as soon as it is read, and works once.

const PENDING_KEY = 'mcp-operator-oidc-pending';

// redirectURI is the console's page (/ui/), as registered at the provider.
const redirectURI = () => location.origin + location.pathname.replace(/[^/]*$/, '');

const base64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const random = (n) => base64url(crypto.getRandomValues(new Uint8Array(n)));
const oauthError = (e, d) => [e, d].filter(Boolean).join(': ');

// LIMIT_MS is how long the provider has to answer: boot waits for it.
const LIMIT_MS = 15000;

// ask requests url (without cookies) and reads the answer, JSON or null,
// within LIMIT_MS; past it, it fails saying so.
async function ask(url, init) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), LIMIT_MS);
  try {
    const res = await fetch(url, { ...init, signal: ctl.signal, credentials: 'omit', cache: 'no-store' });
    const text = await res.text();
    let data = null;
    try {
      data = JSON.parse(text);
    } catch { /* not JSON */ }
    return { res, data };
  } catch (err) {
    throw new Error(ctl.signal.aborted ? `no answer within ${LIMIT_MS / 1000} s` : err.message);
  } finally {
    clearTimeout(timer);
  }
}

// discover reads the provider's discovery document: the issuer's, with
// https endpoints (http only for an http issuer), the token endpoint on
// the issuer's origin (the only one the CSP allows).
async function discover(oidc) {
  const issuer = new URL(oidc.issuer);
  let doc;
  try {
    const { res, data } = await ask(`${oidc.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    if (!data || typeof data !== 'object') throw new Error('not a JSON object');
    doc = data;
  } catch (err) {
    throw new Error(`cannot read the discovery document of ${oidc.issuer} (${err.message})`);
  }
  if (doc?.issuer !== oidc.issuer) throw new Error(`the discovery document of ${oidc.issuer} names another issuer (${doc?.issuer})`);
  const [auth, token] = ['authorization_endpoint', 'token_endpoint'].map((key) => {
    let u;
    try {
      u = new URL(doc[key]);
    } catch {
      throw new Error(`the discovery document of ${oidc.issuer} names no ${key}`);
    }
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && issuer.protocol === 'http:')) {
      throw new Error(`the ${key} of ${oidc.issuer} is not https: ${u.href}`);
    }
    return u;
  });
  if (token.origin !== issuer.origin) {
    throw new Error(`the token endpoint ${token.href} is not on the issuer's origin, the only one this page may reach`);
  }
  return { auth, token };
}

// beginSignIn sends the browser to the provider's authorization endpoint
// with a fresh code challenge and state. It disables button meanwhile;
// the button works again if it fails, or when the viewer comes back to
// this page from the provider through the back-forward cache.
export async function beginSignIn(oidc, button) {
  const enable = () => { button.disabled = false; };
  const back = (e) => { if (e.persisted) enable(); };
  button.disabled = true;
  addEventListener('pageshow', back);
  try {
    if (!crypto.subtle) throw new Error('signing in needs a secure page (https, or http on localhost)');
    const { auth: target } = await discover(oidc);
    const verifier = random(32);
    const state = random(16);
    const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
    const params = {
      response_type: 'code', client_id: oidc.clientID, redirect_uri: redirectURI(), scope: oidc.scopes.join(' '),
      state, code_challenge: base64url(new Uint8Array(digest)), code_challenge_method: 'S256',
    };
    for (const [k, v] of Object.entries(params)) target.searchParams.set(k, v);
    sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, route: location.hash }));
    location.assign(target.href);
  } catch (err) {
    removeEventListener('pageshow', back);
    enable();
    throw err;
  }
}

// finishSignIn, back from the provider, takes code and state out of the
// address bar, checks the state is this tab's and exchanges the code (with
// the verifier) for the access token it returns; null when the page was
// not opened by the provider. It throws, keeping nothing, when the answer
// is not for this tab or the provider refused.
export async function finishSignIn(oidc) {
  const params = new URLSearchParams(location.search);
  if (!['code', 'state', 'error'].some((k) => params.has(k))) return null;
  let pending = null;
  try {
    pending = JSON.parse(sessionStorage.getItem(PENDING_KEY));
  } catch {
    pending = null;
  }
  sessionStorage.removeItem(PENDING_KEY);
  history.replaceState(null, '', location.pathname + (pending?.route || location.hash));
  if (!pending?.state || params.get('state') !== pending.state) {
    throw new Error('this answer of the identity provider is not for a sign-in started in this tab (the state does not match); nothing was kept');
  }
  if (params.has('error')) {
    throw new Error(`the identity provider did not sign you in: ${oauthError(params.get('error'), params.get('error_description'))}`);
  }
  const { token } = await discover(oidc);
  let res;
  let data;
  try {
    ({ res, data } = await ask(token.href, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code', code: params.get('code') || '', redirect_uri: redirectURI(),
        client_id: oidc.clientID, code_verifier: pending.verifier,
      }),
    }));
  } catch (err) {
    throw new Error(`cannot reach the identity provider's token endpoint (${err.message})`);
  }
  if (!res.ok || typeof data?.access_token !== 'string' || !data.access_token) {
    throw new Error(`the identity provider gave no token: ${data?.error ? oauthError(data.error, data.error_description) : `HTTP ${res.status}`}`);
  }
  // RFC 6749 §5.1: the type is case-insensitive; the page sends a Bearer.
  if (String(data.token_type).toLowerCase() !== 'bearer') {
    throw new Error(`the identity provider gave a token of type ${data.token_type || '(none)'}, not Bearer; nothing was kept`);
  }
  return data.access_token;
}
