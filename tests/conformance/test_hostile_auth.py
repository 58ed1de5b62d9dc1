"""One set of credentials guards the data, whatever the port (issue #31, property 3).

Hostile clients against authentication and ACL rules:
- memcached port (Spinel only: redis-server has none): with `requirepass` or ACL users,
  no text, meta, binary or UDP request touches the store unauthenticated; text clients log
  in with the `-Y` token (`user password`, or a lone password for `default`), binary ones
  with SASL PLAIN, and then carry the user's command and key rules;
- Redis port (these also run with CONFORMANCE_TARGET=redis): channel permissions as Redis
  7.0 enforces them, the connection of a subscriber whose channel is revoked closed; the
  small buffer limits of unauthenticated clients; no lockout after failed logins; secrets
  redacted in MONITOR and SLOWLOG GET byte for byte.
"""

import re
import socket
import struct
import time

import pytest
import redis

from conftest import free_port
from hostile import rss_kib
from test_redis_hash import read_reply
from wire import Conn, resp_encode

PASSWORD = "pw"
NOAUTH = b"-NOAUTH Authentication required.\r\n"
UNAUTH = b"CLIENT_ERROR unauthenticated\r\n"
NOPERM_KEY = b"NOPERM this user has no permissions to access one of the keys used as arguments"
NOPERM_CHANNEL = (b"-NOPERM this user has no permissions to access one of the channels used as "
                  b"arguments\r\n")
OK = b"+OK\r\n"


def rt(conn, *args):
    """One RESP command; its reply parsed (`read_reply`'s forms)."""
    conn.send(resp_encode(*args))
    return read_reply(conn)


def raw(conn, *args):
    """One RESP command; the first line of its reply, as sent."""
    conn.send(resp_encode(*args))
    return conn.read_line()


def admin(server, password=PASSWORD):
    c = Conn(server.resp_port)
    if password:
        assert raw(c, "AUTH", password) == OK
    return c


def noperm_command(name):
    return b"NOPERM this user has no permissions to run the '%s' command" % name.encode()


# ------------------------------------------------------------------------------------------
# memcached port under the Redis users (Spinel only)

GET, SET, FLUSH, SASL_AUTH = 0x00, 0x01, 0x08, 0x21


def bin_req(op, key=b"", extras=b"", value=b"", opaque=7):
    body = len(extras) + len(key) + len(value)
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0, body, opaque, 0) \
        + extras + key + value


def bin_reply(c):
    head = c.read_exact(24)
    status = struct.unpack(">H", head[6:8])[0]
    body = c.read_exact(struct.unpack(">I", head[8:12])[0])
    key_len, extras_len = struct.unpack(">H", head[2:4])[0], head[4]
    return status, body[key_len + extras_len:]


def sasl(c, user, password):
    c.send(bin_req(SASL_AUTH, b"PLAIN", value=b"\0" + user + b"\0" + password))
    return bin_reply(c)


def text_login(c, token):
    c.send(b"set auth 0 0 %d\r\n%s\r\n" % (len(token), token))
    return c.read_line()


@pytest.fixture
def locked(make_server, target):
    if target != "spinel":
        pytest.skip("the memcached port under Redis users is Spinel's")
    server = make_server(extra=["--requirepass", PASSWORD])
    with admin(server) as c:
        assert raw(c, "SET", "secret", "keep") == OK
    return server


def secret_is_intact(server):
    with admin(server) as c:
        assert rt(c, "GET", "secret") == b"keep"
        assert rt(c, "DBSIZE") == 1


@pytest.mark.spinel_only
def test_memcached_text_and_meta_refused_before_login(locked):
    with Conn(locked.mc_port) as c:
        for line in (b"get secret\r\n", b"gets secret\r\n", b"mg secret v\r\n",
                     b"md secret\r\n", b"ma secret\r\n", b"touch secret 10\r\n",
                     b"delete secret\r\n", b"incr secret 1\r\n", b"flush_all\r\n",
                     b"lru_crawler metadump all\r\n", b"stats\r\n", b"watch\r\n",
                     b"ms secret 2\r\nxx\r\n"):
            c.rt(line, UNAUTH)
        # A set is a login attempt: its data is the token, never a value.
        c.rt(b"set secret 0 0 5\r\nstolen\r\n", b"CLIENT_ERROR bad command line termination\r\n")
        c.rt(b"set secret 0 0 6\r\nstolen\r\n", b"CLIENT_ERROR authentication failure\r\n")
    secret_is_intact(locked)


@pytest.mark.spinel_only
def test_memcached_binary_refused_before_login(locked):
    for request in (bin_req(GET, b"secret"), bin_req(FLUSH, extras=b"\0\0\0\0"),
                    bin_req(SET, b"secret", struct.pack(">II", 0, 0), b"x")):
        with Conn(locked.mc_port) as c:
            c.send(request)
            assert bin_reply(c) == (0x20, b"Auth failure.")
            assert c.read_all_until_close() == b""
    secret_is_intact(locked)


@pytest.mark.spinel_only
def test_a_set_too_large_never_deletes_what_the_client_may_not_write(locked):
    # A set refused as too large drops the old item (as memcached does), but only for a
    # client that may write the key: not before login, and not for a user kept from it.
    big = b"x" * (1024 * 1024 + 1)
    with Conn(locked.mc_port) as c:
        try:
            c.send(bin_req(SET, b"secret", struct.pack(">II", 0, 0), big))
            assert bin_reply(c)[0] in (0x03, 0x20)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused and closed before the value was all sent
    with admin(locked) as a:
        assert raw(a, "ACL", "SETUSER", "wo", "on", ">wopw", "%W~w:*", "+set", "+get") == OK
    with Conn(locked.mc_port) as c:
        assert sasl(c, b"wo", b"wopw") == (0, b"Authenticated")
        c.send(bin_req(SET, b"secret", struct.pack(">II", 0, 0), big))
        assert bin_reply(c) == (0x03, b"Too large.")
    with Conn(locked.mc_port) as c:
        assert text_login(c, b"wo wopw") == b"STORED\r\n"
        c.send(b"set secret 0 0 %d\r\n%s\r\n" % (len(big), big))
        assert c.read_line() == b"SERVER_ERROR object too large for cache\r\n"
        c.send(b"ms secret %d\r\n%s\r\n" % (len(big), big))
        assert c.read_line().startswith(b"SERVER_ERROR")
    secret_is_intact(locked)


@pytest.mark.spinel_only
def test_memcached_logins_against_the_redis_users(locked):
    with admin(locked) as a:
        assert raw(a, "ACL", "SETUSER", "bob", "on", ">bobpw", "~*", "&*", "+@all") == OK
    for token in (b"pw", b"default pw", b"bob bobpw"):
        with Conn(locked.mc_port) as c:
            assert text_login(c, token) == b"STORED\r\n", token
            c.rt(b"get secret\r\n", b"VALUE secret 0 4\r\nkeep\r\nEND\r\n")
    with Conn(locked.mc_port) as c:
        assert text_login(c, b"bob pw") == b"CLIENT_ERROR authentication failure\r\n"
        c.rt(b"get secret\r\n", UNAUTH)
    with Conn(locked.mc_port) as c:
        assert sasl(c, b"bob", b"wrong") == (0x20, b"Auth failure.")
        assert sasl(c, b"bob", b"bobpw") == (0, b"Authenticated")
        c.send(bin_req(GET, b"secret"))
        assert bin_reply(c) == (0, b"keep")


@pytest.mark.spinel_only
def test_memcached_user_carries_its_key_and_command_rules(locked):
    with admin(locked) as a:
        assert raw(a, "ACL", "SETUSER", "ro", "on", ">ropw", "%R~pub:*", "+get") == OK
        assert raw(a, "ACL", "SETUSER", "wo", "on", ">wopw", "%W~w:*", "+set", "+get") == OK
        assert raw(a, "SET", "pub:1", "hello") == OK
    with Conn(locked.mc_port) as c:  # binary SASL, as the report
        assert sasl(c, b"ro", b"ropw") == (0, b"Authenticated")
        c.send(bin_req(GET, b"pub:1"))
        assert bin_reply(c) == (0, b"hello")
        c.send(bin_req(GET, b"secret"))
        assert bin_reply(c) == (0x20, NOPERM_KEY)
        c.send(bin_req(SET, b"pub:1", struct.pack(">II", 0, 0), b"x"))
        assert bin_reply(c) == (0x20, noperm_command("set"))
        c.send(bin_req(FLUSH, extras=b"\0\0\0\0"))
        assert bin_reply(c) == (0x20, noperm_command("flushall"))
    with Conn(locked.mc_port) as c:
        assert text_login(c, b"ro ropw") == b"STORED\r\n"
        c.rt(b"get pub:1\r\n", b"VALUE pub:1 0 5\r\nhello\r\nEND\r\n")
        deny_key = b"CLIENT_ERROR " + NOPERM_KEY + b"\r\n"
        c.rt(b"get secret\r\n", deny_key)
        c.rt(b"get pub:1 secret\r\n", deny_key)  # one key refused: the multiget is
        c.rt(b"mg secret v\r\n", deny_key)
        c.rt(b"set pub:1 0 0 1 noreply\r\nx\r\n",
             b"CLIENT_ERROR " + noperm_command("set") + b"\r\n")  # never silent
        c.rt(b"flush_all\r\n", b"CLIENT_ERROR " + noperm_command("flushall") + b"\r\n")
        c.rt(b"lru_crawler metadump all\r\n", b"CLIENT_ERROR " + noperm_command("keys") + b"\r\n")
        c.rt(b"stats\r\n", b"CLIENT_ERROR " + noperm_command("info") + b"\r\n")
        c.send(b"version\r\n")
        assert c.read_line().startswith(b"VERSION ")
    with Conn(locked.mc_port) as c:  # write-only keys: stored, never read back
        assert text_login(c, b"wo wopw") == b"STORED\r\n"
        c.rt(b"set w:1 0 0 2\r\nhi\r\n", b"STORED\r\n")
        c.rt(b"get w:1\r\n", b"CLIENT_ERROR " + NOPERM_KEY + b"\r\n")
        c.rt(b"set secret 0 0 1\r\nx\r\n", b"CLIENT_ERROR " + NOPERM_KEY + b"\r\n")
    secret_is_intact_or_pub(locked)


@pytest.mark.spinel_only
def test_memcached_denials_and_failed_logins_reach_acl_log(locked):
    """The memcached port's refusals and failed logins (SASL and text) land in ACL LOG as
    the Redis port's do, naming the user tried and never the password."""
    with admin(locked) as a:
        assert raw(a, "ACL", "SETUSER", "ro", "on", ">ropw", "%R~pub:*", "+get") == OK
        assert raw(a, "ACL", "LOG", "RESET") == OK
    with Conn(locked.mc_port) as c:
        assert sasl(c, b"ro", b"not-the-password")[0] == 0x20
        assert sasl(c, b"ro", b"ropw") == (0, b"Authenticated")
        c.send(bin_req(GET, b"secret"))
        assert bin_reply(c)[0] == 0x20
    with Conn(locked.mc_port) as c:
        assert text_login(c, b"ghost wrong-secret") != b"STORED\r\n"
    client = redis.Redis(port=locked.resp_port, password=PASSWORD)
    entries = [dict(zip(e[::2], e[1::2])) for e in client.execute_command("ACL", "LOG")]
    client.close()
    shown = [(e[b"reason"], e[b"object"], e[b"username"]) for e in entries]
    assert shown == [(b"auth", b"AUTH", b"ghost"), (b"key", b"secret", b"ro"),
                     (b"auth", b"AUTH", b"ro")], shown
    assert all(b"protocol=memcache" in e[b"client-info"] for e in entries)
    assert b"not-the-password" not in repr(entries).encode()
    assert b"wrong-secret" not in repr(entries).encode()


def secret_is_intact_or_pub(server):
    with admin(server) as c:
        assert rt(c, "GET", "secret") == b"keep"
        assert rt(c, "GET", "pub:1") == b"hello"


@pytest.mark.spinel_only
def test_password_set_at_run_time_guards_new_memcached_connections(make_server, target):
    if target != "spinel":
        pytest.skip("Spinel's memcached port")
    server = make_server()
    with Conn(server.mc_port) as before:
        before.rt(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n")  # logged in as nopass default
        with admin(server, password=None) as a:
            assert raw(a, "CONFIG", "SET", "requirepass", PASSWORD) == OK
        with Conn(server.mc_port) as after:
            after.rt(b"get k\r\n", UNAUTH)
        # As on the Redis port, a connection logged in stays so.
        before.rt(b"get k\r\n", b"VALUE k 0 1\r\nv\r\nEND\r\n")
        with admin(server) as a:
            assert raw(a, "ACL", "SETUSER", "tmp", "on", ">t", "~*", "+@all") == OK
            with Conn(server.mc_port) as doomed:
                assert text_login(doomed, b"tmp t") == b"STORED\r\n"
                assert rt(a, "ACL", "DELUSER", "tmp") == 1
                doomed.send(b"get k\r\n")
                assert doomed.read_all_until_close() == b"", "a deleted user's connection closes"


@pytest.mark.spinel_only
def test_udp_is_not_served_while_a_password_is_required(make_server, target):
    if target != "spinel":
        pytest.skip("Spinel's memcached port")
    udp_port = free_port()
    server = make_server(extra=["-U", str(udp_port)])
    frame = struct.pack(">HHHH", 1, 0, 1, 0) + b"get k\r\n"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(1.0)
        u.sendto(frame, ("127.0.0.1", udp_port))
        assert u.recv(2048)[8:] == b"END\r\n", "served while default needs no password"
        with admin(server, password=None) as a:
            assert raw(a, "CONFIG", "SET", "requirepass", PASSWORD) == OK
        u.sendto(frame, ("127.0.0.1", udp_port))
        with pytest.raises(socket.timeout):
            u.recv(2048)


# ------------------------------------------------------------------------------------------
# Redis port: these run against redis-server too


@pytest.fixture
def acl_server(make_server, target):
    if target == "memcached":
        pytest.skip("Redis port")
    return make_server()


@pytest.mark.resp
def test_channel_permissions(acl_server):
    with admin(acl_server, password=None) as a:
        assert raw(a, "ACL", "SETUSER", "c", "on", ">p", "~*", "+@all", "&chan:*", "&lit") == OK
        with Conn(acl_server.resp_port) as c:
            assert raw(c, "AUTH", "c", "p") == OK
            for command in (("SUBSCRIBE", "other"), ("SUBSCRIBE", "chan:1", "other"),
                            ("PSUBSCRIBE", "*"), ("PSUBSCRIBE", "chan:1"), ("PSUBSCRIBE", "l*"),
                            ("PUBLISH", "other", "x"), ("PUBLISH", "li*", "x"),
                            ("SPUBLISH", "other", "x"), ("SSUBSCRIBE", "other")):
                assert raw(c, *command) == NOPERM_CHANNEL, command
            assert raw(c, "PUBLISH", "chan:x", "x") == b":0\r\n"
            assert raw(c, "PUBLISH", "lit", "x") == b":0\r\n"
        assert rt(a, "ACL", "DRYRUN", "c", "PUBLISH", "other", "x") == \
            b"This user has no permissions to access the 'other' channel"
        # A new user has no channels (acl-pubsub-default resetchannels).
        assert raw(a, "ACL", "SETUSER", "d", "on", "nopass", "+@all", "~*") == OK
        with Conn(acl_server.resp_port) as d:
            assert raw(d, "AUTH", "d", "x") == OK
            assert raw(d, "SUBSCRIBE", "a") == NOPERM_CHANNEL
            assert raw(a, "ACL", "SETUSER", "d", "allchannels") == OK
            assert raw(d, "PSUBSCRIBE", "*") == b"*3\r\n"


@pytest.mark.resp
def test_revoked_channels_close_their_subscribers(acl_server):
    with admin(acl_server, password=None) as a:
        assert raw(a, "ACL", "SETUSER", "c", "on", ">p", "~*", "+@all", "&chan:*") == OK
        pattern, channel = Conn(acl_server.resp_port), Conn(acl_server.resp_port)
        with pattern, channel:
            for conn, command in ((pattern, "PSUBSCRIBE"), (channel, "SUBSCRIBE")):
                assert raw(conn, "AUTH", "c", "p") == OK
                target = "chan:*" if command == "PSUBSCRIBE" else "chan:1"
                conn.send(resp_encode(command, target))
                assert read_reply(conn)[0] == command.lower().encode()
            assert raw(a, "ACL", "SETUSER", "c", "&more") == OK  # adds: nobody closed
            assert pattern.is_open() and channel.is_open()
            # `chan:*` is no longer literally allowed; `chan:1` still matches `chan:1`.
            assert raw(a, "ACL", "SETUSER", "c", "resetchannels", "&chan:1") == OK
            assert pattern.read_all_until_close() == b""
            assert channel.is_open()
            assert raw(a, "ACL", "SETUSER", "c", "resetchannels") == OK
            assert channel.read_all_until_close() == b""


@pytest.mark.resp
@pytest.mark.parametrize("send,error", [
    (b"*11\r\n", b"-ERR Protocol error: unauthenticated multibulk length\r\n"),
    (b"*2\r\n$4\r\nAUTH\r\n$16385\r\n", b"-ERR Protocol error: unauthenticated bulk length\r\n"),
    (b"PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870000\r\n",
     NOAUTH + b"-ERR Protocol error: unauthenticated bulk length\r\n"),
], ids=["args", "bulk", "huge-bulk"])
def test_unauthenticated_clients_get_small_buffers(make_server, target, send, error):
    if target == "memcached":
        pytest.skip("Redis port")
    server = make_server(extra=["--requirepass", PASSWORD])
    with Conn(server.resp_port) as c:
        c.send(send)
        assert c.read_all_until_close() == error
    with Conn(server.resp_port) as c:  # at the edges: ten arguments, 16384 bytes
        c.send(b"*10\r\n$3\r\nDEL\r\n" + b"$1\r\na\r\n" * 9)
        assert c.read_line() == NOAUTH
        c.send(b"*2\r\n$4\r\nAUTH\r\n$16384\r\n" + b"p" * 16384 + b"\r\n")
        assert c.read_line().startswith(b"-WRONGPASS")
        assert raw(c, "AUTH", PASSWORD) == OK  # logged in: the usual limits
        c.send(resp_encode("SET", "big", b"v" * 100_000))
        assert c.read_line() == OK


@pytest.mark.spinel_only
def test_unauthenticated_flood_does_not_grow_memory(make_server, target):
    """The issue's report: three strangers announce 512 MB arguments and pour 100 MB each;
    the server must hang up after the header, not buffer what follows."""
    if target != "spinel":
        pytest.skip("reads the server's RSS")
    server = make_server(extra=["--requirepass", PASSWORD])
    before = rss_kib(server.pid)
    conns = [socket.create_connection(("127.0.0.1", server.resp_port)) for _ in range(3)]
    chunk = b"x" * (1 << 20)
    try:
        for s in conns:
            s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870000\r\n")
        deadline = time.monotonic() + 10
        for s in conns:
            s.settimeout(1)
            try:
                for _ in range(100):
                    s.sendall(chunk)
                    if time.monotonic() > deadline:
                        break
            except OSError:
                pass  # hung up on: what the test wants
    finally:
        for s in conns:
            s.close()
    grown_kib = rss_kib(server.pid) - before
    assert grown_kib < 32 * 1024, f"RSS grew {grown_kib} KiB"


@pytest.mark.resp
def test_failed_logins_never_lock_the_right_password_out(make_server, target):
    if target == "memcached":
        pytest.skip("Redis port")
    server = make_server(extra=["--requirepass", PASSWORD])
    with Conn(server.resp_port) as attacker, Conn(server.resp_port) as user:
        for _ in range(30):
            assert raw(attacker, "AUTH", "guess").startswith(b"-WRONGPASS")
        assert raw(user, "AUTH", PASSWORD) == OK
        assert raw(attacker, "HELLO", "2", "AUTH", "default", PASSWORD) == b"*14\r\n"


SECRET_COMMANDS = [
    ("AUTH", "wrong"),
    ("AUTH", "someone", "wrong"),
    ("HELLO", "2", "AUTH", "default", PASSWORD),
    ("HELLO", "3", "AUTH", "default", PASSWORD, "SETNAME", "x"),
    ("HELLO", "3", "AUTH", "default", PASSWORD, "BOGUS"),
    ("MIGRATE", "127.0.0.1", "1", "nokey", "0", "1000", "AUTH", "mpw"),
    ("MIGRATE", "127.0.0.1", "1", "nokey", "0", "1000", "AUTH2", "muser", "mpw"),
    ("ACL", "SETUSER", "u", "on", ">upw", "~*"),
    ("CONFIG", "SET", "masterauth", "mapw"),
    ("CONFIG", "SET", "requirepass", PASSWORD),
]


def _skip_reply(conn):
    value = read_reply(conn)
    if isinstance(value, list) and len(value) == 14:  # HELLO's map, read as a flat list
        return
    return value


@pytest.mark.resp
def test_secrets_are_redacted_in_monitor_and_slowlog(make_server, target):
    if target == "memcached":
        pytest.skip("Redis port")
    server = make_server(extra=["--requirepass", PASSWORD])
    with admin(server) as watcher, admin(server) as c:
        assert raw(c, "CONFIG", "SET", "slowlog-log-slower-than", "0") == OK
        assert raw(watcher, "MONITOR") == OK
        for command in SECRET_COMMANDS:
            c.send(resp_encode(*command))
            _skip_reply(c)
        assert raw(c, "PING") == b"+PONG\r\n"
        shown = []
        while True:
            line = watcher.read_line()
            shown.append(re.sub(rb"^\+\d+\.\d+ \[0 [^\]]+\] ", b"", line).lower())
            if line.endswith(b'"PING"\r\n'):
                break
        # Admin commands (ACL, CONFIG) are not shown at all; arguments as sent (lowered
        # here: the commands went out in capitals).
        assert shown == [
            b'"auth" "(redacted)"\r\n',
            b'"auth" "(redacted)" "(redacted)"\r\n',
            b'"hello" "2" "auth" "(redacted)" "(redacted)"\r\n',
            b'"hello" "3" "auth" "(redacted)" "(redacted)" "setname" "x"\r\n',
            b'"hello" "3" "auth" "(redacted)" "(redacted)" "bogus"\r\n',
            b'"migrate" "127.0.0.1" "1" "nokey" "0" "1000" "auth" "(redacted)"\r\n',
            b'"migrate" "127.0.0.1" "1" "nokey" "0" "1000" "auth2" "(redacted)" "(redacted)"\r\n',
            b'"ping"\r\n',
        ]
        logged = rt(c, "SLOWLOG", "GET", "-1")
    args = [[a.lower() if i == 0 else a for i, a in enumerate(entry[3])] for entry in logged]
    args.reverse()
    start = args.index([b"config", b"SET", b"slowlog-log-slower-than", b"0"])
    args = [a for a in args[start + 1:] if a[0] not in (b"ping", b"slowlog", b"monitor")]
    redacted = b"(redacted)"
    expected = [
        [b"auth", redacted],
        [b"auth", redacted, redacted],
        [b"hello", b"2", b"AUTH", redacted, redacted],
        [b"hello", b"3", b"AUTH", redacted, redacted, b"SETNAME", b"x"],
        [b"hello", b"3", b"AUTH", redacted, redacted, b"BOGUS"],
        [b"migrate", b"127.0.0.1", b"1", b"nokey", b"0", b"1000", b"AUTH", redacted],
        [b"migrate", b"127.0.0.1", b"1", b"nokey", b"0", b"1000", b"AUTH2", redacted, redacted],
        [b"acl", b"SETUSER", redacted, redacted, redacted, redacted],
        [b"config", b"SET", b"masterauth", redacted],
        [b"config", b"SET", b"requirepass", redacted],
    ]
    secrets = {b"wrong", b"someone", b"default", b"mpw", b"muser", b">upw", b"mapw",
               PASSWORD.encode()}
    assert not [a for a in args if secrets & set(a[1:])], "a secret in the slow log"
    if target == "redis":
        assert args[-len(expected):] == expected
    else:
        # Spinel times the commands Redis flags fast (AUTH, HELLO) one call in a sample
        # only, so those may be missing; whatever is logged is redacted as Redis does.
        logged_secret = [a for a in args if a in expected]
        assert logged_secret == [e for e in expected if e in logged_secret]
        assert expected[5:] == logged_secret[-5:]
