#!/usr/bin/env python3
"""The hit ratio a client gains from client-side caching (CLIENT TRACKING, RESP3 pushes),
on Spinel and redis-server in the same run, with the same operations.

One caching client keeps a local dict of the values it read, dropped when an
`invalidate` push names the key (or a null flushes it all); a second client writes.
Operations: OPS, READ_PERCENT of them reads by the caching client (a local hit, or a GET
that fills the dict), the rest SETs by the writer, keys drawn from KEYS keys with a zipf
distribution (exponent S). Pushes waiting on the socket are taken before each read, so a
read can be stale only while an invalidation is still in flight; those are counted.

    scripts/tracking_hit_ratio.py --spinel target/release/spinel [--spinel-threads 2]
        [--redis redis-server] [--ops 100000] [--keys 10000] [--zipf 0.99] [--reads 90] [--seed 1]
"""

import argparse
import bisect
import random
import shutil
import socket
import subprocess
import time


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Resp3:
    """A blocking RESP3 connection that hands push frames to `on_push`."""

    def __init__(self, port, on_push=None):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.on_push = on_push or (lambda frame: None)

    def _fill(self, block=True):
        self.sock.setblocking(block)
        try:
            chunk = self.sock.recv(1 << 16)
        except BlockingIOError:
            return False
        finally:
            self.sock.setblocking(True)
        if not chunk:
            raise ConnectionError("closed")
        self.buf += chunk
        return True

    def _line(self, pos):
        while True:
            end = self.buf.find(b"\r\n", pos)
            if end >= 0:
                return self.buf[pos:end], end + 2
            self._fill()

    def _frame(self, pos):
        line, pos = self._line(pos)
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-", b":"):
            return (kind, rest), pos
        if kind == b"_":
            return None, pos
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None, pos
            while len(self.buf) < pos + n + 2:
                self._fill()
            return self.buf[pos:pos + n], pos + n + 2
        if kind in (b"*", b">", b"%", b"~"):
            n = int(rest)
            if n < 0:
                return None, pos
            n *= 2 if kind == b"%" else 1
            items = []
            for _ in range(n):
                item, pos = self._frame(pos)
                items.append(item)
            return (kind, items), pos
        raise ValueError(f"unexpected {line!r}")

    def reply(self):
        """The next non-push frame; pushes before it go to `on_push`."""
        while True:
            frame, pos = self._frame(0)
            self.buf = self.buf[pos:]
            if isinstance(frame, tuple) and frame[0] == b">":
                self.on_push(frame[1])
                continue
            return frame

    def drain_pushes(self):
        """Takes every push already received, without waiting."""
        while self._fill(block=False):
            pass
        while self.buf:
            frame, pos = self._frame(0)
            self.buf = self.buf[pos:]
            if isinstance(frame, tuple) and frame[0] == b">":
                self.on_push(frame[1])

    def call(self, *args):
        self.sock.sendall(encode(*args))
        return self.reply()


def zipf_sampler(n, s, rng):
    weights = [1.0 / (rank ** s) for rank in range(1, n + 1)]
    total = sum(weights)
    cdf, acc = [], 0.0
    for w in weights:
        acc += w / total
        cdf.append(acc)
    return lambda: min(bisect.bisect_left(cdf, rng.random()), n - 1)


def workload(port, args):
    cache = {}
    invalidations = [0]

    def on_push(items):
        if items and items[0] == b"invalidate":
            invalidations[0] += 1
            if items[1] is None:
                cache.clear()
            else:
                for key in items[1][1]:
                    cache.pop(key, None)

    reader = Resp3(port, on_push)
    writer = Resp3(port)
    reader.call("HELLO", "3")
    writer.call("HELLO", "3")
    writer.call("FLUSHALL")
    reader.drain_pushes()
    # Preload every key (so a GET that misses the local cache finds a value).
    latest = {}
    for i in range(args.keys):
        writer.sock.sendall(encode("SET", f"key:{i}", "0"))
        latest[f"key:{i}".encode()] = b"0"
    for _ in range(args.keys):
        writer.reply()
    assert reader.call("CLIENT", "TRACKING", "on") == (b"+", b"OK")
    rng = random.Random(args.seed)
    pick = zipf_sampler(args.keys, args.zipf, rng)
    reads = hits = stale = writes = 0
    started = time.monotonic()
    for op in range(args.ops):
        key = f"key:{pick()}".encode()
        if rng.random() * 100 < args.reads:
            reads += 1
            reader.drain_pushes()
            if key in cache:
                hits += 1
                stale += cache[key] != latest[key]
            else:
                value = reader.call("GET", key)
                cache[key] = value
        else:
            writes += 1
            value = str(op).encode()
            writer.call("SET", key, value)
            latest[key] = value
    elapsed = time.monotonic() - started
    reader.sock.close()
    writer.sock.close()
    return dict(reads=reads, hits=hits, stale=stale, writes=writes,
                invalidations=invalidations[0], seconds=elapsed)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(argv, port):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{argv[0]} did not start")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spinel", default="target/release/spinel")
    parser.add_argument("--spinel-threads", type=int, default=2)
    parser.add_argument("--redis", default=shutil.which("redis-server"))
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--zipf", type=float, default=0.99)
    parser.add_argument("--reads", type=float, default=90.0, help="percent of reads")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    servers = []
    if args.spinel:
        port = free_port()
        servers.append(("spinel", [args.spinel, "-p", "0", "--resp-port", str(port), "-l",
                                   "127.0.0.1", "-t", str(args.spinel_threads), "-m", "256"],
                        port))
    if args.redis:
        port = free_port()
        servers.append(("redis-server", [args.redis, "--port", str(port), "--bind",
                                         "127.0.0.1", "--save", "", "--appendonly", "no"], port))
    print(f"{args.ops} ops, {args.reads:g}% reads, {args.keys} keys, zipf s={args.zipf}, "
          f"seed {args.seed}")
    for name, argv, port in servers:
        proc = start(argv, port)
        try:
            r = workload(port, args)
        finally:
            proc.terminate()
            proc.wait(5)
        print(f"{name:13s} hits/reads {r['hits']}/{r['reads']} = {r['hits'] / r['reads']:.4f}  "
              f"stale {r['stale']}  writes {r['writes']}  invalidations {r['invalidations']}  "
              f"{r['seconds']:.1f}s")


if __name__ == "__main__":
    main()
