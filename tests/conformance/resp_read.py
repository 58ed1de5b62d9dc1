"""Read one RESP2/RESP3 reply off a `wire.Conn` into Python values, for replies whose bytes
cannot be compared whole (unordered members, random picks, HELLO's server fields).

Aggregates keep their type so tests can tell RESP3 sets from arrays: arrays are lists, sets
are `RespSet` (a list subclass), maps are lists of pairs, errors are `RespError`, nulls None.
"""


class RespSet(list):
    """A RESP3 set (`~`), kept as a list so duplicates and order stay visible."""


class RespError(str):
    """An error reply's text, without the leading `-`."""


def read_value(conn):
    line = conn.read_line()[:-2]
    kind, rest = line[:1], line[1:]
    if kind in (b"+",):
        return rest.decode()
    if kind == b"-":
        return RespError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else conn.read_exact(n + 2)[:-2]
    if kind == b"_":
        return None
    if kind in (b"*", b"~", b">"):
        n = int(rest)
        if n < 0:
            return None
        items = [read_value(conn) for _ in range(n)]
        return RespSet(items) if kind == b"~" else items
    if kind == b"%":
        return [(read_value(conn), read_value(conn)) for _ in range(int(rest))]
    if kind == b",":
        return float(rest)
    raise AssertionError(f"unexpected reply line {line!r}")


def hello3(conn):
    """Switches the connection to RESP3 and checks the server agreed."""
    from wire import resp_encode

    conn.send(resp_encode("HELLO", "3"))
    fields = dict(read_value(conn))
    assert fields[b"proto"] == 3, fields
