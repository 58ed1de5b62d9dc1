#!/usr/bin/env python3
"""CPU per request of a load generator: spinel-bench and memtier_benchmark on the same load.

    scripts/client_cost.py [--repeat 2] [--seconds 5]

memcached (-t 1) pinned to CPU 1, the client pinned to CPU 0; 50 connections, one client
thread, pipeline 1, 20-byte keys and values, 100% get over 10,000 preloaded keys (every get
a hit, for both tools). Client CPU is utime+stime from /proc/PID/stat, sampled until the
client exits; server CPU likewise over the run. The two tools alternate, repetitions
outermost. Needs target/release/spinel-bench and /tmp/memtier/memtier_benchmark
(../shared/bench/build_memtier.sh). Only the processes this script starts are stopped.
"""
import argparse
import json
import os
import socket
import subprocess
import tempfile
import time

TCK = os.sysconf("SC_CLK_TCK")
BENCH = "target/release/spinel-bench"
MEMTIER = "/tmp/memtier/memtier_benchmark"
KEYSPACE = 10000
# memtier appends the key number to its prefix without padding: 20-byte keys need a range
# of 5-digit numbers. Each tool preloads its own keys, so every get is a hit.
MEMTIER_KEYS = ["--key-prefix", "key:00000000000", "--key-minimum", "10000",
                "--key-maximum", "19999"]


def cpu_secs(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TCK


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client_command(tool, port, seconds, json_path):
    if tool == "spinel-bench":
        return [BENCH, "-s", f"127.0.0.1:{port}", "-c", "50", "-t", "1", "--pipeline", "1",
                "--ratio", "0:1", "--key-size", "20", "--value-size", "20", "--keyspace",
                str(KEYSPACE), "--duration", f"{seconds}s", "--json", "-q"]
    return [MEMTIER, "-s", "127.0.0.1", "-p", str(port), "-P", "memcache_text", "-c", "50",
            "-t", "1", "--pipeline", "1", "--ratio", "0:1", "-d", "20", *MEMTIER_KEYS,
            "--test-time", str(seconds), "--hide-histogram", "--json-out-file", json_path]


def requests_done(tool, stdout, json_path, seconds):
    if tool == "spinel-bench":
        return json.loads(stdout)["requests"]
    totals = json.load(open(json_path))["ALL STATS"]["Totals"]
    return totals.get("Count") or totals["Ops/sec"] * seconds


def preload(tool, port):
    if tool == "spinel-bench":
        argv = [BENCH, "-s", f"127.0.0.1:{port}", "--preload", "--requests", "1", "--ratio",
                "0:1", "-q", "--key-size", "20", "--value-size", "20", "--keyspace",
                str(KEYSPACE)]
    else:
        argv = [MEMTIER, "-s", "127.0.0.1", "-p", str(port), "-P", "memcache_text", "-c", "1",
                "-t", "1", "--ratio", "1:0", "--key-pattern", "P:P", "-d", "20", *MEMTIER_KEYS,
                "-n", "allkeys", "--hide-histogram"]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def memcached_stat(port, name):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"stats\r\nquit\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    for line in data.decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == name:
            return int(parts[2])
    raise RuntimeError(f"no stat {name}")


def measure(tool, seconds):
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", "1", "memcached", "-u", "root", "-l",
                               "127.0.0.1", "-p", str(port), "-t", "1", "-U", "0", "-m", "256"])
    try:
        time.sleep(0.5)
        preload(tool, port)
        json_path = tempfile.mktemp(suffix=".json")
        server_cpu_start = cpu_secs(server.pid)
        client = subprocess.Popen(["taskset", "-c", "0", *client_command(tool, port, seconds,
                                                                          json_path)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        client_cpu = 0.0
        while client.poll() is None:
            try:
                client_cpu = cpu_secs(client.pid)
            except OSError:
                pass
            time.sleep(0.05)
        server_cpu = cpu_secs(server.pid) - server_cpu_start
        requests = requests_done(tool, client.stdout.read(), json_path, seconds)
        hits = memcached_stat(port, "get_hits")
        return requests, client_cpu, server_cpu, hits
    finally:
        server.terminate()
        server.wait(timeout=10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    print(f"{'run':>3} {'client':13} {'req/s':>9} {'client us/req':>13} {'memcached CPU':>13} "
          f"{'hit ratio':>9}")
    for rep in range(1, args.repeat + 1):
        for tool in ("spinel-bench", "memtier"):
            requests, client_cpu, server_cpu, hits = measure(tool, args.seconds)
            print(f"{rep:>3} {tool:13} {requests / args.seconds:>9,.0f} "
                  f"{client_cpu / requests * 1e6:>13.2f} {server_cpu / args.seconds:>12.0%} "
                  f"{min(hits / requests, 1.0):>9.3f}")


if __name__ == "__main__":
    main()
