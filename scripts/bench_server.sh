#!/usr/bin/env bash
# Side-by-side server benchmark (issue 3's figures), using ../shared/bench's harness:
#
#   scripts/bench_server.sh [REPS] [DURATION_SECS]      (defaults 3 and 5)
#
# Server pinned to CPU 1, memtier_benchmark to CPU 0; 20-byte keys and values, 50 connections,
# pipeline 1. Patterns: 100% get and 9:1 get:set, single get and 48-key multiget. Servers:
# spinel (io_uring and epoll), memcached, redis-server, and nullmc (a store-less responder:
# the cost of the kernel path with epoll, the "limit" row; single gets only). Runs are
# interleaved, repetitions outermost, so drift hits every server alike; compare ratios.
#
# Needs: target/release/spinel (cargo build --release -p server), memtier_benchmark at
# /tmp/memtier/memtier_benchmark (../shared/bench/build_memtier.sh SRC), /tmp/nullmc
# (cc -O2 -o /tmp/nullmc ../shared/bench/nullmc.c -lpthread). Results: one KVB line per run
# on stdout and JSON lines in $KVB_JSON_OUT (default /tmp/bench_server.jsonl); summarize with
# ../shared/bench/summarize.py, and per-repetition ratios with scripts/bench_ratios.py.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
reps=${1:-3}
duration=${2:-5}
bench=${BENCH_DIR:-../shared/bench}
export KVB_JSON_OUT=${KVB_JSON_OUT:-/tmp/bench_server.jsonl}
export KVB_QUIET_WAIT=${KVB_QUIET_WAIT:-5}
spinel="$PWD/target/release/spinel -p {port} -t {threads} -m {mem_mb} -c {maxconns} --resp-port 0"

run() {  # name server-kind command proto args...
    local name=$1 kind=$2 cmd=$3 proto=$4
    shift 4
    KVB_SERVER_CMD="$cmd" KVB_PROTO="$proto" timeout 150 "$bench/kvbench.py" --server "$kind" \
        --duration "$duration" --retries 0 --label "$name/r$rep" "$@" || echo "run failed: $name $*"
}

for rep in $(seq 1 "$reps"); do
    echo "== repetition $rep"
    run nullmc custom "/tmp/nullmc {port} {threads} 20" mc --ks 20 --vs 20 --pattern get \
        --conns 50
    for pattern in "get 1" "mix91 1" "get 48" "mix91 48"; do
        set -- $pattern
        args=(--ks 20 --vs 20 --pattern "$1" --mget "$2" --conns 50)
        run spinel-uring custom "$spinel --io uring" mc "${args[@]}"
        run spinel-epoll custom "$spinel --io epoll" mc "${args[@]}"
        run memcached memcached "" mc "${args[@]}"
        run redis redis "" resp "${args[@]}"
    done
done
