"""The default-port rule that lets instances share a host: a port the command line or the
configuration file names must open, or the start fails naming it; a default (11211 without
-p, 6379 without --resp-port) held by another process is skipped with one warning line and
shown in `stats settings` and `INFO server`. Both directions, with -s, -Z-less TCP, UDP, TLS
and the metrics port (spinel only).

The defaults are fixed numbers, so a test holds 127.0.0.1:11211 or :6379 itself with a plain
listening socket, as a memcached or redis-server would; where something else on this host
already holds it, the test is skipped, naming the port."""

import os
import shutil
import socket
import subprocess

import pytest

from conftest import free_port, spinel_bin
from test_cli import first_io
from test_service import Notified
from wire import Conn

pytestmark = pytest.mark.spinel_only

MEMCACHED_DEFAULT, REDIS_DEFAULT = 11211, 6379
SKIP_WARNING = "(default) is in use"


def hold(port, kind=socket.SOCK_STREAM):
    """A socket holding 127.0.0.1:port, as another server would."""
    sock = socket.socket(socket.AF_INET, kind)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as e:
        sock.close()
        pytest.skip(f"127.0.0.1:{port} is held by another process on this host ({e})")
    if kind == socket.SOCK_STREAM:
        sock.listen(1)
    return sock


@pytest.fixture
def held():
    socks = []

    def take(port, kind=socket.SOCK_STREAM):
        socks.append(hold(port, kind))
        return port
    yield take
    for sock in socks:
        sock.close()


def argv(*flags):
    return [spinel_bin(), "-l", "127.0.0.1", "-t", "1", "--io", first_io(), "-m", "64",
            *map(str, flags)]


def started(flags):
    """A server that reported ready; its stderr is read once it stops."""
    server = Notified(argv=argv(*flags))
    server.wait_for("READY=1")
    return server


def stop(server):
    """SIGTERM, then its stderr (the log), after a clean exit."""
    server.proc.terminate()
    _, err = server.proc.communicate(timeout=10)
    assert server.proc.returncode == 0, err.decode()
    server.close()
    return err.decode()


def refused(flags):
    """A start that must fail: its exit status and its last stderr line."""
    result = subprocess.run(argv(*flags), capture_output=True, timeout=10,
                            stdin=subprocess.DEVNULL)
    lines = result.stderr.decode().strip().splitlines()
    return result.returncode, lines[-1] if lines else ""


def stats_settings(port):
    with Conn(port) as conn:
        conn.send(b"stats settings\r\n")
        text = conn.read_until(b"END\r\n").decode()
    return dict(line.split(" ", 2)[1:] for line in text.splitlines() if line.startswith("STAT"))


def info_server(port):
    with Conn(port) as conn:
        conn.send(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")
        header = conn.read_until(b"\r\n")
        body = conn.read_exact(int(header[1:-2]) + 2).decode()
    return dict(line.split(":", 1) for line in body.splitlines() if ":" in line)


def warnings_in(log):
    return [line for line in log.splitlines() if SKIP_WARNING in line]


def test_busy_redis_default_is_skipped_when_only_p_is_named(held):
    held(REDIS_DEFAULT)
    mc = free_port()
    server = started(["-p", mc])
    try:
        settings = stats_settings(mc)
        assert (settings["tcpport"], settings["resp_port"]) == (str(mc), "0")
        assert settings["skipped_default_ports"] == "resp:6379"
    finally:
        log = stop(server)
    assert len(warnings_in(log)) == 1, log
    assert warnings_in(log)[0].endswith(
        "Redis port 6379 (default) is in use, not serving RESP; name --resp-port to require it")


def test_busy_memcached_default_is_skipped_when_only_resp_port_is_named(held):
    held(MEMCACHED_DEFAULT)
    resp = free_port()
    server = started(["--resp-port", resp])
    try:
        info = info_server(resp)
        assert info["tcp_port"] == str(resp)
        assert info["skipped_default_ports"] == "memcache:11211"
    finally:
        log = stop(server)
    assert len(warnings_in(log)) == 1, log
    assert "memcached port 11211 (default) is in use, not serving memcached over TCP; " \
           "name -p to require it" in log


def test_nothing_skipped_shows_no_skipped_line():
    mc, resp = free_port(), free_port()
    server = started(["-p", mc, "--resp-port", resp])
    try:
        assert "skipped_default_ports" not in stats_settings(mc)
        assert "skipped_default_ports" not in info_server(resp)
        assert stats_settings(mc)["resp_port"] == str(resp)
    finally:
        log = stop(server)
    assert warnings_in(log) == [], log


def test_unix_socket_with_a_busy_redis_default(held, tmp_path):
    held(REDIS_DEFAULT)
    path = str(tmp_path / "mc.sock")
    server = started(["-s", path])
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(3)
            sock.connect(path)
            sock.sendall(b"stats settings\r\n")
            text = b""
            while not text.endswith(b"END\r\n"):
                text += sock.recv(65536)
        assert b"STAT skipped_default_ports resp:6379\r\n" in text
    finally:
        log = stop(server)
    assert len(warnings_in(log)) == 1, log


def test_both_defaults_busy_and_nothing_named_refuses_to_start(held):
    held(MEMCACHED_DEFAULT)
    held(REDIS_DEFAULT)
    status, line = refused([])
    assert status != 0
    assert "no port left to serve" in line and "11211" in line and "6379" in line, line


def test_p_on_the_redis_default_takes_it_from_the_redis_listener():
    # -p names 6379, so it is bound first; the Redis default then finds it taken.
    hold(REDIS_DEFAULT).close()
    server = started(["-p", REDIS_DEFAULT])
    try:
        settings = stats_settings(REDIS_DEFAULT)
        assert (settings["tcpport"], settings["resp_port"]) == ("6379", "0")
    finally:
        log = stop(server)
    assert len(warnings_in(log)) == 1, log


@pytest.mark.parametrize("flag", ["-p", "--resp-port"])
def test_a_named_busy_port_is_fatal(held, flag):
    busy = held(free_port())
    other = "--resp-port" if flag == "-p" else "-p"
    status, line = refused([flag, busy, other, free_port()])
    assert status == 1
    assert line == f"spinel: {flag} {busy}: cannot listen on 127.0.0.1:{busy}: " \
                   "Address already in use (os error 98)", line


@pytest.mark.parametrize("flag, default", [("-p", MEMCACHED_DEFAULT),
                                           ("--resp-port", REDIS_DEFAULT)])
def test_a_default_named_explicitly_is_required(held, flag, default):
    held(default)
    other = "--resp-port" if flag == "-p" else "-p"
    status, line = refused([flag, default, other, free_port()])
    assert status == 1 and f"{flag} {default}: cannot listen on" in line, line


def test_a_default_named_in_the_config_file_is_required(held, tmp_path):
    held(REDIS_DEFAULT)
    config = tmp_path / "spinel.toml"
    config.write_text(f"port = {free_port()}\nresp-port = 6379\n")
    status, line = refused(["--config", config])
    assert status == 1 and "--resp-port 6379: cannot listen on" in line, line


def test_a_busy_udp_port_is_fatal(held):
    busy = held(free_port(), socket.SOCK_DGRAM)
    status, line = refused(["-p", free_port(), "--resp-port", free_port(), "-U", busy])
    assert status == 1 and line.startswith(f"spinel: -U: cannot listen on UDP 127.0.0.1:{busy}")


def test_a_busy_metrics_port_is_fatal(held):
    busy = held(free_port())
    status, line = refused(["-p", free_port(), "--resp-port", free_port(),
                            "--metrics-port", busy])
    assert status == 1 and line.startswith(f"spinel: --metrics-port {busy}: cannot listen"), line


def test_an_unusable_unix_socket_is_fatal(tmp_path):
    path = tmp_path / "missing-dir" / "mc.sock"
    status, line = refused(["-s", path, "--resp-port", free_port()])
    assert status == 1 and line.startswith(f"spinel: -s: cannot listen on {path}"), line


def self_signed(directory):
    """c.pem and k.pem in `directory`: a certificate for 127.0.0.1 and its key."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj",
                    "/CN=127.0.0.1", "-days", "1", "-keyout", "k.pem", "-out", "c.pem"],
                   cwd=directory, check=True, capture_output=True, timeout=30)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not installed")
def test_busy_memcached_tls_default_is_skipped(held, tmp_path):
    # -Z puts TLS on the memcached TCP port; its default number is skipped as the plain one.
    self_signed(tmp_path)
    held(MEMCACHED_DEFAULT)
    resp = free_port()
    chain = f"ssl_chain_cert={tmp_path / 'c.pem'},ssl_key={tmp_path / 'k.pem'}"
    server = started(["--resp-port", resp, "-Z", "-o", chain])
    try:
        assert info_server(resp)["skipped_default_ports"] == "memcache:11211"
    finally:
        log = stop(server)
    assert "memcached TLS port 11211 (default) is in use" in log, log


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not installed")
def test_a_busy_tls_port_is_fatal(held, tmp_path):
    self_signed(tmp_path)
    busy = held(free_port())
    status, line = refused(["-p", free_port(), "--resp-port", free_port(), "--tls-port", busy,
                            "--tls-cert-file", os.path.join(tmp_path, "c.pem"),
                            "--tls-key-file", os.path.join(tmp_path, "k.pem"),
                            "--tls-auth-clients", "no"])
    assert status == 1 and line.startswith(f"spinel: --tls-port {busy}: cannot listen"), line
