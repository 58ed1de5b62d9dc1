"""Redis 7.0 ACL selectors: `(rules...)` after a user's root rules, each a further set of
commands, keys and channels; a command runs when one selector allows all of it. SETUSER's
joining of a selector given over several arguments and its errors, ACL LIST and GETUSER,
`clearselectors` and `reset`, DRYRUN's choice of the most telling refusal, NOPERM on a real
connection, ACL LOG, the ACL file, and memcached requests under a user with selectors.
Byte for byte as redis-server 7.0.15 answers (CONFORMANCE_TARGET=redis), but for the order
of first-arg rules among command rules, which Redis changes with a rule's history.
"""

import pytest

from test_redis_acl import raw, rt
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


def acl_list_line(conn, name):
    return next(line for line in rt(conn, "ACL", "LIST") if line.split(b" ")[1] == name.encode())


def test_selectors_read_back_in_acl_list_and_getuser(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        assert raw(c, "ACL", "SETUSER", "u", "on", "nopass", "(+get ~x*)", "(+set %W~y* &ch)",
                   "+ping") == b"+OK\r\n"
        assert acl_list_line(c, "u") == (
            b"user u on nopass resetchannels -@all +ping (~x* resetchannels -@all +get) "
            b"(%W~y* resetchannels &ch -@all +set)")
        assert rt(c, "ACL", "GETUSER", "u") == [
            b"flags", [b"on", b"nopass"], b"passwords", [],
            b"commands", b"-@all +ping", b"keys", b"", b"channels", b"",
            b"selectors", [
                [b"commands", b"-@all +get", b"keys", b"~x*", b"channels", b""],
                [b"commands", b"-@all +set", b"keys", b"%W~y*", b"channels", b"&ch"]]]
        # Root rules change the root only; clearselectors drops the others, reset all.
        assert raw(c, "ACL", "SETUSER", "u", "-ping", "+get") == b"+OK\r\n"
        assert acl_list_line(c, "u").endswith(b"-@all +get (~x* resetchannels -@all +get) "
                                              b"(%W~y* resetchannels &ch -@all +set)")
        assert raw(c, "ACL", "SETUSER", "u", "clearselectors") == b"+OK\r\n"
        assert acl_list_line(c, "u") == b"user u on nopass resetchannels -@all +get"
        assert raw(c, "ACL", "SETUSER", "v", "(~* &* +@all)", "(allkeys)") == b"+OK\r\n"
        assert acl_list_line(c, "v") == (
            b"user v off resetchannels -@all (~* &* +@all) (~* resetchannels -@all)")
        assert raw(c, "ACL", "SETUSER", "v", "reset") == b"+OK\r\n"
        assert acl_list_line(c, "v") == b"user v off sanitize-payload resetchannels -@all"


@pytest.mark.parametrize("rules, line", [
    (["(+get", "~x*)", "(", "+set", ")"],
     b"(~x* resetchannels -@all +get) (resetchannels -@all +set)"),
    (["( +get  ~x* )"], b"(~x* resetchannels -@all +get)"),
    (["()"], b"(resetchannels -@all)"),
    (["(~x* &c* resetkeys)"], b"(resetchannels &c* -@all)"),
    (["(~x* ~*)"], b"(~* resetchannels -@all)"),
])
def test_selector_arguments_are_joined_as_redis_joins_them(make_server, rules, line):
    server = make_server()
    with Conn(server.resp_port) as c:
        assert raw(c, "ACL", "SETUSER", "u", *rules) == b"+OK\r\n"
        assert acl_list_line(c, "u") == b"user u off resetchannels -@all " + line


@pytest.mark.parametrize("rules, error", [
    (["("], b"Unmatched parenthesis in acl selector starting at '('."),
    (["(+get", "~x*"], b"Unmatched parenthesis in acl selector starting at '(+get'."),
    (["(+get ~x*) extra"], b"Unmatched parenthesis in acl selector starting at '(+get ~x*) extra'."),
    (["(+get)x"], b"Unmatched parenthesis in acl selector starting at '(+get)x'."),
    (["(+get ~x*", "on)"], b"Error in ACL SETUSER modifier '(+get ~x* on)': Syntax error"),
    (["(nopass)"], b"Error in ACL SETUSER modifier '(nopass)': Syntax error"),
    (["(+get ~x* >pass)"], b"Error in ACL SETUSER modifier '(+get ~x* >pass)': Syntax error"),
    (["(+nosuch)"],
     b"Error in ACL SETUSER modifier '(+nosuch)': Unknown command or category name in ACL"),
    (["(+get))"],
     b"Error in ACL SETUSER modifier '(+get))': Unknown command or category name in ACL"),
    (["x(+get)"], b"Error in ACL SETUSER modifier 'x(+get)': Syntax error"),
    (["on", "(+get)", "(+bad"], b"Unmatched parenthesis in acl selector starting at '(+bad'."),
])
def test_bad_selectors_are_refused_and_change_nothing(make_server, rules, error):
    server = make_server()
    with Conn(server.resp_port) as c:
        assert raw(c, "ACL", "SETUSER", "u", *rules) == b"-ERR " + error + b"\r\n"
        assert rt(c, "ACL", "USERS") == [b"default"]


def test_dryrun_names_the_most_telling_refusal(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        rt(c, "ACL", "SETUSER", "u", "on", "nopass", "(+get ~x*)", "(+get ~y*)", "(+set ~z*)",
           "(+mget ~a*)", "(+mget ~b*)", "(+publish &a)", "(+subscribe ~*)")
        for args, reply in [
            (["get", "x"], b"+OK\r\n"),
            (["get", "y"], b"+OK\r\n"),
            (["set", "z1", "v"], b"+OK\r\n"),
            (["get", "z"], b"This user has no permissions to access the 'z' key"),
            (["set", "x1", "v"], b"This user has no permissions to access the 'x1' key"),
            (["del", "x"], b"This user has no permissions to run the 'del' command"),
            # Each selector allows one key: the refusal of the later key is told.
            (["mget", "a1", "b1"], b"This user has no permissions to access the 'b1' key"),
            # A selector stops at the first key it refuses: 'c' is never looked at.
            (["mget", "b1", "a1", "c"], b"This user has no permissions to access the 'a1' key"),
            (["publish", "b", "m"], b"This user has no permissions to access the 'b' channel"),
            (["subscribe", "a", "b"], b"This user has no permissions to access the 'a' channel"),
            (["publish", "a", "m"], b"+OK\r\n"),
        ]:
            got = raw(c, "ACL", "DRYRUN", "u", *args)
            want = reply if reply.startswith(b"+") else b"$%d\r\n%s\r\n" % (len(reply), reply)
            assert got == want, (args, got)


def test_a_connection_runs_what_one_selector_allows(make_server):
    server = make_server()
    with Conn(server.resp_port) as admin, Conn(server.resp_port) as c:
        rt(admin, "ACL", "SETUSER", "u", "on", ">pw", "+ping", "(+get ~x*)", "(+set %W~y*)")
        rt(admin, "ACL", "LOG", "RESET")
        assert raw(c, "AUTH", "u", "pw") == b"+OK\r\n"
        assert raw(c, "PING") == b"+PONG\r\n"
        assert raw(c, "SET", "y1", "v") == b"+OK\r\n"
        assert raw(c, "GET", "x1") == b"$-1\r\n"
        assert raw(c, "GET", "y1") == (
            b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n")
        assert raw(c, "DEL", "x1") == (
            b"-NOPERM this user has no permissions to run the 'del' command\r\n")
        entries = rt(admin, "ACL", "LOG")
        assert [dict(zip(e[::2], e[1::2]))[b"object"] for e in entries] == [b"del", b"y1"]
        assert [dict(zip(e[::2], e[1::2]))[b"reason"] for e in entries] == [b"command", b"key"]
        # Scripts and transactions are checked the same way.
        assert raw(c, "MULTI") == b"-NOPERM this user has no permissions to run the 'multi' command\r\n"
        rt(admin, "ACL", "SETUSER", "u", "(+multi +exec +set ~q*)")
        assert raw(c, "MULTI") == b"+OK\r\n"
        assert raw(c, "SET", "q1", "v") == b"+QUEUED\r\n"
        assert raw(c, "EXEC") == b"*1\r\n"
        assert c.read_line() == b"+OK\r\n"


def test_the_acl_file_keeps_selectors(make_server, target, tmp_path):
    path = tmp_path / "users.acl"
    path.write_text("user default on nopass ~* &* +@all\n"
                    "user app on nopass resetchannels -@all (~a* resetchannels -@all +get) "
                    "( +set  ~b* )\n")
    server = make_server(extra=["--aclfile", str(path)])
    with Conn(server.resp_port) as c, Conn(server.resp_port) as app:
        assert acl_list_line(c, "app") == (
            b"user app on nopass resetchannels -@all (~a* resetchannels -@all +get) "
            b"(~b* resetchannels -@all +set)")
        assert raw(app, "AUTH", "app", "x") == b"+OK\r\n"
        assert raw(app, "SET", "b1", "v") == b"+OK\r\n"
        assert raw(app, "SET", "a1", "v").startswith(b"-NOPERM")
        assert raw(c, "ACL", "SAVE") == b"+OK\r\n"
        assert b"(~b* resetchannels -@all +set)" in path.read_bytes()
        assert raw(c, "ACL", "LOAD") == b"+OK\r\n"
        if target == "redis":
            return  # redis-server 7.0.15 dies of SIGSEGV (in ACLLoadFromFile) on what follows
        path.write_text("user app on (+get ~a*\n")
        reply = raw(c, "ACL", "LOAD")
        assert b"users.acl:1: Unmatched parenthesis in selector definition" in reply, reply


def test_memcached_requests_are_allowed_by_any_selector(make_server, target):
    if target != "spinel":
        pytest.skip("memcached's port is Spinel's")
    server = make_server()
    with Conn(server.resp_port) as admin:
        rt(admin, "ACL", "SETUSER", "mc", "on", ">pw", "(+get ~r:*)", "(+set ~w:*)")
        rt(admin, "SET", "r:1", "v")
        rt(admin, "ACL", "SETUSER", "default", ">adminpw")  # memcached clients must log in
    with Conn(server.mc_port) as mc:
        mc.send(b"set x 0 0 5\r\nmc pw\r\n")
        assert mc.read_line() == b"STORED\r\n"
        mc.send(b"set w:1 0 0 1\r\nv\r\n")
        assert mc.read_line() == b"STORED\r\n"
        mc.send(b"get r:1\r\n")
        assert mc.read_until(b"END\r\n") == b"VALUE r:1 0 1\r\nv\r\nEND\r\n"
        mc.send(b"set r:1 0 0 1\r\nv\r\n")
        assert mc.read_line().startswith(b"CLIENT_ERROR")
        mc.send(b"get w:1\r\n")
        assert mc.read_line().startswith(b"CLIENT_ERROR")
