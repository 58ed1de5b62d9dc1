#!/usr/bin/env bash
# What client-side caching costs a write: pipelined SETs (spinel-bench, RESP) against
# a server built without it (BASE) and with it (NEW), the latter also with one tracking
# client connected (default mode, nothing read) and with one BCAST client (a prefix no
# key matches). Reports requests per second and per server CPU-second (utime + stime from
# /proc, so a busy machine skews it less), alternating the runs ROUNDS times.
#
#   scripts/tracking_overhead.sh BASE NEW BENCH [ROUNDS]
#
# The server is pinned to CPUs $SERVER_CPUS (0-1, 2 workers), the load generator to
# $BENCH_CPUS (2-5), WORKERS (2) workers; SECONDS_PER_RUN (5) each.
set -euo pipefail
base=$1 new=$2 bench=$3 rounds=${4:-3}
port=17400
server_cpus=${SERVER_CPUS:-0-1} bench_cpus=${BENCH_CPUS:-2-5}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run() { # name binary mode
    local name=$1 bin=$2 mode=$3
    taskset -c "$server_cpus" "$bin" -p 0 --resp-port $port -l 127.0.0.1 -t "${WORKERS:-2}" --io epoll -m 1024 \
        >/dev/null 2>&1 &
    local pid=$!
    trap "kill $pid 2>/dev/null" EXIT
    for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
    case $mode in
        none) ;;
        default) exec 7<>/dev/tcp/127.0.0.1/$port
                 printf '*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\non\r\n' >&7 ;;
        bcast) exec 7<>/dev/tcp/127.0.0.1/$port
               printf '*6\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\non\r\n$5\r\nBCAST\r\n' >&7
               printf '$6\r\nPREFIX\r\n$3\r\nzz:\r\n' >&7 ;;
    esac
    sleep 0.2
    taskset -c "$bench_cpus" "$bench" -s 127.0.0.1:$port -P resp --ratio 1:0 --pipeline 32 -c 8 -t 2 \
        --keyspace 100000 --duration 1s -q >/dev/null
    local t0; t0=$(cpu_ticks $pid)
    local out; out=$(taskset -c "$bench_cpus" "$bench" -s 127.0.0.1:$port -P resp --ratio 1:0 \
        --pipeline 32 -c 8 -t 2 --keyspace 100000 --duration "${SECONDS_PER_RUN:-5}s" --json -q)
    local t1; t1=$(cpu_ticks $pid)
    [ "$mode" = none ] || exec 7>&-
    kill "$pid"; wait "$pid" 2>/dev/null || true
    local hz; hz=$(getconf CLK_TCK)
    python3 - "$name" "$out" $((t1 - t0)) "$hz" <<'EOF'
import json, sys
name, out, ticks, hz = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rate = out["requests_per_sec"]
total = out["requests"]
cpu = ticks / hz
print(f"{name:22s} {rate:12.0f} req/s {total / cpu if cpu else 0:12.0f} req/server-CPU-s")
EOF
}

for round in $(seq "$rounds"); do
    echo "round $round"
    run base "$base" none
    run tracking-off "$new" none
    run tracking-default-1 "$new" default
    run tracking-bcast-1 "$new" bcast
done
