"""Drifting value sizes: sets whose sizes change phase by phase (100 B, then 100-500 KB, then
50 B, then 1 B-512 KB) from several client processes; prints how many sets were refused for
want of memory, then reads every key back and prints how many acknowledged values are missing
or wrong, beside the server's evictions. Each client writes keys of its own, and every value
starts with its client and sequence number, so a stale value shows as wrong.

With the default 200,000 keys the live data outgrows the limit and evictions explain missing
keys (a wrong value never is). With --keys 32 it stays under a quarter of -m 64: then nothing
may be missing and nothing evicted. Run the server with a small memory limit (spinel/memcached
-m 64, Redis --maxmemory 64mb --maxmemory-policy allkeys-lru). With --port and --resp-port
both, half the clients use each protocol."""
import multiprocessing as mp
import random
import time

from rclient import Mc, Resp, evictions, parser, refused

PHASES = [(100, 100), (100_000, 500_000), (50, 50), (1, 512 * 1024)]


def client(args, wid, out):
    rng = random.Random(wid)
    use_resp = args.resp_port and (not args.port or wid % 2 == 1)
    conn = Resp(args.resp_port, args.host) if use_resp else Mc(args.port, args.host)
    blob = bytes(rng.randrange(256) for _ in range(4096)) * 128  # 512 KiB to slice from
    sets = refused_n = 0
    examples = []
    last = {}  # key -> (seq, size) of its last acknowledged set
    keys = max(1, args.keys // args.clients)
    for lo, hi in PHASES:
        end = time.time() + args.phase_secs
        while time.time() < end:
            reqs, budget = [], 0
            while len(reqs) < 64 and budget < 4 << 20:
                size = rng.randint(lo, hi)
                key = "drift:%d:%d" % (wid, rng.randrange(keys))
                value = value_of(blob, wid, sets + len(reqs), size)
                reqs.append((key, sets + len(reqs), size, Resp.req("SET", key, value)
                             if use_resp else Mc.store_req("set", key, value)))
                budget += size
            conn.send(b"".join(r[3] for r in reqs))
            for key, seq, size, _ in reqs:
                reply = conn.reply() if use_resp else conn.line()
                sets += 1
                if reply in (b"STORED", b"+OK"):
                    last[key] = (seq, size)
                elif refused(reply):
                    refused_n += 1
                    if len(examples) < 3:
                        examples.append((lo, hi, reply[:60]))
    missing = wrong = 0
    for key, (seq, size) in last.items():
        value = conn.cmd("GET", key) if use_resp else conn.get(key)
        if value is None:
            missing += 1
        elif value != value_of(blob, wid, seq, size):
            wrong += 1
    out.put((sets, refused_n, examples, missing, wrong))


def value_of(blob, wid, seq, size):
    """The value of set number `seq` of client `wid`: its names, then the blob's bytes."""
    head = b"%02d:%010d:" % (wid, seq)
    return (head + blob[:max(0, size - len(head))])[:size]


def main():
    p = parser(__doc__)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--phase-secs", type=float, default=4.0)
    p.add_argument("--keys", type=int, default=200_000)
    args = p.parse_args()
    out = mp.Queue()
    procs = [mp.Process(target=client, args=(args, w, out)) for w in range(args.clients)]
    for pr in procs:
        pr.start()
    results = [out.get() for _ in procs]
    for pr in procs:
        pr.join()
    sets = sum(r[0] for r in results)
    ref = sum(r[1] for r in results)
    missing = sum(r[3] for r in results)
    wrong = sum(r[4] for r in results)
    print("drift: refused %d of %d sets; acknowledged values missing %d, wrong %d "
          "(%d evictions)" % (ref, sets, missing, wrong, evictions(args)))
    for r in results:
        for ex in r[2]:
            print("  refused in phase %d-%d B: %r" % ex)


if __name__ == "__main__":
    main()
