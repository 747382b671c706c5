#!/usr/bin/env bash
# The conversation workload through `frugal up --workers 2 -t 1 --no-cache`, prefix-aware routing
# on and off interleaved, ROUNDS rounds (docs/benchmarks.md, "Prefix-aware routing through frugal
# up"). Usage: bench/prefix_routing_up.sh MODEL.gguf [OUT_DIR]
# Environment: RATE (0.6 rps), SF (spike factor 3), ST / SP / AF (phase seconds 30 / 40 / 30),
# ROUNDS (2), MAX_TOKENS (32). Writes OUT_DIR/lg_<on|off><round>.json (frugal loadgen --json)
# and status_<...>.json (the gateway's /status.json at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench/prefix_routing_up.sh MODEL.gguf [OUT_DIR]}
out=${2:-/tmp/prefix_routing_up}
mkdir -p "$out"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
for round in $(seq 1 "${ROUNDS:-2}"); do
  for mode in on off; do
    extra=()
    [ "$mode" = off ] && extra=(--no-prefix-routing)
    port=$(free_port)
    build/frugal up --workers 2 -t 1 -m "$model" --no-cache --port "$port" "${extra[@]}" \
      >"$out/up_$mode$round.log" 2>&1 &
    pid=$!
    ready=0
    for _ in $(seq 1 180); do
      if curl -sf "http://127.0.0.1:$port/ready" >/dev/null; then ready=1; break; fi
      sleep 1
    done
    if [ "$ready" != 1 ]; then
      kill -INT "$pid" || true
      echo "frugal up did not become ready in 180 s (see $out/up_$mode$round.log)" >&2
      exit 1
    fi
    build/frugal loadgen --target "http://127.0.0.1:$port" --conversations --rate "${RATE:-0.6}" \
      --spike-factor "${SF:-3}" --steady-seconds "${ST:-30}" --spike-seconds "${SP:-40}" \
      --after-seconds "${AF:-30}" --max-tokens "${MAX_TOKENS:-32}" --long-share 0 --timeout 300 \
      --json >"$out/lg_$mode$round.json"
    curl -s "http://127.0.0.1:$port/status.json" >"$out/status_$mode$round.json"
    kill -INT "$pid"
    wait "$pid" || true
    echo "round $round, routing $mode: $out/lg_$mode$round.json"
  done
done
