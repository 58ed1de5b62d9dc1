#!/usr/bin/env python3
"""Bytes per stream entry, Spinel against redis-server: each server is started on a free
loopback port, sent the same XADD load (pipelined 1,000 at a time on one connection),
and the growth of INFO used_memory and of VmRSS is divided by the entry count.

    scripts/stream_memory.py [--spinel target/release/spinel] [--redis redis-server]
        [--entries 1000000] [--workload fixed|varied|both] [--servers spinel,redis]

Workloads:
  fixed   `XADD s * event completed jobId <i>`: every entry has the master's fields
          (what a job queue writes).
  varied  one of four field sets in turn (so about a quarter of the entries share the
          master's names), values of 20 to 200 bytes, some integers: a shape the packing
          is not tuned to.

Only the processes it starts are stopped (by their handle).
"""
import argparse
import os
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_servers import encode, free_port, start_server  # noqa: E402

BATCH = 1000


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("server closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("server closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def reply(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.exact(n)
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        return rest

    def call(self, *args):
        self.sock.sendall(encode(*args))
        return self.reply()

    def pipeline(self, commands):
        self.sock.sendall(b"".join(encode(*c) for c in commands))
        for _ in commands:
            self.reply()


def fixed_entry(i):
    return ["event", "completed", "jobId", str(i)]


FIELD_SETS = [
    ["user", "action", "payload"],
    ["sensor", "reading"],
    ["order", "sku", "quantity", "note"],
    ["msg"],
]


def varied_entry(i):
    names = FIELD_SETS[(i * 7 + i // 13) % len(FIELD_SETS)]
    out = []
    for k, name in enumerate(names):
        if k % 2 == 1:
            value = str(i * 31 + k)
        else:
            size = 20 + (i * 37 + k * 11) % 181
            value = (f"{name}-{i}-" * 20)[:size]
        out += [name, value]
    return out


def used_memory(conn):
    info = conn.call("INFO", "memory").decode()
    return int(next(l for l in info.split("\r\n") if l.startswith("used_memory:")).split(":")[1])


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    return 0


def server_cmd(kind, args, port, workdir):
    if kind == "spinel":
        return [args.spinel, "-p", "0", "--resp-port", str(port), "-l", "127.0.0.1",
                "-t", "1", "-m", "4096", "--dir", workdir]
    return [args.redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", workdir]


def measure(kind, args, workload):
    port = free_port()
    workdir = tempfile.mkdtemp(prefix=f"stream-mem-{kind}-")
    proc = start_server(kind, server_cmd(kind, args, port, workdir), port,
                        os.path.join(workdir, "server.log"))
    try:
        conn = Conn(port)
        entry = fixed_entry if workload == "fixed" else varied_entry
        rss0, used0 = rss(proc.pid), used_memory(conn)
        for start in range(0, args.entries, BATCH):
            stop = min(start + BATCH, args.entries)
            conn.pipeline([["XADD", "s", "*", *entry(i)] for i in range(start, stop)])
        time.sleep(0.3)
        length = int(conn.call("XLEN", "s"))
        assert length == args.entries, (kind, length)
        rss1, used1 = rss(proc.pid), used_memory(conn)
        n = args.entries
        return (used1 - used0) / n, (rss1 - rss0) / n
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spinel", default="target/release/spinel")
    ap.add_argument("--redis", default="redis-server")
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--workload", default="both", choices=["fixed", "varied", "both"])
    ap.add_argument("--servers", default="spinel,redis")
    args = ap.parse_args()
    workloads = ["fixed", "varied"] if args.workload == "both" else [args.workload]
    for workload in workloads:
        for kind in args.servers.split(","):
            used, resident = measure(kind, args, workload)
            print(f"{workload:7} {kind:7} used_memory {used:7.1f} B/entry   RSS {resident:7.1f} B/entry",
                  flush=True)


if __name__ == "__main__":
    main()
