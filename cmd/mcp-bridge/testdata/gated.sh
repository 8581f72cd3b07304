#!/bin/sh
# Runs the command given as arguments; every start after the first waits
# until the file $GATE exists, so that a test can hold a restart back and
# watch the bridge while its server is down.
if [ -e "$STARTED" ]; then
  while [ ! -e "$GATE" ]; do sleep 0.05; done
fi
: >"$STARTED"
exec "$@"
