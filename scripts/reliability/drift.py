"""Drifting value sizes: sets whose sizes change phase by phase (100 B, then 100-500 KB, then
50 B, then 1 B-512 KB) from several client processes; prints how many sets were refused for
want of memory. Run the server with a small memory limit (spinel/memcached -m 64, Redis
--maxmemory 64mb --maxmemory-policy allkeys-lru). With --port and --resp-port both, half the
clients use each protocol."""
import multiprocessing as mp
import random
import time

from rclient import Mc, Resp, parser, refused

PHASES = [(100, 100), (100_000, 500_000), (50, 50), (1, 512 * 1024)]


def client(args, wid, out):
    rng = random.Random(wid)
    use_resp = args.resp_port and (not args.port or wid % 2 == 1)
    conn = Resp(args.resp_port, args.host) if use_resp else Mc(args.port, args.host)
    blob = bytes(rng.randrange(256) for _ in range(4096)) * 128  # 512 KiB to slice from
    sets = refused_n = 0
    examples = []
    for lo, hi in PHASES:
        end = time.time() + args.phase_secs
        while time.time() < end:
            reqs, budget = [], 0
            while len(reqs) < 64 and budget < 4 << 20:
                size = rng.randint(lo, hi)
                key = "drift:%d" % rng.randrange(args.keys)
                value = blob[:size]
                reqs.append(Resp.req("SET", key, value) if use_resp
                            else Mc.store_req("set", key, value))
                budget += size
            conn.send(b"".join(reqs))
            for _ in reqs:
                reply = conn.reply() if use_resp else conn.line()
                sets += 1
                if refused(reply):
                    refused_n += 1
                    if len(examples) < 3:
                        examples.append((lo, hi, reply[:60]))
    out.put((sets, refused_n, examples))


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
    print("drift: refused %d of %d sets" % (ref, sets))
    for r in results:
        for ex in r[2]:
            print("  refused in phase %d-%d B: %r" % ex)


if __name__ == "__main__":
    main()
