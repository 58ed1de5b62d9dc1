#!/bin/bash
# Server CPU-seconds for the reliability suite's append row (8 clients appending 12-byte
# tokens to 128 keys until they hold about 72 KB each: 768k appends, 9.2 MB live), with
# the server pinned to CPU 1 and the clients to CPU 0, interleaved with memcached.
# Usage: scripts/append_cost.sh [REPEAT] NAME=SPINEL_BIN...   (e.g. after=target/release/spinel)
# Prints one line per run: name, wall seconds, server CPU-seconds, and the row's own check.
set -u
repeat=2
if [[ ${1:-} =~ ^[0-9]+$ ]]; then repeat=$1; shift; fi
port=${PORT:-21511}
dir=$(cd "$(dirname "$0")" && pwd)
run() {  # run NAME CMD...
    local name=$1; shift
    taskset -c 1 "$@" >/dev/null 2>&1 &
    local pid=$!
    sleep 0.5
    local t0; t0=$(date +%s.%N)
    local out; out=$(taskset -c 0 timeout 300 python3 "$dir/reliability/appends.py" --port "$port" 2>&1 | tail -1)
    local t1; t1=$(date +%s.%N)
    local ticks; ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    kill "$pid"; wait "$pid" 2>/dev/null
    printf '%-10s wall %6.2f s  server CPU %6.2f s  %s\n' "$name" \
        "$(echo "$t1 - $t0" | bc)" "$(echo "$ticks / $(getconf CLK_TCK)" | bc -l)" "$out"
}
for _ in $(seq "$repeat"); do
    for spec in "$@"; do
        run "${spec%%=*}" "${spec#*=}" -p "$port" --resp-port 0 -m 1024 -t 1
    done
    run memcached memcached -u "$(id -un)" -p "$port" -U 0 -m 1024 -t 1
done
