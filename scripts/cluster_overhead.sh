#!/usr/bin/env bash
# What cluster mode costs per request: one Spinel node that owns every slot
# (--cluster-enabled yes) against the same binary standalone, under redis-benchmark's
# pipelined SET/GET. Server on core 1, load on core 0; prints the server's CPU seconds and
# requests per server CPU-second per run; runs interleaved, REPS times.
#
#   scripts/cluster_overhead.sh [path/to/spinel]     (default: target/release/spinel)
set -euo pipefail
BIN=${1:-target/release/spinel}
REPS=${REPS:-3}
REQUESTS=${REQUESTS:-1000000}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ID=$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
free_port() { python3 -c "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1])"; }
for rep in $(seq "$REPS"); do
    for mode in standalone cluster; do
        port=$(free_port)
        extra=()
        if [[ $mode == cluster ]]; then
            printf "%s 127.0.0.1:%d@%d myself,master - 0 0 1 connected 0-16383\nvars currentEpoch 1 lastVoteEpoch 0\n" \
                "$ID" "$port" $((port + 10000)) > "$WORK/nodes.conf"
            extra=(--cluster-enabled yes --cluster-config-file nodes.conf --dir "$WORK")
        fi
        taskset -c 1 "$BIN" -p 0 --resp-port "$port" -l 127.0.0.1 -t 1 -m 512 "${extra[@]}" \
            >/dev/null 2>&1 &
        pid=$!
        sleep 0.5
        before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
        rates=$(taskset -c 0 redis-benchmark -p "$port" -t set,get -n "$REQUESTS" -P 16 -c 50 \
            -r 100000 -q 2>&1 | tr '\r' '\n' | grep "requests per second" | awk '{print $1, $2}' |
            tr '\n' ' ')
        after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        cpu=$(echo "($after - $before) / 100" | bc -l)
        per_cpu=$(echo "2 * $REQUESTS / $cpu" | bc)
        printf "%s %-10s server_cpu_s=%.2f requests_per_cpu_s=%s %s\n" "$rep" "$mode" "$cpu" "$per_cpu" "$rates"
    done
done
