#!/usr/bin/env python3
"""EVALSHA of a 5-command script (GET, SET, INCR, EXPIRE, HSET on keys from KEYS) in requests
per server CPU-second: Spinel against redis-server and Valkey from the same run.

Each server runs alone on CPU 1 (taskset), the load generator (this process) on CPU 0. The
generator keeps a few connections busy with pipelined EVALSHA (a batch of --pipeline
requests each, over --keys distinct key triples) for --requests requests per server and
round; the server's CPU time is read from /proc/<pid>/stat (utime + stime) before and
after. Rounds are interleaved (spinel, redis, valkey, spinel, ...) --rounds times, and the
table gives each server's median and the ratios of Spinel's to the others'.

With --also OTHER_SPINEL_BIN a second Spinel build (say, before a change) runs in the same
rounds, as `spinel-also`.

Usage: script_cost.py SPINEL_BIN [--valkey /work/peers/valkey-server] [--requests 200000]
                      [--rounds 3] [--pipeline 100] [--conns 4] [--threads 1]
                      [--also OTHER_SPINEL_BIN]
"""

import argparse
import os
import selectors
import shutil
import socket
import statistics
import subprocess
import time

SCRIPT = """
local v = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1])
local n = redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], 100)
redis.call('HSET', KEYS[3], 'f', ARGV[1])
return n
"""


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
    if kind.startswith("spinel"):
        argv = [binary, "-p", "0", "--resp-port", str(port), "-t", str(threads), "-m", "256"]
    else:
        argv = [binary, "--port", str(port), "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(["taskset", "-c", "1", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            assert time.monotonic() < deadline, f"{kind} did not start"
            time.sleep(0.05)


def cpu_seconds(pid):
    """utime + stime of every thread of `pid`, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def call(sock, *args):
    sock.sendall(enc(*args))
    data = b""
    while not data.endswith(b"\r\n"):
        data += sock.recv(65536)
    return data


def run_round(port, pid, sha, args):
    """Sends args.requests EVALSHA; returns requests per server CPU-second."""
    batches = []
    for b in range(args.keys // args.pipeline or 1):
        out = []
        for i in range(args.pipeline):
            k = (b * args.pipeline + i) % args.keys
            out.append(enc("EVALSHA", sha, "3", f"s:{k}", f"n:{k}", f"h:{k}", "value-16-bytes.."))
        batches.append(b"".join(out))
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(args.conns):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
    per_conn = args.requests // args.conns // args.pipeline
    state = {s: {"sent": 0, "pending": 0, "at": 0} for s in socks}
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    before = cpu_seconds(pid)
    started = time.monotonic()
    for index, s in enumerate(socks):
        s.sendall(batches[index % len(batches)])
        state[s]["sent"] = 1
        state[s]["pending"] = args.pipeline
    done = 0
    while done < len(socks):
        for key, _ in sel.select():
            s = key.fileobj
            st = state[s]
            data = s.recv(1 << 20)
            assert data, "server closed"
            assert not data.startswith(b"-"), data[:200]
            st["pending"] -= data.count(b"\r\n")
            if st["pending"] <= 0:
                assert st["pending"] == 0, "reply split differently than expected"
                if st["sent"] == per_conn:
                    sel.unregister(s)
                    done += 1
                    continue
                st["at"] = (st["at"] + 1) % len(batches)
                s.sendall(batches[st["at"]])
                st["sent"] += 1
                st["pending"] = args.pipeline
    elapsed = time.monotonic() - started
    cpu = cpu_seconds(pid) - before
    for s in socks:
        s.close()
    total = per_conn * args.pipeline * len(socks)
    return total / cpu, total / elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("spinel")
    parser.add_argument("--valkey", default="/work/peers/valkey-server")
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pipeline", type=int, default=100)
    parser.add_argument("--conns", type=int, default=4)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--also", help="a second Spinel binary, measured in the same rounds")
    args = parser.parse_args()
    os.sched_setaffinity(0, {0})
    servers = [("spinel", args.spinel)]
    if args.also:
        servers.append(("spinel-also", args.also))
    servers.append(("redis", shutil.which("redis-server")))
    if args.valkey and os.path.exists(args.valkey):
        servers.append(("valkey", args.valkey))
    running = {}
    for kind, binary in servers:
        port = free_port()
        proc = start(kind, binary, port, args.threads)
        with socket.create_connection(("127.0.0.1", port)) as s:
            reply = call(s, "SCRIPT", "LOAD", SCRIPT)
            sha = reply.split(b"\r\n")[1].decode()
        running[kind] = (proc, port, sha)
    results = {kind: [] for kind, _ in servers}
    try:
        for _ in range(args.rounds):
            for kind, _ in servers:
                proc, port, sha = running[kind]
                results[kind].append(run_round(port, proc.pid, sha, args))
    finally:
        for proc, _, _ in running.values():
            proc.terminate()
            proc.wait()
    print(f"EVALSHA of a 5-command script (GET SET INCR EXPIRE HSET), {args.requests} "
          f"requests x {args.rounds} rounds, pipeline {args.pipeline}, {args.conns} conns, "
          f"server on CPU 1, client on CPU 0")
    print(f"{'server':11} {'req/CPU-s (median)':>20} {'runs':>32} {'req/s wall':>12}")
    medians = {}
    for kind, _ in servers:
        per_cpu = [r[0] for r in results[kind]]
        medians[kind] = statistics.median(per_cpu)
        wall = statistics.median(r[1] for r in results[kind])
        runs = " ".join(f"{x:,.0f}" for x in per_cpu)
        print(f"{kind:11} {medians[kind]:>20,.0f} {runs:>32} {wall:>12,.0f}")
    for kind, _ in servers[1:]:
        print(f"spinel / {kind}: {medians['spinel'] / medians[kind]:.2f}")


if __name__ == "__main__":
    main()
