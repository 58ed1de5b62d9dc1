#!/usr/bin/env python3
"""Pub/sub delivery: messages per second delivered and latency from PUBLISH to receipt,
with 1, 100 and 10,000 subscribers, Spinel against redis-server and valkey-server (both
from PATH) in the same run. The
client is one Python process (a selector over every subscriber socket; a publisher
pipelining 100 PUBLISHes of 32 bytes, then one at a time for latency), pinned to CPU 0,
the servers to CPU 1. With --threads 2 Spinel's two workers share that CPU, so a publish
crosses threads (subscribers spread over both loops) at the price of context switches.

Deliveries per server CPU-second (utime + stime of the server process, from /proc, over the
throughput phase) are the figure to compare on a shared machine; with --rounds R each
(subscribers, server) pair runs R times, interleaved across servers, and the table gives
the medians and Spinel's ratio to each peer.

Usage: pubsub_cost.py SPINEL_BIN [--subscribers 1,100,10000] [--deliveries 200000]
                      [--threads N] [--servers spinel,redis,valkey] [--rounds 1]
"""

import argparse
import os
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def enc(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def start(kind, binary, port, threads):
    if kind == "spinel":
        argv = [binary, "-p", "0", "--resp-port", str(port), "-t", str(threads), "-c", "20000"]
    else:
        binary = shutil.which(f"{kind}-server")
        assert binary, f"{kind}-server is not in PATH"
        argv = [binary, "--port", str(port), "--save", "",
                "--maxclients", "15000"]
    proc = subprocess.Popen(["taskset", "-c", "1", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def cpu_seconds(pid):
    """utime + stime of every thread of `pid`, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def subscribe(port, n):
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(enc("SUBSCRIBE", "bench"))
        socks.append(s)
    for s in socks:
        buf = b""
        while not buf.endswith(b":1\r\n"):
            buf += s.recv(4096)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    return sel, socks


MESSAGE_HEAD = b"*3\r\n$7\r\nmessage\r\n$5\r\nbench\r\n"


PAYLOAD = b"x" * 32
MESSAGE_BYTES = len(MESSAGE_HEAD) + len(b"$32\r\n") + len(PAYLOAD) + 2
RECEIVED = {"bytes": 0}


def drain_count(sel, want, deadline_s=120):
    """Reads until `want` throughput messages arrived in all (counted by their fixed size,
    since a read may split one); returns how many."""
    deadline = time.monotonic() + deadline_s
    while RECEIVED["bytes"] // MESSAGE_BYTES < want and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            RECEIVED["bytes"] += len(key.fileobj.recv(1 << 20))
    return RECEIVED["bytes"] // MESSAGE_BYTES


def throughput(pub, sel, n, deliveries, pid):
    messages = max(1, deliveries // n)
    payload = PAYLOAD
    RECEIVED["bytes"] = 0
    start = time.monotonic()
    cpu_before = cpu_seconds(pid)
    batch = enc("PUBLISH", "bench", payload) * 100
    sent = 0
    while sent < messages:
        k = min(100, messages - sent)
        pub.sendall(batch if k == 100 else enc("PUBLISH", "bench", payload) * k)
        buf = b""
        while buf.count(b"\r\n") < k:
            buf += pub.recv(1 << 16)
        sent += k
        drain_count(sel, 0, 0)
    got = drain_count(sel, messages * n)
    elapsed = time.monotonic() - start
    cpu = max(cpu_seconds(pid) - cpu_before, 1 / os.sysconf("SC_CLK_TCK"))
    return got / elapsed, got / cpu, got == messages * n


def latency(pub, sel, socks, rounds=200):
    """One PUBLISH at a time; the time until the first subscriber has it."""
    first = socks[0]
    sel.unregister(first)
    first.setblocking(True)
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        pub.sendall(enc("PUBLISH", "bench", "t"))
        buf = b""
        while MESSAGE_HEAD not in buf:
            buf += first.recv(1 << 16)
        samples.append(time.perf_counter() - t0)
        pub.recv(1 << 16)
        for key, _ in sel.select(timeout=0):
            key.fileobj.recv(1 << 20)
    samples.sort()
    return samples[len(samples) // 2] * 1e6, samples[int(len(samples) * 0.99)] * 1e6


def one_run(kind, spinel, n, args):
    """One server, one subscriber count: (deliveries/s, per CPU-s, p50 µs, p99 µs, complete)."""
    port = free_port()
    proc = start(kind, spinel, port, args.threads)
    try:
        sel, socks = subscribe(port, n)
        pub = socket.create_connection(("127.0.0.1", port))
        rate, per_cpu, complete = throughput(pub, sel, n, args.deliveries, proc.pid)
        p50, p99 = latency(pub, sel, socks, rounds=200 if n < 10000 else 50)
        for s in socks:
            s.close()
        pub.close()
        return rate, per_cpu, p50, p99, complete
    finally:
        proc.terminate()
        proc.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("spinel")
    parser.add_argument("--subscribers", default="1,100,10000")
    parser.add_argument("--deliveries", type=int, default=200_000)
    parser.add_argument("--threads", type=int, default=1,
                        help="Spinel's workers, all on the server's one CPU")
    parser.add_argument("--servers", default="spinel,redis,valkey")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    os.sched_setaffinity(0, {0})
    kinds = args.servers.split(",")
    print("| subscribers | server | deliveries/s | deliveries/CPU-s (runs) | p50 µs | p99 µs |"
          " spinel / server |\n|--:|---|--:|--:|--:|--:|--:|")
    for n in [int(x) for x in args.subscribers.split(",")]:
        runs = {kind: [] for kind in kinds}
        for _ in range(args.rounds):
            for kind in kinds:
                runs[kind].append(one_run(kind, args.spinel, n, args))
        median = {kind: statistics.median(r[1] for r in runs[kind]) for kind in kinds}
        for kind in kinds:
            r = runs[kind]
            rate = statistics.median(x[0] for x in r)
            p50 = statistics.median(x[2] for x in r)
            p99 = statistics.median(x[3] for x in r)
            note = "" if all(x[4] for x in r) else " (incomplete)"
            each = " ".join(f"{x[1]:,.0f}" for x in r)
            ratio = f"{median['spinel'] / median[kind]:.2f}" if "spinel" in median else "-"
            print(f"| {n} | {kind} | {rate:,.0f}{note} | {median[kind]:,.0f} ({each}) | "
                  f"{p50:.0f} | {p99:.0f} | {ratio} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
