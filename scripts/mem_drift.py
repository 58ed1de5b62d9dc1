#!/usr/bin/env python3
"""Memory under a drifting workload: set failures and peak RSS, spinel and memcached side by side.

    scripts/mem_drift.py [--servers spinel,memcached] [--memory-mib 64] [--conns 16]
                         [--phase-s 2] [--phases small,large,tiny,mixed] [--get-ratio 0.1]
                         [--spinel target/release/spinel] [--spinel-args '--io epoll']
                         [--memcached-args '-t 4']

Each server is started with `-m MEMORY` on a free loopback port; CONNS connections (one thread
each) then set values whose sizes drift through the phases, PHASE_S seconds each (100 B, then
100-500 KB, then 50 B, then 1 B-512 KB; the load is tests/conformance/drift.py). Printed per
server: sets, gets, replies other than STORED (by message), peak RSS (VmHWM), RSS at the end,
and the peaks of total_malloced and conn_buffer_bytes sampled every 0.1 s. Bounded: the phases
plus start and stop. Only the processes this script starts are stopped.
"""
import argparse
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "conformance"))
import drift  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, deadline):
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} did not open")


def command(name, port, args):
    mem = str(args.memory_mib)
    if name == "spinel":
        return [args.spinel, "-p", str(port), "--resp-port", "0", "-m", mem, "-c", "1024",
                *args.spinel_args.split()]
    return ["memcached", "-u", "nobody", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", mem,
            "-c", "1024", *args.memcached_args.split()]


def run(name, args):
    port = free_port()
    server = subprocess.Popen(command(name, port, args), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        wait_port(port, time.time() + 20)
        load = drift.Load(port, args.conns, args.phase_s, args.phases.split(","), args.get_ratio)
        hwm, peak, peaks = drift.run_sampled(load, server.pid, port)
        time.sleep(0.5)
        end = drift.proc_status_kib(server.pid)["VmRSS"]
        return load, hwm, peak, end, peaks
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spinel,memcached")
    parser.add_argument("--memory-mib", type=int, default=64)
    parser.add_argument("--conns", type=int, default=16)
    parser.add_argument("--phase-s", type=float, default=2.0)
    parser.add_argument("--phases", default=",".join(drift.PHASES), help="a subset, any order")
    parser.add_argument("--get-ratio", type=float, default=0.1, help="share of gets")
    parser.add_argument("--spinel", default="target/release/spinel")
    parser.add_argument("--spinel-args", default="")
    parser.add_argument("--memcached-args", default="")
    args = parser.parse_args()
    for name in args.servers.split(","):
        load, hwm, peak, end, peaks = run(name, args)
        print(f"{name}: -m {args.memory_mib}, {args.conns} conns, {args.phase_s} s/phase: "
              f"sets {load.counts['sets']} gets {load.counts['gets']} failures {load.failures}")
        for msg, n in load.errors.most_common():
            print(f"    {n:6} {msg}")
        print(f"    peak RSS (VmHWM) {hwm / 1024:.1f} MiB, sampled peak {peak / 1024:.1f} MiB, "
              f"RSS at end {end / 1024:.1f} MiB")
        print(f"    sampled peaks: total_malloced {peaks['total_malloced'] / 2**20:.1f} MiB, "
              f"conn_buffer_bytes {peaks['conn_buffer_bytes'] / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
