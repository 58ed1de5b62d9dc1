#!/usr/bin/env python3
"""Server CPU per HSET (a new field) and HGET on a 100,000-field hash with one field that has
an expiry, the case that used to lose the large-hash paths.

    scripts/hash_expiry_cost.py BINARY PORT COMMANDS

BINARY is a Spinel binary (target/release/spinel, or an older build to compare); it runs
pinned to CPU 1 with one worker, the client on CPU 0. Redis 7.0 and Valkey 8.0 have no
HPEXPIRE, so there is no peer to run it against. Prints wall and server CPU microseconds per
command (the server threads' schedstat). Only the process it starts is stopped.
"""
import os, socket, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from large_list_cost import run_batch, BATCH
from large_hash_cost import cpu_ns
binary, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
p = subprocess.Popen(["taskset", "-c", "1", binary, "-p", "0", "--resp-port", str(port), "-t", "1", "-m", "2048"], stdout=subprocess.DEVNULL)
time.sleep(0.7)
c = socket.create_connection(("127.0.0.1", port))
for s in range(0, 100000, BATCH):
    run_batch(c, [["HSET", "h"] + [x for i in range(s, s + BATCH) for x in (f"field{i}", f"v{i}")]])
run_batch(c, [["HPEXPIRE", "h", "1000000", "FIELDS", "1", "field7"]])
for verb in ("HSET", "HGET"):
    batch = [[verb, "h", f"new{i}", "v"] if verb == "HSET" else [verb, "h", f"field{i*7919 % 100000}"] for i in range(n)]
    t, c0 = time.perf_counter(), cpu_ns(p.pid)
    for a in range(0, n, BATCH):
        run_batch(c, batch[a:a + BATCH])
    print(binary, verb, f"wall {(time.perf_counter()-t)/n*1e6:.2f} us, cpu {(cpu_ns(p.pid)-c0)/n/1e3:.2f} us")
p.terminate(); p.wait()
