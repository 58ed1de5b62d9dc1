"""Running spinel as a service: the readiness protocol a systemd `Type=notify` unit waits
for, the signals an operator sends (SIGTERM, SIGINT, SIGUSR1, SIGHUP), and the log lines it
writes. The real binary on real sockets; the service manager's side of NOTIFY_SOCKET is a
datagram socket this test reads (spinel only; these run once, not per matrix entry)."""

import os
import re
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import free_port
from test_cli import base_args
from wire import Conn

pytestmark = pytest.mark.spinel_only

TIMESTAMP = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z ")


class Notified:
    """A spinel process started with NOTIFY_SOCKET pointing at a socket we read."""

    def __init__(self, extra=(), argv=None):
        self.dir = tempfile.TemporaryDirectory()
        path = os.path.join(self.dir.name, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.mc, self.resp = free_port(), free_port()
        env = dict(os.environ, NOTIFY_SOCKET=path)
        argv = argv or base_args(self.mc, self.resp) + list(extra)
        self.proc = subprocess.Popen(argv, env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)

    def next_message(self, timeout_s=10.0):
        self.sock.settimeout(timeout_s)
        return self.sock.recv(4096).decode()

    def wait_for(self, state, timeout_s=10.0):
        """Messages up to and including the first that holds `state` (e.g. READY=1)."""
        seen = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            message = self.next_message(max(0.01, deadline - time.monotonic()))
            seen.append(message)
            if state in message.split("\n"):
                return seen
        pytest.fail(f"no {state} within {timeout_s}s; got {seen}")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self.sock.close()
        self.dir.cleanup()


@pytest.fixture
def notified():
    servers = []

    def start(extra=()):
        server = Notified(extra)
        servers.append(server)
        return server
    yield start
    for server in servers:
        server.close()


def test_ready_is_sent_once_both_ports_listen(notified):
    server = notified()
    server.wait_for("READY=1")
    # No retry loop: READY promises that both ports accept now.
    for port in (server.mc, server.resp):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    with Conn(server.mc) as c:
        c.rt(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGUSR1])
def test_stop_signals_notify_stopping_and_exit_zero(notified, sig):
    server = notified()
    server.wait_for("READY=1")
    server.proc.send_signal(sig)
    server.wait_for("STOPPING=1")
    assert server.proc.wait(10) == 0


def test_sighup_reloads_and_keeps_serving(notified, tmp_path):
    config = tmp_path / "spinel.toml"
    config.write_text("verbose = 0\nconn-limit = 100\n")
    server = notified(["--config", str(config)])
    server.wait_for("READY=1")
    with Conn(server.mc) as c:
        c.rt(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n")
        config.write_text("verbose = 2\nconn-limit = 200\nlisten-backlog = 77\n")
        server.proc.send_signal(signal.SIGHUP)
        server.wait_for("RELOADING=1")
        server.wait_for("READY=1")
        # The reloaded verbosity is live, and nothing stored was lost.
        c.send(b"stats settings\r\n")
        settings = c.read_until(b"END\r\n")
        assert b"STAT verbosity 2\r\n" in settings and b"STAT maxconns 200\r\n" in settings
        c.rt(b"get k\r\n", b"VALUE k 0 1\r\nv\r\nEND\r\n")
    server.proc.send_signal(signal.SIGTERM)
    _, err = server.proc.communicate(timeout=10)
    assert server.proc.returncode == 0
    # What cannot change while running is named, not silently ignored.
    assert b"`listen-backlog` changed; it applies at the next restart" in err, err
    assert b"`conn-limit` changed" not in err, err


def test_sighup_with_a_broken_file_keeps_running(notified, tmp_path):
    config = tmp_path / "spinel.toml"
    config.write_text("verbose = 0\n")
    server = notified(["--config", str(config)])
    server.wait_for("READY=1")
    config.write_text("frobnicate = 1\n")
    server.proc.send_signal(signal.SIGHUP)
    server.wait_for("READY=1")
    with Conn(server.mc) as c:
        c.rt(b"mn\r\n", b"MN\r\n")
    server.proc.send_signal(signal.SIGTERM)
    _, err = server.proc.communicate(timeout=10)
    assert server.proc.returncode == 0
    assert b"reload refused" in err and b"frobnicate" in err, err


def stderr_lines(extra, during):
    """Starts spinel with `extra`, runs `during(mc_port)`, stops it, returns stderr lines."""
    mc, resp = free_port(), free_port()
    proc = subprocess.Popen(base_args(mc, resp) + list(extra), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", mc), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, proc.stderr.read()
                time.sleep(0.05)
        during(mc)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    return err.splitlines()


def test_log_lines_carry_a_timestamp_and_level():
    lines = stderr_lines(["-vv"], lambda mc: Conn(mc).close())
    assert lines, "-vv logged nothing"
    for line in lines:
        assert TIMESTAMP.match(line), line
    assert any(b" INFO " in line and b"listening on" in line for line in lines), lines
    assert any(b" DEBUG " in line and b"connection" in line for line in lines), lines


def test_quiet_by_default():
    assert stderr_lines([], lambda mc: Conn(mc).close()) == []


def test_verbosity_command_changes_the_log_level_live():
    def during(mc):
        with Conn(mc) as c:
            c.rt(b"verbosity 2\r\n", b"OK\r\n")
        Conn(mc).close()
    lines = stderr_lines([], during)
    assert any(b" DEBUG " in line and b"connection" in line for line in lines), lines


def test_sighup_as_soon_as_the_port_listens_is_served():
    # A client that sees the port open may signal at once (the test suite's own fixtures
    # do): the handlers are in place before the ports listen, so no signal sent from then
    # on takes its default action (for SIGHUP: ending the process).
    for _ in range(20):
        mc, resp = free_port(), free_port()
        proc = subprocess.Popen(base_args(mc, resp), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            sock = connect_when_listening(mc, proc)
            proc.send_signal(signal.SIGHUP)
            with sock:
                sock.sendall(b"mn\r\n")
                sock.settimeout(10)
                assert sock.recv(16) == b"MN\r\n"
            assert proc.poll() is None
        finally:
            proc.kill()
            proc.wait(10)


def connect_when_listening(port, proc, timeout_s=10.0):
    """A socket connected to `port` as soon as it accepts (polling without a pause)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"spinel exited with {proc.returncode}"
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=1)
        except ConnectionRefusedError:
            continue
    pytest.fail(f"port {port} did not listen within {timeout_s}s")
