"""What the tests of large collections (kept outside Spinel's store) share: WATCH must see
changes made in place, and the memory such a collection holds is charged and given back.
"""

from test_redis_hash import read_reply
from test_redis_list_large import used_memory
from wire import resp_encode


def call(conn, *args):
    conn.send(resp_encode(*args))
    return read_reply(conn)


def assert_watch_breaks(c, other, key, changes, queued):
    """Each of `changes`, made by `other` between WATCH and EXEC on `c`, aborts the
    transaction (`queued` is the command queued in it)."""
    for change in changes:
        assert call(c, "WATCH", key) == b"OK"
        call(other, *change)
        assert call(c, "MULTI") == b"OK"
        assert call(c, *queued) == b"QUEUED"
        assert call(c, "EXEC") is None, change


def assert_charged_and_given_back(c, fill, keys, low, high, kind):
    """Filling `keys` collections with `fill(conn, key)` grows used_memory by between `low`
    and `high` bytes, and deleting them gives back all but a quarter of it at most."""
    before = used_memory(c)
    for i in range(keys):
        fill(c, f"big{i}")
    grown = used_memory(c) - before
    assert low <= grown <= high, grown
    for i in range(keys):
        assert call(c, "DEL", f"big{i}") == 1
    assert used_memory(c) - before < grown // 4, f"given back when the {kind} went"


def scan_with_churn(c, command, key, churn, names_of, *options):
    """Scans `key` with `command` (SSCAN, HSCAN, ZSCAN), calling `churn(page)` after each
    page but the last; returns the names seen and how many pages it took. The first page of
    a large collection must not be the whole of it (its cursor is not 0)."""
    cursor, seen, pages = b"0", set(), 0
    while True:
        cursor, page = call(c, command, key, cursor, *options)
        seen |= set(names_of(page))
        pages += 1
        assert pages > 1 or cursor != b"0", "a large collection is scanned in pages"
        if cursor == b"0":
            return seen, pages
        churn(pages)
