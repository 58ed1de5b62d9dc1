"""libmemcached's memccapable, ASCII tests only (-a): an independent client's view of the
text protocol. It flushes the server, so it gets a server of its own."""

import re
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.memcache


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
