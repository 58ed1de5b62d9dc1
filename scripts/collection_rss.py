#!/usr/bin/env python3
"""RSS and used_memory per member of 10 large collections of 100,000 members (`m%08d`):
sorted sets (5,000 distinct scores), hashes (values `v%08d`) or sets, for Spinel or
redis-server; or of KEYS collections of MEMBERS each (MEMBERS a multiple of 100 or at most
1,000), for smaller collections.

    scripts/collection_rss.py BINARY PORT [zset|hash|set] [MEMBERS KEYS]

BINARY containing "redis" or "valkey" is started as redis-server is (no persistence),
anything else as Spinel (`-m 2048 -t 1`). Prints the growth of VmRSS and of INFO used_memory per member.
Only the process it starts is stopped.
"""
import socket, subprocess, time, sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "conformance"))
from wire import Conn, resp_encode
from test_redis_hash import read_reply
def call(c,*a):
    c.send(resp_encode(*a)); return read_reply(c)
def rss(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1])*1024
def used(c):
    info = call(c,"INFO","memory").decode()
    return int(next(l for l in info.split("\r\n") if l.startswith("used_memory:")).split(":")[1])
binary, port = sys.argv[1], int(sys.argv[2])
structure = sys.argv[3] if len(sys.argv) > 3 else "zset"
COMMAND = {"zset": "ZADD", "hash": "HSET", "set": "SADD"}[structure]
def element(i):
    return {"zset": [str(i % 5000), f"m{i:08d}"], "hash": [f"m{i:08d}", f"v{i:08d}"],
            "set": [f"m{i:08d}"]}[structure]
if "redis" in binary or "valkey" in binary:
    p = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
else:
    p = subprocess.Popen([binary, "-p", "0", "--resp-port", str(port), "-m", "2048", "-t", "1"], stdout=subprocess.DEVNULL)
time.sleep(0.5)
c = Conn(port)
r0, u0 = rss(p.pid), used(c)
N, K = (int(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) > 5 else (100000, 10)
STEP = min(N, 1000)
for k in range(K):
    for b in range(0, N, STEP):
        args = []
        for i in range(b, b+STEP):
            args += element(i)
        call(c, COMMAND, f"z{k}", *args)
time.sleep(0.3)
r1, u1 = rss(p.pid), used(c)
print(f"{binary} {structure}: rss/member {(r1-r0)/(N*K):.1f}  used/member {(u1-u0)/(N*K):.1f}")
p.terminate(); p.wait()
