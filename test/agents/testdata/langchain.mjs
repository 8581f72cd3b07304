// LangChain (@langchain/mcp-adapters' MultiServerMCPClient, @langchain/core
// tools, langchain's createAgent) against a ToolCollection's MCP endpoint
// over Streamable HTTP with the bearer token in headers. No model is
// called: the agent's model is a scripted stand-in whose first turn asks
// for the tool calls and whose second ends the run, so the agent's own
// tool node runs the calls and appends the ToolMessages the model would
// read next. Prints one JSON line for the Go test.
//
// MODE=tools (default): list, call, fail, structured content, prefixes.
// MODE=listchanged: getTools() before and after the collection's menu
// changes (a call of pin_timezone adds a tool upstream).
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, ToolMessage } from '@langchain/core/messages';
import { ToolInvocationError, createAgent, toolErrorMiddleware } from 'langchain';
import { recording } from './recording.mjs';

const { MCP_URL, CATALOG_TOKEN, MODE = 'tools', PIN_ZONE = 'Europe/Paris' } = process.env;

// requests records what went to the catalog (recording.mjs). The
// adapters take no fetch of the caller's (their connection schema drops
// the key), so the global one is wrapped: the MCP SDK calls it at request
// time.
const { requests, recordingFetch } = recording(globalThis.fetch, CATALOG_TOKEN);
globalThis.fetch = recordingFetch;

function newClient(extra = {}, server = 'catalog') {
  return new MultiServerMCPClient({
    mcpServers: {
      [server]: {
        transport: 'http',
        url: MCP_URL,
        headers: { Authorization: `Bearer ${CATALOG_TOKEN}` },
        // Never fall back to the deprecated HTTP+SSE transport: a refusal
        // is to be seen as it is.
        automaticSSEFallback: false,
      },
    },
    ...extra,
  });
}

// ScriptedModel stands in for a chat model: each turn answers with the
// next message it was given, then with "done".
class ScriptedModel extends BaseChatModel {
  constructor(turns) {
    super({});
    this.turns = turns;
  }
  _llmType() {
    return 'scripted';
  }
  bindTools() {
    return this;
  }
  async _generate() {
    const message = this.turns.shift() ?? new AIMessage('done');
    return { generations: [{ text: '', message }] };
  }
}

// runAgent has createAgent's agent make the calls ({name: [tool, args]})
// in one turn and returns the ToolMessage appended for each, by name.
async function runAgent(tools, calls, middleware = []) {
  const toolCalls = Object.entries(calls).map(([id, [name, args]]) => ({ id, name, args, type: 'tool_call' }));
  const model = new ScriptedModel([new AIMessage({ content: '', tool_calls: toolCalls })]);
  const agent = createAgent({ model, tools, middleware });
  const out = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] });
  const observed = {};
  for (const m of out.messages) {
    if (ToolMessage.isInstance(m)) {
      observed[m.tool_call_id] = { content: m.content, status: m.status ?? '', artifact: m.artifact ?? null };
    }
  }
  return observed;
}

const result = { mode: MODE };
if (MODE === 'tools') {
  const client = newClient();
  try {
    const tools = await client.getTools();
    result.tools = tools.map((t) => t.name).sort();
    const byName = new Map(tools.map((t) => [t.name, t]));
    // tool.invoke as an application calls it: the content alone.
    result.invoke = await byName.get('mcp_demo_convert_units').invoke({ value: 10, from: 'km', to: 'mi' });
    try {
      await byName.get('mcp_demo_convert_units').invoke({ value: 1, from: 'kg', to: 'm' });
      result.invokeToolError = { threw: '' };
    } catch (e) {
      result.invokeToolError = { threw: `${e?.name}: ${e?.message}` };
    }
    // The same calls as an agent makes them.
    result.calls = await runAgent(tools, {
      convert: ['mcp_demo_convert_units', { value: 10, from: 'km', to: 'mi' }],
      sum: ['mcp_everything_get-sum', { a: 2, b: 40 }],
      toolError: ['mcp_demo_convert_units', { value: 1, from: 'kg', to: 'm' }],
      // Refused by the catalog (isError) if it gets there: LangChain checks
      // arguments against the tool's schema itself first.
      badArguments: ['mcp_demo_convert_units', { value: 'ten', from: 'km', to: 'mi' }],
      structured: ['mcp_everything_get-structured-content', { location: 'Chicago' }],
    });
    // The failures again, with toolErrorMiddleware telling the model the
    // error's message alone.
    result.callsWithErrorMiddleware = await runAgent(
      tools,
      {
        toolError: ['mcp_demo_convert_units', { value: 1, from: 'kg', to: 'm' }],
        badArguments: ['mcp_demo_convert_units', { value: 'ten', from: 'km', to: 'mi' }],
      },
      [toolErrorMiddleware({ onError: (e) => (e instanceof ToolInvocationError ? e.toolError : e).message })],
    );
  } finally {
    await client.close();
  }
  // afterToolCall replacing a result that carries structuredContent with
  // its text alone, which is what the model then reads.
  const textOnly = newClient({
    afterToolCall: ({ result: [content] }) => {
      if (typeof content === 'string') return undefined;
      return { result: content.map((b) => (b.type === 'text' ? b.text : JSON.stringify(b))).join('\n') };
    },
  });
  try {
    const tools = await textOnly.getTools();
    const { structured } = await runAgent(tools, { structured: ['mcp_everything_get-structured-content', { location: 'Chicago' }] });
    result.structuredTextOnly = structured;
  } finally {
    await textOnly.close();
  }
  // The server's name as a prefix, which the option adds with no regard
  // to the 64 characters model APIs allow.
  const prefixed = newClient({ prefixToolNameWithServerName: true }, 'team-tools-production');
  try {
    result.prefixed = (await prefixed.getTools()).map((t) => t.name).sort();
  } finally {
    await prefixed.close();
  }
} else if (MODE === 'listchanged') {
  let changed;
  const notified = new Promise((resolve) => {
    changed = resolve;
  });
  // Every listening stream begins with list_changed (the catalog keeps no
  // history of what a stream that opens missed): the change awaited is the
  // one told after that.
  let greeted;
  const greeting = new Promise((resolve) => {
    greeted = resolve;
  });
  let armed = false;
  const client = newClient({ onToolsListChanged: (source) => (armed ? changed(source.server) : greeted()) });
  try {
    const tools = await client.getTools();
    result.before = tools.map((t) => t.name).sort();
    let greetingTimer;
    result.greeted = await Promise.race([
      greeting.then(() => true),
      new Promise((resolve) => {
        greetingTimer = setTimeout(() => resolve(false), 60_000);
      }),
    ]);
    clearTimeout(greetingTimer);
    armed = true;
    ({ pin: result.pin } = await runAgent(tools, { pin: ['mcp_demo_pin_timezone', { timezone: PIN_ZONE }] }));
    let timer;
    result.notifiedBy = await Promise.race([
      notified,
      new Promise((resolve) => {
        timer = setTimeout(() => resolve('(no notification within 60s)'), 60_000);
      }),
    ]);
    clearTimeout(timer);
    result.after = (await client.getTools()).map((t) => t.name).sort();
    // close() forgets the tools it loaded; the next getTools() connects
    // again and lists them anew.
    await client.close();
    result.afterClose = (await client.getTools()).map((t) => t.name).sort();
  } finally {
    await client.close();
  }
  // A client connected after the change.
  const fresh = newClient();
  try {
    result.fresh = (await fresh.getTools()).map((t) => t.name).sort();
  } finally {
    await fresh.close();
  }
}
result.requests = requests;
console.log(JSON.stringify(result));
