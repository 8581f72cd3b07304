#!/bin/sh
# A server that never answers: it reads stdin and writes nothing.
echo "silent server starting" >&2
exec cat >/dev/null
