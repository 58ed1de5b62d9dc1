"""Waiting for a condition on servers that may be restarting, resyncing or failing over:
the one polling loop the replication, Sentinel and cluster-failover tests share."""

import time

import redis


def wait_for(check, what, timeout, interval=0.05):
    """`check()`'s first truthy value within `timeout` seconds; a connection, timeout or
    error reply meanwhile counts as not yet. Fails naming `what` and the last result."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError) as e:
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
