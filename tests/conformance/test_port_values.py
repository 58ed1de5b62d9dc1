"""memcached's port values, as operators who run several instances per host use them: `-p 0`
and `-U 0` turn that transport off, `-p -1` and `-U -1` let the kernel pick a free port, and
MEMCACHED_PORT_FILENAME names a file that gets the ports bound (`TCP INET: 41234`), written
whole (a `.lck` file renamed) once they listen. Each test runs the real memcached 1.6.18 with
CONFORMANCE_TARGET=memcached; Spinel runs with --resp-port 0, so only memcached ports open.
"""

import os
import re
import shutil
import socket
import struct
import subprocess
import time

import pytest

from conftest import spinel_bin
from wire import Conn

pytestmark = pytest.mark.memcache


def server_argv(target, flags):
    if target == "memcached":
        exe = shutil.which("memcached") or pytest.skip("memcached not installed")
        root = ["-u", "root"] if os.geteuid() == 0 else []
        return [exe, "-l", "127.0.0.1", *root, *flags]
    if target != "spinel":
        pytest.skip("a memcached feature")
    return [spinel_bin(), "-l", "127.0.0.1", "--resp-port", "0", "-t", "1", "-m", "16", *flags]


@pytest.fixture
def start(target, tmp_path):
    """Starts the server with `flags` and MEMCACHED_PORT_FILENAME set; returns the ports
    file's lines once it appears."""
    procs = []

    def run(*flags):
        ports_file = tmp_path / f"ports.{len(procs)}"
        env = dict(os.environ, MEMCACHED_PORT_FILENAME=str(ports_file))
        proc = subprocess.Popen(server_argv(target, flags), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        procs.append(proc)
        deadline = time.monotonic() + 10
        while not ports_file.exists():
            assert proc.poll() is None, f"exited with {proc.returncode}"
            assert time.monotonic() < deadline, "no ports file"
            time.sleep(0.02)
        assert not (tmp_path / f"{ports_file.name}.lck").exists()
        return ports_file.read_text().splitlines()
    yield run
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def udp_version(port):
    """A `version` over UDP, with memcached's 8-byte frame header."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(3)
        sock.sendto(struct.pack(">HHHH", 7, 0, 1, 0) + b"version\r\n", ("127.0.0.1", port))
        reply, _ = sock.recvfrom(2048)
    return reply[8:]


def test_ephemeral_ports_are_written_to_the_ports_file(start):
    lines = start("-p", "-1", "-U", "-1")
    assert [re.sub(r"\d+$", "N", line) for line in lines] == ["TCP INET: N", "UDP INET: N"]
    tcp, udp = (int(line.rsplit(" ", 1)[1]) for line in lines)
    assert tcp != 0 and udp != 0
    with Conn(tcp) as c:
        c.send(b"version\r\n")
        assert c.read_line().startswith(b"VERSION ")
    assert udp_version(udp).startswith(b"VERSION ")


def test_udp_alone_moves_the_tcp_port_too(start):
    # -U without -p sets the TCP port as well; with -1 each gets its own free port.
    lines = start("-U", "-1")
    assert [line.split(":")[0] for line in lines] == ["TCP INET", "UDP INET"]


def test_p_0_turns_tcp_off(start):
    # Nothing listens, and the ports file is empty: memcached writes it all the same.
    assert start("-p", "0") == []


def test_a_named_port_is_written_as_named(start):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert start("-p", str(port)) == [f"TCP INET: {port}"]
