"""memjs, a Node.js client that speaks only the binary protocol, against the memcached port.

The scenarios live in tests/clients/memjs/check.js (memjs's own API, plus raw packets through
its framing for exact statuses); this runs it against a fresh server per matrix entry (its last
scenario flushes everything) and fails on any mismatch it prints. memjs is installed from the
lock file by scripts/install-test-deps (`npm ci`).
"""

import os
import shutil

import pytest

from clients import client_dir, run_check

pytestmark = pytest.mark.memcache

MEMJS_DIR = client_dir("memjs")


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
    oks = run_check([node, "check.js", f"127.0.0.1:{server.mc_port}", key], MEMJS_DIR)
    assert len(oks) == 14, oks
