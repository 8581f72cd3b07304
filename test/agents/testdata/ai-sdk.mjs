// The Vercel AI SDK (ai 7 and @ai-sdk/mcp) against a ToolCollection's MCP
// endpoint: createMCPClient over the http transport with the bearer token
// in headers, client.tools(), and each tool's own execute and
// toModelOutput, which generateText calls with the model's arguments and
// to turn the result into what the model reads. No model is called.
// Prints one JSON line for the Go test.
import { createMCPClient } from '@ai-sdk/mcp';
import { asSchema } from 'ai';
import { recording } from './recording.mjs';

const { MCP_URL, CATALOG_TOKEN } = process.env;

// requests records what the SDK sent (recording.mjs).
const { requests, recordingFetch } = recording(fetch, CATALOG_TOKEN);

const errors = [];
const client = await createMCPClient({
  transport: {
    type: 'http',
    url: MCP_URL,
    headers: { Authorization: `Bearer ${CATALOG_TOKEN}` },
    fetch: recordingFetch,
  },
  onUncaughtError: (e) => errors.push(String(e?.message ?? e)),
});
const result = { calls: {} };
try {
  const tools = await client.tools();
  result.tools = Object.keys(tools).sort();
  // The schema generateText hands the model: the server's, closed.
  result.convertSchema = (await asSchema(tools.mcp_demo_convert_units.inputSchema).jsonSchema);
  const run = async (name, args) => {
    const t = tools[name];
    if (!t) return { missing: name };
    const options = { toolCallId: `call-${name}`, messages: [] };
    try {
      const output = await t.execute(args, options);
      // What the model reads of it.
      const modelOutput = await t.toModelOutput({ toolCallId: options.toolCallId, input: args, output });
      return { isError: output.isError === true, output: modelOutput };
    } catch (e) {
      return { threw: `${e?.name}: ${e?.message}` };
    }
  };
  result.calls.convert = await run('mcp_demo_convert_units', { value: 10, from: 'km', to: 'mi' });
  result.calls.sum = await run('mcp_everything_get-sum', { a: 2, b: 40 });
  result.calls.toolError = await run('mcp_demo_convert_units', { value: 1, from: 'kg', to: 'm' });
  result.calls.badArguments = await run('mcp_demo_convert_units', { value: 'ten', from: 'km', to: 'mi' });
  // A name the collection does not have: the catalog answers a JSON-RPC
  // error, which execute throws (generateText turns a throw into a
  // tool-error the model reads).
  try {
    await client.callTool({ name: 'mcp_demo_no_such_tool', arguments: {} });
    result.calls.unknownTool = { threw: '' };
  } catch (e) {
    result.calls.unknownTool = { threw: `${e?.name}: ${e?.message}` };
  }
} finally {
  await client.close();
}
result.requests = requests;
result.uncaughtErrors = errors;
console.log(JSON.stringify(result));
