"""The jobs check.py enqueues; the RQ worker imports them from here (`rq worker --path`)."""

from rq import get_current_job


def add(a, b):
    return a + b


def flaky(counter_key):
    """Fails its first run and succeeds after: the run count lives in the server, as the
    worker runs each attempt in a fresh work-horse process."""
    runs = get_current_job().connection.incr(counter_key)
    if runs == 1:
        raise RuntimeError("first attempt fails")
    return f"succeeded on run {runs}"


def always_fails():
    raise ValueError("always fails")


def sum_of_dependencies():
    """Runs only after the jobs it depends on finished: adds their return values."""
    job = get_current_job()
    return sum(dep.return_value() for dep in job.fetch_dependencies())
