"""Redis ACL users: ACL SETUSER/GETUSER/DELUSER/LIST/USERS/WHOAMI/CAT/GENPASS/DRYRUN/LOAD/
SAVE, AUTH as a user, and NOPERM for commands and keys, as redis-server 7.0 answers (these
pass with CONFORMANCE_TARGET=redis). Redis 7.0 sometimes reorders the command rules it
prints, so those are compared as sets; everything else byte for byte.
"""

import hashlib
import subprocess

import pytest

from conftest import spinel_bin, start_server
from test_redis_hash import read_reply
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

NOPERM_KEY = b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"


def noperm(command):
    return b"-NOPERM this user has no permissions to run the '%s' command\r\n" % command.encode()


def rt(conn, *args):
    conn.send(resp_encode(*args))
    return read_reply(conn)


def raw(conn, *args):
    """One command; its reply's first line (and a bulk's data)."""
    conn.send(resp_encode(*args))
    line = conn.read_line()
    if line.startswith(b"$") and line != b"$-1\r\n":
        return line + conn.read_exact(int(line[1:-2]) + 2)
    return line


def split_rules(line):
    """An ACL LIST line as (everything up to the command rules, the command rules as a set)."""
    words = line.split(" ")
    start = next(i for i, w in enumerate(words) if w in ("+@all", "-@all"))
    return " ".join(words[:start]), words[start], set(words[start + 1:])


def sha(password):
    return hashlib.sha256(password.encode()).hexdigest()


def test_users_are_listed_and_described(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        assert rt(c, "ACL", "LIST") == [b"user default on nopass ~* &* +@all"]
        assert raw(c, "ACL", "SETUSER", "alice", "on", ">p1", "~cache:*", "+@read", "+set", "-keys") == b"+OK\r\n"
        assert raw(c, "ACL", "SETUSER", "bob") == b"+OK\r\n"
        assert raw(c, "ACL", "SETUSER", "carol", "on", "nopass", "+@all", "-@dangerous", "~*", "&*") == b"+OK\r\n"
        assert raw(c, "ACL", "SETUSER", "eve", "on", ">a", "-@all", "+get", "%R~r:*", "%W~w:*", "resetchannels", "&ch:*") == b"+OK\r\n"
        lines = [line.decode() for line in rt(c, "ACL", "LIST")]
        assert [line.split(" ")[1] for line in lines] == ["alice", "bob", "carol", "default", "eve"]
        assert split_rules(lines[0]) == (f"user alice on #{sha('p1')} ~cache:* resetchannels", "-@all", {"+@read", "+set", "-keys"})
        assert lines[1] == "user bob off resetchannels -@all"
        assert lines[2] == "user carol on nopass ~* &* +@all -@dangerous"
        assert lines[4] == f"user eve on #{sha('a')} %R~r:* %W~w:* resetchannels &ch:* -@all +get"
        assert rt(c, "ACL", "USERS") == [b"alice", b"bob", b"carol", b"default", b"eve"]
        assert rt(c, "ACL", "WHOAMI") == b"default"
        got = rt(c, "ACL", "GETUSER", "eve")
        assert got == [b"flags", [b"on"], b"passwords", [sha("a").encode()], b"commands", b"-@all +get",
                       b"keys", b"%R~r:* %W~w:*", b"channels", b"&ch:*", b"selectors", []]
        assert raw(c, "ACL", "GETUSER", "nobody") == b"$-1\r\n"
        assert rt(c, "ACL", "DELUSER", "bob", "nobody") == 1
        assert raw(c, "ACL", "DELUSER", "default") == b"-ERR The 'default' user cannot be removed\r\n"


def test_rules_that_are_refused(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        def refused(rule, why):
            assert raw(c, "ACL", "SETUSER", "x", rule) == (
                f"-ERR Error in ACL SETUSER modifier '{rule}': {why}\r\n".encode())
        refused("badrule", "Syntax error")
        refused("+nosuchcmd", "Unknown command or category name in ACL")
        refused("+@nosuchcat", "Unknown command or category name in ACL")
        refused("#abc", "The password hash must be exactly 64 characters and contain only "
                        "lowercase hexadecimal characters")
        refused("<nothere", "The password you are trying to remove from the user does not exist")
        assert raw(c, "ACL", "SETUSER", "y", "allkeys") == b"+OK\r\n"
        assert raw(c, "ACL", "SETUSER", "y", "~c") == (
            b"-ERR Error in ACL SETUSER modifier '~c': Adding a pattern after the * pattern (or "
            b"the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to "
            b"start with an empty list of patterns\r\n")
        # A refused rule changes nothing, not even the rules before it.
        assert raw(c, "ACL", "SETUSER", "z", "on", "badrule") .startswith(b"-ERR")
        assert raw(c, "ACL", "GETUSER", "z") == b"$-1\r\n" or rt(c, "ACL", "GETUSER", "z") is None


def test_rules_read_back_once(make_server):
    """A rule repeated, undone or covered already reads back once or not at all."""
    server = make_server()
    with Conn(server.resp_port) as c:
        cases = [
            (["+get", "+get", "+set", "-get"], "-@all", {"+set"}),
            (["+@read", "-@read", "+@write"], "-@all", {"+@write"}),
            (["+config", "-config|get", "+config|set"], "-@all", {"+config", "-config|get"}),
            (["on", "allcommands", "allkeys", "allchannels", "nocommands", "+get"], "-@all", {"+get"}),
        ]
        for n, (rules, base, rest) in enumerate(cases):
            assert raw(c, "ACL", "SETUSER", f"u{n}", *rules) == b"+OK\r\n"
            line = [l.decode() for l in rt(c, "ACL", "LIST") if l.startswith(f"user u{n} ".encode())][0]
            assert split_rules(line)[1:] == (base, rest), (rules, line)
        assert raw(c, "ACL", "SETUSER", "k", "~a", "resetkeys", "~b", "%RW~c", "%R~d") == b"+OK\r\n"
        assert rt(c, "ACL", "GETUSER", "k")[7] == b"~b ~c %R~d"


def test_a_user_runs_what_its_rules_allow(make_server):
    server = make_server()
    with Conn(server.resp_port) as admin, Conn(server.resp_port) as c:
        rt(admin, "ACL", "SETUSER", "alice", "on", ">p1", "~cache:*", "%R~ro:*", "+@read", "+set", "-keys", "+config|get")
        assert raw(c, "AUTH", "alice", "wrong") == WRONGPASS
        assert raw(c, "AUTH", "nobody", "p1") == WRONGPASS
        assert raw(c, "AUTH", "alice", "p1") == b"+OK\r\n"
        assert raw(c, "ACL", "WHOAMI") == noperm("acl|whoami")
        assert raw(c, "SET", "cache:1", "v") == b"+OK\r\n"
        assert raw(c, "GET", "cache:1") == b"$1\r\nv\r\n"
        assert raw(c, "GET", "other") == NOPERM_KEY
        assert raw(c, "GET", "ro:1") == b"$-1\r\n"
        assert raw(c, "SET", "ro:1", "v") == NOPERM_KEY, "read-only pattern"
        assert raw(c, "MGET", "cache:1", "other") == NOPERM_KEY, "every key is checked"
        assert raw(c, "HSET", "cache:2", "f", "v") == noperm("hset")
        assert raw(c, "KEYS", "*") == noperm("keys")
        assert raw(c, "CONFIG", "SET", "maxmemory", "0") == noperm("config|set")
        assert rt(c, "CONFIG", "GET", "maxmemory")[0] == b"maxmemory"
        assert raw(c, "PING") == noperm("ping")
        # Changes to the user apply to its connections at once.
        rt(admin, "ACL", "SETUSER", "alice", "+ping", "+hset")
        assert raw(c, "PING") == b"+PONG\r\n"
        assert raw(c, "HSET", "cache:2", "f", "v") == b":1\r\n"
        rt(admin, "ACL", "SETUSER", "alice", "off")
        assert raw(c, "PING") == b"+PONG\r\n", "off stops new logins, not this one"
        with Conn(server.resp_port) as late:
            assert raw(late, "AUTH", "alice", "p1") == WRONGPASS


def test_deleting_a_user_closes_its_connections(make_server):
    server = make_server()
    with Conn(server.resp_port) as admin, Conn(server.resp_port) as c:
        rt(admin, "ACL", "SETUSER", "temp", "on", ">pw", "+@all", "~*")
        assert raw(c, "AUTH", "temp", "pw") == b"+OK\r\n"
        assert raw(c, "PING") == b"+PONG\r\n"
        assert rt(admin, "ACL", "DELUSER", "temp") == 1
        c.send(resp_encode("PING"))
        assert c.read_all_until_close() == b""
        assert raw(admin, "PING") == b"+PONG\r\n"


def test_dryrun_genpass_and_cat(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        rt(c, "ACL", "SETUSER", "alice", "on", "~cache:*", "+@read")
        assert raw(c, "ACL", "DRYRUN", "alice", "get", "cache:1") == b"+OK\r\n"
        assert raw(c, "ACL", "DRYRUN", "alice", "get", "other") == (
            b"$54\r\nThis user has no permissions to access the 'other' key\r\n")
        assert raw(c, "ACL", "DRYRUN", "alice", "hset", "cache:1", "f", "v") == (
            b"$54\r\nThis user has no permissions to run the 'hset' command\r\n")
        assert raw(c, "ACL", "DRYRUN", "nobody", "get", "x") == b"-ERR User 'nobody' not found\r\n"
        assert len(rt(c, "ACL", "GENPASS")) == 64
        assert len(rt(c, "ACL", "GENPASS", "32")) == 8
        assert len(rt(c, "ACL", "GENPASS", "5")) == 2
        assert raw(c, "ACL", "GENPASS", "0").startswith(b"-ERR ACL GENPASS argument must be")
        cats = rt(c, "ACL", "CAT")
        assert cats[:4] == [b"keyspace", b"read", b"write", b"set"] and len(cats) == 21
        hash_commands = set(rt(c, "ACL", "CAT", "hash"))
        assert {b"hset", b"hget", b"hgetall", b"hrandfield"} <= hash_commands
        assert b"get" not in hash_commands
        assert raw(c, "ACL", "CAT", "nosuch") == b"-ERR Unknown category 'nosuch'\r\n"


def test_requirepass_is_the_default_users_password(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        assert raw(c, "CONFIG", "SET", "requirepass", "sec") == b"+OK\r\n"
        assert rt(c, "ACL", "LIST") == [f"user default on #{sha('sec')} ~* &* +@all".encode()]
        with Conn(server.resp_port) as other:
            assert raw(other, "GET", "k") == b"-NOAUTH Authentication required.\r\n"
            assert raw(other, "AUTH", "default", "sec") == b"+OK\r\n"
        assert raw(c, "CONFIG", "SET", "requirepass", "") == b"+OK\r\n"
        assert rt(c, "ACL", "LIST") == [b"user default on nopass ~* &* +@all"]


def test_acl_file_load_and_save(make_server, tmp_path):
    path = tmp_path / "users.acl"
    path.write_text(f"user default on nopass ~* &* +@all\nuser app on #{sha('pw')} ~app:* -@all +get +set\n")
    server = make_server(extra=["--aclfile", str(path)])
    with Conn(server.resp_port) as c, Conn(server.resp_port) as app:
        assert rt(c, "ACL", "USERS") == [b"app", b"default"]
        assert raw(app, "AUTH", "app", "pw") == b"+OK\r\n"
        assert raw(app, "SET", "app:1", "v") == b"+OK\r\n"
        rt(c, "ACL", "SETUSER", "new", "on", ">x")
        assert raw(c, "ACL", "SAVE") == b"+OK\r\n"
        saved = path.read_text().splitlines()
        assert [line.split(" ")[1] for line in saved] == ["app", "default", "new"]
        # LOAD puts the file back in force: `new` goes; every user but `default` is made
        # anew, and their connections close (the default user's stay).
        path.write_text("\n".join(saved[:2]) + "\n")
        assert raw(c, "ACL", "LOAD") == b"+OK\r\n"
        assert rt(c, "ACL", "USERS") == [b"app", b"default"]
        app.send(resp_encode("GET", "app:1"))
        assert app.read_all_until_close() == b""
        with Conn(server.resp_port) as again:
            assert raw(again, "AUTH", "app", "pw") == b"+OK\r\n"
            assert raw(again, "GET", "app:1") == b"$1\r\nv\r\n"
        # A bad file changes nothing.
        path.write_text("user app on +get\nnot a user line\n")
        reply = raw(c, "ACL", "LOAD")
        assert reply.startswith(b"-ERR ") and b"users.acl:2 should start with user keyword" in reply, reply
        assert reply.endswith(b"WARNING: ACL errors detected, no change to the previously active ACL rules was performed\r\n")
        assert rt(c, "ACL", "USERS") == [b"app", b"default"]


def test_without_an_acl_file_load_and_save_are_refused(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        for verb in ("LOAD", "SAVE"):
            assert raw(c, "ACL", verb).startswith(
                b"-ERR This Redis instance is not configured to use an ACL file.")


def test_a_bad_acl_file_refuses_the_start(target, tmp_path):
    if target != "spinel":
        pytest.skip("Spinel's start-up error")
    path = tmp_path / "bad.acl"
    path.write_text("user x on +get\nuser y on +nosuchcommand\n")
    done = subprocess.run([spinel_bin(), "-p", "0", "--resp-port", "0", "--aclfile", str(path)],
                          capture_output=True, text=True, timeout=10)
    assert done.returncode != 0
    assert f"{path}:2: Error in applying operation '+nosuchcommand'" in done.stderr, done.stderr


def test_categories_match_redis(target):
    """Every category lists the same commands as redis-server 7.0's, among those both have."""
    if target != "spinel":
        pytest.skip("compares Spinel with redis-server")
    spinel = start_server("spinel", io="epoll")
    try:
        redis = start_server("redis")
    except pytest.skip.Exception:
        spinel.cleanup()
        raise
    try:
        with Conn(spinel.resp_port) as s, Conn(redis.resp_port) as r:
            categories = rt(r, "ACL", "CAT")
            assert rt(s, "ACL", "CAT") == categories
            ours = {category: set(rt(s, "ACL", "CAT", category)) for category in categories}
            theirs = {category: set(rt(r, "ACL", "CAT", category)) for category in categories}
            ours_all = set().union(*ours.values())
            theirs_all = set().union(*theirs.values())
            for category in categories:
                missing = {name for name in theirs[category] - ours[category] if name in ours_all}
                extra = {name for name in ours[category] - theirs[category] if name in theirs_all}
                assert (missing, extra) == (set(), set()), category
    finally:
        spinel.cleanup()
        redis.cleanup()



def test_transactions_check_each_command(make_server):
    """A command the user may not run fails MULTI as it is queued; one allowed when queued
    but not by EXEC's time gets NOPERM in EXEC's reply."""
    server = make_server()
    with Conn(server.resp_port) as admin, Conn(server.resp_port) as c:
        rt(admin, "ACL", "SETUSER", "tx", "on", ">pw", "~*", "+multi", "+exec", "+set", "+get")
        assert raw(c, "AUTH", "tx", "pw") == b"+OK\r\n"
        assert raw(c, "MULTI") == b"+OK\r\n"
        assert raw(c, "DEL", "k") == noperm("del")
        assert raw(c, "SET", "k", "v") == b"+QUEUED\r\n"
        assert raw(c, "EXEC") == (b"-EXECABORT Transaction discarded because of previous "
                                  b"errors.\r\n")
        assert raw(c, "MULTI") == b"+OK\r\n"
        assert raw(c, "SET", "k", "v") == b"+QUEUED\r\n"
        assert raw(c, "GET", "k") == b"+QUEUED\r\n"
        rt(admin, "ACL", "SETUSER", "tx", "-set")
        c.send(resp_encode("EXEC"))
        assert c.read_line() == b"*2\r\n"
        assert c.read_line() == (
            b"-NOPERM ACLs rules changed between the moment the transaction was accumulated and "
            b"the EXEC call. This command is no longer allowed for the following reason: no "
            b"permission to execute the command or subcommand\r\n")
        assert c.read_line() == b"$-1\r\n"


def test_keys_that_follow_numkeys_are_checked(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        rt(c, "ACL", "SETUSER", "k", "on", "+@all", "~cache:*")
        ok = [("zunionstore", "cache:d", "2", "cache:a", "cache:b"), ("sintercard", "2", "cache:a", "cache:b"),
              ("lmpop", "1", "cache:l", "LEFT"), ("mset", "cache:a", "1", "cache:b", "2"),
              ("object", "encoding", "cache:a"), ("copy", "cache:a", "cache:b")]
        for command in ok:
            assert raw(c, "ACL", "DRYRUN", "k", *command) == b"+OK\r\n", command
        denied = [(("zunionstore", "cache:d", "2", "cache:a", "other"), "other"),
                  (("zunionstore", "other", "1", "cache:a"), "other"),
                  (("sintercard", "2", "cache:a", "other"), "other"),
                  (("mset", "cache:a", "1", "other", "2"), "other"),
                  (("object", "encoding", "other"), "other"),
                  (("copy", "cache:a", "other"), "other")]
        for command, key in denied:
            message = f"This user has no permissions to access the '{key}' key".encode()
            assert raw(c, "ACL", "DRYRUN", "k", *command) == b"$%d\r\n%s\r\n" % (len(message), message), command


def log_entries(conn, *args):
    """ACL LOG's entries as dicts (values as str), through redis-py's parser."""
    import redis
    client = redis.Redis(port=conn)
    try:
        entries = client.execute_command("ACL", "LOG", *args)
    finally:
        client.close()
    shown = []
    for entry in entries:
        pairs = entry if isinstance(entry, list) else list(entry.items())
        if isinstance(entry, list):
            pairs = list(zip(entry[::2], entry[1::2]))
        shown.append({k.decode(): (v.decode() if isinstance(v, bytes) else v) for k, v in pairs})
    return shown


def test_acl_log_records_denials_and_failed_logins(make_server):
    """ACL LOG as Redis 7.0 keeps it: newest first; repeats grouped with a count; the
    reason (command, key, channel, auth), context (toplevel, multi, lua), object and user;
    a failed login names the user tried and never the password; RESET empties it;
    acllog-max-len bounds it."""
    server = make_server()
    port = server.resp_port
    with Conn(port) as admin, Conn(port) as c:
        rt(admin, "ACL", "SETUSER", "u", "on", ">p", "~a*", "&ch", "+get", "+eval", "+publish",
           "+multi", "+exec")
        assert raw(c, "AUTH", "u", "p") == b"+OK\r\n"
        raw(c, "GET", "b")
        raw(c, "GET", "b")
        raw(c, "SET", "a", "1")
        raw(c, "PUBLISH", "x", "1")
        raw(c, "EVAL", "return redis.call('get','zz')", "0")
        raw(c, "MULTI")
        raw(c, "GET", "c")
        raw(c, "EXEC")
        with Conn(port) as bad:
            assert raw(bad, "AUTH", "nosuch", "secret-password") == WRONGPASS
        entries = log_entries(port)
        shown = [(e["count"], e["reason"], e["context"], e["object"], e["username"])
                 for e in entries]
        assert shown == [
            (1, "auth", "toplevel", "AUTH", "nosuch"),
            (1, "key", "multi", "c", "u"),
            (1, "key", "lua", "zz", "u"),
            (1, "channel", "toplevel", "x", "u"),
            (1, "command", "toplevel", "set", "u"),
            (2, "key", "toplevel", "b", "u"),
        ]
        assert all("secret-password" not in str(e) for e in entries)
        assert all(float(e["age-seconds"]) >= 0 and "addr=" in e["client-info"] for e in entries)
        assert len(log_entries(port, "2")) == 2
        assert log_entries(port, "-1") == []
        assert raw(admin, "ACL", "LOG", "x") == b"-ERR value is not an integer or out of range\r\n"
        assert raw(admin, "CONFIG", "SET", "acllog-max-len", "3") == b"+OK\r\n"
        assert len(log_entries(port)) == 6, "trimmed by the next event, as in Redis"
        raw(c, "GET", "d")
        assert len(log_entries(port)) == 3
        assert raw(admin, "ACL", "LOG", "RESET") == b"+OK\r\n"
        assert log_entries(port) == []
        assert raw(admin, "CONFIG", "SET", "acllog-max-len", "128") == b"+OK\r\n"


def commands_of(conn, name):
    """ACL GETUSER's command rules of `name`."""
    return rt(conn, "ACL", "GETUSER", name)[5].decode()


def test_first_arg_rules_allow_that_first_arg_only(make_server):
    """`+select|0` lets SELECT run with 0 and nothing else; `+get|Ab` compares ignoring
    case; neither lets another command, or the command with another first arg, through."""
    server = make_server()
    with Conn(server.resp_port) as admin, Conn(server.resp_port) as c:
        rules = ["on", ">pw", "~*", "-@all", "+select|0", "+get|Ab", "+multi", "+exec"]
        assert raw(admin, "ACL", "SETUSER", "fa", *rules) == b"+OK\r\n"
        assert commands_of(admin, "fa").split(" ")[0] == "-@all"
        assert set(commands_of(admin, "fa").split(" ")[1:]) == {"+select|0", "+get|Ab", "+multi", "+exec"}
        assert raw(c, "AUTH", "fa", "pw") == b"+OK\r\n"
        assert raw(c, "SELECT", "0") == b"+OK\r\n"
        for refused in (["SELECT", "1"], ["SELECT", "00"], ["SELECT", " 0"], ["SELECT", "0 "]):
            assert raw(c, *refused) == noperm("select"), refused
        assert raw(c, "GET", "ab") == b"$-1\r\n"
        assert raw(c, "GET", "AB") == b"$-1\r\n"
        for refused in (["GET", "abc"], ["GET", "a"], ["GET", ""]):
            assert raw(c, *refused) == noperm("get"), refused
        assert raw(c, "SET", "ab", "v") == noperm("set")
        assert raw(c, "GETDEL", "ab") == noperm("getdel")
        # Queued in MULTI, each is checked with its own first arg.
        assert raw(c, "MULTI") == b"+OK\r\n"
        assert raw(c, "SELECT", "0") == b"+QUEUED\r\n"
        assert raw(c, "SELECT", "1") == noperm("select")
        assert raw(c, "EXEC").startswith(b"-EXECABORT")
        # DRYRUN answers the same.
        assert raw(admin, "ACL", "DRYRUN", "fa", "select", "0") == b"+OK\r\n"
        assert raw(admin, "ACL", "DRYRUN", "fa", "SELECT", "2") == (
            b"$56\r\nThis user has no permissions to run the 'select' command\r\n")


def test_first_arg_rules_are_dropped_by_a_rule_naming_the_command(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        cases = [
            (["+select|0", "+select|1", "+SELECT|0", "+select|Ab", "+select|aB"], "-@all +select|0 +select|1 +select|Ab"),
            (["+select|0", "+select"], "-@all +select"),
            (["+select|0", "-select"], "-@all"),
            (["+select|0", "-@connection"], "-@all"),
            (["+select|0", "+@connection"], "-@all +@connection"),
            (["+select|0", "+@keyspace"], "-@all +@keyspace +select|0"),
            (["+select|0", "+@all"], "+@all"),
            (["+select|0", "nocommands"], "-@all"),
            (["+@all", "+select|0"], "+@all"),
            (["+@all", "-select", "+select|0"], "+@all -select +select|0"),
            (["+@all", "-select", "+select|0", "-select"], "+@all -select"),
            (["+@all", "-select", "+select|0", "+@keyspace"], "+@all -select +select|0"),
            (["+memory|doctor", "+memory"], "-@all +memory"),
            (["+memory", "-memory|doctor", "+memory|doctor"], "-@all +memory"),
            (["+@all", "+client|id"], "+@all"),
        ]
        for rules, expected in cases:
            assert raw(c, "ACL", "SETUSER", "d", "reset", *rules) == b"+OK\r\n"
            assert commands_of(c, "d") == expected, rules
        # The rule that drops them drops them for good: SELECT 0 is refused again.
        rt(c, "ACL", "SETUSER", "d", "reset", "on", "nopass", "+select|0", "+select", "-select")
        assert raw(c, "ACL", "DRYRUN", "d", "select", "0") == (
            b"$56\r\nThis user has no permissions to run the 'select' command\r\n")


def test_first_arg_rules_that_are_refused(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        def refused(rule, why):
            assert raw(c, "ACL", "SETUSER", "x", rule) == (
                f"-ERR Error in ACL SETUSER modifier '{rule}': {why}\r\n".encode()), rule
        unknown = "Unknown command or category name in ACL"
        refused("+config|get|appendonly", "Allowing first-arg of a subcommand is not supported")
        refused("+config|get|", "Allowing first-arg of a subcommand is not supported")
        refused("+select|", "Syntax error")
        refused("+config|", "Syntax error")
        for rule in ("-select|0", "-config|get|appendonly", "+config|nosuch", "+get|a|b", "+select||",
                     "+|x", "+nosuch|x"):
            refused(rule, unknown)
        assert raw(c, "ACL", "GETUSER", "x") == b"$-1\r\n"


def test_redis_commands_spinel_lacks_are_accepted_in_rules(make_server, tmp_path):
    """Rules naming Redis 7.0 commands (DEBUG, streams, MODULE...) load and read back as
    they do on redis-server; a name Redis does not know stays an error."""
    server = make_server()
    with Conn(server.resp_port) as c:
        cases = [
            (["+@all", "-debug", "+debug|digest"], "+@all -debug +debug|digest"),
            (["-debug", "+debug|a", "+debug|b", "-debug"], "-@all"),
            (["+@all", "-@stream"], "+@all -@stream"),
            (["-@all", "+@stream", "-xadd"], "-@all +@stream -xadd"),
            (["+xadd", "+@stream"], "-@all +@stream"),
            (["+xinfo|stream", "+xinfo"], "-@all +xinfo"),
            (["+module|list", "+module"], "-@all +module"),
            (["+@all", "-latency|doctor"], "+@all -latency|doctor"),
            (["+substr|a"], "-@all +substr|a"),
        ]
        for rules, expected in cases:
            assert raw(c, "ACL", "SETUSER", "r", "reset", *rules) == b"+OK\r\n", rules
            assert commands_of(c, "r") == expected, rules
        for category in rt(c, "ACL", "CAT"):
            category = category.decode()
            rt(c, "ACL", "SETUSER", "r", "reset", "+@all", f"-@{category}")
            assert commands_of(c, "r") == f"+@all -@{category}"
            rt(c, "ACL", "SETUSER", "r", "reset", "-@all", f"+@{category}")
            assert commands_of(c, "r") == f"-@all +@{category}"
        assert raw(c, "ACL", "SETUSER", "r", "+xnosuch") == (
            b"-ERR Error in ACL SETUSER modifier '+xnosuch': Unknown command or category name in ACL\r\n")


def test_an_acl_file_written_for_redis_loads(make_server, tmp_path):
    path = tmp_path / "users.acl"
    path.write_text("user default on nopass ~* &* +@all\n"
                    "user ops on nopass ~* &* +@all -debug -@stream +debug|object -flushall\n")
    server = make_server(extra=["--aclfile", str(path)])
    with Conn(server.resp_port) as c:
        assert set(commands_of(c, "ops").split(" ")) == {"+@all", "-debug", "-@stream", "+debug|object", "-flushall"}
        assert raw(c, "ACL", "DRYRUN", "ops", "flushall") == (
            b"$58\r\nThis user has no permissions to run the 'flushall' command\r\n")
        assert raw(c, "ACL", "DRYRUN", "ops", "get", "k") == b"+OK\r\n"


def test_scripts_check_first_arg_rules(make_server):
    server = make_server()
    with Conn(server.resp_port) as admin, Conn(server.resp_port) as c:
        rt(admin, "ACL", "SETUSER", "s", "on", ">pw", "~*", "-@all", "+eval", "+select|0")
        assert raw(c, "AUTH", "s", "pw") == b"+OK\r\n"
        check = "return {redis.acl_check_cmd('select','0'), redis.acl_check_cmd('select','1')}"
        assert rt(c, "EVAL", check, "0") == [1, None]


def test_acl_subcommand_arity_errors_name_it_as_given(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        for args in (["CaT", "a", "b"], ["GenPass", "1", "2"], ["LoG", "1", "2"]):
            assert raw(c, "ACL", *args) == (
                b"-ERR unknown subcommand or wrong number of arguments for '%s'. Try ACL HELP.\r\n"
                % args[0].encode())


def test_first_args_are_bounded(target, make_server):
    """Spinel's own limits: at most 1024 first args per command (so the check before each
    command stays short), and the whole argument must match (Redis stops at a NUL byte)."""
    if target != "spinel":
        pytest.skip("Spinel's limits")
    server = make_server()
    with Conn(server.resp_port) as c:
        many = [f"+get|k{n}" for n in range(1024)]
        assert raw(c, "ACL", "SETUSER", "b", "on", "nopass", "~*", *many) == b"+OK\r\n"
        assert raw(c, "ACL", "SETUSER", "b", "+get|K0", "+select|0") == b"+OK\r\n", "known ones and other commands"
        assert raw(c, "ACL", "SETUSER", "b", "+get|one-more") == (
            b"-ERR Error in ACL SETUSER modifier '+get|one-more': Too many first-args for one "
            b"command (Spinel allows 1024)\r\n")
        assert raw(c, "ACL", "DRYRUN", "b", "get", "k1023") == b"+OK\r\n"
        assert raw(c, "ACL", "DRYRUN", "b", "get", "k1024") == (
            b"$53\r\nThis user has no permissions to run the 'get' command\r\n")
        assert raw(c, "ACL", "DRYRUN", "b", "get", "k1\x00x") == (
            b"$53\r\nThis user has no permissions to run the 'get' command\r\n")
        rt(c, "ACL", "SETUSER", "b", "+get")
        assert commands_of(c, "b") == "-@all +get +select|0"
