// The OpenAI Agents SDK (@openai/agents) against a ToolCollection's MCP
// endpoint: MCPServerStreamableHttp with the bearer token in requestInit,
// the tools converted to function tools with convertSchemasToStrict, and
// calls made through each FunctionTool's own invoke, as the runner makes
// them. No model is called. Prints one JSON line for the Go test.
import { MCPServerStreamableHttp, RunContext, getAllMcpTools, mcpToFunctionTool } from '@openai/agents';
import { recording } from './recording.mjs';

const { MCP_URL, CATALOG_TOKEN } = process.env;

// requests records what the SDK sent (recording.mjs).
const { requests, recordingFetch } = recording(fetch, CATALOG_TOKEN);

const server = new MCPServerStreamableHttp({
  url: MCP_URL,
  name: 'catalog',
  requestInit: { headers: { Authorization: `Bearer ${CATALOG_TOKEN}` } },
  cacheToolsList: true,
  fetch: recordingFetch,
});

const result = { tools: [], strict: [], nonStrict: [], calls: {} };
await server.connect();
try {
  result.sessionId = server.sessionId ?? null;

  // Two listings with cacheToolsList on: how many tools/list went out.
  const tools = await getAllMcpTools({ mcpServers: [server], convertSchemasToStrict: true });
  const again = await getAllMcpTools({ mcpServers: [server], convertSchemasToStrict: true });
  result.listRequests = requests.filter((r) => r.rpc === 'tools/list').length;
  result.secondListing = again.map((t) => t.name);

  for (const t of tools) {
    result.tools.push(t.name);
    (t.strict ? result.strict : result.nonStrict).push(t.name);
  }
  const byName = new Map(tools.map((t) => [t.name, t]));
  const ctx = new RunContext();
  // invoke is what the runner calls with the model's arguments (JSON
  // text); what it returns is the observation the model gets.
  const invoke = async (name, args) => {
    const t = byName.get(name);
    if (!t) return { missing: name };
    try {
      return { output: await t.invoke(ctx, JSON.stringify(args)) };
    } catch (e) {
      return { threw: `${e?.name}: ${e?.message}` };
    }
  };
  result.calls.convert = await invoke('mcp_demo_convert_units', { value: 10, from: 'km', to: 'mi' });
  // server-everything's get-sum, as the SDK renamed it.
  result.calls.sum = await invoke('mcp_everything_get_sum', { a: 2, b: 40 });
  // The tool reports an error (isError).
  result.calls.toolError = await invoke('mcp_demo_convert_units', { value: 1, from: 'kg', to: 'm' });
  // The catalog refuses arguments its schema does not allow.
  result.calls.badArguments = await invoke('mcp_demo_convert_units', { value: 'ten', from: 'km', to: 'mi' });
  // A tool the collection does not have: the catalog answers a JSON-RPC
  // error, not a result.
  const ghost = mcpToFunctionTool(
    { name: 'mcp_demo_no_such_tool', description: '', inputSchema: { type: 'object', properties: {}, required: [] } },
    server,
    true,
  );
  try {
    result.calls.unknownTool = { output: await ghost.invoke(ctx, '{}') };
  } catch (e) {
    result.calls.unknownTool = { threw: `${e?.name}: ${e?.message}` };
  }
} finally {
  await server.close();
}

// The same unknown tool on a server with an errorFunction (as
// docs/agents.md sets it): the model is told the catalog's message.
const withErrorFunction = new MCPServerStreamableHttp({
  url: MCP_URL,
  name: 'catalog',
  requestInit: { headers: { Authorization: `Bearer ${CATALOG_TOKEN}` } },
  fetch: recordingFetch,
  errorFunction: ({ error }) => `The tool call failed: ${error instanceof Error ? error.message : String(error)}`,
});
await withErrorFunction.connect();
try {
  const ghost = mcpToFunctionTool(
    { name: 'mcp_demo_no_such_tool', description: '', inputSchema: { type: 'object', properties: {}, required: [] } },
    withErrorFunction,
    false,
  );
  result.calls.unknownToolWithErrorFunction = { output: await ghost.invoke(new RunContext(), '{}') };
} finally {
  await withErrorFunction.close();
}
result.requests = requests;
console.log(JSON.stringify(result));
