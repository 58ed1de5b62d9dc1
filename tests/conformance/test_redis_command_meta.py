"""COMMAND INFO's categories, tips, key specs and subcommands, COMMAND GETKEYS and
GETKEYSANDFLAGS, and ACL key permissions by key-spec flags: each compared with a real
redis-server started beside Spinel, on the same command lines.

The reference is redis-server 7.0 where installed. Spinel answers as 7.2 where the two
differ, and those differences are listed here: ZRANK and ZREVRANK take 7.2's WITHSCORE
(arity -3), and the commands 7.0 lacks (hash-field expiry, CLIENT NO-TOUCH and SETINFO)
are compared with nothing.
"""

import pytest

from conftest import start_server
from resp_read import read_value
from wire import Conn, resp_encode

# One matrix entry: COMMAND INFO and GETKEYS are tables, compared with redis-server's.
pytestmark = [pytest.mark.resp, pytest.mark.spinel_only, pytest.mark.one_backend]

# Arity in 7.2 (WITHSCORE), which 7.0 lacks.
NEWER_ARITY = {"zrank": -3, "zrevrank": -3}


@pytest.fixture(scope="module")
def reference():
    server = start_server("redis")
    yield server.resp_port
    server.stop()


def ask(port, *args, hello3=False):
    with Conn(port) as c:
        if hello3:
            c.send(resp_encode("HELLO", "3"))
            read_value(c)
        c.send(resp_encode(*args))
        return read_value(c)


def raw(port, *args, hello3=False):
    """The reply's exact bytes (a PING after it marks its end)."""
    with Conn(port) as c:
        if hello3:
            c.send(resp_encode("HELLO", "3"))
            read_value(c)
        c.send(resp_encode(*args) + resp_encode("PING"))
        return c.read_until(b"+PONG\r\n")[:-len(b"+PONG\r\n")]


def top_level_names(port):
    return sorted(n.decode() for n in ask(port, "COMMAND", "LIST") if b"|" not in n)


def by_name(entries):
    return {entry[0]: entry for entry in entries}


def test_command_info_matches_redis(resp_port, reference):
    compared = 0
    for name in top_level_names(resp_port):
        [theirs] = ask(reference, "COMMAND", "INFO", name)
        if theirs is None:
            continue  # newer than the reference
        [ours] = ask(resp_port, "COMMAND", "INFO", name)
        if name in NEWER_ARITY:
            assert ours[1] == NEWER_ARITY[name]
            ours[1] = theirs[1]
        # Subcommands come in Redis's hash order: compare them by name, for those both have.
        ours_subs, theirs_subs = by_name(ours[9]), by_name(theirs[9])
        assert ours[:9] == theirs[:9], name
        for sub in ours_subs.keys() & theirs_subs.keys():
            assert ours_subs[sub] == theirs_subs[sub], sub
        compared += 1
    assert compared > 150


def test_command_info_bytes_in_resp3(resp_port, reference):
    for name in ("lmove", "set", "eval", "zunionstore", "mset", "del", "sintercard"):
        assert raw(resp_port, "COMMAND", "INFO", name, hello3=True) == raw(
            reference, "COMMAND", "INFO", name, hello3=True), name


LINES = [
    "SET a b", "SET a b GET", "SET a b get EX 5", "BITFIELD k GET u8 0",
    "BITFIELD k GET u8 0 SET u8 0 1", "BITFIELD k OVERFLOW WRAP", "BITFIELD k FOO",
    "BITFIELD_RO k GET u8 0", "EVAL x 0", "EVAL x 2 a", "EVAL x 1 a b", "EVAL x -1",
    "EVALSHA x 2 a b", "EVAL_RO x 1 a", "FCALL f 1 a", "FCALL_RO f 2 a b c",
    "LMOVE a b LEFT RIGHT", "ZUNIONSTORE d 2 a b", "ZUNIONSTORE d 5 a b", "ZUNIONSTORE d 0 a",
    "ZUNION 2 a b", "ZDIFF 2 a b WITHSCORES", "ZINTERCARD 2 a b", "GET", "GET a b", "PING",
    "FOO", "CONFIG", "CONFIG GET x", "CONFIG FOO", "OBJECT ENCODING k", "OBJECT ENCODING",
    "OBJECT", "OBJECT HELP", "MSET a 1 b", "MSET a 1 b 2", "MGET a b c", "EXISTS a b",
    "LMPOP 2 a b LEFT", "LMPOP 0 a", "LMPOP 3 a b LEFT", "SINTERCARD 3 a b",
    "BLMPOP 0 2 a b LEFT", "BZMPOP 0 1 a MIN", "BLPOP a b 0", "BRPOPLPUSH a b 0",
    "DEL a b c", "WATCH a b", "PUBLISH c m", "SPUBLISH c m", "SSUBSCRIBE c",
    "BITOP AND d a b", "RENAME a b", "COPY a b", "SMOVE a b m", "GETEX a", "GETDEL a",
    "SINTERSTORE d a b", "ZRANGESTORE d s 0 1", "PFMERGE d a b", "EXPIRE a 1", "TYPE a",
    "KEYS *", "MOVE a 1", "SWAPDB 0 1", "SCRIPT LOAD x", "CLIENT LIST",
]


@pytest.mark.parametrize("sub", ["GETKEYS", "GETKEYSANDFLAGS"])
def test_getkeys_matches_redis(resp_port, reference, sub):
    for line in LINES:
        args = line.split()
        assert raw(resp_port, "COMMAND", sub, *args) == raw(reference, "COMMAND", sub, *args), line


def test_getkeys_arity(resp_port):
    with Conn(resp_port) as c:
        c.rt(resp_encode("COMMAND", "GETKEYSANDFLAGS", "GET"),
             b"-ERR wrong number of arguments for 'command|getkeysandflags' command\r\n")


def test_acl_key_permissions_follow_key_flags(resp_port, reference):
    """A key's needed permissions come from its flags, and one pattern must grant them all."""
    rules = ["on", "nopass", "+@all", "%R~r:*", "%W~w:*", "~rw:*", "%R~both:*", "%W~bo*"]
    lines = [
        "GET r:1", "GET w:1", "SET w:1 v", "SET r:1 v", "SET w:1 v GET", "SET rw:1 v GET",
        "LMOVE rw:1 w:2 LEFT LEFT", "LMOVE w:1 w:2 LEFT LEFT", "LMOVE both:1 w:2 LEFT LEFT",
        "COPY r:1 w:1", "COPY w:1 r:1", "EXISTS w:1", "EXISTS other", "DEL w:1", "DEL r:1",
        "ZUNIONSTORE w:d 2 r:1 rw:2", "ZUNIONSTORE w:d 2 r:1 w:2", "BITFIELD r:1 GET u8 0",
        "BITFIELD r:1 SET u8 0 1", "EVAL x 1 r:1", "EVAL x 1 rw:1", "OBJECT ENCODING w:1",
    ]
    for port in (resp_port, reference):
        assert ask(port, "ACL", "SETUSER", "keyflags", *rules) == "OK"
    try:
        for line in lines:
            args = line.split()
            ours = raw(resp_port, "ACL", "DRYRUN", "keyflags", *args)
            assert ours == raw(reference, "ACL", "DRYRUN", "keyflags", *args), line
    finally:
        for port in (resp_port, reference):
            ask(port, "ACL", "DELUSER", "keyflags")


def test_acl_same_pattern_twice_merges_permissions(resp_port, reference):
    for port in (resp_port, reference):
        ask(port, "ACL", "SETUSER", "merged", "on", "nopass", "+@all", "%R~k:*", "%W~k:*", "%W~j")
    try:
        listed = [ask(port, "ACL", "GETUSER", "merged") for port in (resp_port, reference)]
        keys = [dict(zip(reply[::2], reply[1::2]))[b"keys"] for reply in listed]
        assert keys[0] == keys[1] == b"~k:* %W~j"
        assert raw(resp_port, "ACL", "DRYRUN", "merged", "LMOVE", "k:1", "j", "LEFT", "LEFT") == b"+OK\r\n"
    finally:
        for port in (resp_port, reference):
            ask(port, "ACL", "DELUSER", "merged")
