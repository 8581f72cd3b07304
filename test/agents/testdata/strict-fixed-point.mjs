// The SDKs' own strict-schema transforms over the catalog's strict menus
// (?strict=true): openai's toStrictJsonSchema (openai/lib/transform) for
// the Chat Completions and Responses formats, @anthropic-ai/sdk's
// transformJSONSchema (@anthropic-ai/sdk/lib/transform-json-schema) for
// Anthropic's. A schema the catalog marks strict must be strict already:
// the transform must not throw and must give it back unchanged (a fixed
// point). Prints one JSON line for the Go test.
import { isDeepStrictEqual } from 'node:util';
import { toStrictJsonSchema } from 'openai/lib/transform';
import { transformJSONSchema } from '@anthropic-ai/sdk/lib/transform-json-schema';

const { CATALOG_URL, COLLECTION_PATH, CATALOG_TOKEN } = process.env;

async function menu(format) {
  const res = await fetch(`${CATALOG_URL}${COLLECTION_PATH}/tools?format=${format}&strict=true`, {
    headers: { Authorization: `Bearer ${CATALOG_TOKEN}` },
  });
  if (!res.ok) throw new Error(`${format}: ${res.status} ${await res.text()}`);
  return res.json();
}

const formats = {
  openai: { schema: (t) => t.function.parameters, strict: (t) => t.function.strict, name: (t) => t.function.name, transform: toStrictJsonSchema },
  'openai-responses': { schema: (t) => t.parameters, strict: (t) => t.strict, name: (t) => t.name, transform: toStrictJsonSchema },
  anthropic: { schema: (t) => t.input_schema, strict: (t) => t.strict, name: (t) => t.name, transform: transformJSONSchema },
};

const result = {};
for (const [format, f] of Object.entries(formats)) {
  const body = await menu(format);
  const out = { strict: [], notStrict: [], nonStrict: body.nonStrict, fixedPoint: [], changed: [], threw: [] };
  for (const tool of body.tools) {
    const name = f.name(tool);
    if (f.strict(tool) !== true) {
      out.notStrict.push({ name, strict: f.strict(tool) });
      continue;
    }
    out.strict.push(name);
    const served = structuredClone(f.schema(tool));
    let transformed;
    try {
      transformed = f.transform(structuredClone(served));
    } catch (e) {
      out.threw.push({ name, error: `${e?.name}: ${e?.message}` });
      continue;
    }
    if (isDeepStrictEqual(transformed, served)) {
      out.fixedPoint.push(name);
    } else {
      out.changed.push({ name, served, transformed });
    }
  }
  result[format] = out;
}
console.log(JSON.stringify(result));
