#!/bin/sh
# Runs the command given as arguments, copying what it reads on stdin to its
# stderr, which the bridge logs: a test can see what the bridge sent it.
tee /dev/stderr | "$@"
