#!/usr/bin/env python3
"""Collections of mixed kinds and sizes written at -m 64 (as test_redis_memory_collections.py
does, 100 entries per command), each one's length read right after it is written and all
of them again at the end: a length that is neither 0 nor the size written means a
collection was evicted while it was being built, or lost writes.

    scripts/partial_collections.py BINARY [SEED]

Starts BINARY (Spinel, -t 2 --io epoll) on a free port and stops it at the end.
"""
import sys, subprocess, time, random
sys.path.insert(0, "tests/conformance"); sys.path.insert(0, "scripts")
from wire import Conn, resp_encode
from large_list_cost import free_port
from test_redis_memory_collections import _collection_commands, _read_replies
binary = sys.argv[1]
port = free_port()
p = subprocess.Popen([binary, "-p", "0", "--resp-port", str(port), "-t", "2", "--io", "epoll", "-m", "64", "-l", "127.0.0.1"], stdout=subprocess.DEVNULL)
time.sleep(0.5)
rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
sizes = {}
bad = []
with Conn(port, timeout=30) as c:
    written, n = 0, 0
    while written < 3 * 64 * 2**20:
        kind = rng.choice(["hash", "list", "set", "zset"])
        fields = rng.choice([5, 100, 1000]); value_len = rng.choice([10, 50])
        key = f"coll:{kind}:{n}"
        commands = list(_collection_commands(kind, key, fields, value_len))
        c.send(b"".join(commands)); errs = _read_replies(c, len(commands))
        assert not errs, errs
        count = {"hash": "HLEN", "list": "LLEN", "set": "SCARD", "zset": "ZCARD"}[kind]
        c.send(resp_encode(count, key)); got = int(c.read_line()[1:])
        if got not in (0, fields):
            print("right after write:", key, got, fields, value_len, flush=True)
        sizes[key] = (kind, fields); written += fields * (value_len + 8); n += 1
    for key, (kind, fields) in sizes.items():
        count = {"hash": "HLEN", "list": "LLEN", "set": "SCARD", "zset": "ZCARD"}[kind]
        c.send(resp_encode(count, key)); got = int(c.read_line()[1:])
        if got not in (0, fields): bad.append((key, got, fields))
print("at the end:", len(bad), bad[:5])
p.terminate()
