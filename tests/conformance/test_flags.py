"""memcached flags with a meaning in spinel, each checked on the running server: -l with
several addresses, -u, a port already in use, -F, -A, -C, -M, -I at its edge, -d with -P,
-k, -r, -s with -a; and the flags with no meaning here, which start with a warning (spinel only; these
run once, not per matrix entry)."""

import os
import pwd
import signal
import socket
import stat
import subprocess
import time

import pytest

from conftest import Server, free_port
from test_cli import base_args, run, start
from wire import Conn

pytestmark = pytest.mark.spinel_only


def with_server(extra, check):
    mc, resp = free_port(), free_port()
    server = start(base_args(mc, resp) + extra, mc, resp)
    try:
        check(server, mc, resp)
    finally:
        server.cleanup()


def test_listen_on_two_addresses():
    def check(server, mc, resp):
        for host in ("127.0.0.1", "127.0.0.2"):
            with socket.create_connection((host, mc), timeout=3) as s:
                s.sendall(b"mn\r\n")
                assert s.recv(16) == b"MN\r\n"
    with_server(["-l", "127.0.0.1,127.0.0.2"], check)


@pytest.mark.skipif(os.geteuid() != 0, reason="-u switches users only when started as root")
def test_user_drops_privileges():
    nobody = pwd.getpwnam("nobody")

    def check(server, mc, resp):
        # A reply first: the port accepts (the kernel's backlog) as soon as it is bound,
        # before the privileges drop; the workers that answer start only after it.
        with Conn(mc) as c:
            c.rt(b"set u 0 0 1\r\nx\r\n", b"STORED\r\n")
        with open(f"/proc/{server.pid}/status") as f:
            uids = next(line for line in f if line.startswith("Uid:")).split()[1:]
        assert all(int(uid) == nobody.pw_uid for uid in uids), uids
    with_server(["-u", "nobody"], check)


def test_port_in_use_refuses_to_start():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = run(base_args(port, free_port()))
    assert result.returncode != 0
    assert b"in use" in result.stderr, result.stderr


def test_disable_flush_all():
    def check(server, mc, resp):
        with Conn(mc) as c:
            c.rt(b"flush_all\r\n", b"CLIENT_ERROR flush_all not allowed\r\n")
            c.rt(b"mn\r\n", b"MN\r\n")
    with_server(["-F"], check)


def test_shutdown_needs_enable_shutdown():
    def refused(server, mc, resp):
        with Conn(mc) as c:
            c.rt(b"shutdown\r\n", b"ERROR: shutdown not enabled\r\n")
    with_server([], refused)

    mc, resp = free_port(), free_port()
    server = start(base_args(mc, resp) + ["-A"], mc, resp)
    try:
        with Conn(mc) as c:
            c.send(b"shutdown\r\n")
        server.proc.wait(timeout=5)
        assert server.proc.returncode == 0
    finally:
        server.cleanup()


def test_disable_cas_reports_zero():
    def check(server, mc, resp):
        with Conn(mc) as c:
            c.rt(b"set c 0 0 1\r\nx\r\n", b"STORED\r\n")
            c.rt(b"gets c\r\n", b"VALUE c 0 1 0\r\nx\r\nEND\r\n")
    with_server(["-C"], check)


def test_disable_evictions_refuses_writes_when_full():
    value = b"v" * 100_000

    def check(server, mc, resp):
        with Conn(mc) as c:
            replies = []
            for i in range(200):  # 20 MB into 8 MiB
                c.send(b"set full%d 0 0 %d\r\n%s\r\n" % (i, len(value), value))
                replies.append(c.read_line())
            assert b"SERVER_ERROR out of memory storing object\r\n" in replies, replies[-3:]
            # Nothing stored before the refusals was evicted.
            c.send(b"get full0\r\n")
            assert c.read_line().startswith(b"VALUE full0 0 100000")
    with_server(["-M", "-m", "8"], check)


def test_item_size_edge():
    def check(server, mc, resp):
        key = b"edge"
        fits = 2048 - len(key)
        with Conn(mc) as c:
            c.rt(b"set edge 0 0 %d\r\n%s\r\n" % (fits, b"a" * fits), b"STORED\r\n")
            c.rt(b"set edge 0 0 %d\r\n%s\r\n" % (fits + 1, b"a" * (fits + 1)),
                 b"SERVER_ERROR object too large for cache\r\n")
            c.rt(b"get edge\r\n", b"END\r\n")  # the failed set removed the old value
            c.rt(b"mn\r\n", b"MN\r\n")  # the rejected block was swallowed
    with_server(["-I", "2k"], check)


def wait_gone(pid, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_daemon_detaches_once_listening_and_keeps_a_pidfile(tmp_path):
    mc, resp = free_port(), free_port()
    pidfile = tmp_path / "spinel.pid"
    # The command returns only once the server listens: no retry loop before the first use.
    result = run(base_args(mc, resp) + ["-d", "-P", str(pidfile)], timeout=10)
    assert result.returncode == 0, result.stderr
    # The detached process writes the file just after the command returns (as memcached).
    deadline = time.monotonic() + 5
    while not pidfile.exists() or not pidfile.read_text().endswith("\n"):
        assert time.monotonic() < deadline, "no pid file"
        time.sleep(0.02)
    pid = int(pidfile.read_text())
    try:
        with Conn(mc) as c:
            c.rt(b"set d 0 0 1\r\nx\r\n", b"STORED\r\n")
        with open(f"/proc/{pid}/stat") as f:
            # Detached: a session of its own, and not the child of the command we ran.
            fields = f.read().rsplit(")", 1)[1].split()
        ppid, session = int(fields[1]), int(fields[3])
        assert session == pid and ppid != os.getpid(), (ppid, session)
    finally:
        os.kill(pid, signal.SIGTERM)
    assert wait_gone(pid), "the daemon did not stop on SIGTERM"
    assert not pidfile.exists(), "the pid file outlived a clean exit"


def test_pidfile_without_daemon(tmp_path):
    pidfile = tmp_path / "spinel.pid"

    def check(server, mc, resp):
        assert int(pidfile.read_text()) == server.pid
    with_server(["-P", str(pidfile)], check)
    assert not pidfile.exists()


def proc_field(pid, path, name):
    with open(f"/proc/{pid}/{path}") as f:
        return next(line for line in f if line.startswith(name))


def test_lock_memory_locks_pages():
    def check(server, mc, resp):
        locked_kib = int(proc_field(server.pid, "status", "VmLck:").split()[1])
        assert locked_kib > 0 or "-k: cannot lock memory" in server.stderr(), server.describe()
    with_server(["-k"], check)


def test_enable_coredumps_raises_the_core_limit():
    def check(server, mc, resp):
        soft, hard = proc_field(server.pid, "limits", "Max core file size").split()[4:6]
        assert soft == hard, (soft, hard)
    with_server(["-r"], check)


@pytest.mark.parametrize("flags,name", [
    (["-f", "1.25"], "-f/--slab-growth-factor"),
    (["-n", "48"], "-n/--slab-min-size"),
    (["-L"], "-L/--enable-largepages"),
    (["-N", "2"], "-N/--napi_ids"),
])
def test_memcached_flags_without_meaning_start_with_a_warning(flags, name):
    def check(server, mc, resp):
        with Conn(mc) as c:
            c.rt(b"set f 0 0 1\r\nx\r\n", b"STORED\r\n")
        assert name in server.stderr(), server.describe()
    with_server(flags, check)


def test_unix_socket_replaces_the_tcp_port(tmp_path):
    path = str(tmp_path / "spinel.sock")
    mc, resp = free_port(), free_port()
    proc = subprocess.Popen(base_args(mc, resp) + ["-s", path, "-a", "770"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(path):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.05)
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o770
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(path)
            s.sendall(b"set u 0 0 1\r\nx\r\nget u\r\nstats settings\r\n")
            reply = b""
            while not reply.endswith(b"END\r\n") or reply.count(b"END\r\n") < 2:
                chunk = s.recv(65536)
                assert chunk, reply
                reply += chunk
        assert reply.startswith(b"STORED\r\nVALUE u 0 1\r\nx\r\nEND\r\n"), reply
        assert f"STAT domain_socket {path}\r\n".encode() in reply
        # memcached's -s turns the network port off.
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", mc), timeout=1).close()
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode == 0


def test_unix_socket_replaces_a_stale_socket_file(tmp_path):
    path = str(tmp_path / "stale.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()  # the file stays, as after a crash
    mc, resp = free_port(), free_port()
    proc = subprocess.Popen(base_args(mc, resp) + ["-s", path], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.connect(path)
                    s.sendall(b"mn\r\n")
                    assert s.recv(16) == b"MN\r\n"
                break
            except (ConnectionRefusedError, FileNotFoundError):
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
                time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(10)
