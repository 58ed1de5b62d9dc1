#!/usr/bin/env python3
"""Push-to-delivery latency of a blocked BLPOP, Spinel against redis-server and valkey-server.

One waiter connection blocks in BLPOP; a pusher connection sends RPUSH and the clock runs
from that send until the waiter has its whole reply (so it covers the push, the serve and,
on Spinel with two workers, the wake of the waiter's loop on another thread when the two
connections landed on different ones). Reported: median and p99 over ROUNDS rounds, per
server. The servers are started here on free ports (redis-server and valkey-server from
PATH), pinned to CPU 1 with this client on CPU 0, measured in turn --repeat times
(interleaved, since two cores are noisy), and stopped by pid.

    scripts/blocking_latency.py [--spinel PATH] [--threads 2] [--rounds 2000]
                                [--servers spinel,redis,valkey] [--repeat 3]
"""

import argparse
import os
import sys
import socket
import statistics
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def enc(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def connect(port):
    deadline = time.monotonic() + 5
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def read_n(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def measure(port, rounds):
    waiter, pusher = connect(port), connect(port)
    reply = b"*2\r\n$1\r\nq\r\n$1\r\nx\r\n"
    samples = []
    for _ in range(rounds):
        waiter.sendall(enc("BLPOP", "q", "5"))
        time.sleep(0.0005)  # let it block (a pop found at once would be no wake)
        started = time.perf_counter()
        pusher.sendall(enc("RPUSH", "q", "x"))
        got = read_n(waiter, len(reply))
        samples.append(time.perf_counter() - started)
        assert got == reply, got
        read_n(pusher, 4)  # :1\r\n
    samples.sort()
    return statistics.median(samples) * 1e6, samples[int(len(samples) * 0.99)] * 1e6


def start(kind, args):
    """Starts one server on a free port; returns (name, port, process)."""
    port = free_port()
    if kind == "spinel":
        return ("spinel -t %d" % args.threads, port, subprocess.Popen(
            ["taskset", "-c", "1", args.spinel, "-p", str(free_port()), "--resp-port", str(port), "-l", "127.0.0.1",
             "-t", str(args.threads), "-m", "64"], stderr=subprocess.DEVNULL))
    binary = f"{kind}-server"
    return (binary, port, subprocess.Popen(
        ["taskset", "-c", "1", binary, "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spinel", default="target/release/spinel")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--servers", default="spinel,redis,valkey")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.sched_setaffinity(0, {0})
    servers = []
    try:
        for kind in args.servers.split(","):
            servers.append(start(kind, args))
        for _ in range(args.repeat):
            for name, port, _ in servers:
                median, p99 = measure(port, args.rounds)
                print(f"{name:14} push-to-delivery median {median:7.1f} us  p99 {p99:7.1f} us",
                      flush=True)
    finally:
        for _, _, proc in servers:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
