#!/usr/bin/env python3
"""Cost of LPUSH, LPOP and RPOPLPUSH as lists grow: wall microseconds per command on lists of
1,000, 100,000 and 1,000,000 elements, for Spinel and its Redis peers.

    scripts/large_list_cost.py [--servers spinel,redis,valkey] [--commands 20000]
        [--server-cmd NAME=ARGV ...]

Each server (-t 1 / single-threaded) is pinned to CPU 1 and the client to CPU 0. The list
and a second one are filled with RPUSH of `elementN` values 1,000 at a time; then
`--commands` LPUSH, as many LPOP, and as many RPOPLPUSH from the first to the second (at
most half the list) are sent
in pipelined batches of 1,000, one connection, and timed. `spinel` is
target/release/spinel; `redis` is redis-server from PATH; `valkey` is valkey-server from PATH
(../shared/bench/build_peers.sh builds it). `--server-cmd NAME=ARGV` adds another, `{port}`
standing for the port (for an older Spinel binary, say). Two cores are noisy: repeat, and
compare ratios. Only the processes this script starts are stopped.
"""
import argparse
import os
import shlex
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "conformance"))
from wire import resp_encode  # noqa: E402

SIZES = (1_000, 100_000, 1_000_000)
BATCH = 1_000


def server_argv(name, port, extra):
    if name in extra:
        return [a.replace("{port}", str(port)) for a in shlex.split(extra[name])]
    if name == "spinel":
        return ["target/release/spinel", "-p", "0", "--resp-port", str(port), "-t", "1",
                "-m", "2048"]
    binary = {"redis": "redis-server", "valkey": "valkey-server"}[name]
    return [binary, "--port", str(port), "--save", "", "--appendonly", "no",
            "--maxmemory", "2gb"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reply_end(buf, at):
    """Where the RESP reply that starts at `at` ends, or None if `buf` does not hold it all."""
    line_end = buf.find(b"\r\n", at)
    if line_end < 0:
        return None
    kind, head = buf[at:at + 1], buf[at + 1:line_end]
    at = line_end + 2
    if kind == b"$":
        length = int(head)
        if length < 0:
            return at
        return at + length + 2 if len(buf) >= at + length + 2 else None
    if kind in (b"*", b"%", b"~"):
        count = int(head) * (2 if kind == b"%" else 1)
        for _ in range(max(count, 0)):
            at = reply_end(buf, at)
            if at is None:
                return None
        return at
    return at  # a simple string, an error, an integer, a null


def run_batch(conn, commands):
    """Sends the commands at once and reads all their replies."""
    conn.sendall(b"".join(resp_encode(*c) for c in commands))
    chunks, buf, at, read = [], b"", 0, 0
    while read < len(commands):
        chunks.append(conn.recv(1 << 20))
        buf = buf[at:] + b"".join(chunks)
        chunks, at = [], 0
        while read < len(commands):
            end = reply_end(buf, at)
            if end is None:
                break
            at, read = end, read + 1


def measure(name, argv, commands):
    proc = subprocess.Popen(["taskset", "-c", "1"] + argv, stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.7)
        conn = socket.create_connection(("127.0.0.1", PORTS[name]))
        for size in SIZES:
            run_batch(conn, [["DEL", "l", "m"]])
            for start in range(0, size, BATCH):
                values = [f"element{i}" for i in range(start, start + BATCH)]
                run_batch(conn, [["RPUSH", "l"] + values, ["RPUSH", "m"] + values])
            costs = []
            for command in (["LPUSH", "l", "x"], ["LPOP", "l"], ["RPOPLPUSH", "l", "m"]):
                # RPOPLPUSH takes at most half the source, so that it never empties it.
                n = commands if command[0] != "RPOPLPUSH" else min(commands, size // 2)
                started = time.perf_counter()
                for _ in range(max(n // BATCH, 1)):
                    run_batch(conn, [command] * BATCH)
                costs.append((time.perf_counter() - started) / (max(n // BATCH, 1) * BATCH) * 1e6)
            print(f"{name:12} {size:>9} elements: LPUSH {costs[0]:9.2f} us, "
                  f"LPOP {costs[1]:9.2f} us, RPOPLPUSH {costs[2]:9.2f} us", flush=True)
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


PORTS = {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", default="spinel,redis,valkey")
    parser.add_argument("--commands", type=int, default=20_000)
    parser.add_argument("--server-cmd", action="append", default=[], metavar="NAME=ARGV")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.server_cmd)
    os.sched_setaffinity(0, {0})
    for name in args.servers.split(",") + [n for n in extra if n not in args.servers]:
        PORTS[name] = free_port()
        measure(name, server_argv(name, PORTS[name], extra), args.commands)


if __name__ == "__main__":
    main()
