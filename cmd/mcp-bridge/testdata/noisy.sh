#!/bin/sh
# Runs the command given as arguments with junk on its stdout, as careless
# servers print: a banner before it starts, and lines that are not JSON-RPC
# before every line it writes.
echo "Starting server v1.2.3..."
echo "{not json"
n=0
"$@" | while IFS= read -r line; do
  n=$((n + 1))
  printf 'log: line %d\n[1,2,3]\n%s\n' "$n" "$line"
done
