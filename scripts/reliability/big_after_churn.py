"""8,200 sets of 8 KB on one key and 300 of 100 KB on another (the store then holds two
items, the rest is garbage), then one 600 KB set: prints its reply and latency, then tries
again. Run the server at -m 64."""
import time

from rclient import Mc, Resp, parser


def main():
    p = parser(__doc__)
    args = p.parse_args()
    resp = not args.port
    conn = Resp(args.resp_port, args.host) if resp else Mc(args.port, args.host)

    def put(key, value):
        t = time.time()
        reply = conn.cmd("SET", key, value) if resp else conn.store("set", key, value)
        return reply, time.time() - t

    for i in range(8200):
        put("churn:small", bytes([i % 256]) * 8192)
    for i in range(300):
        put("churn:mid", bytes([i % 256]) * 100_000)
    for attempt in (1, 2):
        reply, secs = put("churn:big", b"b" * 600_000)
        print("big_after_churn try %d: %s in %.3f s" % (attempt, reply.decode(), secs))


if __name__ == "__main__":
    main()
