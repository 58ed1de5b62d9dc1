#!/usr/bin/env python3
"""What a request costs the server, by CPU placement: its CPU time, system calls and context
switches per request, counted by perf's software events and syscall tracepoints (which work
where the hypervisor exposes no PMU), for one or two worker threads on the load generator's
core or beside it. It answers where the per-CPU-second loss of two workers on a two-core
machine comes from (docs/benchmarks/cores.md).

    scripts/worker_sched_cost.py --bench target/release/spinel-bench \\
        --server 'spinel=target/release/spinel -p {port} --resp-port 0 -t {threads} -m 1024' \\
        --server 'memcached=memcached -u root -l 127.0.0.1 -U 0 -p {port} -t {threads} -m 1024' \\
        [--place 1:1 --place 2:0,1 --place 2:1] [--load-cpus 0] [--seconds 3] [--repeat 2]

Each --place is THREADS:SERVER_CPUS. For each repetition, placement and server (interleaved),
the server starts pinned (taskset), spinel-bench preloads 10,000 keys of 20/20 and runs a
closed loop of single gets (50 connections, one thread pinned to --load-cpus); while it
runs, `perf stat -p PID` counts the server's task-clock, context switches, CPU migrations
and system calls for --seconds, and memcached's `stats` (cmd_get, before and after) counts
the requests served in that window. Prints a table with the medians.
"""

import argparse
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_cost import memcached_stat  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_requests import free_port, wait_port  # noqa: E402

EVENTS = ["task-clock", "context-switches", "cpu-migrations", "raw_syscalls:sys_enter",
          "syscalls:sys_enter_io_uring_enter", "syscalls:sys_enter_epoll_wait"]


def perf_counts(pid, seconds):
    out = subprocess.run(["perf", "stat", "-x", ",", "-e", ",".join(EVENTS), "-p", str(pid),
                          "--", "sleep", str(seconds)], capture_output=True, text=True).stderr
    counts = {}
    for line in out.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2] in EVENTS:
            try:
                counts[fields[2]] = float(fields[0])
            except ValueError:
                counts[fields[2]] = 0.0
    return counts


def measure(args, command, threads, cpus):
    port = free_port()
    cmd = command.format(port=port, threads=threads)
    server = subprocess.Popen(["taskset", "-c", cpus] + shlex.split(cmd),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, 20).close()
        load_secs = args.seconds + 2.0
        load = subprocess.Popen(
            [args.bench, "-s", f"127.0.0.1:{port}", "-t", "1", "-c", "50", "--cpus",
             args.load_cpus, "--ratio", "0:1", "--keyspace", "10000", "--preload", "--quiet",
             "--warmup", "1s", "--duration", f"{load_secs}s"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        gets0 = memcached_stat(port, "cmd_get")
        counts = perf_counts(server.pid, args.seconds)
        gets1 = memcached_stat(port, "cmd_get")
        load.wait(timeout=load_secs + 30)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    requests = max(gets1 - gets0, 1)
    cpu_secs = counts.get("task-clock", 0.0) / 1e3
    return {
        "req/s": requests / args.seconds,
        "req per CPU-s": requests / cpu_secs if cpu_secs else 0.0,
        "CPU (cores)": cpu_secs / args.seconds,
        "us CPU/req": cpu_secs * 1e6 / requests,
        "syscalls/req": counts.get("raw_syscalls:sys_enter", 0.0) / requests,
        "waits/req": (counts.get("syscalls:sys_enter_io_uring_enter", 0.0)
                      + counts.get("syscalls:sys_enter_epoll_wait", 0.0)) / requests,
        "ctx switches/req": counts.get("context-switches", 0.0) / requests,
        "migrations/s": counts.get("cpu-migrations", 0.0) / args.seconds,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--server", action="append", required=True, help="NAME=COMMAND")
    ap.add_argument("--place", action="append", help="THREADS:SERVER_CPUS")
    ap.add_argument("--load-cpus", default="0")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    places = args.place or ["1:1", "2:0,1", "2:1"]
    servers = [s.split("=", 1) for s in args.server]
    results = {}
    for rep in range(args.repeat):
        for place in places:
            threads, cpus = place.split(":", 1)
            for name, command in servers:
                r = measure(args, command, threads, cpus)
                results.setdefault((name, place), []).append(r)
                print(f"rep {rep + 1} {name} -t {threads} on CPUs {cpus}: "
                      f"{r['req/s'] / 1e3:.0f}k req/s, {r['req per CPU-s'] / 1e3:.0f}k/CPU-s",
                      file=sys.stderr, flush=True)
    keys = list(next(iter(results.values()))[0])
    print("| server | -t | server CPUs | " + " | ".join(keys) + " |")
    print("|---|--:|---|" + "--:|" * len(keys))
    for (name, place), rs in results.items():
        threads, cpus = place.split(":", 1)
        cells = []
        for k in keys:
            v = statistics.median(r[k] for r in rs)
            cells.append(f"{v / 1e3:.0f}k" if v >= 1e4 else f"{v:.2f}")
        print(f"| {name} | {threads} | {cpus} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
