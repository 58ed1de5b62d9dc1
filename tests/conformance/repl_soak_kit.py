"""The pieces of the replication soak (test_replication_soak.py): writers for every
protocol and type, and a per-item comparison of two servers.

Every writer talks to whichever server is the primary *now* (`Cluster.primary`), and
reconnects after a failover or a killed process: errors of the writes themselves (wrong
type, a missing key) are part of the load and ignored.
"""

import os
import socket
import struct
import threading
import time

import redis

DBS = (0, 1, 2)
KEYS_PER_TYPE = 12
SHORT_TTL_S = 3  # keys that expire during the run live at most this long
# No flush_all after this monotonic time: a flush in the run's last moments leaves too few
# keys for the final comparison to mean anything (the soak's load floor failed on it once).
FLUSHES_UNTIL = [float("inf")]
VALUE_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"

# ------------------------------------------------------------------------------------------
# The servers


class Cluster:
    """The topology as it is now, swapped by the chaos thread under `lock`."""

    def __init__(self, primary):
        self.lock = threading.Lock()
        self.primary = primary
        self.stop = threading.Event()
        self.ops = 0
        self.epoch = 0  # bumped when the primary changes: writers reconnect
        self.errors = {}

    def primary_ports(self):
        with self.lock:
            return self.primary.resp_port, self.primary.mc_port

    def count(self, n=1):
        self.ops += n  # approximate (threads race): a progress figure only

    def note_error(self, kind):
        self.errors[kind] = self.errors.get(kind, 0) + 1


def value(rng, lo=1, hi=24):
    return "".join(rng.choice(VALUE_CHARS) for _ in range(rng.randint(lo, hi)))


def ttl_choice(rng):
    """None (no TTL), a short one that ends during the run, or a long one (seconds)."""
    pick = rng.random()
    if pick < 0.6:
        return None
    if pick < 0.8:
        return rng.randint(1, SHORT_TTL_S)
    return rng.randint(1000, 100_000)


def key_of(rng, kind):
    return f"{kind}:{rng.randrange(KEYS_PER_TYPE)}"


CONNECTION_ERRORS = (redis.ConnectionError, redis.TimeoutError, OSError, ConnectionError,
                     TimeoutError)


def writer_loop(cluster, rng, connect, step, name):
    """Runs `step(conn, rng)` until the cluster stops, reconnecting after connection
    errors (a killed or restarted primary)."""
    conn, epoch = None, cluster.epoch
    while not cluster.stop.is_set():
        try:
            if conn is not None and epoch != cluster.epoch:
                _close(conn)
                conn = None
            if conn is None:
                epoch = cluster.epoch
                conn = connect()
            step(conn, rng)
            cluster.count()
        except redis.ResponseError:
            cluster.count()
        except CONNECTION_ERRORS as e:
            cluster.note_error(f"{name}:{type(e).__name__}")
            _close(conn)
            conn = None
            time.sleep(0.05)
    _close(conn)


def _close(conn):
    try:
        if conn is not None:
            conn.close()
    except Exception:  # noqa: BLE001 - closing a broken connection
        pass


# ------------------------------------------------------------------------------------------
# memcached: text, meta, binary


class McConn:
    """A raw memcached connection (text and meta lines, binary packets)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""

    def close(self):
        self.sock.close()

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        self.buf += chunk

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def request(self, data):
        """Sends a text or meta request; returns its reply lines up to the last."""
        self.sock.sendall(data)
        lines = []
        while True:
            line = self.line()
            lines.append(line)
            if line.startswith(b"VALUE "):
                lines.append(self.exact(int(line.split()[3]) + 2)[:-2])
                continue
            if line.startswith(b"VA "):
                lines.append(self.exact(int(line.split()[1]) + 2)[:-2])
                return lines
            if not line.startswith(b"VALUE"):
                return lines

    def binary(self, op, key, extras=b"", val=b"", cas=0):
        body = len(extras) + len(key) + len(val)
        head = struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0, body, 0, cas)
        self.sock.sendall(head + extras + key + val)
        head = self.exact(24)
        return self.exact(struct.unpack(">I", head[8:12])[0])


def _exptime(rng):
    ttl = ttl_choice(rng)
    return 0 if ttl is None else ttl


def mc_text_step(conn, rng):
    key = key_of(rng, "mc")
    pick = rng.random()
    flags = rng.randrange(1 << 16)
    if pick < 0.25:
        verb = rng.choice(("set", "add", "replace", "append", "prepend"))
        data = value(rng).encode()
        conn.request(f"{verb} {key} {flags} {_exptime(rng)} {len(data)}\r\n".encode()
                     + data + b"\r\n")
    elif pick < 0.35:
        conn.request(f"set {key} {flags} {_exptime(rng)} 2\r\n{rng.randrange(10, 99)}\r\n"
                     .encode())
    elif pick < 0.5:
        verb = rng.choice(("incr", "decr"))
        conn.request(f"{verb} {key} {rng.randrange(1, 1000)}\r\n".encode())
    elif pick < 0.6:
        conn.request(f"touch {key} {_exptime(rng)}\r\n".encode())
    elif pick < 0.7:
        conn.request(f"gat {_exptime(rng)} {key}\r\n".encode())
    elif pick < 0.8:
        conn.request(f"delete {key}\r\n".encode())
    elif pick < 0.9998:
        _mc_cas(conn, rng, key, flags)
    elif time.monotonic() < FLUSHES_UNTIL[0]:
        conn.request(b"flush_all\r\n")
    else:
        conn.request(f"delete {key}\r\n".encode())


def _mc_cas(conn, rng, key, flags):
    reply = conn.request(f"gets {key}\r\n".encode())
    cas = int(reply[0].split()[4]) if reply[0].startswith(b"VALUE") else rng.randrange(1, 1 << 20)
    data = value(rng).encode()
    conn.request(f"cas {key} {flags} {_exptime(rng)} {len(data)} {cas}\r\n".encode()
                 + data + b"\r\n")


def mc_meta_step(conn, rng):
    key = key_of(rng, "mm")
    pick = rng.random()
    if pick < 0.5:
        data = value(rng).encode()
        mode = rng.choice(("", " MS", " MA", " MP", " ME"))
        conn.request(f"ms {key} {len(data)} F{rng.randrange(1 << 16)} T{_exptime(rng)}{mode}\r\n"
                     .encode() + data + b"\r\n")
    elif pick < 0.6:
        conn.request(f"ms {key} 3 T{_exptime(rng)}\r\n{rng.randrange(100, 999)}\r\n".encode())
    elif pick < 0.8:
        mode = rng.choice(("MI", "MD"))
        conn.request(f"ma {key} {mode} D{rng.randrange(1, 50)} N{_exptime(rng)} J7\r\n".encode())
    else:
        conn.request(f"md {key}\r\n".encode())


BIN_SET, BIN_DELETE, BIN_APPEND, BIN_INCR = 0x01, 0x04, 0x0E, 0x05


def mc_binary_step(conn, rng):
    key = key_of(rng, "mb").encode()
    pick = rng.random()
    if pick < 0.55:
        extras = struct.pack(">II", rng.randrange(1 << 16), _exptime(rng))
        conn.binary(BIN_SET, key, extras, value(rng).encode())
    elif pick < 0.7:
        conn.binary(BIN_APPEND, key, b"", value(rng, 1, 4).encode())
    elif pick < 0.8:
        extras = struct.pack(">QQI", rng.randrange(1, 100), 5, _exptime(rng))
        conn.binary(BIN_INCR, key, extras)
    else:
        conn.binary(BIN_DELETE, key)


# ------------------------------------------------------------------------------------------
# Redis: every type


SCRIPT_WRITE = ("redis.call('INCR', KEYS[1]) "
                "redis.call('RPUSH', KEYS[2], ARGV[1]) "
                "redis.call('LTRIM', KEYS[2], -20, -1) "
                "return redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])")


# SPINEL_SOAK_WITHOUT=x,tx leaves kinds of Redis writes out (to narrow a divergence down).
WITHOUT = {k for k in os.environ.get("SPINEL_SOAK_WITHOUT", "").split(",") if k}
REDIS_KINDS = [k for k in ("s", "s", "h", "l", "bl", "t", "z", "x", "g", "tx", "ev")
               if k not in WITHOUT]


def redis_step(conn, rng):
    REDIS_OPS[rng.choice(REDIS_KINDS)](conn, rng)


def _strings(r, rng):
    k = key_of(rng, "s")
    pick = rng.randrange(9)
    ttl = ttl_choice(rng)
    if pick == 0:
        r.set(k, value(rng), ex=ttl)
    elif pick == 1:
        r.incrby(k, rng.randrange(-50, 50))
    elif pick == 2:
        r.append(k, value(rng, 1, 5))
    elif pick == 3:
        r.setrange(k, rng.randrange(0, 30), value(rng, 1, 5))
    elif pick == 4:
        if ttl is None:
            r.getex(k, persist=True)
        else:
            r.getex(k, ex=ttl)
    elif pick == 5:
        r.set(k, value(rng), px=rng.randrange(200, SHORT_TTL_S * 1000))
    elif pick == 6:
        r.set(k, value(rng), keepttl=True)
    elif pick == 7:
        r.incrbyfloat(k, rng.choice((0.5, 1.25, -3.0)))
    else:
        r.getdel(k)


def _hashes(r, rng):
    k = key_of(rng, "h")
    pick = rng.randrange(4)
    if pick == 0:
        r.hset(k, mapping={f"f{rng.randrange(20)}": value(rng) for _ in range(rng.randint(1, 4))})
    elif pick == 1:
        r.hdel(k, f"f{rng.randrange(20)}", f"f{rng.randrange(20)}")
    elif pick == 2:
        r.hincrby(k, f"n{rng.randrange(3)}", rng.randrange(-5, 50))
    else:
        r.hincrbyfloat(k, "fl", rng.choice((0.25, 1.5)))


def _lists(r, rng):
    k = key_of(rng, "l")
    pick = rng.randrange(8)
    if pick < 2:
        r.lpush(k, *[value(rng) for _ in range(rng.randint(1, 4))])
    elif pick == 2:
        r.rpush(k, *[value(rng) for _ in range(rng.randint(1, 4))])
    elif pick == 3:
        r.lpop(k, rng.randint(1, 2))
    elif pick == 4:
        r.ltrim(k, 0, rng.randrange(5, 30))
    elif pick == 5:
        r.lset(k, rng.randrange(-3, 3), value(rng))
    elif pick == 6:
        r.lmove(k, key_of(rng, "l"), "LEFT", "RIGHT")
    else:
        r.linsert(k, "BEFORE", value(rng, 1, 1), value(rng))


def _blocking_pushes(r, rng):
    """Pushes to the keys the blocked clients wait on."""
    k = f"bl:{rng.randrange(3)}"
    if rng.random() < 0.7:
        r.rpush(k, *[value(rng, 1, 6) for _ in range(rng.randint(1, 3))])
    else:
        r.zadd(f"bz:{rng.randrange(2)}", {value(rng, 1, 3): rng.randrange(100)})


def _sets(r, rng):
    k = key_of(rng, "t")
    pick = rng.randrange(6)
    if pick < 2:
        r.sadd(k, *[rng.choice((str(rng.randrange(40)), value(rng, 1, 4))) for _ in range(3)])
    elif pick == 2:
        r.srem(k, str(rng.randrange(40)))
    elif pick == 3:
        r.spop(k, rng.randint(1, 2))
    elif pick == 4:
        r.smove(k, key_of(rng, "t"), str(rng.randrange(40)))
    else:
        r.sinterstore(key_of(rng, "t"), [k, key_of(rng, "t")])


def _zsets(r, rng):
    k = key_of(rng, "z")
    pick = rng.randrange(6)
    if pick < 2:
        r.zadd(k, {value(rng, 1, 5): rng.randrange(-100, 100) / 4 for _ in range(3)})
    elif pick == 2:
        r.zincrby(k, rng.choice((1, 0.5, -2)), value(rng, 1, 1))
    elif pick == 3:
        r.zpopmin(k, rng.randint(1, 2))
    elif pick == 4:
        r.zremrangebyrank(k, 0, 0)
    else:
        r.zunionstore(key_of(rng, "z"), [k, key_of(rng, "z")])


def _streams(r, rng):
    k = f"x:{rng.randrange(4)}"
    pick = rng.randrange(9)
    if pick < 3:
        r.xadd(k, {"f": value(rng, 1, 6)}, maxlen=rng.choice((20, 50)), approximate=pick != 0)
    elif pick == 3:
        r.xgroup_create(k, f"g{rng.randrange(2)}", id="0", mkstream=True)
    elif pick == 4:
        r.xreadgroup(f"g{rng.randrange(2)}", f"c{rng.randrange(3)}", {k: ">"}, count=3)
    elif pick == 5:
        pending = r.xpending_range(k, f"g{rng.randrange(2)}", "-", "+", 3)
        if pending:
            r.xack(k, f"g{rng.randrange(2)}", *[p["message_id"] for p in pending])
    elif pick == 6:
        pending = r.xpending_range(k, "g0", "-", "+", 2)
        if pending:
            r.xclaim(k, "g0", f"c{rng.randrange(3)}", 0, [p["message_id"] for p in pending])
    elif pick == 7:
        r.xautoclaim(k, "g1", "c9", 0, count=2)
    else:
        r.xtrim(k, maxlen=rng.randrange(5, 30))


def _generic(r, rng):
    kind = rng.choice(("s", "h", "l", "t", "z"))
    k = key_of(rng, kind)
    pick = rng.randrange(8)
    if pick == 0:
        r.expire(k, rng.choice((1, 2, SHORT_TTL_S, 5000, 90_000)))
    elif pick == 1:
        r.persist(k)
    elif pick == 2:
        r.rename(k, key_of(rng, kind))
    elif pick == 3:
        r.delete(k)
    elif pick == 4:
        r.copy(k, key_of(rng, kind), replace=True)
    elif pick == 5:
        r.copy(k, key_of(rng, kind), destination_db=rng.choice(DBS), replace=True)
    elif pick == 6:
        r.pexpire(k, rng.randrange(100, SHORT_TTL_S * 1000))
    else:
        r.unlink(k, key_of(rng, kind))


def _transaction(r, rng):
    """MULTI ... EXEC, with a SELECT of another database inside (and back again)."""
    pipe = r.pipeline(transaction=True)
    k = key_of(rng, "s")
    pipe.incr(k)
    pipe.rpush(key_of(rng, "l"), value(rng))
    if rng.random() < 0.4:
        db = rng.choice(DBS)
        home = r.connection_pool.connection_kwargs.get("db", 0)
        pipe.execute_command("SELECT", db)
        pipe.set(key_of(rng, "s"), value(rng), ex=ttl_choice(rng))
        pipe.hset(key_of(rng, "h"), "tx", value(rng))
        pipe.execute_command("SELECT", home)
    pipe.zadd(key_of(rng, "z"), {value(rng, 1, 3): 1})
    pipe.execute(raise_on_error=False)


def _script(r, rng):
    r.eval(SCRIPT_WRITE, 3, key_of(rng, "s"), key_of(rng, "l"), key_of(rng, "s"),
           value(rng), rng.randrange(300, 100_000))


REDIS_OPS = {"s": _strings, "h": _hashes, "l": _lists, "bl": _blocking_pushes, "t": _sets,
             "z": _zsets, "x": _streams, "g": _generic, "tx": _transaction, "ev": _script}


def blocking_step(r, rng):
    """A blocking pop that usually waits, and is served by another client's push."""
    pick = rng.randrange(4)
    if pick == 0:
        r.blpop([f"bl:{rng.randrange(3)}"], timeout=0.5)
    elif pick == 1:
        r.blmove(f"bl:{rng.randrange(3)}", f"bl:{rng.randrange(3, 5)}", 0.5, "LEFT", "RIGHT")
    elif pick == 2:
        r.bzpopmin([f"bz:{rng.randrange(2)}"], timeout=0.5)
    else:
        r.brpoplpush(f"bl:{rng.randrange(3)}", f"bl:{rng.randrange(3, 5)}", 0.5)


# ------------------------------------------------------------------------------------------
# Comparison


def rclient(port, db=0):
    return redis.Redis(port=port, db=db, socket_timeout=10)


def contents(port, dbs=DBS):
    """Every key of every database: (type, decoded content, pttl)."""
    state = {}
    for db in dbs:
        r = rclient(port, db)
        for key in r.scan_iter(count=1000):
            kind = r.type(key)
            if kind == b"none":
                continue  # expired between SCAN and TYPE
            state[(db, key)] = (kind, _content(r, key, kind), r.pttl(key))
        r.close()
    return state


def _content(r, key, kind):
    if kind == b"string":
        return r.get(key)
    if kind == b"list":
        return r.lrange(key, 0, -1)
    if kind == b"set":
        return sorted(r.smembers(key))
    if kind == b"hash":
        return sorted(r.hgetall(key).items())
    if kind == b"zset":
        return r.zrange(key, 0, -1, withscores=True)
    if kind == b"stream":
        return _stream(r, key)
    return ("unknown type", kind)


def _stream(r, key):
    info = r.xinfo_stream(key)
    head = {f: info.get(f) for f in ("length", "last-generated-id", "max-deleted-entry-id",
                                      "entries-added", "recorded-first-entry-id")}
    groups = []
    for group in r.xinfo_groups(key):
        name = group["name"]
        pending = r.xpending_range(key, name, "-", "+", 10_000)
        consumers = sorted((c["name"], c["pending"]) for c in r.xinfo_consumers(key, name))
        groups.append((name, group["last-delivered-id"], group.get("entries-read"),
                       [(p["message_id"], p["consumer"], p["times_delivered"]) for p in pending],
                       consumers))
    return (r.xrange(key), sorted(head.items()), sorted(groups))


def differences(want, got, ttl_tolerance_ms=1500, limit=20):
    """What differs between two `contents` (the primary's first)."""
    out = []
    for key in sorted(set(want) | set(got)):
        a, b = want.get(key), got.get(key)
        if a is None or b is None:
            out.append(f"{key}: primary {a!r} replica {b!r}")
        elif a[:2] != b[:2]:
            out.append(f"{key}: primary {a[:2]!r} replica {b[:2]!r}")
        elif (a[2] < 0) != (b[2] < 0) or abs(a[2] - b[2]) > ttl_tolerance_ms:
            out.append(f"{key}: pttl primary {a[2]} replica {b[2]}")
        if len(out) >= limit:
            out.append("...")
            break
    return out


MC_PREFIXES = ("mc", "mm", "mb")


def mc_items(port):
    """flags, CAS and value of every memcached-written key (`gets`)."""
    conn = McConn(port)
    try:
        keys = [f"{p}:{i}" for p in MC_PREFIXES for i in range(KEYS_PER_TYPE)]
        lines = conn.request(("gets " + " ".join(keys) + "\r\n").encode())
        items = {}
        for head, data in zip(lines[0:-1:2], lines[1::2]):
            _, key, flags, _, cas = head.split()
            items[key] = (int(flags), int(cas), data)
        return items
    finally:
        conn.close()
