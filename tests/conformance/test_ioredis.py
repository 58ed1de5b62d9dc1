"""ioredis, the Node.js Redis client (RESP2), against the RESP port: every data type family.

The scenarios live in tests/clients/ioredis/check.js and its scenarios/ (ioredis's own command
methods, pipelines, MULTI/EXEC and WATCH from a second connection, its reply transforms and its
ReplyError); this runs it against the target and fails on any mismatch it prints. The
expectations are redis-server 7.0's answers: `CONFORMANCE_TARGET=redis` runs the same script
against the real server. Keys carry a per-test prefix, so the shared server is enough. ioredis is
installed from the lock file by scripts/install-test-deps (`npm ci`).
"""

import os
import shutil

import pytest

from clients import client_dir, run_check

pytestmark = pytest.mark.resp

IOREDIS_DIR = client_dir("ioredis")
# One line per scenario in check.js; a scenario that silently went missing fails the test.
SCENARIO_COUNT = 45


@pytest.fixture(scope="module")
def node():
    exe = shutil.which("node")
    if exe is None:
        pytest.fail("node is not installed; run scripts/install-test-deps")
    if not os.path.isfile(os.path.join(IOREDIS_DIR, "node_modules", "ioredis", "package.json")):
        pytest.fail(f"ioredis is not installed in {IOREDIS_DIR}; run scripts/install-test-deps")
    return exe


def test_ioredis_scenarios(node, resp_port, key):
    oks = run_check([node, "check.js", f"127.0.0.1:{resp_port}", key], IOREDIS_DIR)
    assert len(oks) == SCENARIO_COUNT, oks
