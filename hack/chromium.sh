#!/usr/bin/env bash
# Prints the path of the Chromium binary the console's browser tests drive
# (test/console): $MCP_CHROMIUM when set, else chromium or chromium-browser
# from the PATH, else Debian's chromium package, installed here with apt-get
# (as root; anyone else is told what to do instead).
#
# Progress goes to stderr; stdout carries only the path, so callers can do
#   export MCP_CHROMIUM="$(hack/chromium.sh)"
set -euo pipefail

log() { echo "chromium: $*" >&2; }

if [[ -n "${MCP_CHROMIUM:-}" ]]; then
  if [[ ! -x "${MCP_CHROMIUM}" ]]; then
    log "MCP_CHROMIUM is ${MCP_CHROMIUM}, which is not an executable file"
    exit 1
  fi
  echo "${MCP_CHROMIUM}"
  exit 0
fi

# found: the first of the browser's usual names on the PATH.
found() {
  local name
  for name in chromium chromium-browser; do
    if command -v "${name}" >/dev/null 2>&1; then
      command -v "${name}"
      return 0
    fi
  done
  return 1
}

if path="$(found)"; then
  echo "${path}"
  exit 0
fi

if [[ "$(id -u)" != "0" ]]; then
  log "no chromium or chromium-browser on the PATH, and installing Debian's chromium package needs root:"
  log "install chromium (apt-get install chromium), or set MCP_CHROMIUM to the path of a Chromium binary"
  exit 1
fi

log "installing Debian's chromium package (apt-get; a first install takes a minute or two)"
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2

if ! path="$(found)"; then
  log "apt-get installed chromium, but no chromium or chromium-browser is on the PATH"
  exit 1
fi
log "installed ${path}"
echo "${path}"
