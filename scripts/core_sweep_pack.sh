#!/usr/bin/env bash
# Packs what scripts/core_sweep.sh needs on a machine that has no toolchain and no memcached
# (the `device` machine: 16 cores, one thread each): stripped spinel and spinel-bench,
# memcached with its libraries, nullmc, and run_device.sh, into DIR (an ignored path, so
# that it travels as a `carry` path). Builds nothing.
#
#   scripts/core_sweep_pack.sh [--spinel BIN] [--bench BIN] [--before BIN] [--nullmc BIN] [DIR]
#
# DIR defaults to bench-report/devbin. Then, from the checkout the device copies:
#   run(command="bash bench-report/devbin/run_device.sh", carry=["bench-report/devbin"],
#       timeout_s=580)
# which splits the physical cores in two (servers on the first half, load on the other),
# runs the sweep at -t 1, 8, 4, 2 (Spinel, --before if packed, memcached if it runs there,
# nullmc; get and 9:1, 20/20, 200 connections, 2 x 3 s) and leaves $OUT/sweep/summary.md.
# About 5.5 minutes with --before, 4.5 without.
set -euo pipefail

spinel=target/release/spinel
bench=target/release/spinel-bench
before=""
nullmc=${NULLMC_BIN:-/work/peers/nullmc}
while [ $# -gt 0 ]; do
    case "$1" in
        --spinel) spinel=$2; shift 2 ;;
        --bench) bench=$2; shift 2 ;;
        --before) before=$2; shift 2 ;;
        --nullmc) nullmc=$2; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
d=${1:-bench-report/devbin}
mkdir -p "$d/lib" "$d/mc"
strip -o "$d/spinel" "$spinel"
strip -o "$d/spinel-bench" "$bench"
if [ -n "$before" ]; then strip -o "$d/spinel-before" "$before"; else rm -f "$d/spinel-before"; fi
[ -x "$nullmc" ] && cp "$nullmc" "$d/nullmc"
mc=$(command -v memcached)
cp "$mc" "$d/memcached.real"
for lib in $(ldd "$mc" | awk '/=> \// { print $3 }' | grep -v -E '/(libc|libm|libpthread|libdl)\.so'); do
    cp -L "$lib" "$d/lib/"
done
cat > "$d/mc/memcached" <<'EOF'
#!/bin/sh
# memcached with the libraries carried beside it.
here=$(dirname "$(readlink -f "$0")")/..
LD_LIBRARY_PATH="$here/lib" exec "$here/memcached.real" "$@"
EOF
chmod +x "$d/mc/memcached"
cat > "$d/run_device.sh" <<'RUN'
#!/bin/bash
# One device run: the core sweep with the binaries carried in this directory
# (made by scripts/core_sweep_pack.sh).
set -u
d=bench-report/devbin
echo "nproc: $(nproc); $(uname -r); $(grep -m1 'model name' /proc/cpuinfo)"
lscpu | grep -E 'Thread|Core|Socket|NUMA' || true
command -v taskset python3 || echo "missing taskset or python3"
"$d/spinel" --version
memcached=$d/mc/memcached
# The carried libevent wants glibc 2.36: without it, Spinel against nullmc only.
"$memcached" -V || { echo "memcached does not run here: left out"; memcached=""; }
# Server on the first half of the physical cores (all their hardware threads), load on the
# other half, so that no server thread shares a core with the load.
split=$(python3 - <<'PY'
import glob, os
cores = {}
for path in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology/core_id"):
    cpu = int(path.split("/")[5][3:])
    base = os.path.dirname(path)
    key = (open(base + "/physical_package_id").read().strip(), int(open(path).read()))
    cores.setdefault(key, []).append(cpu)
ordered = sorted(cores.values(), key=min)
half = len(ordered) // 2
server = sorted(c for core in ordered[:half] for c in core)
client = sorted(c for core in ordered[half:] for c in core)
print(",".join(map(str, server)), ",".join(map(str, client)))
PY
)
server_cpus=${split% *}; client_cpus=${split#* }
echo "server CPUs: $server_cpus; client CPUs: $client_cpus"
before=()
if [ -x "$d/spinel-before" ]; then
    before=(--server-cmd "before:mc=$d/spinel-before -p {port} --resp-port 0 -t {threads} -m {memory_mib} -c {max_connections}")
fi
scripts/core_sweep.sh --bench "$d/spinel-bench" --spinel "$d/spinel" --memcached "$memcached" \
    --nullmc "$d/nullmc" --server-cpus "$server_cpus" --client-cpus "$client_cpus" \
    "${before[@]}" --threads "${THREADS:-1,8,4,2}" --connections 200 --repeat "${REPEAT:-2}" \
    --duration "${DURATION:-3s}" --extra "--idle-wait 1s" "$OUT/sweep"
RUN
sed -i "s|^d=.*|d=$d|" "$d/run_device.sh"
chmod +x "$d/run_device.sh"
du -sh "$d"
