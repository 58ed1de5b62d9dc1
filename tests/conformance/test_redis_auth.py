"""Redis authentication with `requirepass`: exact replies as redis-server 7.0 sends them
(these pass with CONFORMANCE_TARGET=redis), checked on a server started with
`--requirepass` and on one given a password at run time by CONFIG SET; and redis-py's
`password=` and `AuthenticationError` against it.
"""

import pytest

from test_redis_hash import read_reply
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

PASSWORD = "s3cret pass"  # a space: the password is one argument, never split
NOAUTH = b"-NOAUTH Authentication required.\r\n"
WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
HELLO_NOAUTH = (
    b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the "
    b"HELLO AUTH <user> <pass> option can be used to authenticate the client and select the "
    b"RESP protocol version at the same time\r\n"
)
AUTH_NOPASS = (
    b"-ERR AUTH <password> called without any password configured for the default user. "
    b"Are you sure your configuration is correct?\r\n"
)


def rt(conn, *args):
    """Sends one command; returns its whole reply's bytes (one line, or a bulk)."""
    conn.send(resp_encode(*args))
    line = conn.read_line()
    if line.startswith(b"$") and line != b"$-1\r\n":
        return line + conn.read_exact(int(line[1:-2]) + 2)
    return line


@pytest.fixture
def locked(make_server):
    return make_server(extra=["--requirepass", PASSWORD])


def test_nothing_runs_before_auth(locked):
    with Conn(locked.resp_port) as c:
        for command in (["PING"], ["GET", "k"], ["SET", "k", "v"], ["MULTI"], ["ECHO", "x"],
                        ["CLIENT", "SETNAME", "x"], ["COMMAND"], ["SELECT", "1"]):
            assert rt(c, *command) == NOAUTH, command
        # Unknown commands and wrong arity are found before the password is asked for.
        assert rt(c, "NOSUCH").startswith(b"-ERR unknown command 'NOSUCH'")
        assert rt(c, "GET") == b"-ERR wrong number of arguments for 'get' command\r\n"
        assert rt(c, "HELLO") == HELLO_NOAUTH
        assert rt(c, "HELLO", "3", "SETNAME", "x") == HELLO_NOAUTH
        assert rt(c, "RESET") == b"+RESET\r\n"
        assert rt(c, "AUTH") == b"-ERR wrong number of arguments for 'auth' command\r\n"
        assert rt(c, "AUTH", "a", "b", "c") == b"-ERR syntax error\r\n"
        assert rt(c, "AUTH", "wrong") == WRONGPASS
        assert rt(c, "AUTH", "default", "wrong") == WRONGPASS
        assert rt(c, "AUTH", "nobody", PASSWORD) == WRONGPASS
        assert rt(c, "AUTH", PASSWORD[:-1]) == WRONGPASS, "a prefix is not the password"
        assert rt(c, "AUTH", PASSWORD + "x") == WRONGPASS
        assert rt(c, "GET", "k") == NOAUTH
        assert rt(c, "AUTH", PASSWORD) == b"+OK\r\n"
        assert rt(c, "SET", "k", "v") == b"+OK\r\n"
        assert rt(c, "AUTH", "wrong") == WRONGPASS
        assert rt(c, "GET", "k") == b"$1\r\nv\r\n", "a failed AUTH keeps the login"
        assert rt(c, "AUTH", "default", PASSWORD) == b"+OK\r\n"
    with Conn(locked.resp_port) as c:
        assert rt(c, "QUIT") == b"+OK\r\n"


def test_hello_authenticates(locked):
    with Conn(locked.resp_port) as c:
        assert rt(c, "HELLO", "2", "AUTH", "default", "wrong") == WRONGPASS
        assert rt(c, "HELLO", "3", "AUTH", "default") == \
            b"-ERR Syntax error in HELLO option 'AUTH'\r\n"
        assert rt(c, "HELLO", "4", "AUTH", "default", PASSWORD) == \
            b"-NOPROTO unsupported protocol version\r\n"
        assert rt(c, "GET", "k") == NOAUTH
        c.send(resp_encode("HELLO", "3", "AUTH", "default", PASSWORD, "SETNAME", "me"))
        hello = read_reply(c)
        hello = dict(hello)
        assert hello[b"proto"] == 3 and hello[b"server"] == b"redis"
        assert rt(c, "CLIENT", "GETNAME") == b"$2\r\nme\r\n"
        assert rt(c, "GET", "k") == b"_\r\n"


def test_reset_logs_out(locked):
    with Conn(locked.resp_port) as c:
        assert rt(c, "AUTH", PASSWORD) == b"+OK\r\n"
        assert rt(c, "SELECT", "1") == b"+OK\r\n"
        assert rt(c, "SET", "in1", "x") == b"+OK\r\n"
        assert rt(c, "MULTI") == b"+OK\r\n"
        assert rt(c, "SET", "q", "1") == b"+QUEUED\r\n"
        assert rt(c, "RESET") == b"+RESET\r\n"
        assert rt(c, "GET", "in1") == NOAUTH
        assert rt(c, "AUTH", PASSWORD) == b"+OK\r\n"
        assert rt(c, "GET", "in1") == b"$-1\r\n", "RESET went back to database 0"
        assert rt(c, "EXISTS", "q") == b":0\r\n", "RESET discarded the transaction"


def test_password_set_and_cleared_at_run_time(make_server):
    server = make_server()
    with Conn(server.resp_port) as before, Conn(server.resp_port) as admin:
        # Served once, so that the server has taken it in (another worker may run admin's
        # commands before this one's accept comes round otherwise).
        assert rt(before, "PING") == b"+PONG\r\n"
        assert rt(admin, "AUTH", "x") == AUTH_NOPASS
        assert rt(admin, "AUTH", "default", "anything") == b"+OK\r\n", "nopass"
        assert rt(admin, "AUTH", "bob", "x") == WRONGPASS
        admin.send(resp_encode("CONFIG", "GET", "requirepass"))
        assert read_reply(admin) == [b"requirepass", b""]
        assert rt(admin, "CONFIG", "SET", "requirepass", PASSWORD) == b"+OK\r\n"
        assert rt(before, "PING") == b"+PONG\r\n", "a connection in before stays in"
        with Conn(server.resp_port) as after:
            assert rt(after, "PING") == NOAUTH
            assert rt(after, "AUTH", PASSWORD) == b"+OK\r\n"
            after.send(resp_encode("CONFIG", "GET", "requirepass"))
            assert read_reply(after) == [b"requirepass", PASSWORD.encode()]
        with Conn(server.resp_port) as waiting:
            assert rt(waiting, "PING") == NOAUTH
            assert rt(admin, "CONFIG", "SET", "requirepass", "") == b"+OK\r\n"
            assert rt(waiting, "PING") == b"+PONG\r\n", "no password: nothing to ask"
            assert rt(waiting, "AUTH", PASSWORD) == AUTH_NOPASS


def test_redis_py_password(locked):
    redis = pytest.importorskip("redis")
    good = redis.Redis(port=locked.resp_port, password=PASSWORD)
    assert good.set("k", "v") and good.get("k") == b"v"
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=locked.resp_port, password="wrong").ping()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=locked.resp_port).get("k")
    resp3 = redis.Redis(port=locked.resp_port, password=PASSWORD, protocol=3)
    assert resp3.get("k") == b"v"
    named = redis.Redis(port=locked.resp_port, username="default", password=PASSWORD)
    assert named.get("k") == b"v"


def outside_address():
    """An address of this host that is not loopback (None if it has none): a connection to it
    from here comes from that address, so protected mode sees an outside client."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


PROTECTED = (
    b"-DENIED Redis is running in protected mode because protected mode is enabled and no "
    b"password is set for the default user."
)
PROTECTED_WHOLE = PROTECTED + (
    b" In this mode connections are only accepted from the loopback interface. If you want "
    b"to connect from external computers to Redis you may adopt one of the following "
    b"solutions: 1) Just disable protected mode sending the command 'CONFIG SET "
    b"protected-mode no' from the loopback interface by connecting to Redis from the same "
    b"host the server is running, however MAKE SURE Redis is not publicly accessible from "
    b"internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) "
    b"Alternatively you can just disable the protected mode by editing the Redis "
    b"configuration file, and setting the protected mode option to 'no', and then restarting "
    b"the server. 3) If you started the server manually just for testing, restart it with "
    b"the '--protected-mode no' option. 4) Setup a an authentication password for the "
    b"default user. NOTE: You only need to do one of the above things in order for the "
    b"server to start accepting connections from the outside.\r\n"
)


def test_protected_mode(make_server, target):
    """Without a password, a client from outside the loopback interface gets DENIED and is
    closed; with a password, or with protected mode off, it is let in."""
    import socket
    address = outside_address()
    if address is None:
        pytest.skip("this host has no address outside the loopback interface")
    bind = ["-l", f"127.0.0.1,{address}"] if target == "spinel" else ["--bind", f"127.0.0.1 {address}"]
    server = make_server(extra=bind)

    def greeting():
        with socket.create_connection((address, server.resp_port), timeout=5) as s:
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            return data

    denied = greeting()
    assert denied == PROTECTED_WHOLE
    with Conn(server.resp_port) as local:
        assert rt(local, "PING") == b"+PONG\r\n", "loopback clients are let in"
        local.send(resp_encode("CONFIG", "GET", "protected-mode"))
        assert read_reply(local) == [b"protected-mode", b"yes"]
        assert rt(local, "CONFIG", "SET", "protected-mode", "maybe") == (
            b"-ERR CONFIG SET failed (possibly related to argument 'protected-mode') - "
            b"argument must be 'yes' or 'no'\r\n")
        assert rt(local, "CONFIG", "SET", "requirepass", PASSWORD) == b"+OK\r\n"
        with socket.create_connection((address, server.resp_port), timeout=5) as outside:
            outside.sendall(resp_encode("AUTH", PASSWORD))
            assert outside.recv(100) == b"+OK\r\n", "a password lets outside clients in"
        assert rt(local, "CONFIG", "SET", "requirepass", "") == b"+OK\r\n"
        assert greeting().startswith(PROTECTED)
        assert rt(local, "CONFIG", "SET", "protected-mode", "no") == b"+OK\r\n"
        with socket.create_connection((address, server.resp_port), timeout=5) as outside:
            outside.sendall(resp_encode("PING"))
            assert outside.recv(100) == b"+PONG\r\n", "protected mode off"


def test_failed_logins_are_counted_and_never_lock_out(locked):
    """Redis has no lockout: after many wrong passwords from one address the right one
    still works there (a lockout would let anyone on a shared address keep the real user
    out); every failure is counted in INFO's acl_access_denied_auth (Redis 7.2's name)."""
    with Conn(locked.resp_port) as c:
        for _ in range(25):
            assert rt(c, "AUTH", "guess") == WRONGPASS
        assert rt(c, "AUTH", PASSWORD) == b"+OK\r\n"
        c.send(resp_encode("INFO", "stats"))
        stats = read_reply(c)
    if isinstance(stats, bytes):
        stats = stats.decode()
    if "acl_access_denied_auth" in stats:  # Redis 7.0 has no such field
        assert "acl_access_denied_auth:25\r\n" in stats
