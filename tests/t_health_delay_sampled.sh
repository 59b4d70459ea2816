#!/bin/bash
# t_health_delay.sh in the agent's default mode: --hooks sampled, windows
# of 1 s every 2 s, so about half the exchanges are timed (each window's
# first message may have begun before it: not a request), with the same
# rise of the client's and the network time and a server time that does
# not move.
AGENT_ARGS="--hooks sampled --window 1s --window-every 2s" MIN_TIMED=50 \
	exec "$(dirname "$0")/t_health_delay.sh"
