"""memjs, a Node.js client that speaks only the binary protocol, against the memcached port.

The scenarios live in tests/clients/memjs/check.js (memjs's own API, plus raw packets through
its framing for exact statuses); this runs it against a fresh server per matrix entry (its last
scenario flushes everything) and fails on any mismatch it prints. memjs is installed from the
lock file by scripts/install-test-deps (`npm ci`).
"""

import os
import re
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.memcache

MEMJS_DIR = os.path.join(os.path.dirname(__file__), "..", "clients", "memjs")
RUN_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def node():
    exe = shutil.which("node")
    if exe is None:
        pytest.fail("node is not installed; run scripts/install-test-deps")
    if not os.path.isfile(os.path.join(MEMJS_DIR, "node_modules", "memjs", "package.json")):
        pytest.fail(f"memjs is not installed in {MEMJS_DIR}; run scripts/install-test-deps")
    return exe


def test_memjs_scenarios(node, make_server, key):
    server = make_server()
    try:
        proc = subprocess.run(
            [node, "check.js", f"127.0.0.1:{server.mc_port}", key],
            cwd=MEMJS_DIR, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"check.js ran past {RUN_TIMEOUT_S}s; its output so far:\n{exc.stdout}")
    out = proc.stdout + proc.stderr
    failures = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert proc.returncode == 0 and not failures, out
    oks = [line for line in out.splitlines() if line.startswith("ok ")]
    summary = re.search(r"^(\d+) passed, (\d+) failed$", out, re.M)
    assert summary and int(summary[1]) == len(oks) > 0 and summary[2] == "0", out
