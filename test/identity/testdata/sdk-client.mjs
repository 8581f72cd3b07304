// A stock MCP client: the TypeScript SDK's Client over Streamable HTTP with
// the SDK's own ClientCredentialsProvider. Nothing here does OAuth by hand:
// the SDK meets the 401, reads the Protected Resource Metadata, discovers
// the authorization server, gets a token and retries.
//
// Environment:
//   MCP_URL        the MCP endpoint
//   CLIENT_ID      client_credentials client id
//   CLIENT_SECRET  its secret
//   ISSUER         the authorization server the credentials belong to
//   TOOL, TOOL_ARGS the tool to call and its arguments (JSON)
//   NO_RESOURCE    "1": send no RFC 8707 resource on the token request
//                  (as a client that predates RFC 8707 would), through the
//                  provider's validateResourceURL hook
//
// It prints one JSON line: {"ok":true,"tools":[...],"call":{...},"requests":[...]}
// or {"ok":false,"error":{...},"requests":[...]} (and exits 1). requests is
// every HTTP request the SDK made, in order, with the scheme of its
// Authorization header (never the credentials) and, for form posts, the
// form without the client secret.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set`);
  }
  return value;
};

const requests = [];
const baseFetch = globalThis.fetch;

async function recordingFetch(input, init = {}) {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  const method = (init.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  const entry = { method, url };
  const authorization = headers.get("authorization");
  if (authorization) {
    entry.authorization = authorization.split(" ")[0];
  }
  if (init.body instanceof URLSearchParams) {
    entry.form = {};
    for (const [k, v] of init.body) {
      if (k !== "client_secret") {
        entry.form[k] = v;
      }
    }
  } else if (typeof init.body === "string") {
    try {
      entry.rpc = JSON.parse(init.body).method;
    } catch {
      // not JSON-RPC
    }
  }
  requests.push(entry);
  try {
    const response = await baseFetch(input, init);
    entry.status = response.status;
    const challenge = response.headers.get("www-authenticate");
    if (challenge) {
      entry.wwwAuthenticate = challenge;
    }
    return response;
  } catch (err) {
    entry.error = String(err);
    throw err;
  }
}

async function main() {
  const provider = new ClientCredentialsProvider({
    clientId: env("CLIENT_ID"),
    clientSecret: env("CLIENT_SECRET"),
    expectedIssuer: env("ISSUER"),
  });
  if (process.env.NO_RESOURCE === "1") {
    provider.validateResourceURL = async () => undefined;
  }
  const transport = new StreamableHTTPClientTransport(new URL(env("MCP_URL")), {
    authProvider: provider,
    fetch: recordingFetch,
  });
  const client = new Client({ name: "identity-suite", version: "1.0.0" });
  await client.connect(transport);
  const listed = await client.listTools();
  const call = await client.callTool({ name: env("TOOL"), arguments: JSON.parse(process.env.TOOL_ARGS ?? "{}") });
  await client.close();
  return { tools: listed.tools.map((t) => t.name), call };
}

try {
  const result = await main();
  process.stdout.write(JSON.stringify({ ok: true, ...result, requests }) + "\n");
} catch (err) {
  const error = { name: err?.constructor?.name ?? "Error", message: String(err?.message ?? err) };
  if (err?.code !== undefined) {
    error.code = err.code;
  }
  if (err?.errorCode !== undefined) {
    error.errorCode = err.errorCode;
  }
  process.stdout.write(JSON.stringify({ ok: false, error, requests }) + "\n");
  process.exitCode = 1;
}
