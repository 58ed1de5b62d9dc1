#!/usr/bin/env python3
"""How many hash fields (or sorted-set members) a server keeps within a memory limit when
clients write more than fits: the operator's bytes per field, garbage and eviction included.

    scripts/collection_capacity.py [--servers spinel,redis,valkey] [--structure hash|zset]
        [--fields 1000] [--keys 8000] [--memory-mib 256] [--per-command 100]

Each server is started with the limit (Spinel -m, Redis/Valkey maxmemory with allkeys-lru),
then `--keys` keys of `--fields` fields (16-byte names, 32-byte values; sorted sets: 16-byte
members) are written, `--per-command` fields per HSET/ZADD, one key after another; then
every key's length is summed (a key evicted mid-way counts for what it holds). Prints the
fields kept and the limit divided by them. Only the processes it starts are stopped.
"""
import argparse
import os
import subprocess
import sys
import time
import socket

sys.path.insert(0, os.path.dirname(__file__))
from large_list_cost import free_port, run_batch  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "conformance"))
from test_redis_hash import read_reply  # noqa: E402
from wire import Conn, resp_encode  # noqa: E402


def argv_for(name, port, mib):
    if name == "spinel":
        return ["target/release/spinel", "-p", "0", "--resp-port", str(port), "-t", "1",
                "-m", str(mib)]
    binary = {"redis": "redis-server", "valkey": "valkey-server"}[name]
    return [binary, "--port", str(port), "--save", "", "--appendonly", "no",
            "--maxmemory", f"{mib}mb", "--maxmemory-policy", "allkeys-lru"]


def write(conn, structure, keys, fields, per_command):
    for k in range(keys):
        batch = []
        for start in range(0, fields, per_command):
            args = []
            for i in range(start, min(fields, start + per_command)):
                name = f"field:{i:010d}"
                args += [name, f"value:{k:010d}:{i:014d}"] if structure == "hash" else [str(i), name]
            batch.append(["HSET" if structure == "hash" else "ZADD", f"key:{k:08d}"] + args)
        run_batch(conn, batch)


def kept(port, structure, keys):
    total = 0
    with Conn(port) as c:
        verb = "HLEN" if structure == "hash" else "ZCARD"
        for start in range(0, keys, 1000):
            c.send(b"".join(resp_encode(verb, f"key:{k:08d}") for k in range(start, min(keys, start + 1000))))
            total += sum(read_reply(c) for _ in range(start, min(keys, start + 1000)))
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", default="spinel,redis,valkey")
    parser.add_argument("--structure", choices=("hash", "zset"), default="hash")
    parser.add_argument("--fields", type=int, default=1000)
    parser.add_argument("--keys", type=int, default=8000)
    parser.add_argument("--memory-mib", type=int, default=256)
    parser.add_argument("--per-command", type=int, default=100)
    args = parser.parse_args()
    for name in args.servers.split(","):
        port = free_port()
        proc = subprocess.Popen(argv_for(name, port, args.memory_mib), stdout=subprocess.DEVNULL)
        try:
            time.sleep(0.7)
            conn = socket.create_connection(("127.0.0.1", port))
            write(conn, args.structure, args.keys, args.fields, args.per_command)
            fields = kept(port, args.structure, args.keys)
            per_field = args.memory_mib * 2**20 / max(fields, 1)
            print(f"{name:8} {args.structure} F={args.fields} per command {args.per_command}: "
                  f"{fields} fields kept in {args.memory_mib} MiB, {per_field:.1f} B/field",
                  flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
