"""RQ (the Python job queue), current release, end to end against one Redis-protocol server,
as its documentation has a new user run it: jobs enqueued from Python, run by the `rq worker`
command in burst mode with its scheduler.

    tests/clients/rq/.venv/bin/python check.py HOST:PORT QUEUE_NAME

The steps run in order and share one queue; each prints "ok NAME" or "FAIL NAME: ...", then
"N passed, N failed", and the exit status is 1 when any failed. A failed step does not stop
the run, so one run shows how far the application gets. tests/conformance/test_rq.py runs
this against redis-server 7.0 and Spinel.

What RQ sends: a worker finishing a job records its result with XADD ... MAXLEN ~ 10 inside
the MULTI/EXEC that moves the job to its finished (or failed) registry; job.latest_result()
reads it back with XREVRANGE, or with XREAD BLOCK when given a timeout; the worker waits for
jobs with BLPOP; the scheduler takes its lock with a Lua script (EVALSHA).
"""

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta

from redis import Redis
from rq import Queue, Retry
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry, FinishedJobRegistry, ScheduledJobRegistry
from rq.results import Result

import jobs

HERE = os.path.dirname(os.path.abspath(__file__))
# One worker run may take this long before the step fails (it exits when the queue is empty).
WORKER_TIMEOUT_S = 20
# How long latest_result() blocks (XREAD BLOCK) waiting for a worker to record a result.
RESULT_WAIT_S = 10
# The scheduled job's delay: it must still be scheduled after the first worker run.
SCHEDULE_IN_S = 2
# The whole run ends by then whatever the server does (it takes about 5 s against
# redis-server).
RUN_DEADLINE_S = 40

passed = 0
failed = 0


def step(name, fn):
    global passed, failed
    try:
        fn()
        print(f"ok {name}", flush=True)
        passed += 1
    except Exception as exc:  # noqa: BLE001 - every failure is reported and counted
        message = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        print(f"FAIL {name}: {message}", flush=True)
        failed += 1


def expect(what, got, want):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def run_worker(url, queue_name):
    """`rq worker --burst --with-scheduler`: enqueues the scheduled jobs that are due, runs
    every queued job (each in a forked work horse) and exits when the queue is empty."""
    rq_cli = os.path.join(os.path.dirname(sys.executable), "rq")
    argv = [rq_cli, "worker", "--burst", "--with-scheduler", "--url", url, "--path", HERE,
            "--logging_level", "WARNING", queue_name]
    proc = subprocess.run(argv, cwd=HERE, capture_output=True, text=True,
                          timeout=WORKER_TIMEOUT_S)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise AssertionError(f"rq worker exited {proc.returncode}: {output}")
    # The jobs' own exceptions are logged too; an error from the server never should be (the
    # worker logs it and goes on, leaving the job it was finishing as it was).
    server_errors = sorted({line.strip() for line in output.splitlines()
                            if line.startswith("redis.exceptions.")})
    if server_errors:
        raise AssertionError(f"the worker got server errors: {' | '.join(server_errors)}")


def main():
    host_port, queue_name = sys.argv[1:3]
    host, _, port = host_port.rpartition(":")
    url = f"redis://{host}:{port}/0"
    conn = Redis(host=host, port=int(port), socket_timeout=RESULT_WAIT_S + 5)
    queue = Queue(queue_name, connection=conn)
    made = {}
    blocked_result = {}

    def enqueue_plain():
        made["add"] = queue.enqueue(jobs.add, 2, 3)
        expect("status", made["add"].get_status(), JobStatus.QUEUED)
        expect("latest_result before running", made["add"].latest_result(), None)

    def enqueue_retried():
        made["flaky"] = queue.enqueue(jobs.flaky, f"{queue_name}:flaky-runs", retry=Retry(max=2))
        made["doomed"] = queue.enqueue(jobs.always_fails)

    def enqueue_dependent():
        made["second"] = queue.enqueue(jobs.add, 10, 20)
        made["sum"] = queue.enqueue(jobs.sum_of_dependencies,
                                    depends_on=[made["add"], made["second"]])
        expect("status", made["sum"].get_status(), JobStatus.DEFERRED)

    def enqueue_scheduled():
        made["later"] = queue.enqueue_in(timedelta(seconds=SCHEDULE_IN_S), jobs.add, 100, 1)
        expect("status", made["later"].get_status(), JobStatus.SCHEDULED)
        expect("scheduled registry", ScheduledJobRegistry(queue=queue).get_job_ids(),
               [made["later"].id])

    def wait_for_result():
        # Another connection blocks in XREAD BLOCK until the worker records the result.
        waiter = Job.fetch(made["add"].id, connection=Redis(host=host, port=int(port),
                                                              socket_timeout=RESULT_WAIT_S + 5))
        try:
            blocked_result["result"] = waiter.latest_result(timeout=RESULT_WAIT_S)
        except Exception as exc:  # noqa: BLE001 - reported by the step that reads it
            blocked_result["error"] = exc

    step("enqueue: a plain job", enqueue_plain)
    step("enqueue: a job retried once (Retry) and a job that always fails", enqueue_retried)
    step("enqueue: a job that depends on two others is deferred", enqueue_dependent)
    step("enqueue_in: a scheduled job waits in the scheduled registry", enqueue_scheduled)

    waiter = threading.Thread(target=wait_for_result, daemon=True)
    waiter.start()
    time.sleep(0.2)  # the waiter is in XREAD BLOCK before any worker runs
    step("worker: a burst run meets no server error", lambda: run_worker(url, queue_name))

    def blocked_read():
        waiter.join(RESULT_WAIT_S + 1)
        if "error" in blocked_result:
            raise blocked_result["error"]
        result = blocked_result.get("result")
        if result is None:
            raise AssertionError("latest_result(timeout=...) returned no result")
        expect("type", result.type, Result.Type.SUCCESSFUL)
        expect("return_value", result.return_value, 5)

    step("latest_result(timeout): a blocked reader gets the result", blocked_read)
    step("results: return values and statuses read back", lambda: check_results(made))
    step("retry: the flaky job failed once, then succeeded", lambda: check_retry(made))
    step("failure: the failing job's result and registry", lambda: check_failure(queue, made))
    step("dependencies: the dependent job ran after both", lambda: check_dependent(made))

    def scheduled():
        expect("status after the first run", made["later"].get_status(), JobStatus.SCHEDULED)
        time.sleep(SCHEDULE_IN_S + 0.2)
        run_worker(url, queue_name)
        expect("status", made["later"].get_status(), JobStatus.FINISHED)
        expect("return_value", made["later"].return_value(), 101)
        expect("scheduled registry", ScheduledJobRegistry(queue=queue).get_job_ids(), [])

    step("scheduler: the scheduled job runs once due", scheduled)

    def registries():
        finished = set(FinishedJobRegistry(queue=queue).get_job_ids())
        expect("finished", finished,
               {made[n].id for n in ("add", "second", "sum", "flaky", "later")})
        expect("queue length", len(queue), 0)

    step("registries: finished jobs, an empty queue", registries)


def check_results(made):
    add = made["add"]
    expect("status", add.get_status(), JobStatus.FINISHED)
    expect("return_value", add.return_value(), 5)
    latest = add.latest_result()
    expect("latest type", latest.type, Result.Type.SUCCESSFUL)
    expect("results", [r.return_value for r in add.results()], [5])
    expect("second", made["second"].return_value(), 30)


def check_retry(made):
    flaky = made["flaky"]
    flaky.refresh()
    expect("status", flaky.get_status(), JobStatus.FINISHED)
    expect("return_value", flaky.return_value(), "succeeded on run 2")
    expect("retries_left", flaky.retries_left, 1)
    # A failed attempt that is retried records no result (only a job returning Retry does).
    expect("result types", [r.type for r in flaky.results()], [Result.Type.SUCCESSFUL])


def check_failure(queue, made):
    doomed = made["doomed"]
    expect("status", doomed.get_status(), JobStatus.FAILED)
    latest = doomed.latest_result()
    expect("latest type", latest.type, Result.Type.FAILED)
    if "ValueError: always fails" not in latest.exc_string:
        raise AssertionError(f"exc_string: {latest.exc_string!r}")
    expect("failed registry", FailedJobRegistry(queue=queue).get_job_ids(), [doomed.id])


def check_dependent(made):
    dependent, second = made["sum"], made["second"]
    dependent.refresh()
    second.refresh()
    expect("status", dependent.get_status(), JobStatus.FINISHED)
    expect("return_value", dependent.return_value(), 35)
    if dependent.started_at < second.ended_at:
        raise AssertionError("the dependent job started before its dependency ended")


def past_deadline(_signum, _frame):
    print(f"FAIL run: not finished in {RUN_DEADLINE_S} s", flush=True)
    print(f"{passed} passed, {failed + 1} failed", flush=True)
    os._exit(1)


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, past_deadline)
    signal.alarm(RUN_DEADLINE_S)
    try:
        main()
    except Exception as exc:  # noqa: BLE001 - the run itself broke
        print(f"FAIL run: {type(exc).__name__}: {exc}", flush=True)
        failed += 1
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)
