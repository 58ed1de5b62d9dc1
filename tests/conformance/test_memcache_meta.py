"""memcached meta protocol (mn me mg ms md ma), as raw wire transcripts.

Real memcached 1.6.18 is the reference: every reply here is what it sends. Timing-dependent
tokens (t, l, h, cas values) are matched with patterns. The W/X/Z markers are compared as a set,
because 1.6.18 orders them by code path ("X W" on the first fetch after md I, "Z X" after).
"""

import base64
import re

import pytest

from wire import Conn

pytestmark = pytest.mark.memcache


@pytest.fixture
def c(mc_port):
    with Conn(mc_port) as conn:
        yield conn


def b(s):
    return s.encode() if isinstance(s, str) else s


def meta(conn, line, data=None):
    """Send a meta command; return (code, tokens, markers, value). markers = {W, X, Z}."""
    conn.send(line + b"\r\n" + (data + b"\r\n" if data is not None else b""))
    head = conn.read_line()[:-2]
    parts = head.split(b" ")
    code, rest = parts[0], parts[1:]
    value = None
    if code == b"VA":
        size = int(rest[0])
        rest = rest[1:]
        value = conn.read_exact(size + 2)
        assert value.endswith(b"\r\n")
        value = value[:-2]
    markers = {t for t in rest if t in (b"W", b"X", b"Z")}
    tokens = [t for t in rest if t not in markers]
    return code, tokens, markers, value


def cas_of(conn, k):
    code, tokens, _, _ = meta(conn, b"mg " + k + b" c")
    assert code == b"HD", (code, tokens)
    return int(tokens[0][1:])


# ------------------------------------------------------------------------------------------
# mn, me


def test_mn(c):
    c.rt(b"mn\r\n", b"MN\r\n")


def test_me(c, key):
    k = b(key)
    c.rt(b"me " + k + b"\r\n", b"EN\r\n")
    c.rt(b"ms " + k + b" 2 T0\r\nhi\r\n", b"HD\r\n")
    c.send(b"me " + k + b"\r\n")
    line = c.read_line()
    # The fields are internal; check the shape and the documented keys only.
    assert re.fullmatch(
        rb"ME " + re.escape(k) + rb" exp=-?\d+ la=\d+ cas=\d+ fetch=(yes|no) cls=\d+ size=\d+\r\n",
        line,
    ), line
    c.rt(b"me\r\n", b"CLIENT_ERROR bad command line format\r\n")


# ------------------------------------------------------------------------------------------
# mg


def test_mg_flags(c, key):
    k = b(key)
    c.rt(b"mg " + k + b" v\r\n", b"EN\r\n")
    c.rt(b"ms " + k + b" 3 F5\r\nabc\r\n", b"HD\r\n")
    c.rt(b"mg " + k + b"\r\n", b"HD\r\n")
    c.rt(b"mg " + k + b" v\r\n", b"VA 3\r\nabc\r\n")
    c.rt(b"mg " + k + b" s v\r\n", b"VA 3 s3\r\nabc\r\n")
    c.send(b"mg " + k + b" v f t c k s O99 h l\r\n")
    line = c.read_line()
    m = re.fullmatch(rb"VA 3 f5 t-1 c(\d+) k" + re.escape(k) + rb" s3 O99 h([01]) l(\d+)\r\n",
                     line)
    assert m, line
    assert c.read_exact(5) == b"abc\r\n"
    # h and l report the state before this fetch: it has now been hit.
    c.send(b"mg " + k + b" h l\r\n")
    assert re.fullmatch(rb"HD h1 l\d+\r\n", c.read_line())
    c.rt(b"mg " + k + b" k q\r\n", b"HD k" + k + b"\r\n")


def test_mg_quiet_and_opaque(c, key):
    k = b(key)
    # A quiet miss sends nothing; mn closes the pipeline.
    c.rt(b"mg " + k + b" v q\r\nmg " + k + b" v q O1\r\nmn\r\n", b"MN\r\n")
    c.rt(b"ms " + k + b" 1\r\nx\r\n", b"HD\r\n")
    c.rt(b"mg " + k + b" v q O2\r\nmn\r\n", b"VA 1 O2\r\nx\r\nMN\r\n")
    c.rt(b"mg " + k + b" q\r\nmn\r\n", b"HD\r\nMN\r\n")
    # A miss still echoes the opaque and the key.
    c.rt(b"mg " + k + b"_m O77\r\n", b"EN O77\r\n")
    c.rt(b"mg " + k + b"_m O77 k\r\n", b"EN O77 k" + k + b"_m\r\n")
    c.rt(b"md " + k + b"_m O77 k\r\n", b"NF O77 k" + k + b"_m\r\n")
    c.rt(b"ma " + k + b"_m O77 k\r\n", b"NF O77 k" + k + b"_m\r\n")


def test_mg_base64_key(c, key):
    raw = b(key) + b"\x00\xff"
    enc = base64.b64encode(raw)
    c.rt(b"ms " + enc + b" 2 b\r\nhi\r\n", b"HD\r\n")
    c.rt(b"mg " + enc + b" b v k\r\n", b"VA 2 k" + enc + b" b\r\nhi\r\n")
    c.rt(b"mg " + enc + b" b s\r\n", b"HD s2\r\n")
    c.rt(b"mg " + b(key) + b"!! b v\r\n", b"CLIENT_ERROR error decoding key\r\n")


def test_mg_ttl_touch(c, key):
    k = b(key)
    c.rt(b"ms " + k + b" 2\r\nhi\r\n", b"HD\r\n")
    c.rt(b"mg " + k + b" t\r\n", b"HD t-1\r\n")
    c.rt(b"mg " + k + b" T30 t v\r\n", b"VA 2 t30\r\nhi\r\n")
    c.send(b"mg " + k + b" t\r\n")
    assert re.fullmatch(rb"HD t(29|30)\r\n", c.read_line())


def test_mg_errors(c, key):
    k = b(key)
    c.rt(b"mg\r\n", b"ERROR\r\n")
    c.rt(b"mg " + k + b" zz\r\n", b"CLIENT_ERROR invalid flag\r\n")
    c.rt(b"mg " + k + b" v v\r\n", b"CLIENT_ERROR duplicate flag\r\n")
    c.rt(b"mg " + b"k" * 251 + b" v\r\n", b"CLIENT_ERROR bad command line format\r\n")


def test_mg_vivify_win_and_already_won(c, key):
    k = b(key)
    code, tokens, markers, value = meta(c, b"mg " + k + b" N30 v c t")
    assert (code, markers, value) == (b"VA", {b"W"}, b"")
    cas = tokens[0]
    assert re.fullmatch(rb"c\d+", cas) and tokens[1] == b"t30"
    # The next client sees the stub and learns someone else won.
    assert meta(c, b"mg " + k + b" N30 v c t") == (b"VA", [cas, b"t30"], {b"Z"}, b"")
    assert meta(c, b"mg " + k + b" v") == (b"VA", [], {b"Z"}, b"")
    # The winner stores the real value; the markers are gone.
    c.rt(b"ms " + k + b" 3\r\nnew\r\n", b"HD\r\n")
    c.rt(b"mg " + k + b" v\r\n", b"VA 3\r\nnew\r\n")


def test_mg_recache(c, key):
    k = b(key)
    c.rt(b"ms " + k + b" 2 T100\r\nhi\r\n", b"HD\r\n")
    # Remaining TTL (~100) is not below 30: no win.
    code, tokens, markers, value = meta(c, b"mg " + k + b" R30 v t")
    assert (code, markers, value) == (b"VA", set(), b"hi")
    assert re.fullmatch(rb"t(99|100)", tokens[0])
    # Below 200: the first asker wins, later ones see Z.
    assert meta(c, b"mg " + k + b" R200 v") == (b"VA", [], {b"W"}, b"hi")
    assert meta(c, b"mg " + k + b" R200 v") == (b"VA", [], {b"Z"}, b"hi")
    assert meta(c, b"mg " + k + b" v") == (b"VA", [], {b"Z"}, b"hi")


def test_invalidate_then_stale_win(c, key):
    k = b(key)
    c.rt(b"ms " + k + b" 2 T100\r\nhi\r\n", b"HD\r\n")
    old_cas = cas_of(c, k)
    c.rt(b"md " + k + b" I T30\r\n", b"HD\r\n")
    code, tokens, markers, value = meta(c, b"mg " + k + b" v c t")
    assert (code, markers, value) == (b"VA", {b"X", b"W"}, b"hi")
    new_cas = int(tokens[0][1:])
    assert new_cas != old_cas and tokens[1] == b"t30"
    assert meta(c, b"mg " + k + b" v c") == (b"VA", [tokens[0]], {b"X", b"Z"}, b"hi")
    # A set with a stale cas is refused; the item stays stale.
    c.rt(b"ms %s 3 C%d\r\nold\r\n" % (k, old_cas), b"EX\r\n")
    # A set with the current cas replaces it and clears the markers.
    c.rt(b"ms %s 3 C%d\r\nnew\r\n" % (k, new_cas), b"HD\r\n")
    c.rt(b"mg " + k + b" v\r\n", b"VA 3\r\nnew\r\n")


def test_ms_invalidate_with_older_cas(c, key):
    k = b(key)
    c.send(b"ms " + k + b" 2 c\r\nhi\r\n")
    assert re.fullmatch(rb"HD c\d+\r\n", c.read_line())
    # With I, a cas lower than the item's is accepted but the item becomes stale.
    c.rt(b"ms " + k + b" 2 C1 I\r\nho\r\n", b"HD\r\n")
    assert meta(c, b"mg " + k + b" v") == (b"VA", [], {b"X", b"W"}, b"ho")


# ------------------------------------------------------------------------------------------
# ms


def test_ms_modes(c, key):
    k = b(key)
    k2, k3 = k + b"_2", k + b"_3"
    c.rt(b"ms " + k + b" 1 ME\r\nx\r\n", b"HD\r\n")       # add, missing: stored
    c.rt(b"ms " + k + b" 1 ME\r\ny\r\n", b"NS\r\n")       # add, present
    c.rt(b"ms " + k2 + b" 1 MR\r\nx\r\n", b"NS\r\n")      # replace, missing
    c.rt(b"ms " + k + b" 1 MR\r\nz\r\n", b"HD\r\n")       # replace, present
    c.rt(b"ms " + k + b" 1 MA\r\nA\r\n", b"HD\r\n")       # append
    c.rt(b"ms " + k + b" 1 MP\r\nP\r\n", b"HD\r\n")       # prepend
    c.rt(b"mg " + k + b" v\r\n", b"VA 3\r\nPzA\r\n")
    c.rt(b"ms " + k3 + b" 1 MA\r\nA\r\n", b"NS\r\n")
    c.rt(b"ms " + k3 + b" 1 MP\r\nA\r\n", b"NS\r\n")
    c.rt(b"ms " + k + b" 1 MS\r\nS\r\n", b"HD\r\n")       # set
    c.rt(b"mg " + k + b" v\r\n", b"VA 1\r\nS\r\n")


def test_ms_invalid_mode(c, key):
    k = b(key)
    for mode in (b"MX", b"Ms", b"Ma"):
        c.rt(b"ms " + k + b" 1 " + mode + b"\r\nS\r\n",
             b"CLIENT_ERROR invalid mode for ms M token\r\n")
    c.rt(b"mg " + k + b" v\r\n", b"EN\r\n")


def test_ms_flags_ttl_opaque_key(c, key):
    k = b(key)
    c.rt(b"ms " + k + b" 1 F4294967295 k O5\r\nQ\r\n", b"HD k" + k + b" O5\r\n")
    c.rt(b"mg " + k + b" f v\r\n", b"VA 1 f4294967295\r\nQ\r\n")
    c.rt(b"ms " + k + b" 1 T100\r\nQ\r\n", b"HD\r\n")
    c.send(b"mg " + k + b" t f\r\n")
    assert re.fullmatch(rb"HD t(99|100) f0\r\n", c.read_line())  # F defaults to 0
    c.rt(b"ms " + k + b" 1 T-1\r\nQ\r\n", b"HD\r\n")
    c.rt(b"mg " + k + b" v\r\n", b"EN\r\n")


def test_ms_cas(c, key):
    k = b(key)
    c.rt(b"ms " + k + b" 1 C999\r\nQ\r\n", b"NF\r\n")
    c.send(b"ms " + k + b" 1 c\r\nQ\r\n")
    cas = int(re.fullmatch(rb"HD c(\d+)\r\n", c.read_line()).group(1))
    c.rt(b"ms %s 1 C%d c\r\nR\r\n" % (k, cas + 1000), b"EX c0\r\n")
    c.send(b"ms %s 1 C%d c\r\nR\r\n" % (k, cas))
    cas2 = int(re.fullmatch(rb"HD c(\d+)\r\n", c.read_line()).group(1))
    assert cas2 != cas
    # Append honors a cas too.
    c.rt(b"ms %s 1 MA C%d\r\nS\r\n" % (k, cas), b"EX\r\n")
    c.rt(b"ms %s 1 MA C%d\r\nS\r\n" % (k, cas2), b"HD\r\n")
    c.rt(b"mg " + k + b" v\r\n", b"VA 2\r\nRS\r\n")


def test_ms_quiet(c, key):
    k = b(key)
    c.rt(b"ms " + k + b" 1 q\r\nQ\r\nmn\r\n", b"MN\r\n")
    c.rt(b"ms " + k + b" 1 q ME\r\nQ\r\nmn\r\n", b"NS\r\nMN\r\n")


def test_ms_errors(c, key):
    k = b(key)
    c.rt(b"ms " + k + b" abc\r\nQ\r\n", b"CLIENT_ERROR bad command line format\r\nERROR\r\n")
    c.rt(b"ms " + k + b"\r\n", b"CLIENT_ERROR bad command line format\r\n")
    c.rt(b"ms " + k + b" 2\r\nabcd\r\n", b"CLIENT_ERROR bad data chunk\r\nERROR\r\n")
    c.rt(b"ms " + b(key) + b"!! 3 b\r\nabc\r\n", b"CLIENT_ERROR error decoding key\r\n")


# ------------------------------------------------------------------------------------------
# md


def test_md(c, key):
    k = b(key)
    c.rt(b"md " + k + b"\r\n", b"NF\r\n")
    c.rt(b"md " + k + b" q\r\nmn\r\n", b"NF\r\nMN\r\n")  # q hides only HD
    c.rt(b"ms " + k + b" 1\r\nx\r\n", b"HD\r\n")
    c.rt(b"md " + k + b" q\r\nmn\r\n", b"MN\r\n")
    c.rt(b"mg " + k + b"\r\n", b"EN\r\n")
    c.rt(b"ms " + k + b" 1\r\nx\r\n", b"HD\r\n")
    c.rt(b"md " + k + b" C1\r\n", b"EX\r\n")
    c.rt(b"md " + k + b" k O3\r\n", b"HD k" + k + b" O3\r\n")
    c.rt(b"md " + k + b"\r\n", b"NF\r\n")


def test_md_cas_and_invalidate(c, key):
    k = b(key)
    c.rt(b"ms " + k + b" 1 T100\r\nx\r\n", b"HD\r\n")
    cas = cas_of(c, k)
    c.rt(b"md " + k + b" C1 I\r\n", b"EX\r\n")
    c.rt(b"md %s C%d I T30 k\r\n" % (k, cas), b"HD k" + k + b"\r\n")
    code, tokens, markers, value = meta(c, b"mg " + k + b" t v")
    assert (code, tokens, markers, value) == (b"VA", [b"t30"], {b"X", b"W"}, b"x")
    # T without I leaves the TTL alone and deletes.
    c.rt(b"md " + k + b" T5\r\n", b"HD\r\n")
    c.rt(b"mg " + k + b"\r\n", b"EN\r\n")


def test_md_errors(c, key):
    c.rt(b"md\r\n", b"ERROR\r\n")
    c.rt(b"md " + b(key) + b" zz\r\n", b"CLIENT_ERROR invalid or duplicate flag\r\n")


# ------------------------------------------------------------------------------------------
# ma


def test_ma_basic(c, key):
    k = b(key)
    c.rt(b"ma " + k + b"\r\n", b"NF\r\n")
    c.rt(b"ma " + k + b" q\r\nmn\r\n", b"NF\r\nMN\r\n")
    c.rt(b"ma " + k + b" N0 J10 v\r\n", b"VA 2\r\n10\r\n")  # created with J, no delta
    c.rt(b"ma " + k + b" v\r\n", b"VA 2\r\n11\r\n")
    c.send(b"ma " + k + b" D5 v t c\r\n")
    assert re.fullmatch(rb"VA 2 t-1 c\d+\r\n", c.read_line())
    assert c.read_exact(4) == b"16\r\n"
    c.rt(b"ma " + k + b"\r\n", b"HD\r\n")
    c.rt(b"ma " + k + b" q\r\nmn\r\n", b"MN\r\n")
    c.rt(b"ma " + k + b" O7 k\r\n", b"HD O7 k" + k + b"\r\n")


def test_ma_modes(c, key):
    k = b(key)
    c.rt(b"ms " + k + b" 1\r\n5\r\n", b"HD\r\n")
    c.rt(b"ma " + k + b" MD D100 v\r\n", b"VA 1\r\n0\r\n")  # floor at 0
    c.rt(b"ma " + k + b" MI D3 v\r\n", b"VA 1\r\n3\r\n")
    c.rt(b"ma " + k + b" M+ v\r\n", b"VA 1\r\n4\r\n")
    c.rt(b"ma " + k + b" M- v\r\n", b"VA 1\r\n3\r\n")
    c.rt(b"ma " + k + b" Mx v\r\n", b"CLIENT_ERROR invalid mode for ma M token\r\n")


def test_ma_wrap_ttl_cas(c, key):
    k = b(key)
    c.rt(b"ms " + k + b" 20\r\n18446744073709551615\r\n", b"HD\r\n")
    c.rt(b"ma " + k + b" v\r\n", b"VA 1\r\n0\r\n")  # incr wraps
    c.rt(b"ma " + k + b" T60 t v\r\n", b"VA 1 t60\r\n1\r\n")
    c.rt(b"ma " + k + b" C1 v\r\n", b"EX\r\n")
    cas = cas_of(c, k)
    c.rt(b"ma %s C%d v\r\n" % (k, cas), b"VA 1\r\n2\r\n")
    c.rt(b"ma " + k + b"_n N30 v t\r\n", b"VA 1 t30\r\n0\r\n")
    c.rt(b"ma " + k + b"_j N30 J18446744073709551615 D2 v\r\n",
         b"VA 20\r\n18446744073709551615\r\n")


def test_ma_errors(c, key):
    k = b(key)
    c.rt(b"ma\r\n", b"ERROR\r\n")
    c.rt(b"ms " + k + b" 2\r\nxy\r\n", b"HD\r\n")
    c.rt(b"ma " + k + b" v\r\n",
         b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
    c.rt(b"ma " + k + b" Dabc v\r\n", b"CLIENT_ERROR invalid or duplicate flag\r\n")
    c.rt(b"ma " + k + b" D-1 v\r\n", b"CLIENT_ERROR invalid or duplicate flag\r\n")


def test_meta_pipeline_with_opaques(c, key):
    k = b(key)
    req = b"".join(b"ms %s_%d 1 q\r\n%d\r\n" % (k, i, i) for i in range(10))
    req += b"".join(b"mg %s_%d v q O%d\r\n" % (k, i, i) for i in range(12))
    req += b"mn\r\n"
    expect = b"".join(b"VA 1 O%d\r\n%d\r\n" % (i, i) for i in range(10)) + b"MN\r\n"
    c.rt(req, expect)
