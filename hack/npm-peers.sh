#!/usr/bin/env bash
# Installs the real MCP peers the tests talk to (the reference server, the
# filesystem server and the Inspector CLI client) from the npm registry into
# a cache folder outside the repository, once per version, and prints it.
# The folder also holds loopback.cjs, a `node --require` preload that keeps
# these servers on 127.0.0.1: they listen on every interface and have no flag
# to say otherwise.
set -euo pipefail

EVERYTHING_VERSION="${MCP_EVERYTHING_VERSION:-2026.8.31}"
INSPECTOR_VERSION="${MCP_INSPECTOR_VERSION:-2.12.0}"
FILESYSTEM_VERSION="${MCP_FILESYSTEM_VERSION:-2026.8.31}"
# The folder names every package and version, so a cache from before a
# package was added is never taken for a complete one.
DEST="${1:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/mcp-operator/npm-peers}/everything-${EVERYTHING_VERSION}-inspector-${INSPECTOR_VERSION}-filesystem-${FILESYSTEM_VERSION}"
MODULES="${DEST}/node_modules/@modelcontextprotocol"

if [[ ! -f "${MODULES}/server-everything/dist/index.js" || ! -f "${MODULES}/inspector/clients/launcher/build/index.js" ||
  ! -f "${MODULES}/server-filesystem/dist/index.js" ]]; then
  echo "npm-peers: installing @modelcontextprotocol/server-everything@${EVERYTHING_VERSION}, inspector@${INSPECTOR_VERSION} and server-filesystem@${FILESYSTEM_VERSION}" >&2
  mkdir -p "${DEST}"
  npm install --prefix "${DEST}" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-everything@${EVERYTHING_VERSION}" \
    "@modelcontextprotocol/inspector@${INSPECTOR_VERSION}" \
    "@modelcontextprotocol/server-filesystem@${FILESYSTEM_VERSION}" >&2
fi

cat >"${DEST}/loopback.cjs" <<'JS'
// Forces every server this process starts onto the loopback interface.
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    const port = Number(args[0]);
    const rest = args.slice(1).filter((a) => typeof a === 'function' || typeof a === 'number');
    return listen.call(this, port, '127.0.0.1', ...rest.filter((a) => typeof a === 'function'));
  }
  if (args[0] && typeof args[0] === 'object' && !(args[0] instanceof net.Server)) {
    return listen.call(this, { ...args[0], host: '127.0.0.1' }, ...args.slice(1));
  }
  return listen.apply(this, args);
};
JS
echo "${DEST}"
