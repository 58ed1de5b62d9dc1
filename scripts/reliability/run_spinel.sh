#!/bin/sh
# Runs every scenario against a fresh spinel per scenario, at the memory limit it needs.
# Usage: run_spinel.sh [path/to/spinel]   (default target/release/spinel)
set -u
BIN=${1:-target/release/spinel}
DIR=$(dirname "$0")
P=${PORT:-21411}
R=${RESP_PORT:-21412}
run() {  # run MEM SCRIPT ARGS...
    mem=$1; shift
    "$BIN" -p "$P" --resp-port "$R" -m "$mem" -t 2 >/dev/null 2>&1 &
    pid=$!
    sleep 0.5
    timeout 300 python3 -u "$DIR/$@"
    kill "$pid"; wait "$pid" 2>/dev/null
}
run 64 drift.py --port "$P" --resp-port "$R"
run 64 drift.py --phase-secs 2 --keys 32 --port "$P" --resp-port "$R"
run 48 large_sets.py --port "$P"
run 48 large_sets.py --resp-port "$R"
run 1024 appends.py --port "$P"
run 64 appends.py --port "$P"
run 64 appends.py --resp-port "$R"
run 64 big_after_churn.py --port "$P"
run 64 expiry_counts.py --port "$P"
