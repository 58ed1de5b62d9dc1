"""Live reconfiguration: Redis's CONFIG SET of `timeout`, `maxclients` and the TLS port's
files and options, and a SIGHUP reload of `--config` putting the settings that can change
while running in force. Redis-protocol tests also run against redis-server 7
(CONFORMANCE_TARGET=redis), which answers the same, byte for byte.
"""

import resource
import signal
import socket
import ssl
import time

import pytest

from conftest import Server, _split, free_port, spinel_bin
from test_tls import OPENSSL, Certs, read_until, resp_tls, served_cn, tls_socket, wait_listening
from wire import Conn, resp_encode


def call(conn, *args):
    """One command on a raw connection; the reply's first line (enough for these)."""
    conn.send(resp_encode(*args))
    return conn.read_until(b"\r\n")


def config_get(conn, name):
    conn.send(resp_encode("CONFIG", "GET", name))
    reply = conn.read_until(b"\r\n")
    while reply.count(b"\r\n") < 5:
        reply += conn.read_until(b"\r\n")
    return reply.split(b"\r\n")[4].decode()


def failed(name, why):
    return f"-ERR CONFIG SET failed (possibly related to argument '{name}') - {why}\r\n".encode()


def closed_within(conn, seconds):
    """Whether the server closes `conn` (idle on our side) within `seconds`."""
    conn.sock.settimeout(seconds)
    try:
        return conn.sock.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


@pytest.mark.resp
def test_timeout_closes_idle_clients_once_set(make_server):
    server = make_server()
    with Conn(server.resp_port) as admin, Conn(server.resp_port) as idle:
        assert call(idle, "PING") == b"+PONG\r\n"
        assert not closed_within(idle, 1.5), "closed with no timeout"
        assert call(admin, "CONFIG", "SET", "timeout", "1") == b"+OK\r\n"
        assert config_get(admin, "timeout") == "1"
        # Redis checks idle clients in its cron, a few times a second: allow it a while.
        deadline = time.monotonic() + 6
        while not closed_within(idle, 0.5):
            assert call(admin, "PING") == b"+PONG\r\n", "an active client was closed"
            assert time.monotonic() < deadline, "idle client still open"
        assert call(admin, "CONFIG", "SET", "timeout", "0") == b"+OK\r\n"
        with Conn(server.resp_port) as later:
            assert call(later, "PING") == b"+PONG\r\n"
            assert not closed_within(later, 2.0), "closed after the timeout was lifted"


@pytest.mark.resp
def test_integer_settings_are_checked_as_redis_checks_them(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        cases = [
            (("timeout", "-1"), failed("timeout", "argument must be between 0 and 2147483647 inclusive")),
            (("timeout", "abc"), failed("timeout", "argument couldn't be parsed into an integer")),
            (("maxclients", "0"), failed("maxclients", "argument must be between 1 and 4294967295 inclusive")),
            (("slowlog-max-len", "-1"), failed("slowlog-max-len", "argument must be between 0 and 9223372036854775807 inclusive")),
            (("slowlog-log-slower-than", "-5"), failed("slowlog-log-slower-than", "argument must be between -1 and 9223372036854775807 inclusive")),
            (("latency-monitor-threshold", "-1"), failed("latency-monitor-threshold", "argument must be between 0 and 9223372036854775807 inclusive")),
            (("timeout", "5", "maxclients", "0"), failed("maxclients", "argument must be between 1 and 4294967295 inclusive")),
        ]
        for args, reply in cases:
            assert call(c, "CONFIG", "SET", *args) == reply, args
        # A refused pair changes nothing, not even the good pair before it.
        assert config_get(c, "timeout") == "0"
        assert call(c, "CONFIG", "SET", "slowlog-log-slower-than", "-1") == b"+OK\r\n"
        # More clients than the open-file limit allows (this process's, which the server
        # inherits) is refused with the most it can take.
        # (Just above it: Redis steps down from the number asked, 16 at a time.)
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        if hard < 4_000_000_000:
            reply = call(c, "CONFIG", "SET", "maxclients", str(hard + 1000))
            prefix = failed("maxclients", "The operating system is not able to handle the "
                            "specified number of clients, try with ")[:-2]
            assert reply.startswith(prefix), reply


@pytest.mark.resp
def test_maxclients_refuses_connections_past_the_new_limit(make_server):
    server = make_server()
    with Conn(server.resp_port) as admin:
        assert call(admin, "PING") == b"+PONG\r\n"
        # The readiness probes' connections may still be closing.
        deadline = time.monotonic() + 5
        while b"connected_clients:1\r\n" not in info_clients(admin):
            assert time.monotonic() < deadline, info_clients(admin)
            time.sleep(0.05)
        assert call(admin, "CONFIG", "SET", "maxclients", "3") == b"+OK\r\n"
        assert config_get(admin, "maxclients") == "3"
        kept = [Conn(server.resp_port) for _ in range(2)]
        for c in kept:
            assert call(c, "PING") == b"+PONG\r\n"
        with Conn(server.resp_port) as refused:
            refused.send(resp_encode("PING"))
            assert refused.read_until(b"\r\n") == b"-ERR max number of clients reached\r\n"
        assert call(admin, "CONFIG", "SET", "maxclients", "4") == b"+OK\r\n"
        with Conn(server.resp_port) as fourth:
            assert call(fourth, "PING") == b"+PONG\r\n"
        for c in kept:
            c.close()


def info_clients(conn):
    conn.send(resp_encode("INFO", "clients"))
    header = conn.read_until(b"\r\n")
    return conn.read_exact(int(header[1:-2]) + 2)


@pytest.mark.spinel_only
def test_memcached_stats_settings_show_the_live_values(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        assert call(c, "CONFIG", "SET", "timeout", "7", "maxclients", "77") == b"+OK\r\n"
    with Conn(server.mc_port) as mc:
        mc.send(b"stats settings\r\n")
        settings = mc.read_until(b"END\r\n")
        assert b"STAT maxconns 77\r\n" in settings and b"STAT idle_timeout 7\r\n" in settings
        mc.send(b"stats\r\n")
        assert b"STAT max_connections 77\r\n" in mc.read_until(b"END\r\n")


# ------------------------------------------------------------------------------------------
# The TLS port's files and options


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    if OPENSSL is None:
        pytest.skip("openssl CLI not installed")
    return Certs(tmp_path_factory.mktemp("tls-live"))


@pytest.mark.resp
def test_config_set_tls_files_serves_new_connections_with_them(make_server, certs):
    server, port = resp_tls(make_server, certs)
    context = certs.client_context()
    assert served_cn(port, context) == "server-a"
    kept = tls_socket(port, context)
    with Conn(server.resp_port) as c:
        assert config_get(c, "tls-cert-file") == certs.path("server-a.crt")
        assert config_get(c, "tls-port") == str(port)
        reply = call(c, "CONFIG", "SET", "tls-cert-file", certs.path("server-b.crt"),
                     "tls-key-file", certs.path("server-b.key"))
        assert reply == b"+OK\r\n"
        assert served_cn(port, context) == "server-b"
        assert config_get(c, "tls-key-file") == certs.path("server-b.key")
        # A file that cannot be read: Redis's sentence, and the files in force stay.
        unable = failed("tls-cert-file", "Unable to update TLS configuration. Check server logs.")
        assert call(c, "CONFIG", "SET", "tls-cert-file", certs.path("missing.crt")) == unable
        assert served_cn(port, context) == "server-b"
        assert config_get(c, "tls-cert-file") == certs.path("server-b.crt")
    kept.sendall(b"PING\r\n")
    assert read_until(kept, b"\r\n") == b"+PONG\r\n"
    kept.close()


@pytest.mark.resp
def test_config_set_tls_auth_clients(make_server, certs):
    server, port = resp_tls(make_server, certs)
    with Conn(server.resp_port) as c:
        words = failed("tls-auth-clients", "argument(s) must be one of the following: no, yes, optional")
        assert call(c, "CONFIG", "SET", "tls-auth-clients", "maybe") == words
        assert call(c, "CONFIG", "SET", "tls-auth-clients", "yes") == b"+OK\r\n"
        assert config_get(c, "tls-auth-clients") == "yes"
    with tls_socket(port, certs.client_context(cert="client")) as s:
        s.sendall(b"PING\r\n")
        assert read_until(s, b"\r\n") == b"+PONG\r\n"
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        with tls_socket(port, certs.client_context()) as s:
            s.sendall(b"PING\r\n")
            read_until(s, b"\r\n")


# ------------------------------------------------------------------------------------------
# SIGHUP: the configuration file read again


def wait_for(predicate, what, server, seconds=5):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"{what}\n{server.describe()}"
        time.sleep(0.05)


def stats_settings(server, password=None):
    """`stats settings`; with `password`, after memcached's text login (requirepass guards the
    memcached port too; without one in force the login is an ordinary set)."""
    with Conn(server.mc_port) as mc:
        if password:
            mc.send(b"set auth 0 0 %d\r\n%s\r\n" % (len(password), password.encode()))
            assert mc.read_line() == b"STORED\r\n"
        mc.send(b"stats settings\r\n")
        return mc.read_until(b"END\r\n")


@pytest.fixture
def config_server(backend, target):
    """Starts spinel with only `--config FILE` and the ports: the file decides the rest
    (the harness's own -m would win over the file's memory-limit)."""
    started = []

    def start(path):
        io, threads = _split(backend)
        mc, resp = free_port(), free_port()
        argv = [spinel_bin(), "-p", str(mc), "--resp-port", str(resp), "-l", "127.0.0.1",
                "-t", str(threads), "--io", io, "--config", str(path)]
        started.append(Server("spinel", argv, mc, resp, io, threads))
        return started[-1].wait_ready()

    yield start
    for server in started:
        server.cleanup()


@pytest.mark.spinel_only
def test_sighup_applies_the_settings_that_can_change(config_server, certs, tmp_path):
    tls_port = free_port()
    cert, key = certs.live("reload-live")
    config = tmp_path / "spinel.toml"
    base = (f'tls-port = {tls_port}\ntls-cert-file = "{cert}"\ntls-key-file = "{key}"\n'
            'tls-auth-clients = "no"\n')
    config.write_text(base + "memory-limit = 64\nconn-limit = 100\nidle-timeout = 0\n")
    server = config_server(config)
    wait_listening(server, tls_port)
    context = certs.client_context()
    assert served_cn(tls_port, context) == "server-a"
    with Conn(server.mc_port) as mc:
        mc.rt(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n")
    config.write_text(
        f'tls-port = {tls_port}\ntls-cert-file = "{certs.path("server-b.crt")}"\n'
        f'tls-key-file = "{certs.path("server-b.key")}"\ntls-auth-clients = "no"\n'
        'memory-limit = 48\nconn-limit = 50\nidle-timeout = 9\nrequirepass = "sesame"\n'
        'listen-backlog = 77\n')
    server.signal(signal.SIGHUP)
    wait_for(lambda: b"STAT maxconns 50\r\n" in stats_settings(server, "sesame"), "conn-limit",
             server)
    settings = stats_settings(server, "sesame")
    assert b"STAT idle_timeout 9\r\n" in settings, settings
    assert f"STAT maxbytes {48 << 20}\r\n".encode() in settings, settings
    assert b"STAT tcp_backlog 1024\r\n" in settings, "the backlog cannot change while running"
    assert served_cn(tls_port, context) == "server-b"
    with Conn(server.resp_port) as c:
        assert call(c, "GET", "k").startswith(b"-NOAUTH"), "requirepass not in force"
        assert call(c, "AUTH", "sesame") == b"+OK\r\n"
        assert call(c, "GET", "k") == b"$1\r\n"
    assert "`listen-backlog` changed; it applies at the next restart" in server.stderr()
    # A TLS file that cannot be read keeps the one in force; the rest still applies.
    config.write_text(base.replace(cert, certs.path("missing.crt")) + "conn-limit = 60\n")
    server.signal(signal.SIGHUP)
    wait_for(lambda: b"STAT maxconns 60\r\n" in stats_settings(server, "sesame"),
             "second reload", server)
    assert served_cn(tls_port, context) == "server-b"
    assert "Redis TLS settings refused" in server.stderr()
