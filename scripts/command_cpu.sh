#!/bin/bash
# Server CPU per request for one pipelined Redis command: redis-benchmark -P 50 on CPU 0,
# `spinel -t 1` on CPU 1, the server's utime+stime read from /proc before and after.
# Run it for two builds in turn (A, B, A, B ...) and compare medians: two cores are noisy.
#   scripts/command_cpu.sh BIN REQUESTS COMMAND [ARGS...]   e.g. ... 3000000 publish ch msg
set -euo pipefail
BIN=$1; N=$2; shift 2
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
taskset -c 1 "$BIN" -p 0 --resp-port "$PORT" -t 1 -l 127.0.0.1 >/dev/null 2>&1 &
PID=$!
for _ in $(seq 50); do nc -z 127.0.0.1 "$PORT" && break; sleep 0.1; done
a=$(awk '{print $14+$15}' "/proc/$PID/stat")
taskset -c 0 redis-benchmark -p "$PORT" -n "$N" -P 50 -q "$@" >/dev/null 2>&1
b=$(awk '{print $14+$15}' "/proc/$PID/stat")
ticks=$((b - a)); ticks=$((ticks > 0 ? ticks : 1))
echo "$(basename "$BIN") $1: $(python3 -c "print(f'{$N/($ticks/100):,.0f}')") req/CPU-s"
kill "$PID"; wait "$PID" 2>/dev/null || true
