#!/usr/bin/env bash
# Spinel beside memcached at 1, 2, 4 and 8 worker threads, for get and 9:1 (20/20, one key a
# get): where Spinel's curve bends on a many-core machine (issue 36 item 5; method and the
# two-core figures in docs/benchmarks/cores.md). Builds nothing: it takes the binaries.
#
#   scripts/core_sweep.sh [options] OUT_DIR
#     --bench PATH          spinel-bench binary            [target/release/spinel-bench]
#     --spinel PATH         spinel binary                  [target/release/spinel]
#     --memcached PATH      memcached binary               [memcached on PATH; "" for none]
#     --nullmc PATH         nullmc binary, the store-less limit (optional; /work/peers/nullmc
#                           when present, "" for none)
#     --server-cpus LIST    CPUs of the servers            [0-7]
#     --client-cpus LIST    CPUs of the load               [8-15]
#     --threads LIST        worker threads, one compare run each   [1,2,4,8]
#     --pin-servers-to LIST per thread count, the server CPUs instead of --server-cpus, as
#                           T=LIST;T=LIST (e.g. "1=1;2=0,1"); unnamed counts take --server-cpus
#     --connections N       connections per run             [200]
#     --repeat N            repetitions of each run          [2]
#     --duration D          measured time per run            [3s]
#     --server-cmd SPEC     another server, as compare's --server-cmd (repeatable), e.g.
#                           'old:mc=/tmp/old -p {port} --resp-port 0 -t {threads} -m {memory_mib}'
#     --extra 'ARGS'        more compare flags, split on spaces (e.g. "--pipeline 1,8")
#
# Each thread count is one `spinel-bench compare` run with `--server-threads T`: Spinel,
# memcached (and nullmc) interleaved within each workload, repetitions outermost, so every
# ratio compares servers measured in the same run. Spinel and memcached run T workers on
# the server CPUs (taskset over the whole list: the kernel places the threads), the load runs
# one thread per client CPU. Per run: OUT_DIR/t<T>/compare.{md,json,csv,html}; at the end
# OUT_DIR/summary.md: per thread count and workload, each server's requests/s and requests
# per server CPU-second, and Spinel's ratio to memcached on both.
#
# Time: 4 thread counts x 2 workloads x 3 servers x 2 repetitions x (3 s + 0.5 s warm-up +
# preload and start, about 1.5 s) = about 4 minutes, plus the idle waits (at most 5 s a run,
# none on a quiet machine): within 8 minutes.
set -euo pipefail

bench=target/release/spinel-bench
spinel=target/release/spinel
memcached=$(command -v memcached || true)
nullmc=/work/peers/nullmc
server_cpus=0-7
client_cpus=8-15
threads=1,2,4,8
pin_map=""
connections=200
repeat=2
duration=3s
extra=""
server_cmds=()

usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --bench) bench=$2; shift 2 ;;
        --spinel) spinel=$2; shift 2 ;;
        --memcached) memcached=$2; shift 2 ;;
        --nullmc) nullmc=$2; shift 2 ;;
        --server-cpus) server_cpus=$2; shift 2 ;;
        --client-cpus) client_cpus=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --pin-servers-to) pin_map=$2; shift 2 ;;
        --connections) connections=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --server-cmd) server_cmds+=(--server-cmd "$2"); shift 2 ;;
        --extra) extra=$2; shift 2 ;;
        -h|--help) usage 0 ;;
        -*) echo "unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] || usage
out=$1

for bin in "$bench" "$spinel"; do
    [ -x "$bin" ] || { echo "not an executable: '$bin'" >&2; exit 2; }
done
servers=spinel
path=$PATH
if [ -n "$memcached" ]; then
    [ -x "$memcached" ] || { echo "not an executable: '$memcached'" >&2; exit 2; }
    servers=$servers,memcached
    # compare finds memcached on PATH.
    path="$(dirname "$(readlink -f "$memcached")"):$PATH"
fi
for ((i = 1; i < ${#server_cmds[@]}; i += 2)); do
    servers=$servers,${server_cmds[i]%%[:=]*}
done
env_nullmc=()
if [ -n "$nullmc" ] && [ -x "$nullmc" ]; then
    servers=$servers,nullmc
    env_nullmc=(NULLMC_BIN="$nullmc")
fi
mkdir -p "$out"

# The server CPUs for thread count $1: its entry in --pin-servers-to, else --server-cpus.
cpus_for() {
    local entry
    IFS=';' read -ra entries <<< "$pin_map"
    for entry in "${entries[@]}"; do
        if [ "${entry%%=*}" = "$1" ]; then echo "${entry#*=}"; return; fi
    done
    echo "$server_cpus"
}

{
    echo "# core sweep $(date -u +%FT%TZ)"
    echo "host: $(nproc) CPUs, $(uname -r); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "spinel: $spinel ($(sha1sum < "$spinel" | cut -c1-12)); memcached: ${memcached:-none}; servers: $servers"
    echo "threads: $threads; client CPUs: $client_cpus; connections: $connections; repeat: $repeat; duration: $duration"
} > "$out/run.txt"

IFS=',' read -ra counts <<< "$threads"
for t in "${counts[@]}"; do
    cpus=$(cpus_for "$t")
    echo "== -t $t: servers on CPUs $cpus, load on $client_cpus" | tee -a "$out/run.txt"
    # shellcheck disable=SC2086 # $extra is a list of flags.
    env PATH="$path" "${env_nullmc[@]}" "$bench" compare \
        --spinel-bin "$spinel" --servers "$servers" \
        --mix get,9:1 --keys-per-get 1 --sizes 20/20 \
        --server-threads "$t" --sweep-threads 0 \
        --server-cpus "$cpus" --client-cpus "$client_cpus" \
        -c "$connections" --repeat "$repeat" --duration "$duration" \
        --out "$out/t$t" "${server_cmds[@]}" $extra > "$out/t$t.log" 2>&1 \
        || { echo "compare -t $t failed: see $out/t$t.log" >&2; tail -5 "$out/t$t.log" >&2; }
done

python3 - "$out" "${counts[@]}" <<'EOF'
import json, os, sys

out, counts = sys.argv[1], sys.argv[2:]
lines = ["| -t | workload | server | req/s | req per server CPU-s | server CPU (cores) "
         "| Spinel/memcached req/s | Spinel/memcached per CPU-s | spread req/s, per CPU-s "
         "| noisy runs |",
         "|--:|---|---|--:|--:|--:|--:|--:|--:|--:|"]
med = lambda stat: stat["median"] or 0.0
ratio = lambda a, b: f"{a / b:.2f}" if b else "-"
for t in counts:
    path = os.path.join(out, f"t{t}", "compare.json")
    if not os.path.exists(path):
        lines.append(f"| {t} | (no compare.json: see t{t}.log) | | | | | | | | |")
        continue
    by = {}
    for row in json.load(open(path))["rows"]:
        by.setdefault(row["workload"], {})[row["server"]] = row
    for workload, servers in by.items():
        mc = servers.get("memcached")
        for name, row in servers.items():
            rps, eff = med(row["req_per_sec"]), med(row["req_per_server_cpu_sec"])
            vs = ("", "")
            if mc and name != "memcached":
                vs = (ratio(rps, med(mc["req_per_sec"])),
                      ratio(eff, med(mc["req_per_server_cpu_sec"])))
            lines.append(
                f"| {t} | {workload} | {name} | {rps / 1e3:.0f}k | {eff / 1e3:.0f}k "
                f"| {row['server_utilization']:.2f} | {vs[0]} | {vs[1]} "
                f"| {row['spread_req']:.0%}, {row['spread_eff']:.0%} "
                f"| {row['noisy_runs']}/{row['runs']} |")
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
