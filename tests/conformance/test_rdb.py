"""RDB files both ways, with real processes: redis-server 7.0.15 saves every type (strings
in their integer and LZF forms, lists, sets incl. intsets, hashes, sorted sets, a stream
with consumer groups, TTLs, several databases, a function library) and Spinel started on
that file serves the same data; Spinel's SAVE passes `redis-check-rdb` and redis-server
loads it to the same data; memcached items keep flags, CAS and expiry across a Spinel
SAVE and restart; SHUTDOWN SAVE and BGSAVE write RDB too. Damaged files are refused in
test_snapshot.py.
"""

import os
import shutil
import subprocess
import time

import pytest
import redis

from conftest import start_server
from wire import Conn

pytestmark = pytest.mark.spinel_only

LIBRARY = ("#!lua name=rdblib\n"
           "redis.register_function('rdb_echo', function(keys, args) return args[1] end)\n")


@pytest.fixture(autouse=True)
def spinel_only(target):
    if target != "spinel":
        pytest.skip("Spinel's side of an RDB file")


def client(port, db=0):
    conn = redis.Redis(port=port, db=db, decode_responses=False)
    deadline = time.monotonic() + 20
    while True:  # redis-server answers -LOADING while it reads its file
        try:
            conn.ping()
            return conn
        except redis.exceptions.BusyLoadingError:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def fill(port):
    """Every type in the forms Redis 7.0 saves them, in databases 0, 2 and 15."""
    r = client(port)
    r.set("s", "hello")
    r.set("int8", "12")
    r.set("int32", "-2147483648")
    r.set("int64", "9223372036854775807")
    r.set("lzf", "abc" * 400)
    r.set("ttl_s", "x", ex=1000)
    r.set("ttl_ms", "y", px=5_000_000)
    r.rpush("list_small", "a", "1", "b")
    r.rpush("list_big", *[f"{i}" * 40 for i in range(2000)])
    r.sadd("intset", 1, 2, 3, -40000, 5_000_000_000)
    r.sadd("set_small", "a", "b", "c")
    r.sadd("set_big", *[f"m{i}" for i in range(1000)])
    r.hset("hash_small", mapping={"a": "1", "b": "2"})
    r.hset("hash_big", mapping={f"f{i}": "v" * 80 for i in range(600)})
    r.expire("hash_big", 7000)
    r.zadd("zset_small", {"a": 1.5, "b": -2})
    r.zadd("zset_big", {f"z{i}": i / 3 for i in range(300)})
    for i in range(250):
        r.xadd("stream", {"n": str(i), "p": "x" * (i % 7)}, id=f"{1000 + i}-{i % 3}")
    r.xgroup_create("stream", "g1", id="0")
    r.xgroup_create("stream", "g2", id="$")
    r.xreadgroup("g1", "alice", {"stream": ">"}, count=5)
    r.xreadgroup("g1", "bob", {"stream": ">"}, count=3)
    r.xack("stream", "g1", "1001-1")
    r.xadd("stream_empty", {"a": "b"}, id="5-5")
    r.xdel("stream_empty", "5-5")
    r.function_load(LIBRARY)
    for db in (2, 15):
        other = client(port, db)
        other.set(f"in{db}", f"db {db}")
        other.rpush("list", "x", "y")
        other.set("ttl", "z", ex=2000)


def contents(r, key):
    kind = r.type(key)
    read = {
        b"string": lambda: r.get(key),
        b"list": lambda: r.lrange(key, 0, -1),
        b"set": lambda: sorted(r.smembers(key)),
        b"hash": lambda: sorted(r.hgetall(key).items()),
        b"zset": lambda: r.zrange(key, 0, -1, withscores=True),
        b"stream": lambda: stream_contents(r, key),
    }[kind]
    return kind, read()


def stream_contents(r, key):
    info = r.xinfo_stream(key)
    groups = [(g["name"], g["pending"], g["last-delivered-id"]) for g in r.xinfo_groups(key)]
    pending = {g[0]: [(p["message_id"], p["consumer"], p["times_delivered"])
                      for p in r.xpending_range(key, g[0], "-", "+", 100)] for g in groups}
    return (r.xrange(key), info["last-generated-id"], info["length"], groups, pending)


def everything(port):
    """Every database's keys: their type, contents and TTL (rounded to 10 s), and the
    function libraries."""
    found = {}
    for db in range(16):
        r = client(port, db)
        for key in r.scan_iter(count=1000):
            ttl = r.pttl(key)
            found[(db, key)] = (*contents(r, key), ttl if ttl < 0 else round(ttl / 10_000))
    listed = [dict(zip(lib[::2], lib[1::2])) for lib in client(port).function_list(withcode=True)]
    libraries = [(lib[b"library_name"], lib[b"library_code"]) for lib in listed]
    return found, libraries


def test_spinel_loads_what_redis_server_saves(make_server, tmp_path):
    shutil.which("redis-server") or pytest.skip("redis-server not installed")
    real = start_server("redis", extra=["--dir", str(tmp_path), "--dbfilename", "dump.rdb"])
    try:
        fill(real.resp_port)
        expected = everything(real.resp_port)
        assert client(real.resp_port).save()
    finally:
        real.cleanup()
    assert len(expected[0]) == 24 and expected[1][0][0] == b"rdblib"
    spinel = make_server(extra=["--dir", str(tmp_path), "-v"])
    assert "restored 24 items" in spinel.stderr(), spinel.stderr()
    assert everything(spinel.resp_port) == expected
    assert client(spinel.resp_port).fcall("rdb_echo", 0, "hi") == b"hi"


def test_redis_server_loads_what_spinel_saves(make_server, tmp_path):
    check = shutil.which("redis-check-rdb") or pytest.skip("redis-check-rdb not installed")
    spinel = make_server(extra=["--dir", str(tmp_path)])
    fill(spinel.resp_port)
    with Conn(spinel.mc_port) as c:
        c.rt(b"set mc:item 77 0 5\r\nhello\r\n", b"STORED\r\n")
    expected = everything(spinel.resp_port)
    assert client(spinel.resp_port).save()
    path = tmp_path / "dump.rdb"
    assert path.read_bytes().startswith(b"REDIS0010\xfa\x09redis-ver\x067.0.15")
    checked = subprocess.run([check, str(path)], capture_output=True, timeout=60)
    out = checked.stdout.decode()
    assert checked.returncode == 0 and "RDB looks OK!" in out, out
    assert "Checksum OK" in out and "AUX FIELD spinel-mc = '77 " in out, out
    real = start_server("redis", extra=["--dir", str(tmp_path), "--dbfilename", "dump.rdb"])
    try:
        assert everything(real.resp_port) == expected
        assert client(real.resp_port).fcall("rdb_echo", 0, "hi") == b"hi"
        assert client(real.resp_port).get("mc:item") == b"hello"
    finally:
        real.cleanup()


def gets(conn, key):
    conn.send(b"gets %s\r\n" % key)
    line = conn.read_line()
    if line == b"END\r\n":
        return None
    _, _, flags, length, cas = line.split()
    value = conn.read_exact(int(length) + 2)[:-2]
    assert conn.read_line() == b"END\r\n"
    return int(flags), value, int(cas)


def test_memcached_items_keep_flags_cas_and_expiry_across_save(make_server, tmp_path):
    args = ["--dir", str(tmp_path), "--dbfilename", "items.rdb"]
    first = make_server(extra=args)
    with Conn(first.mc_port) as c:
        for i in range(2000):
            ttl = 3600 if i % 2 else 0
            c.send(b"set item:%d %d %d 3\r\nabc\r\n" % (i, i * 65_537 % 2**32, ttl))
            assert c.read_line() == b"STORED\r\n"
        before = {i: gets(c, b"item:%d" % i) for i in (0, 1, 999, 1999)}
    assert client(first.resp_port).save()
    first.stop()
    second = make_server(extra=args)
    with Conn(second.mc_port) as c:
        for i, item in before.items():
            assert gets(c, b"item:%d" % i) == item, i
        c.send(b"mg item:1 t\r\n")
        assert 3590 <= int(c.read_line().split()[1][1:]) <= 3600
        c.send(b"mg item:0 t\r\n")
        assert c.read_line() == b"HD t-1\r\n"
        c.rt(b"set fresh 0 0 1\r\nx\r\n", b"STORED\r\n")
        assert gets(c, b"fresh")[2] > max(item[2] for item in before.values())
    assert client(second.resp_port).dbsize() == 2001


def test_an_old_spinel_snapshot_still_loads_as_dbfilename(make_server, tmp_path):
    """memcached's `-e` file is Spinel's own format; named as `dbfilename` it loads too."""
    old = tmp_path / "dump.rdb"
    first = make_server(extra=["-A", "-e", str(old)])
    with Conn(first.mc_port) as c:
        c.rt(b"set k 9 0 2\r\nhi\r\n", b"STORED\r\n")
        c.send(b"shutdown graceful\r\n")
    first.proc.wait(30)
    assert old.read_bytes().startswith(b"SPINELSN")
    second = make_server(extra=["--dir", str(tmp_path)])
    with Conn(second.mc_port) as c:
        assert gets(c, b"k")[:2] == (9, b"hi")
    assert os.path.exists(old)


def test_shutdown_save_writes_rdb_and_bgsave_too(make_server, tmp_path):
    args = ["--dir", str(tmp_path)]
    first = make_server(extra=args)
    r = client(first.resp_port)
    r.set("a", "1")
    assert r.bgsave() in (True, b"Background saving started")
    deadline = time.monotonic() + 20
    while r.info("persistence")["rdb_bgsave_in_progress"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert (tmp_path / "dump.rdb").read_bytes().startswith(b"REDIS0010")
    r.set("b", "2")
    r.shutdown(save=True)  # the connection closes without a reply
    first.proc.wait(30)
    second = make_server(extra=args)
    assert sorted(client(second.resp_port).keys()) == [b"a", b"b"]
