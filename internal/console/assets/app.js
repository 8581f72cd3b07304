// mcp-operator console: hash-routed pages over the catalog's REST API.
// Everything the API says (names, descriptions, messages, results) is
// untrusted text: the DOM is built with createElement and textContent,
// never parsed from markup, and the CSP allows no inline script or style.

import { beginSignIn, finishSignIn } from './login.js';

const TOKEN_KEY = 'mcp-operator-token';
const POLL_MS = 5000;
const TIMEOUT_MS = 30000; // a data request's longest wait
const TICK_MS = 30000; // how often "3 min ago" is written again
const CACHE_MAX = 32; // answers kept besides the current page's
// How deep a schema is shown, and how many fields, before "any" or JSON.
const MAX_DEPTH = 4;
const MAX_FIELDS = 200;
const FORMATS = ['openai', 'openai-responses', 'anthropic', 'gemini', 'mcp'];
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
// The API sits beside /ui/, under whatever prefix a proxy puts in front.
const BASE = location.pathname.replace(/\/ui(\/.*)?$/, '');

const main = document.getElementById('main');
const statusLine = document.getElementById('status');
const authSlot = document.getElementById('auth');

let config = { auth: 'none', tryIt: false };
// signInError is why the last sign-in through the provider failed, until
// it is shown.
let signInError = '';
let menuFormat = 'openai';

// ---- DOM helpers ---------------------------------------------------------

// h builds an element. attrs are set as attributes (text, never markup);
// `on` holds listeners, `testid` the data-testid, `value` and `checked`
// are set as properties once the children are in.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  const props = {};
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'on') for (const [type, fn] of Object.entries(v)) el.addEventListener(type, fn);
    else if (k === 'testid') el.dataset.testid = v;
    else if (k === 'value' || k === 'checked') props[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  el.append(...children.flat(Infinity).filter((c) => c != null && c !== false));
  Object.assign(el, props);
  return el;
}

// row is a table row whose cells are apart in its text, as in written
// HTML, so that a reader of textContent sees "Ready True", not "ReadyTrue".
const row = (attrs, ...cells) => h('tr', attrs, cells.flat().flatMap((c) => (c ? [c, '\n'] : [])));
const hashFor = (...segments) => '#/' + segments.map(encodeURIComponent).join('/');
const link = (href, text, attrs) => h('a', { href, ...attrs }, text);
const code = (text) => h('code', {}, text);
const json = (value) => JSON.stringify(value, null, 2);
const nameOf = (obj) => `${obj.metadata?.namespace}/${obj.metadata?.name}`;
const conditionOf = (obj, type) => (obj?.status?.conditions || []).find((c) => c.type === type);
const list = (values) => (values && values.length ? values.join(', ') : '—');

function say(message, clearAfter) {
  statusLine.textContent = message;
  if (clearAfter) setTimeout(() => { if (statusLine.textContent === message) statusLine.textContent = ''; }, clearAfter);
}

function badge(status) {
  const s = status || 'Unknown';
  const tone = { True: 'ok', False: 'bad', Warning: 'warn' }[s] || 'neutral';
  return h('span', { class: `badge ${tone}` }, s);
}

function ago(iso) {
  const seconds = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (!Number.isFinite(seconds)) return iso;
  if (seconds < 60) return `${Math.max(seconds, 0)} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86400)} d ago`;
}

// when shows a time as how long ago (tick updates it: a 304 redraws
// nothing), the time itself as its title.
function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return h('time', { datetime: iso, title: isNaN(d) ? iso : d.toLocaleString() }, ago(iso));
}

function tick() {
  for (const t of document.querySelectorAll('time[datetime]')) t.textContent = ago(t.getAttribute('datetime'));
}

function table(testid, headings, rows, empty) {
  return h('div', { class: 'scroll' },
    h('table', { testid },
      h('thead', {}, row({}, headings.map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: headings.length, class: 'muted' }, empty)))));
}

// facts is a definition list of the pairs whose value is set.
function facts(pairs) {
  return h('dl', { class: 'facts' },
    pairs.filter(([, v]) => v != null && v !== '').map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function section(title, ...content) {
  return h('section', {}, h('h2', {}, title), ...content);
}

function details(key, summary, ...content) {
  return h('details', { 'data-key': key }, h('summary', {}, summary), ...content);
}

function pre(text, attrs) {
  return h('pre', { tabindex: 0, ...attrs }, text);
}

// problem shows a failed request: 403 as forbidden, anything else as an
// error, with the API's message as text.
function problem(err) {
  const forbidden = err.status === 403;
  return h('p', { testid: forbidden ? 'forbidden' : 'error', class: 'alert' },
    forbidden ? 'Forbidden: ' : 'Error: ', err.message);
}

// part renders one request's answer, or why there is none.
function part(result, render) {
  if (!result) return null;
  return result.error ? problem(result.error) : render(result.data);
}

function selectText(el) {
  const range = document.createRange();
  range.selectNodeContents(el);
  const selection = getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

function copyButton(testid, label, target) {
  return h('button', {
    type: 'button', testid, class: 'btn small',
    on: {
      click: async () => {
        const el = target();
        if (!el) return;
        try {
          await navigator.clipboard.writeText(el.textContent);
          say('Copied to the clipboard.', 4000);
        } catch {
          selectText(el);
          say('The text is selected: press Ctrl+C (⌘C on a Mac) to copy it.', 8000);
        }
      },
    },
  }, label);
}

// ---- API -----------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
const needsToken = () => config.auth !== 'none' && !token();

// api requests a path of the catalog's API with the viewer's token; with
// etag, a 304 answers {notModified: true}; past timeout (ms), it fails;
// when signal aborts, it throws an AbortError. It never sends cookies.
async function api(path, { etag, method = 'GET', body, signal, timeout } = {}) {
  const headers = { Accept: 'application/json' };
  if (config.auth !== 'none' && token()) headers.Authorization = `Bearer ${token()}`;
  if (etag) headers['If-None-Match'] = etag;
  if (body) headers['Content-Type'] = 'application/json';
  // One controller per request, aborted by the route's signal or the
  // timer (AbortSignal.any is too recent for some browsers still in use).
  const ctl = new AbortController();
  const abort = () => ctl.abort();
  let timedOut = false;
  if (signal?.aborted) abort();
  signal?.addEventListener('abort', abort);
  const timer = timeout ? setTimeout(() => { timedOut = !ctl.signal.aborted; abort(); }, timeout) : 0;
  let res;
  let text;
  try {
    res = await fetch(BASE + path, { method, headers, body, signal: ctl.signal, credentials: 'omit', cache: 'no-store' });
    if (res.status === 304) return { notModified: true };
    text = await res.text();
  } catch (err) {
    if (timedOut) throw new ApiError(0, `the catalog did not answer within ${timeout / 1000} s`);
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, `the catalog did not answer (${err.message})`);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', abort);
  }
  let data;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    let message = data && typeof data.error === 'string' ? data.error : text.trim() || res.statusText;
    if (data && Array.isArray(data.details) && data.details.length) message += ': ' + data.details.join('; ');
    throw new ApiError(res.status, message || `HTTP ${res.status}`);
  }
  if (data === null && text) throw new ApiError(res.status, 'the catalog answered something that is not JSON');
  return { data, text, etag: res.headers.get('ETag') };
}

// ---- routing and polling -------------------------------------------------

// cache holds the last answer per path, for If-None-Match and to tell
// whether an answer changed: the current page's, and the CACHE_MAX used
// last before (a Map keeps the order of insertion).
const cache = new Map();
const state = { gen: 0, route: null, page: null, results: {}, timer: 0, abort: null, stale: false, busy: 0, notice: null };
const tryState = { dirty: false, inFlight: false, hasResult: false };

function remember(path, entry) {
  cache.delete(path);
  cache.set(path, entry);
}

function trimCache(current) {
  const others = [...cache.keys()].filter((p) => !current.includes(p));
  for (const p of others.slice(0, Math.max(others.length - CACHE_MAX, 0))) cache.delete(p);
}

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  const segs = path.split('/').filter(Boolean).map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  const params = new URLSearchParams(query || '');
  const [top, ns, name, sub, tool] = segs;
  if (top === 'servers' && segs.length === 1) return { page: 'servers' };
  if (top === 'servers' && segs.length === 3) return { page: 'server', ns, name };
  if (top === 'collections' && segs.length === 1) return { page: 'collections' };
  if (top === 'collections' && segs.length === 3) return { page: 'collection', ns, name };
  if (top === 'collections' && segs.length === 5 && sub === 'try') return { page: 'try', ns, name, tool };
  if (top === 'search' && segs.length === 1) return { page: 'search', q: params.get('q') || '' };
  return { page: 'missing', path: raw };
}

const apiPath = {
  server: (r) => `/v1/namespaces/${encodeURIComponent(r.ns)}/mcpservers/${encodeURIComponent(r.name)}`,
  collection: (r) => `/v1/namespaces/${encodeURIComponent(r.ns)}/toolcollections/${encodeURIComponent(r.name)}`,
};

function markNav(route) {
  const section = { server: 'servers', collection: 'collections', try: 'collections' }[route.page] || route.page;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.testid === `nav-${section}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

function renderAuth() {
  authSlot.replaceChildren();
  if (config.auth !== 'none' && token()) {
    authSlot.append(h('button', {
      type: 'button', testid: 'token-clear', class: 'btn small',
      on: { click: () => { sessionStorage.removeItem(TOKEN_KEY); cache.clear(); renderAuth(); start(); } },
    }, 'Forget token'));
  }
}

function showTokenForm(message) {
  state.gen++;
  clearTimeout(state.timer);
  state.abort?.abort();
  const id = 'token-input';
  const hint = config.auth === 'oidc'
    ? 'Paste an access token from your identity provider.'
    : 'Paste a Kubernetes token, for example from kubectl create token <service-account>.';
  const failure = signInError;
  signInError = '';
  const input = h('input', { id, type: 'password', testid: 'token-input', autocomplete: 'off', required: true, 'aria-describedby': 'token-hint' });
  const form = h('form', {
    testid: 'token-form', class: 'card narrow',
    on: {
      submit: (e) => {
        e.preventDefault();
        const value = input.value.trim();
        if (!value) return;
        // A bearer token is printable ASCII (RFC 6750).
        const bad = /[^\x21-\x7e]/.exec(value);
        if (bad) {
          showTokenForm(`Not a bearer token: ${JSON.stringify(bad[0])} at character ${bad.index + 1} cannot go in an HTTP header as a token. Paste it again.`);
          return;
        }
        sessionStorage.setItem(TOKEN_KEY, value);
        cache.clear();
        renderAuth();
        start();
      },
    },
  },
  h('h1', {}, 'Sign in'),
  message ? h('p', { class: 'alert', role: 'alert', testid: 'token-message' }, message) : null,
  failure ? problem(new ApiError(0, failure)) : null,
  config.oidc ? h('div', { class: 'actions' }, h('button', {
    type: 'button', testid: 'oidc-signin', class: 'btn primary',
    on: {
      click: (e) => beginSignIn(config.oidc, e.currentTarget).catch((err) => {
        signInError = err.message;
        // A token pasted meanwhile stays, and its page with it.
        if (needsToken()) showTokenForm(message);
        else {
          takeSignInError();
          main.prepend(state.notice);
        }
      }),
    },
  }, `Sign in with ${new URL(config.oidc.issuer).host}`)) : null,
  h('label', { for: id }, 'Bearer token'),
  h('p', { id: 'token-hint', class: 'hint' }, hint, ' It is kept in this tab only (sessionStorage) and sent only to this catalog.'),
  input,
  h('div', { class: 'actions' }, h('button', { type: 'submit', testid: 'token-submit', class: 'btn primary' }, 'Use token')));
  renderAuth();
  main.replaceChildren(form);
  document.title = 'Sign in · mcp-operator';
  document.body.dataset.loading = 'false';
  input.focus();
}

// start shows the page of the current route and polls its data.
function start() {
  const previous = state.route;
  const route = parseRoute();
  state.gen++;
  clearTimeout(state.timer);
  state.abort?.abort();
  Object.assign(state, { route, page: pages[route.page], results: {}, stale: false, notice: null });
  Object.assign(tryState, { dirty: false, inFlight: false, hasResult: false });
  markNav(route);
  say('');
  if (needsToken()) {
    showTokenForm();
    return;
  }
  document.body.dataset.loading = 'true';
  cycle(true, !previous || previous.page !== route.page);
}

// cycle fetches every request of the page, with the ETag of the answer
// it has, and renders when an answer changed and the viewer is not in
// the middle of something; then it comes again in POLL_MS. One cycle
// runs at a time (state.busy).
async function cycle(first, moveFocus) {
  const gen = state.gen;
  if (state.busy === gen) return;
  state.busy = gen;
  try {
    await poll(gen, first, moveFocus);
  } catch (err) {
    // Whatever went wrong, the page says so and polls again.
    if (gen === state.gen) {
      say(`The page could not be updated: ${err.message}`);
      document.body.dataset.loading = 'false';
    }
  } finally {
    if (state.busy === gen) state.busy = 0;
    if (gen === state.gen && !needsToken()) schedule();
  }
}

async function poll(gen, first, moveFocus) {
  const requests = state.page.requests ? state.page.requests(state.route) : {};
  state.abort = new AbortController();
  const signal = state.abort.signal;
  let changed = first;
  let unauthorized = null;
  await Promise.all(Object.entries(requests).map(async ([key, path]) => {
    const known = cache.get(path);
    try {
      const res = await api(path, { etag: known?.etag, signal, timeout: TIMEOUT_MS });
      if (res.notModified && known) {
        if (state.results[key]?.data !== known.data) changed = true;
        state.results[key] = { data: known.data };
        remember(path, known);
        return;
      }
      if (!known || known.text !== res.text || state.results[key]?.error) changed = true;
      remember(path, { etag: res.etag, text: res.text, data: res.data });
      state.results[key] = { data: res.data };
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (err.status === 401) unauthorized = err;
      cache.delete(path);
      const before = state.results[key]?.error;
      if (!before || before.status !== err.status || before.message !== err.message) changed = true;
      state.results[key] = { error: err };
    }
  }));
  if (gen !== state.gen) return;
  trimCache(Object.values(requests));
  if (unauthorized) {
    sessionStorage.removeItem(TOKEN_KEY);
    cache.clear();
    if (config.auth !== 'none') {
      showTokenForm(unauthorized.message);
      return;
    }
  }
  if (changed || state.stale) {
    if (first || mayRerender()) {
      render(moveFocus);
      if (!first) say(`Updated at ${new Date().toLocaleTimeString()}.`);
    } else {
      state.stale = true;
    }
  }
  if (first) document.body.dataset.loading = 'false';
}

function schedule() {
  const gen = state.gen;
  clearTimeout(state.timer);
  state.timer = setTimeout(() => {
    if (gen !== state.gen || state.busy === gen) return;
    if (document.hidden || tryState.inFlight) schedule();
    else cycle(false, false);
  }, POLL_MS);
}

// refresh fetches the page's data now (after the viewer changed what it
// asks for) and renders it whatever has focus.
function refresh() {
  state.gen++;
  clearTimeout(state.timer);
  state.abort?.abort();
  state.stale = true;
  cycle(true, false);
}

// mayRerender is false while the viewer types in a field, or while a
// "try it" form holds their input, a call or its result.
function mayRerender() {
  if (state.route.page === 'try' && (tryState.dirty || tryState.inFlight || tryState.hasResult)) return false;
  const el = document.activeElement;
  if (!el || !main.contains(el)) return true;
  return !(el.tagName === 'TEXTAREA' || (el.tagName === 'INPUT' && !['checkbox', 'radio', 'button', 'submit'].includes(el.type)));
}

// focusables are main's focusable elements, each with a key naming its
// equivalent after a redraw: test id or field, else tag, href and text,
// within the nearest named element or <details>; then which of that key.
function focusables() {
  const seen = new Map();
  return [...main.querySelectorAll('a[href], button, summary, input, select, textarea, [tabindex]')].map((el) => {
    const scope = el.parentElement?.closest('[data-name], details[data-key]');
    const d = el.dataset;
    const key = `${scope ? scope.dataset.name ?? scope.dataset.key : ''}>${d.testid || d.field || d.add
      || [el.tagName, el.getAttribute('href'), el.getAttribute('aria-label'), /^(A|BUTTON|SUMMARY)$/.test(el.tagName) && el.textContent].join('|')}`;
    const n = (seen.get(key) || 0) + 1;
    seen.set(key, n);
    return [`${key}#${n}`, el];
  });
}

// takeSignInError makes signInError, if any, the alert above the page
// (state.notice) until the viewer goes to another: a sign-in that failed
// in a tab with a token, which it kept, is said at once.
function takeSignInError() {
  if (!signInError) return;
  state.notice?.remove();
  state.notice = problem(new ApiError(0, signInError));
  state.notice.setAttribute('role', 'alert');
  signInError = '';
}

// render builds the page again, keeping which <details> were open and
// which control had focus.
function render(moveFocus) {
  const open = new Set([...main.querySelectorAll('details[open]')].map((d) => d.dataset.key));
  const active = document.activeElement;
  const focusKey = active && main.contains(active) ? focusables().find(([, el]) => el === active)?.[0] : null;
  const page = state.page;
  let content;
  try {
    content = page.render(state.route, state.results);
  } catch (err) {
    content = [h('h1', {}, 'Something went wrong'), problem(new ApiError(0, `the page could not be shown: ${err.message}`))];
  }
  takeSignInError();
  main.replaceChildren(...[state.notice, content].flat(Infinity).filter(Boolean));
  for (const d of main.querySelectorAll('details[data-key]')) if (open.has(d.dataset.key)) d.open = true;
  const heading = main.querySelector('h1');
  document.title = `${heading ? heading.textContent : 'Console'} · mcp-operator`;
  if (moveFocus && heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus();
  } else if (focusKey) {
    focusables().find(([key]) => key === focusKey)?.[1].focus({ preventScroll: true });
  }
}

// primary renders a page whose first request failed as just its error.
function primary(title, result, render) {
  if (!result) return h('h1', {}, title);
  if (result.error) return [h('h1', {}, title), problem(result.error)];
  return render(result.data);
}

// ---- shared views --------------------------------------------------------

// lead is a page's first line: Ready and its message.
function lead(obj) {
  const c = conditionOf(obj, 'Ready');
  return h('p', { class: 'lead' }, badge(c?.status), ' ', c?.message || '');
}

function readyCell(obj) {
  const c = conditionOf(obj, 'Ready');
  return h('td', {},
    h('span', { testid: 'ready' }, badge(c?.status), c?.reason ? ` ${c.reason}` : ''),
    c?.message ? h('div', { class: 'message' }, c.message) : null);
}

function conditionsTable(obj) {
  const rows = (obj.status?.conditions || []).map((c) => row({},
    h('th', { scope: 'row' }, c.type), h('td', {}, badge(c.status)), h('td', {}, c.reason || ''),
    h('td', { class: 'message' }, c.message || ''), h('td', {}, when(c.lastTransitionTime))));
  return section('Conditions', table('conditions', ['Type', 'Status', 'Reason', 'Message', 'Changed'], rows, 'No conditions yet.'));
}

function eventsSection(result) {
  return section('Recent events', part(result, (data) => {
    const rows = (data?.items || []).map((e) => row({ testid: 'event' },
      h('td', {}, badge(e.type === 'Warning' ? 'Warning' : e.type)), h('td', {}, e.reason || ''),
      h('td', { class: 'message' }, e.message || ''), h('td', { class: 'num' }, e.count ?? ''),
      h('td', {}, when(e.lastTime)), h('td', {}, e.reportingController || '')));
    return table('events', ['Type', 'Reason', 'Message', 'Count', 'Last seen', 'From'], rows, 'No recent events.');
  }));
}

// deref follows the local $refs (#/$defs/x, #/definitions/x) of schema in
// root, seen being those expanded on the way: it answers the schema ({}
// for a ref to nothing; null for a ref in seen: a schema within itself)
// and seen with its own.
function deref(schema, root, seen = new Set()) {
  const refs = new Set(seen);
  let s = schema;
  while (s && typeof s.$ref === 'string') {
    if (refs.has(s.$ref)) return [null, refs];
    refs.add(s.$ref);
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref);
    const defs = m && root?.[m[1]];
    let key;
    try {
      key = m && decodeURIComponent(m[2]).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch { /* not a name */ }
    s = defs && typeof defs === 'object' && Object.hasOwn(defs, key) ? defs[key] : null;
  }
  return [s && typeof s === 'object' && !Array.isArray(s) ? s : {}, refs];
}

// typeLabel names a schema's type, "any" within itself, past MAX_DEPTH
// or 100 parts.
function typeLabel(schema, root, depth = 0, seen = undefined, budget = { n: 100 }) {
  const [s, refs] = deref(schema, root, seen);
  if (!s || depth > MAX_DEPTH || --budget.n < 0) return 'any';
  const label = (x) => typeLabel(x, root, depth + 1, refs, budget);
  if (Array.isArray(s.enum)) return `${s.type || 'any'}, one of ${s.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  if (s.const !== undefined) return `const ${JSON.stringify(s.const)}`;
  for (const k of ['oneOf', 'anyOf', 'allOf']) {
    if (Array.isArray(s[k])) return `${k}: ${s[k].map(label).join(' | ')}`;
  }
  const t = Array.isArray(s.type) ? s.type.join(' | ') : s.type;
  if (t === 'array' && s.items && !Array.isArray(s.items)) return `array of ${label(s.items)}`;
  return t || (s.properties ? 'object' : 'any');
}

// schemaRows lists the properties of an input schema, nested objects'
// as a.b, a few levels down and MAX_FIELDS rows at most.
function schemaRows(schema, root, prefix = '', depth = 0, seen = undefined, rows = []) {
  const [s, refs] = deref(schema, root, seen);
  const required = new Set(Array.isArray(s?.required) ? s.required : []);
  for (const [name, raw] of Object.entries(s?.properties || {})) {
    if (rows.length >= MAX_FIELDS) break;
    const [p, inner] = deref(raw, root, refs);
    const path = prefix + name;
    let description = typeof p?.description === 'string' ? p.description : '';
    if (p?.default !== undefined) description += `${description ? ' ' : ''}(default ${JSON.stringify(p.default)})`;
    rows.push(row({}, h('td', {}, code(path)), h('td', {}, typeLabel(raw, root, depth, refs)),
      h('td', {}, required.has(name) ? 'required' : 'optional'), h('td', { class: 'message' }, description)));
    if (p?.properties && depth < 3) schemaRows(p, root, `${path}.`, depth + 1, inner, rows);
  }
  return rows;
}

function schemaTable(schema) {
  const rows = schemaRows(schema, schema);
  return rows.length
    ? table(null, ['Argument', 'Type', 'Required', 'Description'], rows, '')
    : h('p', { class: 'muted' }, 'No arguments.');
}

const HINTS = { readOnlyHint: 'read-only', destructiveHint: 'destructive', idempotentHint: 'idempotent', openWorldHint: 'open world' };

// toolView shows one tool: name, description, hints, warnings and its
// input schema as a table and as JSON. Per MCP, destructive and
// idempotent mean something only when the tool is not read-only.
function toolView(t, { extra, schemaOpen = true } = {}) {
  const a = t.annotations || {};
  const hints = Object.keys(HINTS).filter((k) => a[k] === true && !(a.readOnlyHint === true && /^(destructive|idempotent)/.test(k)))
    .map((k) => h('span', { class: `badge ${k === 'destructiveHint' ? 'bad' : 'neutral'}` }, HINTS[k]));
  const schema = t.inputSchema || {};
  const raw = [
    details(`raw:${t.name}`, 'Input schema as JSON', pre(json(schema))),
    t.outputSchema ? details(`out:${t.name}`, 'Output schema as JSON', pre(json(t.outputSchema))) : null,
  ];
  return h('article', { class: 'tool', testid: 'tool', 'data-name': t.name },
    h('h3', {}, code(t.name), t.title ? h('span', { class: 'title' }, ` ${t.title}`) : null),
    facts([['Original name', t.originalName && t.originalName !== t.name ? code(t.originalName) : null], ...(extra || [])]),
    hints.length ? h('p', { class: 'hints' }, hints) : null,
    h('p', { class: 'description', testid: 'tool-description' }, t.description || ''),
    t.warnings?.length ? h('ul', { class: 'warnings' }, t.warnings.map((w) => h('li', {}, w))) : null,
    schemaOpen ? [schemaTable(schema), raw] : details(`schema:${t.name}`, 'Arguments', schemaTable(schema), raw));
}

// ---- pages ---------------------------------------------------------------

function transportOf(s) {
  return s.status?.serverInfo?.transport || s.spec?.workload?.transport || s.spec?.transport || 'Auto';
}

function endpointOf(spec) {
  if (spec?.url) return spec.url;
  if (spec?.service) {
    const v = spec.service;
    return `${v.scheme || 'http'}://${v.name}:${v.port}${v.path || '/'} (Service)`;
  }
  if (spec?.workload) return `${spec.workload.image} (workload)`;
  return '—';
}

function workloadCell(s) {
  if (!s.spec?.workload) return h('td', { class: 'muted' }, '—');
  const c = conditionOf(s, 'WorkloadAvailable');
  return h('td', {}, badge(c?.status), c?.reason ? ` ${c.reason}` : '');
}

// refusedOf lists the tools MCP clients are not offered, and why: the
// controller says so in a warning on each (menu.Refusal).
function refusedOf(status) {
  return (status?.tools || []).flatMap((t) => (t.warnings || [])
    .filter((w) => w.startsWith('MCP clients are not offered this tool'))
    .map((reason) => ({ name: t.name, reason })));
}

const pages = {
  servers: {
    requests: () => ({ list: '/v1/mcpservers' }),
    render: (r, d) => primary('MCP servers', d.list, (data) => [
      h('h1', {}, 'MCP servers'),
      h('div', { class: 'card' }, table('servers', ['Server', 'Ready', 'Transport', 'Protocol', 'Tools', 'Workload', 'Discovery written'],
        (data?.items || []).map((s) => row({ testid: 'server-row', 'data-name': nameOf(s) },
          h('th', { scope: 'row' }, link(hashFor('servers', s.metadata.namespace, s.metadata.name), nameOf(s))),
          readyCell(s), h('td', {}, transportOf(s)),
          h('td', {}, s.status?.serverInfo?.protocolVersion || '—'),
          h('td', { class: 'num' }, s.status?.toolCount ?? 0), workloadCell(s),
          h('td', {}, when(s.status?.lastSyncTime)))),
        'No MCPServers you may see.')),
    ]),
  },

  server: {
    requests: (r) => ({ obj: apiPath.server(r), events: `${apiPath.server(r)}/events` }),
    render: (r, d) => primary('MCP server', d.obj, (s) => {
      const st = s.status || {};
      const info = st.serverInfo || {};
      const w = s.spec?.workload;
      const available = conditionOf(s, 'WorkloadAvailable');
      const refused = refusedOf(st);
      const tools = st.tools || [];
      return [
        h('p', { class: 'crumbs' }, link('#/servers', 'Servers'), ' / '),
        h('h1', { testid: 'server-title' }, nameOf(s)),
        lead(s),
        section('Overview', facts([
          ['Endpoint', endpointOf(s.spec)],
          ['Transport', `${transportOf(s)}${s.spec?.transport && !w ? ` (configured: ${s.spec.transport})` : ''}`],
          ['Protocol revision', info.protocolVersion],
          ['Server', info.name ? `${info.name} ${info.version || ''}` : null],
          ['Hears of changes', info.listChanged ? 'as they happen' : 'at each refresh'],
          ['Tools', String(st.toolCount ?? tools.length)],
          // Not moved by a refresh that finds nothing new.
          ['Discovery written', st.lastSyncTime ? [when(st.lastSyncTime), h('span', { class: 'hint' }, ' (last discovery that changed status)')] : null],
          ['Tool list changed', st.lastChangeTime ? when(st.lastChangeTime) : null],
          ['Refresh interval', s.spec?.refreshInterval],
          ['Suspended', s.spec?.suspend ? 'yes' : null],
        ])),
        w ? section('Workload', facts([
          ['Image', code(w.image)], ['Transport', w.transport || 'Stdio'],
          ['Command', w.command ? code([...w.command, ...(w.args || [])].join(' ')) : null],
          ['Replicas', w.replicas != null ? String(w.replicas) : null],
          ['Available', available ? [badge(available.status), ' ', available.message || ''] : null],
        ])) : null,
        conditionsTable(s),
        section(`Tools (${tools.length})`, tools.length ? tools.map((t) => toolView(t)) : h('p', { class: 'muted' }, 'No tools published.')),
        section('Refused tools', refused.length
          ? h('ul', { class: 'warnings' }, refused.map((t) => h('li', { testid: 'refused-tool', 'data-name': t.name }, code(t.name), t.reason ? `: ${t.reason}` : '')))
          : h('p', { class: 'muted' }, 'None: MCP clients are offered every tool.')),
        eventsSection(d.events),
      ];
    }),
  },

  collections: {
    requests: () => ({ list: '/v1/toolcollections' }),
    render: (r, d) => primary('Tool collections', d.list, (data) => [
      h('h1', {}, 'Tool collections'),
      h('div', { class: 'card' }, table('collections', ['Collection', 'Ready', 'Servers', 'Tools', 'Conflicts', 'Unapproved', 'Exposure'],
        (data?.items || []).map((c) => row({ testid: 'collection-row', 'data-name': nameOf(c) },
          h('th', { scope: 'row' }, link(hashFor('collections', c.metadata.namespace, c.metadata.name), nameOf(c))),
          readyCell(c), h('td', { class: 'num' }, c.status?.serverCount ?? 0),
          h('td', { class: 'num' }, c.status?.toolCount ?? 0), h('td', { class: 'num' }, c.status?.conflictCount ?? 0),
          h('td', { class: 'num' }, c.status?.unapprovedTools?.length ?? 0),
          h('td', {}, c.status?.exposure || c.spec?.exposure || 'All'))),
        'No ToolCollections you may see.')),
    ]),
  },

  collection: {
    requests: (r) => {
      const p = apiPath.collection(r);
      const reqs = { obj: p, access: `${p}/access`, mcp: `${p}/tools?format=mcp`, events: `${p}/events` };
      if (menuFormat !== 'mcp') reqs.menu = `${p}/tools?format=${menuFormat}`;
      return reqs;
    },
    render: (r, d) => primary('Tool collection', d.obj, (c) => collectionPage(r, c, d)),
  },

  search: {
    requests: (r) => (r.q ? { results: `/v1/tools/search?q=${encodeURIComponent(r.q)}` } : {}),
    render: (r, d) => [h('h1', {}, 'Search tools'), searchForm(r.q), r.q ? part(d.results, searchResults) : null],
  },

  try: {
    requests: (r) => (config.tryIt
      ? { access: `${apiPath.collection(r)}/access`, menu: `${apiPath.collection(r)}/tools?format=mcp` }
      : {}),
    render: tryPage,
  },

  missing: {
    render: (r) => [h('h1', {}, 'Page not found'), problem(new ApiError(404, `no page at #/${r.path}`)),
      h('p', {}, link('#/servers', 'Go to the servers'))],
  },
};

function selectorText(sel) {
  if (!sel) return null;
  const parts = Object.entries(sel.matchLabels || {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel.matchExpressions || []) parts.push(`${e.key} ${e.operator}${e.values ? ` (${e.values.join(', ')})` : ''}`);
  return parts.length ? code(parts.join(', ')) : 'every MCPServer in the namespace';
}

function collectionPage(r, c, d) {
  const ns = c.metadata.namespace;
  const st = c.status || {};
  const spec = c.spec || {};
  const tools = spec.tools || {};
  const menuTools = d.mcp?.data?.tools || [];
  const byName = new Map(menuTools.map((t) => [t.name, t]));
  const canTry = config.tryIt && d.access?.data?.execute === true;
  const listed = st.tools || menuTools.map((t) => ({ name: t.name }));
  const mcpURL = `${location.origin}${BASE}${apiPath.collection(r)}/mcp`;
  const clientConfig = json({ mcpServers: { [c.metadata.name]: { url: mcpURL, headers: { Authorization: 'Bearer <token>' } } } });
  const pinning = spec.pinning;
  const enforce = (pinning?.mode || 'Enforce') === 'Enforce';
  const exposure = st.exposure || spec.exposure || 'All';
  const policy = spec.policy;
  const menuResult = menuFormat === 'mcp' ? d.mcp : d.menu;

  return [
    h('p', { class: 'crumbs' }, link('#/collections', 'Collections'), ' / '),
    h('h1', { testid: 'collection-title' }, nameOf(c)),
    lead(c),
    conditionsTable(c),
    section('Servers',
      facts([['Selected by labels', selectorText(spec.servers?.selector)], ['Selected by name', spec.servers?.names?.length ? list(spec.servers.names) : null]]),
      table(null, ['Server', 'Ready', 'Tools in the menu'], (st.servers || []).map((s) => row({},
        h('th', { scope: 'row' }, link(hashFor('servers', ns, s.name), s.name)),
        h('td', {}, badge(s.ready ? 'True' : 'False')), h('td', { class: 'num' }, s.toolCount ?? 0))), 'No server selected.')),
    section('Filters',
      facts([['Include', list(tools.include)], ['Exclude', list(tools.exclude)],
        ['Maximum tools', spec.maxTools != null ? String(spec.maxTools) : 'no limit']]),
      tools.overrides?.length
        ? table(null, ['Tool', 'Server', 'Renamed to', 'Description'], tools.overrides.map((o) => row({},
          h('td', {}, code(o.name)), h('td', {}, o.server || 'any'), h('td', {}, o.rename ? code(o.rename) : '—'),
          h('td', { class: 'message' }, o.description ?? '—'))), '')
        : h('p', { class: 'muted' }, 'No renames or description overrides.')),
    h('section', { testid: 'conflicts' }, h('h2', {}, 'Conflicts'),
      st.conflicts?.length
        ? table(null, ['Name', 'Served from', 'Left out'], st.conflicts.map((x) => row({},
          h('td', {}, code(x.name)), h('td', {}, x.servers?.[0] || ''), h('td', {}, list(x.servers?.slice(1))))), '')
        : h('p', { class: 'muted' }, 'No name is offered by more than one server.'),
      st.conflicts?.length ? h('p', { class: 'hint' }, 'The first server by name wins; an override with a server and a rename keeps both.') : null),
    h('section', { testid: 'unapproved' }, h('h2', {}, 'Pinning'),
      h('p', {}, pinning
        ? (enforce ? 'Mode Enforce: unapproved tools are withheld.' : 'Mode Warn: unapproved tools are served and reported.')
        : 'Not pinned: every tool is served as its server sends it.'),
      st.unapprovedTools?.length
        ? table(null, ['Tool', 'Server', 'Approved hash', 'Current hash'], st.unapprovedTools.map((u) => row({ 'data-name': u.name },
          h('td', {}, code(u.name)), h('td', {}, u.server || ''),
          h('td', { class: 'hash' }, u.approvedHash ? code(u.approvedHash) : 'none (new tool)'),
          h('td', { class: 'hash' }, code(u.currentHash || '')))), '')
        : pinning ? h('p', { class: 'muted' }, 'Every tool is approved.') : null),
    section('Exposure', facts([
      ['MCP endpoint lists', exposure === 'Search' ? 'find_tools and call_tool (Search)' : 'every tool (All)'],
      ['Always listed', exposure === 'Search' ? list(spec.alwaysInclude) : null],
      ['Menu hash', st.menuHash ? code(st.menuHash) : null],
      ['Policy', policy ? `${policy.rules?.length || 0} rule(s)${policy.mode ? `, mode ${policy.mode}` : ''}${policy.default ? `, default ${policy.default}` : ''}` : 'none: RBAC alone decides'],
    ]), policy?.rules?.length ? h('ul', {}, policy.rules.map((p) => h('li', {}, code(p.name), ` ${p.effect}${p.message ? `: ${p.message}` : ''}`))) : null),
    section(`Tools (${listed.length})`,
      d.access?.error ? problem(d.access.error) : null,
      d.mcp?.error ? problem(d.mcp.error) : null,
      config.tryIt && d.access?.data && !canTry ? h('p', { class: 'hint' }, 'You may read this collection but not call its tools.') : null,
      listed.length ? listed.map((t) => {
        const m = byName.get(t.name) || {};
        const tryable = canTry && (d.mcp?.error || byName.has(t.name));
        return toolView({ ...m, name: t.name, originalName: t.originalName || m.originalName }, {
          schemaOpen: false,
          extra: [
            ['Server', t.server ? link(hashFor('servers', ns, t.server), t.server) : null],
            ['Note', d.mcp?.data && !byName.has(t.name) ? 'not in the menu you are served: the policy does not let you call it' : null],
            ['Try it', tryable ? link(hashFor('collections', ns, r.name, 'try', t.name), `Call ${t.name}`, { testid: 'try-link', class: 'btn small' }) : null],
          ],
        });
      }) : h('p', { class: 'muted' }, 'The menu is empty.')),
    section('Menu',
      h('div', { class: 'row' },
        h('label', { for: 'format' }, 'Format'),
        h('select', {
          id: 'format', testid: 'format-select', value: menuFormat,
          on: { change: (e) => { menuFormat = e.target.value; refresh(); } },
        }, FORMATS.map((f) => h('option', { value: f }, f))),
        copyButton('copy-menu', 'Copy menu', () => main.querySelector('[data-testid=menu-json]'))),
      part(menuResult, (menu) => pre(json(menu), { testid: 'menu-json', class: 'code' }))),
    section('MCP endpoint',
      h('p', {}, code(h('span', { testid: 'mcp-url' }, mcpURL))),
      h('p', { class: 'hint' }, 'A client configuration (Streamable HTTP). Replace <token> with your own token.'),
      pre(clientConfig, { testid: 'client-config', class: 'code' }),
      copyButton('copy-config', 'Copy configuration', () => main.querySelector('[data-testid=client-config]'))),
    eventsSection(d.events),
  ];
}

function searchForm(q) {
  const input = h('input', { id: 'q', type: 'search', testid: 'search-input', value: q, required: true, autocomplete: 'off' });
  return h('form', {
    testid: 'search-form', class: 'row', role: 'search',
    on: {
      submit: (e) => {
        e.preventDefault();
        const value = input.value.trim();
        if (!value) return;
        const target = `#/search?q=${encodeURIComponent(value)}`;
        if (location.hash === target) refresh();
        else location.hash = target;
      },
    },
  }, h('label', { for: 'q' }, 'What should the tool do?'), input, h('button', { type: 'submit', class: 'btn primary' }, 'Search'));
}

function searchResults(data) {
  const tools = data?.tools || [];
  if (!tools.length) return h('p', { class: 'muted' }, 'No tool matches.');
  return section(`Results (${tools.length})`, h('ol', { class: 'results' }, tools.map((t, i) => {
    const fn = t.function || t;
    const server = data.servers?.[i];
    const score = data.scores?.[i];
    return h('li', { testid: 'search-result', 'data-name': fn.name, class: 'tool' },
      h('h3', {}, code(fn.name)),
      h('p', { class: 'meta' },
        'Score ', h('span', { testid: 'score' }, typeof score === 'number' ? score.toFixed(3) : '—'),
        typeof score === 'number' ? h('meter', { min: 0, max: 1, value: score, 'aria-label': 'score' }) : null,
        ' · Server ', server ? link(hashFor('servers', server.namespace, server.name), `${server.namespace}/${server.name}`, { testid: 'result-server' }) : '—'),
      h('p', { class: 'description' }, fn.description || ''));
  })));
}

// ---- try it --------------------------------------------------------------

// tryPage names the collection and the tool only once the viewer may
// read the collection's menu.
function tryPage(r, d) {
  const refused = (el) => [h('h1', {}, 'Try a tool'), el];
  const unavailable = (why) => refused(h('p', { testid: 'try-unavailable', class: 'alert' }, why));
  if (!config.tryIt) return unavailable('Try it is turned off on this catalog (the manager runs with --console-try-it=false).');
  if (d.access?.error) return refused(problem(d.access.error));
  if (d.access?.data?.execute !== true) {
    return [...unavailable('You may read this collection but not call its tools: your identity lacks permission to execute them.'),
      h('p', {}, link(hashFor('collections', r.ns, r.name), 'Back to the collection'))];
  }
  if (d.menu?.error) return refused(problem(d.menu.error));
  const tool = (d.menu?.data?.tools || []).find((t) => t.name === r.tool);
  if (!tool) return refused(problem(new ApiError(404, `the menu of ${r.ns}/${r.name} offers no tool ${r.tool}`)));
  return [
    h('p', { class: 'crumbs' }, link('#/collections', 'Collections'), ' / ', link(hashFor('collections', r.ns, r.name), `${r.ns}/${r.name}`), ' / '),
    h('h1', {}, 'Try ', code(r.tool)),
    h('p', { class: 'description' }, tool.description || ''),
    tryForm(r, tool),
  ];
}

let fieldSeq = 0;

function kindOf(s) {
  if (Array.isArray(s.enum) && s.enum.length) return 'enum';
  if (s.const !== undefined || s.oneOf || s.anyOf || s.allOf || s.not || s.if) return 'json';
  let t = s.type;
  if (Array.isArray(t)) {
    const concrete = t.filter((x) => x !== 'null');
    t = concrete.length === 1 ? concrete[0] : undefined;
  }
  if (['string', 'number', 'integer', 'boolean'].includes(t)) return t;
  if (t === 'object' || (!t && s.properties)) return s.properties && Object.keys(s.properties).length ? 'object' : 'json';
  if (t === 'array' && s.items && typeof s.items === 'object' && !Array.isArray(s.items) && !s.prefixItems) return 'array';
  return 'json';
}

// need: a field is required (true), not (false), or once the optional
// object it is in, named need, holds anything.
const mark = (need) => (need ? h('span', { class: 'req' }, need === true ? ' (required)' : ` (required with ${need})`) : null);

function fieldLabel(id, name, label, need) {
  return h('label', { for: id }, name, ' ', h('span', { class: 'type' }, label), mark(need));
}

// field builds the control for one value of a schema, depth levels down,
// seen the $refs expanded on the way (within itself, or past MAX_DEPTH
// or MAX_FIELDS, it is JSON). It answers {node, get, set, filled,
// require}: get is undefined for an empty optional value and throws when
// the input cannot be the value; filled is whether the viewer entered
// anything; require(on) makes it required or not.
function field(raw, path, name, need, root, depth, seen) {
  const [resolved, refs] = deref(raw, root, seen);
  const s = resolved || {};
  const kind = !resolved || depth > MAX_DEPTH || fieldSeq >= MAX_FIELDS ? 'json' : kindOf(s);
  if (kind === 'object') return objectField(s, path, name, need, root, false, depth + 1, refs);
  if (kind === 'array') return arrayField(s, path, name, need, root, depth + 1, refs);
  let required = need === true;
  const id = `f${++fieldSeq}`;
  const hintId = s.description ? `${id}-hint` : null;
  const common = { id, 'data-field': path, 'aria-describedby': hintId };
  const label = fieldLabel(id, name, typeLabel(s, root, depth, refs), need);
  let input;
  let get;
  let set;
  let filled = () => input.value !== '';
  let require = (on) => { required = on; input.required = on; };
  const placeholder = s.default !== undefined ? `default: ${typeof s.default === 'string' ? s.default : JSON.stringify(s.default)}` : null;
  if (kind === 'enum') {
    // An option's value is the enum value as text: a string as it is.
    // A required select refuses "(not set)".
    const text = (v) => (typeof v === 'string' ? v : JSON.stringify(v));
    const skip = required ? 0 : 1;
    input = h('select', common, skip ? h('option', { value: '' }, '(not set)') : null,
      s.enum.map((v) => h('option', { value: text(v) }, text(v))));
    get = () => (input.selectedIndex - skip < 0 ? undefined : s.enum[input.selectedIndex - skip]);
    filled = () => input.selectedIndex >= skip;
    set = (v) => {
      const i = s.enum.findIndex((e) => JSON.stringify(e) === JSON.stringify(v));
      input.selectedIndex = i < 0 ? 0 : i + skip;
    };
  } else if (kind === 'string') {
    input = h('input', { ...common, type: 'text', required, placeholder, minlength: s.minLength, maxlength: s.maxLength });
    get = () => (input.value === '' && !required ? undefined : input.value);
    set = (v) => { input.value = v == null ? '' : String(v); };
  } else if (kind === 'number' || kind === 'integer') {
    input = h('input', { ...common, type: 'number', required, placeholder, step: kind === 'integer' ? '1' : 'any', min: s.minimum, max: s.maximum });
    get = () => {
      if (input.value.trim() === '') {
        if (input.validity.badInput) throw new Error(`${path}: not a number`);
        return undefined;
      }
      const n = Number(input.value);
      if (!Number.isFinite(n) || (kind === 'integer' && !Number.isInteger(n))) throw new Error(`${path}: not ${kind === 'integer' ? 'an integer' : 'a number'}`);
      return n;
    };
    filled = () => input.value !== '' || input.validity.badInput;
    set = (v) => { input.value = typeof v === 'number' ? String(v) : ''; };
  } else if (kind === 'boolean') {
    // An optional checkbox the viewer never touched is left out.
    let touched = false;
    input = h('input', { ...common, type: 'checkbox', on: { change: () => { touched = true; } } });
    get = () => (required || touched ? input.checked : undefined);
    set = (v) => { input.checked = v === true; touched = typeof v === 'boolean'; };
    filled = () => touched;
    require = (on) => { required = on; };
    const node = h('div', { class: 'field check' }, input, label, hintId ? h('p', { id: hintId, class: 'hint' }, s.description) : null);
    return { node, get, set, filled, require };
  } else {
    input = h('textarea', { ...common, rows: 3, class: 'mono', required, placeholder: placeholder || 'JSON' });
    get = () => {
      if (input.value.trim() === '') return undefined;
      try {
        return JSON.parse(input.value);
      } catch (err) {
        throw new Error(`${path}: not valid JSON (${err.message})`);
      }
    };
    filled = () => input.value.trim() !== '';
    set = (v) => { input.value = v === undefined ? '' : json(v); };
  }
  const node = h('div', { class: 'field' }, label, hintId ? h('p', { id: hintId, class: 'hint' }, s.description) : null, input);
  return { node, get, set, filled, require };
}

// objectField is a fieldset of an object's properties (the arguments'
// at the root). What it requires is required once it is itself, or holds
// anything; an optional object left empty is left out. Its value has no
// prototype, so that "__proto__" is a property like any.
function objectField(s, path, name, need, root, isRoot, depth, seen) {
  const req = new Set(Array.isArray(s.required) ? s.required : []);
  // k is a property's name, or the names folded into one JSON field.
  const needs = (k) => [k].flat().some((x) => req.has(x));
  let required = need === true || isRoot;
  const keys = Object.keys(s.properties || {});
  const prefix = path ? `${path}.` : '';
  const fields = [];
  for (const [i, k] of keys.entries()) {
    if (fieldSeq >= MAX_FIELDS) {
      const rest = keys.slice(i);
      fields.push([rest, restField(rest, `${prefix}(other properties)`, needs(rest) && (required || name), root, depth, seen)]);
      break;
    }
    fields.push([k, field(s.properties[k], prefix + k, k, needs(k) && (required || name), root, depth, seen)]);
  }
  const children = fields.map(([, f]) => f.node);
  const node = isRoot
    ? h('div', { class: 'fields' }, children)
    : h('fieldset', { 'data-field': path }, h('legend', {}, name, mark(need)),
      s.description ? h('p', { class: 'hint' }, s.description) : null, children);
  const filled = () => fields.some(([, f]) => f.filled());
  const require = (on) => {
    required = on || isRoot;
    const given = required || filled();
    for (const [k, f] of fields) f.require(needs(k) && given);
  };
  const get = () => {
    const out = Object.create(null);
    let any = false;
    for (const [k, f] of fields) {
      const v = f.get();
      if (v === undefined) continue;
      if (Array.isArray(k)) for (const [x, y] of Object.entries(v)) out[x] = y;
      else out[k] = v;
      any = true;
    }
    return any || required ? out : undefined;
  };
  const set = (v) => fields.forEach(([k, f]) => f.set(Array.isArray(k) ? v
    : v && typeof v === 'object' && Object.hasOwn(v, k) ? v[k] : undefined));
  require(required);
  return { node, get, set, filled, require };
}

// restField is the properties of an object past MAX_FIELDS, keys, as one
// field: a JSON object of them, its value merged into the object's.
function restField(keys, path, need, root, depth, seen) {
  const named = keys.slice(0, 5).join(', ') + (keys.length > 5 ? ', …' : '');
  const f = field({ type: 'object', description: `As one JSON object: ${named}` }, path, `${keys.length} other properties`, need, root, depth, seen);
  const get = () => {
    const v = f.get();
    if (v !== undefined && (!v || typeof v !== 'object' || Array.isArray(v))) throw new Error(`${path}: not a JSON object`);
    return v;
  };
  const set = (v) => {
    const mine = keys.filter((k) => v && typeof v === 'object' && Object.hasOwn(v, k));
    f.set(mine.length ? Object.fromEntries(mine.map((k) => [k, v[k]])) : undefined);
  };
  return { ...f, get, set };
}

function arrayField(s, path, name, need, root, depth, seen) {
  let required = need === true;
  const items = [];
  const ol = h('ol', { class: 'items' });
  const safe = (f) => {
    try {
      return f.get();
    } catch {
      return undefined;
    }
  };
  const add = (value) => {
    const i = items.length;
    const f = field(s.items, `${path}[${i}]`, `${name} item ${i + 1}`, false, root, depth, seen);
    if (value !== undefined) f.set(value);
    items.push(f);
    ol.append(h('li', {}, f.node, h('button', {
      type: 'button', class: 'btn small', 'aria-label': `Remove ${name} item ${i + 1}`,
      on: { click: () => { const values = items.map(safe); values.splice(i, 1); rebuild(values); addButton.focus(); } },
    }, 'Remove')));
    return f;
  };
  const rebuild = (values) => {
    items.length = 0;
    ol.replaceChildren();
    values.forEach(add);
  };
  const addButton = h('button', {
    type: 'button', class: 'btn small', 'data-add': path,
    on: { click: () => { add(); ol.lastElementChild?.querySelector('input, select, textarea')?.focus(); } },
  }, `Add ${name} item`);
  const node = h('fieldset', { 'data-field': path },
    h('legend', {}, name, ' ', h('span', { class: 'type' }, typeLabel(s, root, depth, seen)), mark(need)),
    s.description ? h('p', { class: 'hint' }, s.description) : null, ol, addButton);
  const get = () => {
    const values = items.map((f) => f.get()).filter((v) => v !== undefined);
    return values.length || required ? values : undefined;
  };
  const set = (v) => rebuild(Array.isArray(v) ? v : []);
  const filled = () => items.some((f) => f.filled());
  const require = (on) => {
    required = on;
    items.forEach((f) => f.require(false));
  };
  return { node, get, set, filled, require };
}

function tryForm(r, tool) {
  const schema = tool.inputSchema && typeof tool.inputSchema === 'object' ? tool.inputSchema : {};
  fieldSeq = 0;
  const [top, refs] = deref(schema, schema);
  const root = objectField(top || {}, '', '', true, schema, true, 1, refs);
  // What is required follows what the viewer fills in.
  const sync = () => root.require(true);
  const hasFields = root.node.childElementCount > 0;
  let raw = false;
  const formError = h('p', { class: 'alert', role: 'alert', hidden: true });
  const rawArgs = h('textarea', { id: 'raw-args', testid: 'raw-args', rows: 10, class: 'mono', spellcheck: 'false' });
  const rawBox = h('div', { class: 'field', hidden: true }, h('label', { for: 'raw-args' }, 'Arguments as a JSON object'), rawArgs);
  const fieldsBox = h('div', {}, hasFields ? root.node : h('p', { class: 'muted' }, 'The schema lists no arguments.'));
  const showError = (message) => {
    formError.textContent = message;
    formError.hidden = !message;
  };
  const toggle = h('button', {
    type: 'button', testid: 'raw-toggle', class: 'btn small', 'aria-pressed': 'false',
    on: {
      click: () => {
        if (!raw) {
          let args = {};
          try {
            args = root.get();
          } catch { /* what does not parse stays behind */ }
          rawArgs.value = json(args);
        } else {
          try {
            const v = JSON.parse(rawArgs.value || '{}');
            if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('the arguments must be a JSON object');
            root.set(v);
            sync();
          } catch (err) {
            showError(`Raw JSON: ${err.message}`);
            return;
          }
        }
        raw = !raw;
        showError('');
        fieldsBox.hidden = raw;
        rawBox.hidden = !raw;
        toggle.setAttribute('aria-pressed', String(raw));
        (raw ? rawArgs : fieldsBox.querySelector('input, select, textarea'))?.focus();
      },
    },
  }, 'Raw JSON');
  const submit = h('button', { type: 'submit', testid: 'try-submit', class: 'btn primary' }, 'Call tool');
  const result = h('div', { class: 'result-area', 'aria-live': 'polite' });
  const edited = () => { tryState.dirty = true; sync(); };

  const form = h('form', {
    testid: 'try-form', class: 'card', novalidate: true,
    on: {
      input: edited,
      change: edited,
      submit: async (e) => {
        e.preventDefault();
        if (tryState.inFlight) return;
        let args;
        try {
          if (raw) {
            args = JSON.parse(rawArgs.value || '{}');
            if (!args || typeof args !== 'object' || Array.isArray(args)) throw new Error('the arguments must be a JSON object');
          } else {
            sync();
            if (!form.reportValidity()) return;
            args = root.get() || {};
          }
        } catch (err) {
          showError(err.message);
          return;
        }
        showError('');
        await call(r, tool.name, args, submit, result);
      },
    },
  }, h('div', { class: 'row' }, h('h2', {}, 'Arguments'), toggle), formError, fieldsBox, rawBox,
  h('div', { class: 'actions' }, submit));
  return [form, result];
}

// call calls a tool; its page does not poll meanwhile (inFlight, which a
// call of a page left before leaves alone).
async function call(r, name, args, submit, result) {
  const gen = state.gen;
  const route = state.route;
  tryState.inFlight = true;
  submit.disabled = true;
  result.setAttribute('aria-busy', 'true');
  result.replaceChildren(h('p', { class: 'muted' }, `Calling ${name}…`));
  const body = JSON.stringify({ id: 'call_1', type: 'function', function: { name, arguments: JSON.stringify(args) } });
  const started = performance.now();
  let view;
  try {
    const res = await api(`${apiPath.collection(r)}/execute`, { method: 'POST', body });
    view = envelopeView(res.data || {}, performance.now() - started);
  } catch (err) {
    if (err.status === 401 && config.auth !== 'none' && gen === state.gen) {
      tryState.inFlight = false;
      sessionStorage.removeItem(TOKEN_KEY);
      showTokenForm(err.message);
      return;
    }
    view = [problem(err), elapsed(performance.now() - started)];
  }
  if (state.route === route) tryState.inFlight = false;
  if (gen !== state.gen) return;
  submit.disabled = false;
  result.removeAttribute('aria-busy');
  tryState.hasResult = true;
  result.replaceChildren(...[view].flat());
}

function elapsed(ms) {
  return h('p', { class: 'meta' }, 'Took ', h('span', { testid: 'elapsed' }, `${Math.round(ms)} ms`));
}

// envelopeView shows a call's result envelope: its text, its images
// (only base64 of a known image type, as data: URLs), whether the tool
// reported an error, and the envelope itself.
function envelopeView(env, ms) {
  const isError = env.isError === true;
  const content = Array.isArray(env.content) ? env.content : [];
  const texts = content.filter((c) => c?.type === 'text' && typeof c.text === 'string').map((c) => c.text);
  const text = texts.length ? texts.join('\n') : typeof env.output === 'string' ? env.output : '';
  const images = content.filter((c) => c?.type === 'image' && IMAGE_TYPES.includes(c.mimeType)
    && typeof c.data === 'string' && BASE64.test(c.data));
  return h('div', { testid: 'result', 'data-is-error': String(isError), class: `result ${isError ? 'is-error' : 'is-ok'}` },
    h('h2', {}, 'Result'),
    isError
      ? h('p', { testid: 'result-error', class: 'alert' }, 'The tool reported an error: ', env.error || text || 'no message')
      : h('p', { class: 'ok' }, 'The tool answered.'),
    elapsed(ms),
    h('h3', {}, 'Text'),
    pre(text, { testid: 'result-text', class: 'output' }),
    h('div', { testid: 'result-images', class: 'images' }, images.map((c, i) => h('img', {
      src: `data:${c.mimeType};base64,${c.data}`, alt: `Image ${i + 1} of the result (${c.mimeType})`,
    }))),
    env.system ? h('p', { class: 'hint' }, env.system) : null,
    env.structuredContent !== undefined ? details('structured', 'Structured content', pre(json(env.structuredContent), { class: 'code' })) : null,
    details('envelope', 'Whole envelope (every content item)', pre(json(env), { class: 'code' })));
}

// ---- start ---------------------------------------------------------------

async function boot() {
  try {
    const res = await fetch('config.json', { credentials: 'omit', cache: 'no-store' });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    config = { ...config, ...(await res.json()) };
  } catch (err) {
    main.replaceChildren(h('h1', {}, 'Console'), problem(new ApiError(0, `cannot read the console's configuration: ${err.message}`)));
    document.body.dataset.loading = 'false';
    return;
  }
  if (config.oidc) {
    try {
      const signedIn = await finishSignIn(config.oidc);
      if (signedIn) sessionStorage.setItem(TOKEN_KEY, signedIn);
    } catch (err) {
      // A failed sign-in leaves a token the tab had: a crafted link must
      // not sign a viewer out.
      signInError = err.message;
    }
  }
  setInterval(tick, TICK_MS);
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && state.page && !needsToken()) schedule();
  });
  window.addEventListener('hashchange', start);
  if (!location.hash || location.hash === '#' || location.hash === '#/') history.replaceState(null, '', '#/servers');
  renderAuth();
  start();
}

boot();
