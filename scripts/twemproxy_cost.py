#!/usr/bin/env python3
"""What a twemproxy hop costs, for Spinel and for memcached: the same load direct and through
nutcracker (issue 14).

    scripts/twemproxy_cost.py [--repeat 3] [--seconds 5] [--spinel target/release/spinel]
                              [--bench target/release/spinel-bench]

One server (-t 1) pinned to CPU 1. The load generator (spinel-bench, values verified) pinned
to CPU 0, and in the proxied runs nutcracker beside it on CPU 0, as a twemproxy on the client
host would run: one pool holding just that server, ketama, one server connection (the
default). 50 connections, one client thread, pipeline 1, 20-byte keys and values, 9 gets to 1
set over 10,000 preloaded keys. Server and proxy CPU are utime+stime from /proc/PID/stat,
read before and after the measured run. Servers and modes alternate, repetitions outermost;
the table shows each run and then the medians. Needs spinel-bench, memcached
and nutcracker (scripts/install-test-deps). Only the processes this script starts are stopped.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time

TCK = os.sysconf("SC_CLK_TCK")
NUTCRACKER = "/usr/sbin/nutcracker"
KEYSPACE = 10000
LOAD = ["-c", "50", "-t", "1", "--pipeline", "1", "--ratio", "1:9", "--key-size", "20",
        "--value-size", "20", "--keyspace", str(KEYSPACE)]
SERVER_CPU = "1"
CLIENT_CPU = "0"


def cpu_secs(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TCK


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(proc, port, timeout_s=10):
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"port {port} not listening after {timeout_s}s")
            time.sleep(0.02)


def start_server(kind, spinel, port):
    if kind == "spinel":
        argv = [spinel, "-p", str(port), "--resp-port", "0", "-l", "127.0.0.1", "-t", "1",
                "-m", "256"]
    else:
        argv = ["memcached", "-p", str(port), "-l", "127.0.0.1", "-t", "1", "-U", "0", "-m",
                "256"]
        if os.geteuid() == 0:
            argv += ["-u", "root"]
    proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_listening(proc, port)
    return proc


def start_proxy(server_port, tmp_dir):
    port, stats_port = free_port(), free_port()
    config = os.path.join(tmp_dir, "nutcracker.yml")
    with open(config, "w") as f:
        f.write(f"bench:\n  listen: 127.0.0.1:{port}\n  hash: md5\n  distribution: ketama\n"
                f"  servers:\n   - 127.0.0.1:{server_port}:1\n")
    # Debian's build logs under /var/log and writes its pid under /run unless told otherwise.
    argv = [NUTCRACKER, "-c", config, "-o", os.path.join(tmp_dir, "nutcracker.log"),
            "-p", os.path.join(tmp_dir, "nutcracker.pid"), "-s", str(stats_port),
            "-a", "127.0.0.1"]
    proc = subprocess.Popen(["taskset", "-c", CLIENT_CPU, *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_listening(proc, port)
    return proc, port


def bench(tool, port, *extra):
    argv = ["taskset", "-c", CLIENT_CPU, tool, "-s", f"127.0.0.1:{port}", *LOAD, "--json",
            "-q", *extra]
    return json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)


def measure(kind, mode, args):
    server_port = free_port()
    stopped = []
    with tempfile.TemporaryDirectory(prefix="twemproxy-cost-") as tmp_dir:
        try:
            server = start_server(kind, args.spinel, server_port)
            stopped.append(server)
            port, proxy = server_port, None
            if mode == "twemproxy":
                proxy, port = start_proxy(server_port, tmp_dir)
                stopped.append(proxy)
            # Preload and a second of warm-up in a run of their own, so the CPU read around
            # the measured run holds that run alone.
            bench(args.bench, port, "--preload", "--duration", "1s")
            server_start = cpu_secs(server.pid)
            proxy_start = cpu_secs(proxy.pid) if proxy else 0.0
            result = bench(args.bench, port, "--duration", f"{args.seconds}s")
            server_cpu = cpu_secs(server.pid) - server_start
            proxy_cpu = cpu_secs(proxy.pid) - proxy_start if proxy else 0.0
        finally:
            for proc in stopped:
                proc.terminate()
                proc.wait(timeout=10)
    bad = result["corrupt"] + result["errors_total"] + result["misses"]
    if bad:
        raise RuntimeError(f"{kind} {mode}: {bad} corrupt, failed or missed requests")
    return {"requests": result["requests"], "secs": result["duration_secs"],
            "server_cpu": server_cpu, "proxy_cpu": proxy_cpu,
            "p50_us": result["latency_us"]["p50"], "p99_us": result["latency_us"]["p99"]}


def row(label, runs):
    def median(f):
        return statistics.median(f(r) for r in runs)

    rate = median(lambda r: r["requests"] / r["secs"])
    per_server_cpu = median(lambda r: r["requests"] / r["server_cpu"])
    server_share = median(lambda r: r["server_cpu"] / r["secs"])
    proxy_us = median(lambda r: r["proxy_cpu"] / r["requests"] * 1e6)
    p50, p99 = median(lambda r: r["p50_us"]), median(lambda r: r["p99_us"])
    print(f"{label:28} {rate:>9,.0f} {per_server_cpu:>14,.0f} {server_share:>7.0%} "
          f"{proxy_us:>10.2f} {p50:>8.0f} {p99:>8.0f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--spinel", default="target/release/spinel")
    parser.add_argument("--bench", default="target/release/spinel-bench")
    args = parser.parse_args()
    header = (f"{'run':28} {'req/s':>9} {'req/server CPU-s':>14} {'server':>7} "
              f"{'proxy us/req':>10} {'p50 us':>8} {'p99 us':>8}")
    print(header)
    cases = [(kind, mode) for kind in ("spinel", "memcached") for mode in ("direct", "twemproxy")]
    runs = {case: [] for case in cases}
    for rep in range(1, args.repeat + 1):
        for kind, mode in cases:
            r = measure(kind, mode, args)
            runs[kind, mode].append(r)
            row(f"{rep} {kind} {mode}", [r])
    print("medians")
    for kind, mode in cases:
        row(f"{kind} {mode}", runs[kind, mode])


if __name__ == "__main__":
    main()
