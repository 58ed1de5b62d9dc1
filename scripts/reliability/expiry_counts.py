"""100k keys with TTLs of 1-3 s, never read: prints the item count (memcached curr_items or
DBSIZE) as it falls, and the first time it reached 0. Redis: DBSIZE; spinel: either."""
import random
import time

from rclient import Mc, Resp, item_count, parser


def main():
    p = parser(__doc__)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--watch-secs", type=float, default=12.0)
    args = p.parse_args()
    rng = random.Random(7)
    resp = not args.port
    conn = Resp(args.resp_port, args.host) if resp else Mc(args.port, args.host)
    before = item_count(args.port, args.resp_port)
    start = time.time()
    for base in range(0, args.keys, 500):
        reqs = []
        for i in range(base, min(base + 500, args.keys)):
            ttl = rng.randint(1, 3)
            key, value = "ttl:%d" % i, b"x" * 100
            reqs.append(Resp.req("SET", key, value, "EX", ttl) if resp
                        else Mc.store_req("set", key, value, ttl))
        conn.send(b"".join(reqs))
        for _ in reqs:
            conn.reply() if resp else conn.line()
    written = time.time() - start
    print("expiry_counts: %d keys written in %.1f s (count before: %d)"
          % (args.keys, written, before))
    zero_at = None
    while time.time() - start < args.watch_secs + written:
        n = item_count(args.port, args.resp_port) - before
        t = time.time() - start
        print("  t=%5.1f s  items %d" % (t, n))
        if n <= 0 and zero_at is None:
            zero_at = t
            break
        time.sleep(1.0)
    final = item_count(args.port, args.resp_port) - before
    print("expiry_counts: items left %d; zero at %s s after the first write"
          % (final, "%.1f" % zero_at if zero_at else "never"))


if __name__ == "__main__":
    main()
