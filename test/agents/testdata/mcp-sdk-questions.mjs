// The official TypeScript MCP SDK's client (@modelcontextprotocol/sdk
// 1.x) answering a server's questions: it declares elicitation and
// sampling, answers elicitation/create by filling every field of the
// requested form (its default, else its first choice, else a fixed value)
// and sampling/createMessage as a model named echo-1 would, and records
// every request it is asked, as it came off the wire. It calls
// server-everything's trigger-elicitation-request and
// trigger-sampling-request twice: through the collection's MCP endpoint
// (MCP_URL, with the bearer token) and directly (EVERYTHING_URL), so the
// Go test can compare what it was asked and what it got. Prints one JSON
// line for the Go test.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { recording } from './recording.mjs';

const { MCP_URL, EVERYTHING_URL, CATALOG_TOKEN } = process.env;

// requests records what went to the catalog (recording.mjs).
const { requests, recordingFetch, settled } = recording(globalThis.fetch, CATALOG_TOKEN);

// answer is what the user would type into a field of the form.
function answer(field) {
  if (field.default !== undefined) return field.default;
  const choice = (f) => f.enum?.[0] ?? f.oneOf?.[0]?.const ?? f.anyOf?.[0]?.const;
  if (choice(field) !== undefined) return choice(field);
  switch (field.type) {
    case 'boolean':
      return true;
    case 'integer':
    case 'number':
      return field.minimum ?? 7;
    case 'array':
      return [choice(field.items ?? {}) ?? 'item'];
    default:
      return {
        email: 'ann@example.com',
        uri: 'https://example.com/ann',
        date: '2000-01-01',
        'date-time': '2000-01-01T00:00:00Z',
      }[field.format] ?? 'Ann';
  }
}

// session connects a client that can be asked to url and returns it with
// the requests it is asked.
async function session(url, options = {}) {
  const client = new Client({ name: 'asked-agent', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {} } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    const content = {};
    for (const [name, field] of Object.entries(request.params.requestedSchema?.properties ?? {})) {
      content[name] = answer(field);
    }
    return { action: 'accept', content };
  });
  client.setRequestHandler(CreateMessageRequestSchema, (request) => {
    const first = request.params.messages[0]?.content;
    return { model: 'echo-1', role: 'assistant', content: { type: 'text', text: `you said ${first?.text}` } };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url), options);
  // Set before connect: the client's own handler runs after this one, so
  // every request is recorded as it was received, before any handler.
  transport.onmessage = (message) => {
    if (typeof message.method === 'string' && message.id !== undefined) {
      asked.push({ method: message.method, params: structuredClone(message.params ?? null) });
    }
  };
  await client.connect(transport);
  return { client, transport, asked };
}

// calls calls server-everything's two tools that ask, by their names at
// url, and reports each result or what it threw.
async function calls(url, prefix, options = {}) {
  const { client, transport, asked } = await session(url, options);
  const out = { protocolVersion: transport.protocolVersion ?? '', calls: {}, asked };
  for (const [key, tool, args] of [
    ['elicitation', 'trigger-elicitation-request', {}],
    ['sampling', 'trigger-sampling-request', { prompt: 'a haiku', maxTokens: 20 }],
  ]) {
    try {
      const result = await client.callTool({ name: prefix + tool, arguments: args });
      out.calls[key] = { isError: result.isError === true, content: result.content, threw: '' };
    } catch (e) {
      out.calls[key] = { isError: false, content: [], threw: `${e?.name}: ${e?.message}` };
    }
  }
  // The client posts its answers without awaiting them; the result may
  // come before the answer's own reply. Closing would abort that request.
  if (options.fetch === recordingFetch) await settled();
  await client.close();
  return out;
}

const catalog = await calls(MCP_URL, 'mcp_everything_', {
  requestInit: { headers: { Authorization: `Bearer ${CATALOG_TOKEN}` } },
  fetch: recordingFetch,
});
const direct = await calls(EVERYTHING_URL, '');
console.log(JSON.stringify({ catalog, direct, requests }));
