"""MSETNX naming a key twice (Redis 7.0's suite, type/string.tcl): with no key existing,
every pair is set in turn, so the last value wins and the reply is 1; with one existing,
nothing is set. Validated with CONFORMANCE_TARGET=redis."""

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


def test_msetnx_same_key_twice(resp_port, key):
    with Conn(resp_port) as c:
        c.rt(resp_encode("MSETNX", key, "xxx", key, "yyy"), b":1\r\n")
        c.rt(resp_encode("GET", key), b"$3\r\nyyy\r\n")
        c.rt(resp_encode("MSETNX", key, "xxx", key, "zzz"), b":0\r\n")
        c.rt(resp_encode("GET", key), b"$3\r\nyyy\r\n")
        other = key + ":o"
        c.rt(resp_encode("MSETNX", other, "1", key + ":p", "2", other, "3"), b":1\r\n")
        c.rt(resp_encode("MGET", other, key + ":p"), b"*2\r\n$1\r\n3\r\n$1\r\n2\r\n")
        c.rt(resp_encode("DEL", key, other, key + ":p"), b":3\r\n")
