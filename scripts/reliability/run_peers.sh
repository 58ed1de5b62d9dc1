#!/bin/sh
# The same scenarios against memcached and Redis, each started fresh at the memory limit the
# scenario needs (memcached -m MB -t 2; redis-server --maxmemory MBmb allkeys-lru, no saves).
set -u
DIR=$(dirname "$0")
P=${PORT:-21511}
mc() {  # mc MEM SCRIPT ARGS...
    mem=$1; shift
    memcached -p "$P" -U 0 -m "$mem" -t 2 -u root >/dev/null 2>&1 &
    pid=$!; sleep 0.5
    echo "memcached -m $mem: $*"; timeout 300 python3 -u "$DIR/$@" --port "$P"
    kill "$pid"; wait "$pid" 2>/dev/null
}
rd() {
    mem=$1; shift
    redis-server --port "$P" --maxmemory "${mem}mb" --maxmemory-policy allkeys-lru \
        --save "" --appendonly no >/dev/null 2>&1 &
    pid=$!; sleep 0.5
    echo "redis --maxmemory ${mem}mb: $*"; timeout 300 python3 -u "$DIR/$@" --resp-port "$P"
    kill "$pid"; wait "$pid" 2>/dev/null
}
for s in mc rd; do
    $s 64 drift.py
    $s 48 large_sets.py
    $s 1024 appends.py
    $s 64 appends.py
    $s 64 big_after_churn.py
    $s 64 expiry_counts.py
done
