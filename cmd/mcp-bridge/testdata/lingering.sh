#!/bin/sh
# Runs the command given as arguments beside a process that keeps its stdout
# open, as a helper a server started can outlive it: after the server dies,
# the bridge goes on reading its stdout (for up to two seconds) before it
# lets go of it, so a test has time to send a request in between.
sleep 600 </dev/null 2>/dev/null &
exec "$@"
