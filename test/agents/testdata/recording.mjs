// A fetch that records what a framework sent the catalog, for the Go test:
// each request's HTTP method, JSON-RPC method, whether the bearer token
// went along, and its protocol version and session headers.
export function recording(realFetch, token) {
  const requests = [];
  async function recordingFetch(url, init = {}) {
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
  return { requests, recordingFetch };
}
