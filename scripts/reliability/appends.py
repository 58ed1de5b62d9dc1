"""8 client processes append 12-byte tokens to 128 keys (about 9 MB live at the end), then
every key is read: prints appends refused for want of memory, appends that found their key
gone (evicted while being appended to every few ms), and keys missing any acknowledged token.
memcached protocol with --port (append; a vanished key is re-created with add), RESP APPEND
with --resp-port alone."""
import multiprocessing as mp
import random

from rclient import Mc, Resp, parser, refused


def key_of(k):
    return "app:%d" % k


def client(args, wid, out):
    rng = random.Random(wid)
    resp = not args.port
    conn = Resp(args.resp_port, args.host) if resp else Mc(args.port, args.host)
    acked = {k: [] for k in range(args.keys)}
    counts = {"refused": 0, "vanished": 0}
    error = None
    try:
        run(args, wid, rng, conn, resp, acked, counts)
    except OSError as e:  # a stalled (timed out) or dead server
        error = "client %d: %r" % (wid, e)
    out.put((counts["refused"], counts["vanished"], acked, error))


def run(args, wid, rng, conn, resp, acked, counts):
    seq = 0
    while seq < args.appends:
        batch = []
        for _ in range(min(64, args.appends - seq)):
            k = rng.randrange(args.keys)
            token = b"%02d%010d" % (wid, seq)
            seq += 1
            batch.append((k, token))
        conn.send(b"".join(Resp.req("APPEND", key_of(k), t) if resp
                           else Mc.store_req("append", key_of(k), t) for k, t in batch))
        retry = []
        for k, token in batch:
            reply = conn.reply() if resp else conn.line()
            if isinstance(reply, int) or reply == b"STORED":
                acked[k].append(token)
            elif refused(reply):
                counts["refused"] += 1
            elif reply == b"NOT_STORED":
                counts["vanished"] += 1
                retry.append((k, token))
        for k, token in retry:  # the key was evicted: add it back, else append again
            if conn.store("add", key_of(k), token) == b"STORED" or \
                    conn.store("append", key_of(k), token) == b"STORED":
                acked[k].append(token)


def main():
    p = parser(__doc__)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--keys", type=int, default=128)
    p.add_argument("--appends", type=int, default=96_000, help="per client")
    args = p.parse_args()
    resp = not args.port
    setup = Resp(args.resp_port, args.host) if resp else Mc(args.port, args.host)
    for k in range(args.keys):
        if resp:
            setup.cmd("SET", key_of(k), b"")
        else:
            setup.store("set", key_of(k), b"")
    out = mp.Queue()
    procs = [mp.Process(target=client, args=(args, w, out)) for w in range(args.clients)]
    for pr in procs:
        pr.start()
    results = [out.get() for _ in procs]
    for pr in procs:
        pr.join()
    bad = 0
    live = 0
    for k in range(args.keys):
        value = setup.cmd("GET", key_of(k)) if resp else setup.get(key_of(k))
        value = value or b""
        live += len(value)
        present = set(value[i:i + 12] for i in range(0, len(value), 12))
        if any(t not in present for r in results for t in r[2][k]):
            bad += 1
    for r in results:
        if r[3]:
            print("  stalled: " + r[3])
    print("appends: %d refused, %d found their key gone, %d keys of %d missing tokens "
          "(%.1f MB live)" % (sum(r[0] for r in results), sum(r[1] for r in results), bad,
                              args.keys, live / 1e6))


if __name__ == "__main__":
    main()
