"""100 sets of 560 KB on distinct keys, each read back at once; prints the first refused set
and the count of refused or lost ones. Run the server at -m 48 (Redis: --maxmemory 48mb
--maxmemory-policy allkeys-lru). With both ports, runs the memcached series, then RESP."""
from rclient import Mc, Resp, parser, refused


def run(conn, resp, n, size, tag):
    value = b"v" * size
    first, refused_n, lost = None, 0, 0
    for i in range(n):
        key = "large:%s:%d" % (tag, i)
        reply = conn.cmd("SET", key, value) if resp else conn.store("set", key, value)
        if refused(reply) or reply not in (b"STORED", b"+OK"):
            refused_n += 1
            first = i + 1 if first is None else first
            continue
        back = conn.cmd("GET", key) if resp else conn.get(key)
        if back != value:
            lost += 1
    return first, refused_n, lost


def main():
    p = parser(__doc__)
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--size", type=int, default=560 * 1024)
    args = p.parse_args()
    if args.port:
        r = run(Mc(args.port, args.host), False, args.count, args.size, "mc")
        print("large_sets memcached: first refused %s, refused %d, not read back %d" % r)
    if args.resp_port:
        r = run(Resp(args.resp_port, args.host), True, args.count, args.size, "resp")
        print("large_sets resp: first refused %s, refused %d, not read back %d" % r)


if __name__ == "__main__":
    main()
