// A fetch that records what a framework sent the catalog, for the Go test:
// each request's HTTP method, JSON-RPC method, whether the bearer token
// went along, and its protocol version and session headers. settled()
// waits for every request sent so far to be answered: a client sends some
// (the answer to a server's request) without awaiting them, and a script
// that printed before they were answered would leave them out.
export function recording(realFetch, token) {
  const requests = [];
  const inFlight = new Set();
  function recordingFetch(url, init = {}) {
    const sent = record(url, init);
    inFlight.add(sent);
    sent.finally(() => inFlight.delete(sent)).catch(() => {});
    return sent;
  }
  async function record(url, init) {
    const headers = new Headers(init.headers);
    let rpc = '';
    if (typeof init.body === 'string') {
      try {
        rpc = JSON.parse(init.body).method ?? '(response)';
      } catch {
        rpc = '(unparsed)';
      }
    }
    const res = await realFetch(url, init);
    requests.push({
      method: init.method ?? 'GET',
      rpc,
      bearer: headers.get('authorization') === `Bearer ${token}`,
      protocolVersion: headers.get('mcp-protocol-version') ?? '',
      sessionId: headers.get('mcp-session-id') ?? '',
      status: res.status,
    });
    return res;
  }
  async function settled() {
    await Promise.allSettled([...inFlight]);
  }
  return { requests, recordingFetch, settled };
}
