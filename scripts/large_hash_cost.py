#!/usr/bin/env python3
"""Cost of HSET, HGET, HINCRBY and HDEL as hashes grow (or SADD, SISMEMBER, SCARD, SREM and
SPOP as sets grow, or ZADD, ZSCORE, ZRANK, ZRANGE of 10, ZINCRBY, ZREM and ZPOPMIN as sorted
sets grow): wall microseconds per command on hashes of 1,000, 100,000 and 1,000,000
fields, for Spinel and its Redis peers.

    scripts/large_hash_cost.py [--servers spinel,redis,valkey] [--commands 20000]
        [--verbs HGET,HRANDFIELD]
        [--structure hash|set|zset] [--sizes 1000,100000,1000000] [--server-cmd NAME=ARGV ...]

As scripts/large_list_cost.py (same servers, pinning and options): the hash is filled with
HSET of `fieldN valueN` pairs, 1,000 at a time; then `--commands` HSET of new fields, as
many HGET and HINCRBY of existing ones, and HDEL of the new ones are sent in pipelined
batches of 1,000 on one connection, and timed: wall microseconds per command, and the
server's CPU microseconds per command (its threads' schedstat), which the Python client
does not blur. Two cores are noisy: repeat, and compare
ratios. Only the processes this script starts are stopped.
"""
import argparse
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from large_list_cost import BATCH, free_port, run_batch, server_argv  # noqa: E402

SIZES = (1_000, 100_000, 1_000_000)


VERBS = {
    "hash": ("HSET", "HGET", "HINCRBY", "HDEL", "HRANDFIELD"),
    "set": ("SADD", "SISMEMBER", "SCARD", "SREM", "SPOP", "SRANDMEMBER"),
    "zset": ("ZADD", "ZSCORE", "ZRANK", "ZRANGE", "ZINCRBY", "ZREM", "ZPOPMIN"),
}


def zset_commands_for(verb, n, size):
    spread = lambda i: (i * 7919) % size  # noqa: E731
    if verb == "ZADD":
        return [["ZADD", "h", str(spread(i)), f"new{i}"] for i in range(n)]
    if verb == "ZSCORE":
        return [["ZSCORE", "h", f"field{spread(i)}"] for i in range(n)]
    if verb == "ZRANK":
        return [["ZRANK", "h", f"field{spread(i)}"] for i in range(n)]
    if verb == "ZRANGE":  # ten members from a rank spread over the set
        return [["ZRANGE", "h", str(spread(i)), str(spread(i) + 9)] for i in range(n)]
    if verb == "ZINCRBY":
        return [["ZINCRBY", "h", "1", f"field{spread(i)}"] for i in range(n)]
    if verb == "ZREM":
        return [["ZREM", "h", f"new{i}"] for i in range(n)]
    return [["ZPOPMIN", "h"] for _ in range(min(n, size // 2))]


def commands_for(verb, n, size):
    if verb.startswith("Z"):
        return zset_commands_for(verb, n, size)
    if verb == "SADD":
        return [["SADD", "h", f"new{i}"] for i in range(n)]
    if verb == "SISMEMBER":
        return [["SISMEMBER", "h", f"field{(i * 7919) % size}"] for i in range(n)]
    if verb == "SCARD":
        return [["SCARD", "h"] for _ in range(n)]
    if verb == "SREM":
        return [["SREM", "h", f"new{i}"] for i in range(n)]
    if verb == "SRANDMEMBER":  # ten draws, repeats allowed
        return [["SRANDMEMBER", "h", "-10"] for _ in range(n)]
    if verb == "HRANDFIELD":
        return [["HRANDFIELD", "h"] for _ in range(n)]
    if verb == "SPOP":  # at most half the set, so that it never empties it
        return [["SPOP", "h"] for _ in range(min(n, size // 2))]
    if verb == "HSET":
        return [["HSET", "h", f"new{i}", "v"] for i in range(n)]
    if verb == "HGET":
        return [["HGET", "h", f"field{(i * 7919) % size}"] for i in range(n)]
    if verb == "HINCRBY":
        return [["HINCRBY", "h", f"n{i % 100}", "1"] for i in range(n)]
    return [["HDEL", "h", f"new{i}"] for i in range(n)]


def fill(conn, structure, size):
    run_batch(conn, [["DEL", "h"]])
    for start in range(0, size, BATCH):
        if structure == "zset":
            pairs = [x for i in range(start, start + BATCH) for x in (str(i), f"field{i}")]
            run_batch(conn, [["ZADD", "h"] + pairs])
        elif structure == "set":
            run_batch(conn, [["SADD", "h"] + [f"field{i}" for i in range(start, start + BATCH)]])
        else:
            pairs = [x for i in range(start, start + BATCH) for x in (f"field{i}", f"v{i}")]
            run_batch(conn, [["HSET", "h"] + pairs])


def cpu_ns(pid):
    """Nanoseconds the server's threads have run (their schedstat)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
            total += int(stat.read().split()[0])
    return total


def measure(name, argv, port, commands, verbs, sizes):
    structure = {"H": "hash", "S": "set", "Z": "zset"}[verbs[0][0]]
    proc = subprocess.Popen(["taskset", "-c", "1"] + argv, stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.7)
        conn = socket.create_connection(("127.0.0.1", port))
        for size in sizes:
            fill(conn, structure, size)
            costs = []
            for verb in verbs:
                batch = commands_for(verb, commands, size)
                started, cpu_started = time.perf_counter(), cpu_ns(proc.pid)
                for at in range(0, len(batch), BATCH):
                    run_batch(conn, batch[at:at + BATCH])
                wall_us = (time.perf_counter() - started) / len(batch) * 1e6
                costs.append((wall_us, (cpu_ns(proc.pid) - cpu_started) / len(batch) / 1e3))
            print(f"{name:12} {size:>9} {structure}: " + ", ".join(
                f"{verb} {wall:7.2f} us (cpu {cpu:6.2f})"
                for verb, (wall, cpu) in zip(verbs, costs)), flush=True)
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", default="spinel,redis,valkey")
    parser.add_argument("--commands", type=int, default=20_000)
    parser.add_argument("--structure", choices=("hash", "set", "zset"), default="hash")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--verbs", help="only these of the structure's commands")
    parser.add_argument("--server-cmd", action="append", default=[], metavar="NAME=ARGV")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.server_cmd)
    os.sched_setaffinity(0, {0})
    for name in args.servers.split(",") + [n for n in extra if n not in args.servers]:
        port = free_port()
        sizes = [int(size) for size in args.sizes.split(",")]
        verbs = args.verbs.split(",") if args.verbs else VERBS[args.structure]
        measure(name, server_argv(name, port, extra), port, args.commands, verbs, sizes)


if __name__ == "__main__":
    main()
