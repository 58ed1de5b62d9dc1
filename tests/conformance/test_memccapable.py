"""libmemcached's memccapable, ASCII tests (-a) and binary tests (-b): an independent client's
view of both protocols. It flushes the server, so each test gets a server of its own."""

import re
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.memcache


@pytest.mark.slow
def test_memccapable_ascii(make_server):
    exe = shutil.which("memccapable") or pytest.skip("memccapable not installed "
                                                     "(libmemcached-tools)")
    server = make_server()
    out = subprocess.run(
        [exe, "-h", "127.0.0.1", "-p", str(server.mc_port), "-a", "-t", "10"],
        capture_output=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    text = out.stdout.decode("utf-8", "replace") + out.stderr.decode("utf-8", "replace")
    failed = [line for line in text.splitlines() if re.search(r"\[(fail|FAIL)", line)]
    assert out.returncode == 0 and not failed, f"{failed}\n{text}\n{server.describe()}"
    assert len(re.findall(r"\[pass\]", text)) >= 20, text
    assert "All tests passed" in text


@pytest.mark.slow
def test_memccapable_binary(make_server):
    """The same tool's binary-protocol tests (-b): every opcode it knows, quiet variants
    included, negotiated on the memcached port by the first byte."""
    exe = shutil.which("memccapable") or pytest.skip("memccapable not installed "
                                                     "(libmemcached-tools)")
    server = make_server()
    out = subprocess.run(
        [exe, "-h", "127.0.0.1", "-p", str(server.mc_port), "-b", "-t", "10"],
        capture_output=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    text = out.stdout.decode("utf-8", "replace") + out.stderr.decode("utf-8", "replace")
    failed = [line for line in text.splitlines() if re.search(r"\[(fail|FAIL)", line)]
    assert out.returncode == 0 and not failed, f"{failed}\n{text}\n{server.describe()}"
    assert len(re.findall(r"\[pass\]", text)) >= 25, text
    assert "All tests passed" in text
