"""spymemcached (Java) with BinaryConnectionFactory, the binary protocol, against the
memcached port.

The scenarios live in tests/clients/spymemcached/Check.java, run in java's source-file mode
against the jar that scripts/install-test-deps copies from Maven (`mvn
dependency:copy-dependencies` on the pom there). A fresh server per matrix entry: the last
scenario flushes everything.
"""

import os
import shutil

import pytest

from clients import client_dir, run_check

pytestmark = pytest.mark.memcache

SPY_DIR = client_dir("spymemcached")
JAR = os.path.join("target", "lib", "spymemcached-2.12.3.jar")


@pytest.fixture(scope="module")
def java():
    exe = shutil.which("java")
    if exe is None:
        pytest.fail("java is not installed; run scripts/install-test-deps")
    if not os.path.isfile(os.path.join(SPY_DIR, JAR)):
        pytest.fail(f"{JAR} is missing in {SPY_DIR}; run scripts/install-test-deps")
    return exe


@pytest.mark.slow
def test_spymemcached_binary_scenarios(java, make_server, key):
    server = make_server()
    oks = run_check([java, "-cp", JAR, "Check.java", f"127.0.0.1:{server.mc_port}", key], SPY_DIR)
    assert len(oks) == 11, oks
