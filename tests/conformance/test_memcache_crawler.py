"""Store-dependent memcached features: last access (`la`, meta `l`/`h`), `lru_crawler`
(metadump, crawl and their errors), `flush_all` at a past time, and `cache_memlimit`.

Real memcached 1.6.18 is the reference. Times are checked with a tolerance of a second or two
(memcached's clock ticks once a second, not on the second); metadump lines are parsed and
compared field by field, and their order (LRU order in memcached, hash order in spinel) is not.
"""

import re
import time
import urllib.parse

import pytest

from wire import Conn

pytestmark = pytest.mark.memcache

DUMP_LINE = re.compile(
    rb"key=(\S+) exp=(-?\d+) la=(\d+) cas=(\d+) fetch=(yes|no) cls=(\d+) size=(\d+)\n"
)
ITEM_HEADER = 48  # memcached's sizeof(item)


@pytest.fixture
def c(mc_port):
    with Conn(mc_port) as conn:
        yield conn


def fresh(make_server):
    """A server of its own: metadumps list every item, and crawler state is global."""
    return Conn(make_server().mc_port)


def metadump(conn, arg=b"all"):
    """{key: (exp, la, cas, fetch, cls, size)} from `lru_crawler metadump <arg>`."""
    conn.send(b"lru_crawler metadump " + arg + b"\r\n")
    body = conn.read_until(b"END\r\n", timeout=20)
    items, pos = {}, 0
    while pos < len(body) - 5:
        m = DUMP_LINE.match(body, pos)
        assert m, body[pos : pos + 200]
        key = urllib.parse.unquote_to_bytes(m.group(1).decode())
        assert key not in items, key
        exp, la, cas = int(m.group(2)), int(m.group(3)), int(m.group(4))
        items[key] = (exp, la, cas, m.group(5) == b"yes", int(m.group(6)), int(m.group(7)))
        pos = m.end()
    assert body[pos:] == b"END\r\n"
    return items


def gets_cas(conn, key):
    conn.send(b"gets " + key + b"\r\n")
    head = conn.read_line()
    assert head.startswith(b"VALUE "), head
    size = int(head.split()[3])
    conn.read_exact(size + 2)
    assert conn.read_line() == b"END\r\n"
    return int(head.split()[4])


def stat(conn, name, group=b""):
    conn.send(b"stats" + (b" " + group if group else b"") + b"\r\n")
    body = conn.read_until(b"END\r\n").decode()
    return dict(line.split(" ")[1:3] for line in body.splitlines() if line.startswith("STAT "))[name]


def me_fields(conn, key):
    conn.send(b"me " + key + b"\r\n")
    line = conn.read_line()
    assert line.startswith(b"ME " + key + b" "), line
    return dict(f.split(b"=") for f in line[len(key) + 4 : -2].split(b" "))


def near(value, want, slack=2):
    return want - slack <= value <= want + slack


# ------------------------------------------------------------------------------------------
# metadump


def test_metadump_lines(make_server):
    with fresh(make_server) as c:
        # key -> (flags, exptime, value length); the second key needs url-encoding.
        items = {
            b"plain": (0, 0, 1),
            b"sp%ce/x:y": (7, 100, 3),
            b"mid": (0, 0, 3000),
            b"big": (0, 0, 600000),
        }
        for key, (flags, exptime, size) in items.items():
            c.rt(b"set %s %d %d %d\r\n%s\r\n" % (key, flags, exptime, size, b"v" * size), b"STORED\r\n")
        c.rt(b"get mid\r\n", b"VALUE mid 0 3000\r\n" + b"v" * 3000 + b"\r\nEND\r\n")
        now = time.time()
        dump = metadump(c)
        # A class list dumps those classes only; `hash` is every item too. (Dumped before
        # the reads below: memcached's crawler can miss an item its LRU moves meanwhile.)
        assert set(metadump(c, b"1")) == {b"plain", b"sp%ce/x:y"}
        assert set(metadump(c, b"17,39")) == {b"mid", b"big"}
        assert set(metadump(c, b"2,3,")) == set()
        assert set(metadump(c, b"hash")) == set(items)
        assert set(dump) == set(items)
        # size: header, key and NUL, value and CRLF, client flags if any, CAS; class as -f 1.25.
        want_cls = {b"plain": 1, b"sp%ce/x:y": 1, b"mid": 17, b"big": 39}
        for key, (flags, exptime, size) in items.items():
            exp, la, cas, fetch, cls, total = dump[key]
            assert exp == -1 if exptime == 0 else near(exp, now + exptime), (key, exp)
            assert near(la, now), (key, la)
            assert cas == gets_cas(c, key)
            assert fetch == (key == b"mid"), key
            assert total == ITEM_HEADER + len(key) + 1 + size + 2 + (4 if flags else 0) + 8
            assert cls == want_cls[key], key


def test_metadump_encodes_keys(make_server):
    with fresh(make_server) as c:
        c.rt(b"set a%b~c-d.e_f 0 0 1\r\nx\r\n", b"STORED\r\n")
        c.send(b"lru_crawler metadump all\r\n")
        assert c.read_until(b"END\r\n").startswith(b"key=a%25b~c-d.e_f exp=-1 la=")


def test_metadump_errors(c):
    for arg in (b"0", b"64", b"x", b"1,x", b"-1"):
        c.rt(b"lru_crawler metadump " + arg + b"\r\n", b"BADCLASS invalid class id\r\n")
    c.rt(b"lru_crawler metadump\r\n", b"ERROR\r\n")
    c.rt(b"lru_crawler metadump all extra\r\n", b"ERROR\r\n")


def test_metadump_behind_unsent_replies_is_refused(make_server):
    # A dump takes over the connection: behind replies of the same batch not yet sent,
    # memcached refuses it (a `get` flushes its reply first, so `mg` stands in front here).
    with fresh(make_server) as c:
        c.rt(b"mg nokey v\r\nlru_crawler metadump all\r\n",
             b"EN\r\nERROR cannot pipeline other commands before metadump\r\n")
        c.rt(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n")
        assert list(metadump(c)) == [b"k"]


def test_metadump_streams_many_items(make_server):
    """A dump far larger than a reply chunk arrives whole, each item once, then END."""
    with fresh(make_server) as c:
        n = 20000
        c.send(b"".join(b"set key:%06d 0 0 100 noreply\r\n%s\r\n" % (i, b"v" * 100) for i in range(n)))
        c.rt(b"mn\r\n", b"MN\r\n")
        dump = metadump(c)
        assert set(dump) == {b"key:%06d" % i for i in range(n)}
        # The connection goes on after the dump.
        c.rt(b"mn\r\n", b"MN\r\n")


def test_metadump_while_another_is_unread(make_server):
    """A second dump asked for while a first one sits unread arrives whole, or (memcached,
    when asked between two batches of its one crawler) is refused as BUSY; spinel serves
    dumps side by side."""
    server = make_server()
    with Conn(server.mc_port) as c, Conn(server.mc_port) as other:
        n = 100000
        for start in range(0, n, 20000):
            c.send(b"".join(b"set key:%07d 0 0 20 noreply\r\n%s\r\n" % (i, b"v" * 20)
                            for i in range(start, start + 20000)))
        c.rt(b"mn\r\n", b"MN\r\n")
        c.send(b"lru_crawler metadump all\r\n")
        time.sleep(0.3)  # the dump fills the socket buffers and waits for its reader
        other.send(b"lru_crawler metadump all\r\n")
        body = c.read_until(b"END\r\n", timeout=30)
        assert body.count(b"\n") == n + 1 and body.startswith(b"key=key%3A")
        busy = b"BUSY currently processing crawler request\r\n"
        first = other.read_exact(len(busy), timeout=30)
        if first != busy:
            body = first + other.read_until(b"END\r\n", timeout=30)
            assert body.count(b"\n") == n + 1 and body.startswith(b"key=key%3A")


# ------------------------------------------------------------------------------------------
# crawl, enable/disable, tunables


def test_crawler_commands(make_server):
    with fresh(make_server) as c:
        c.rt(b"lru_crawler crawl all\r\n", b"OK\r\n")
        c.rt(b"lru_crawler crawl 1,2\r\n", b"OK\r\n")
        c.rt(b"lru_crawler crawl 0\r\n", b"BADCLASS invalid class id\r\n")
        c.rt(b"lru_crawler crawl 1,x\r\n", b"BADCLASS invalid class id\r\n")
        c.rt(b"lru_crawler crawl hash\r\n", b"ERROR an unknown error happened\r\n")
        c.rt(b"lru_crawler crawl 1 2\r\n", b"ERROR\r\n")
        c.rt(b"lru_crawler tocrawl -1\r\n", b"CLIENT_ERROR bad command line format\r\n")
        c.rt(b"lru_crawler tocrawl 5\r\n", b"OK\r\n")
        c.rt(b"lru_crawler tocrawl x\r\n", b"CLIENT_ERROR bad command line format\r\n")
        c.rt(b"lru_crawler sleep 100\r\n", b"OK\r\n")
        c.rt(b"lru_crawler sleep 1000001\r\n",
             b"CLIENT_ERROR sleep must be one second or less\r\n")
        c.rt(b"lru_crawler\r\n", b"ERROR\r\n")
        c.rt(b"lru_crawler bogus\r\n", b"ERROR\r\n")
        c.rt(b"lru_crawler enable\r\n", b"ERROR failed to start lru crawler thread\r\n")
        c.rt(b"lru_crawler disable\r\n", b"OK\r\n")
        c.rt(b"lru_crawler disable\r\n", b"OK\r\n")
        c.rt(b"lru_crawler crawl all\r\n", b"CLIENT_ERROR lru crawler disabled\r\n")
        c.rt(b"lru_crawler metadump all\r\n", b"CLIENT_ERROR lru crawler disabled\r\n")
        c.rt(b"lru_crawler enable\r\n", b"OK\r\n")
        c.rt(b"lru_crawler metadump all\r\n", b"END\r\n")


@pytest.mark.slow
def test_crawl_drops_expired_items(make_server):
    with fresh(make_server) as c:
        c.rt(b"set gone 0 1 1\r\nx\r\nset kept 0 0 1\r\ny\r\n", b"STORED\r\nSTORED\r\n")
        time.sleep(2.1)
        c.rt(b"lru_crawler crawl all\r\n", b"OK\r\n")
        assert set(metadump(c)) == {b"kept"}


# ------------------------------------------------------------------------------------------
# last access: me la, mg l and h


@pytest.mark.slow
def test_last_access_follows_second_fetch(c, key):
    k = key.encode()
    c.rt(b"set " + k + b" 0 0 1\r\nx\r\n", b"STORED\r\n")
    assert me_fields(c, k)[b"la"] in (b"0", b"1")
    time.sleep(2.1)
    la = int(me_fields(c, k)[b"la"])
    assert 2 <= la <= 3, la
    # mg l h reports the state from before its own fetch; the first fetch only marks the
    # item fetched, the second moves its access time.
    c.send(b"mg " + k + b" l h\r\n")
    first = c.read_line()
    assert re.fullmatch(rb"HD l[23] h0\r\n", first), first
    c.send(b"mg " + k + b" l h\r\n")
    second = c.read_line()
    assert re.fullmatch(rb"HD l[23] h1\r\n", second), second
    # memcached moves it at once, or (an item its LRU holds cold) a moment later.
    deadline = time.monotonic() + 2
    while int(me_fields(c, k)[b"la"]) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    fields = me_fields(c, k)
    assert fields[b"la"] in (b"0", b"1") and fields[b"fetch"] == b"yes", fields
    # A new write starts over (memcached's clock may tick in between).
    time.sleep(2.1)
    c.rt(b"set " + k + b" 0 0 1\r\ny\r\n", b"STORED\r\n")
    assert me_fields(c, k)[b"la"] in (b"0", b"1")


def test_me_reports_memcached_size(c):
    k = b"me%06d" % (time.monotonic_ns() % 10**6)
    c.rt(b"set " + k + b" 5 0 10\r\n0123456789\r\n", b"STORED\r\n")
    fields = me_fields(c, k)
    assert int(fields[b"size"]) == ITEM_HEADER + len(k) + 1 + 12 + 4 + 8
    assert fields[b"cls"] == b"1" and fields[b"exp"] == b"-1"


# ------------------------------------------------------------------------------------------
# flush_all at a past time


# One matrix entry: the store's clock decides this, not the I/O back end.
@pytest.mark.one_backend
@pytest.mark.slow
def test_flush_all_at_past_time_flushes_everything(make_server):
    """With CAS on (the default) memcached flushes every item at or before now, whatever
    its access time: the flush's CAS bound covers them all."""
    with fresh(make_server) as c:
        c.rt(b"set old 0 0 1\r\nx\r\n", b"STORED\r\n")
        time.sleep(2.1)
        c.rt(b"set new 0 0 1\r\ny\r\n", b"STORED\r\n")
        c.rt(b"flush_all %d\r\n" % (int(time.time()) - 1), b"OK\r\n")
        c.rt(b"get old new\r\n", b"END\r\n")
        c.rt(b"set after 0 0 1\r\nz\r\n", b"STORED\r\n")
        c.rt(b"get after\r\n", b"VALUE after 0 1\r\nz\r\nEND\r\n")


# One matrix entry: the store's clock decides this, not the I/O back end.
@pytest.mark.one_backend
@pytest.mark.slow
def test_flush_all_at_past_time_without_cas(make_server):
    """With -C memcached flushes only the items last written (or fetched twice) at or
    before that time. Its clock may lag a second behind, hence the margins."""
    with Conn(make_server(extra=["-C"]).mc_port) as c:
        time.sleep(1.1)  # the flush time must be after the server started
        t_old = int(time.time())
        c.rt(b"set old 0 0 1\r\nx\r\n", b"STORED\r\n")
        time.sleep(2.1)
        c.rt(b"set new 0 0 1\r\ny\r\n", b"STORED\r\n")
        c.rt(b"flush_all %d\r\n" % t_old, b"OK\r\n")
        c.rt(b"get old new\r\n", b"VALUE new 0 1\r\ny\r\nEND\r\n")
        assert set(metadump(c)) == {b"new"}


def test_flush_all_before_start_flushes_nothing(make_server):
    """memcached's clock starts 62 s before the process: a time before that flushes nothing,
    one a few seconds before the start flushes everything."""
    with fresh(make_server) as c:
        c.rt(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n")
        c.rt(b"flush_all %d\r\n" % (int(time.time()) - 70), b"OK\r\n")
        c.rt(b"get k\r\n", b"VALUE k 0 1\r\nx\r\nEND\r\n")
        c.rt(b"flush_all %d\r\n" % (int(time.time()) - 30), b"OK\r\n")
        c.rt(b"get k\r\n", b"END\r\n")


# ------------------------------------------------------------------------------------------
# cache_memlimit


def test_cache_memlimit_replies(make_server):
    with fresh(make_server) as c:
        c.rt(b"cache_memlimit 32\r\n", b"OK\r\n")
        assert stat(c, "limit_maxbytes") == str(32 << 20)
        assert stat(c, "maxbytes", b"settings") == str(32 << 20)
        c.rt(b"cache_memlimit 7\r\n", b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n")
        c.rt(b"cache_memlimit 0\r\n", b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n")
        c.rt(b"cache_memlimit 1000000001\r\n",
             b"MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n")
        c.rt(b"cache_memlimit x\r\n", b"ERROR\r\n")
        c.rt(b"cache_memlimit -8\r\n", b"ERROR\r\n")
        c.rt(b"cache_memlimit\r\n", b"ERROR\r\n")
        c.rt(b"cache_memlimit 16 noreply x\r\n", b"ERROR\r\n")
        c.rt(b"cache_memlimit 16 noreply\r\nmn\r\n", b"MN\r\n")
        assert stat(c, "limit_maxbytes") == str(16 << 20)
        c.rt(b"cache_memlimit 64\r\n", b"OK\r\n")
        assert stat(c, "limit_maxbytes") == str(64 << 20)


def test_cache_memlimit_shrink_evicts(make_server):
    with fresh(make_server) as c:
        value = b"v" * 1000

        def fill(prefix, n=20000):
            c.send(b"".join(b"set %s%05d 0 0 1000 noreply\r\n%s\r\n" % (prefix, i, value)
                            for i in range(n)))
            c.rt(b"mn\r\n", b"MN\r\n")

        fill(b"a")  # about 20 MB into 64 MB: nothing is evicted
        assert stat(c, "evictions") == "0"
        assert stat(c, "curr_items") == "20000"
        c.rt(b"cache_memlimit 8\r\n", b"OK\r\n")
        fill(b"b")
        assert int(stat(c, "evictions")) > 0
        assert stat(c, "limit_maxbytes") == str(8 << 20)


# One matrix entry: the store's memory limit, not the I/O back end.
@pytest.mark.one_backend
@pytest.mark.slow
def test_cache_memlimit_grows_past_the_start_size(make_server):
    """memcached's own t/dyn-maxbytes.t: from -m 3, 65 KB values evict; raised to 8 MB, one
    more is stored without evicting and total_malloced grows; raised to 16 MB, 150 values are
    stored; lowered to 8 MB and emptied, total_malloced comes down."""
    # memcached gives pages back only with its slab mover working quickly.
    server = make_server(extra=["-m", "3", "-o", "modern,slab_automove_window=3"])
    with Conn(server.mc_port) as c:
        value = b"B" * 66560

        def store(key):
            c.rt(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value), b"STORED\r\n")

        for i in range(40):
            store(b"key%d" % i)
        evicted = int(stat(c, "evictions"))
        assert evicted > 0
        c.rt(b"cache_memlimit 8\r\n", b"OK\r\n")
        assert stat(c, "maxbytes", b"settings") == str(8 << 20)
        assert stat(c, "limit_maxbytes") == str(8 << 20)
        malloced = int(stat(c, "total_malloced", b"slabs"))
        store(b"toast")
        # Memory given back by the evictions above may still be on its way to the free list.
        deadline = time.monotonic() + 3
        while int(stat(c, "total_malloced", b"slabs")) <= malloced and time.monotonic() < deadline:
            time.sleep(0.05)
        assert int(stat(c, "total_malloced", b"slabs")) > malloced
        assert int(stat(c, "evictions")) == evicted
        c.rt(b"cache_memlimit 16\r\n", b"OK\r\n")
        for i in range(40, 150):
            store(b"key%d" % i)
        assert int(stat(c, "total_malloced", b"slabs")) > 8 << 20, "the new room is used"
        malloced = int(stat(c, "total_malloced", b"slabs"))
        c.rt(b"cache_memlimit 8\r\n", b"OK\r\n")
        for i in range(150):
            c.send(b"delete key%d\r\n" % i)
            assert c.read_line() in (b"DELETED\r\n", b"NOT_FOUND\r\n")
        deadline = time.time() + 6
        while int(stat(c, "total_malloced", b"slabs")) >= malloced and time.time() < deadline:
            time.sleep(0.5)
        assert int(stat(c, "total_malloced", b"slabs")) < malloced


def test_metadump_refused_with_dumping_disabled(make_server):
    with Conn(make_server(extra=["-X"]).mc_port) as c:
        c.rt(b"lru_crawler metadump all\r\n", b"ERROR metadump not allowed\r\n")
        c.rt(b"lru_crawler crawl all\r\n", b"OK\r\n")
