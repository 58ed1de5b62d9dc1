"""RQ, the Python job queue, in its current release, end to end: jobs enqueued (a plain one, one
retried once with Retry, one that always fails, one depending on two others, one scheduled
with enqueue_in) and run by the real `rq worker --burst --with-scheduler` command; results
read back with job.return_value() and job.latest_result(), once from a reader blocked before
the worker ran; registries and statuses checked.

What that takes of the server: the worker finishing a job records its result with
XADD ... MAXLEN ~ 10 inside the MULTI/EXEC that moves the job to its registry (a refused XADD
aborts the transaction, and the job stays 'started' for ever); latest_result() reads it with
XREVRANGE, or XREAD BLOCK when given a timeout; the scheduler locks with EVALSHA; redis-py 8
connects with HELLO 3. The steps live in tests/clients/rq/check.py.

This RQ lives in its own venv (tests/clients/rq/.venv, pinned by its requirements.txt and
made by scripts/install-test-deps): the suite's venv keeps RQ 1.10, whose worker needs neither
Lua nor streams, for test_redis_blocking.py::test_rq_job_queue_end_to_end. Running the check
as its own process also gives the worker CLI and its forked work horses their own process, as
in production. `CONFORMANCE_TARGET=redis` runs it against redis-server 7.0.
"""

import os

import pytest

from clients import client_dir, run_check

# Slow: an application run or a whole-table sweep, not about the I/O back end; two of the
# matrix's entries are enough.
pytestmark = [pytest.mark.resp, pytest.mark.slow]

RQ_DIR = client_dir("rq")
RQ_PYTHON = os.path.join(RQ_DIR, ".venv", "bin", "python")
# One line per step in check.py; a step that silently went missing fails the test.
STEP_COUNT = 12


def test_rq_current_job_queue_end_to_end(make_server):
    if not os.access(RQ_PYTHON, os.X_OK):
        pytest.fail(f"{RQ_PYTHON} is missing; run scripts/install-test-deps")
    server = make_server()
    oks = run_check([RQ_PYTHON, "check.py", f"127.0.0.1:{server.resp_port}", "rq-check"], RQ_DIR)
    assert len(oks) == STEP_COUNT, oks
