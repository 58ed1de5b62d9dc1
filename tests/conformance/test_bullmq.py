"""BullMQ, the Node.js job queue, end to end: a Queue adds jobs (plain, delayed, prioritized,
one that fails once and retries after a backoff, one that always fails, one that reports
progress), a Worker runs them, QueueEvents receives their events, results and counts by state
are read back, a job scheduler (a repeatable job) fires, and obliterate leaves no key behind.

What that takes of the server: every job change is a Lua script (with cmsgpack and cjson) that
XADDs an event to the queue's stream, trimmed with MAXLEN ~; QueueEvents waits on that stream
with XREAD BLOCK; the Worker waits for jobs with BZPOPMIN; the connection check reads INFO.
Idle, QueueEvents and the Worker must sit in those blocking calls: a server that answers
XREAD BLOCK at once still delivers every event, but shows as thousands of XREAD calls in INFO
commandstats, which the script bounds. The steps live in tests/clients/bullmq/check.js (one
"ok"/"FAIL" line each).

BullMQ warns ("IMPORTANT! Eviction policy is ...") unless INFO says maxmemory_policy
noeviction: a queue whose keys get evicted loses jobs. The server here is configured as BullMQ
asks (redis-server --maxmemory-policy noeviction, spinel -M), and the script asserts that no
such warning is printed, then that it is printed once the policy is set to allkeys-lru with
CONFIG SET. `CONFORMANCE_TARGET=redis` runs the same script against redis-server 7.0.

Spinel can also hold BullMQ beside a cache: with allkeys-lru and BullMQ's database marked
never-evict (--noevict-dbs), INFO on a connection in that database says noeviction, so
BullMQ does not warn there and does warn in database 0 (tests/clients/bullmq/noevict_db.js).
bullmq (and the ioredis it drives) are installed from the lock file by
scripts/install-test-deps (`npm ci`).
"""

import os
import shutil

import pytest

from clients import client_dir, run_check

# Slow: an application run or a whole-table sweep, not about the I/O back end; two of the
# matrix's entries are enough.
pytestmark = [pytest.mark.resp, pytest.mark.slow]

BULLMQ_DIR = client_dir("bullmq")
# One line per step in check.js; a step that silently went missing fails the test.
STEP_COUNT = 17
# The flags that make each server's maxmemory-policy noeviction.
NOEVICTION_FLAGS = {"redis": ["--maxmemory-policy", "noeviction"], "spinel": ["-M"]}


@pytest.fixture(scope="module")
def node():
    exe = shutil.which("node")
    if exe is None:
        pytest.fail("node is not installed; run scripts/install-test-deps")
    if not os.path.isfile(os.path.join(BULLMQ_DIR, "node_modules", "bullmq", "package.json")):
        pytest.fail(f"bullmq is not installed in {BULLMQ_DIR}; run scripts/install-test-deps")
    return exe


def test_bullmq_job_queue_end_to_end(node, make_server, target):
    server = make_server(extra=NOEVICTION_FLAGS[target])
    oks = run_check([node, "check.js", f"127.0.0.1:{server.resp_port}", "bq"], BULLMQ_DIR)
    assert len(oks) == STEP_COUNT, oks


# The steps of noevict_db.js.
NOEVICT_STEP_COUNT = 3


def test_bullmq_in_a_never_evict_database_of_an_evicting_spinel(node, make_server, target):
    if target != "spinel":
        pytest.skip("never-evict databases are Spinel's")
    server = make_server(extra=["--noevict-dbs", "3"])
    oks = run_check([node, "noevict_db.js", f"127.0.0.1:{server.resp_port}", "bq", "3"],
                    BULLMQ_DIR)
    assert len(oks) == NOEVICT_STEP_COUNT, oks
