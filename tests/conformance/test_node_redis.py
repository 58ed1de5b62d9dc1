"""node-redis (the npm `redis` package) against the RESP port, in RESP2 and in RESP3.

The scenarios live in tests/clients/node-redis/check.js: each family through node-redis's typed
methods, once per protocol (RESP3 after its HELLO 3), and the raw reply types (map, set, double,
null, nested in EXEC) as its RESP3 parser decodes them. Expectations are redis-server 7.0's:
`CONFORMANCE_TARGET=redis` runs the same script against the real server. node-redis is
installed from the lock file by scripts/install-test-deps (`npm ci`).
"""

import os
import shutil

import pytest

from clients import client_dir, run_check

pytestmark = pytest.mark.resp

NODE_REDIS_DIR = client_dir("node-redis")
# Twelve scenarios, each once in RESP2 and once in RESP3.
SCENARIO_COUNT = 24


@pytest.fixture(scope="module")
def node():
    exe = shutil.which("node")
    if exe is None:
        pytest.fail("node is not installed; run scripts/install-test-deps")
    if not os.path.isfile(os.path.join(NODE_REDIS_DIR, "node_modules", "redis", "package.json")):
        pytest.fail(f"node-redis is not installed in {NODE_REDIS_DIR}; "
                    "run scripts/install-test-deps")
    return exe


def test_node_redis_scenarios(node, resp_port, key):
    oks = run_check([node, "check.js", f"127.0.0.1:{resp_port}", key], NODE_REDIS_DIR)
    assert len(oks) == SCENARIO_COUNT, oks
