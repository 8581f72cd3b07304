#!/bin/sh
# A process that ignores SIGTERM (and so do the processes it starts).
trap '' TERM
echo "stubborn server starting" >&2
while :; do sleep 1; done
