"""COMMAND DOCS compared with a real redis-server started beside Spinel: every command both
have, field by field and in order, RESP2 and RESP3, argument trees included.

Where Spinel differs on purpose, the fields are left out of the comparison:
- prose: `summary` (ours is in our own words; subcommands have none), `complexity`,
  `history` and `replaced_by` (Spinel does not send them);
- ZRANK and ZREVRANK take 7.2's WITHSCORE, an argument 7.0 lacks;
- subcommands come in Redis's hash order, so they are compared by name.
The commands 7.0 lacks (hash-field expiry, CLIENT NO-TOUCH and SETINFO) are compared with
their syntax in `test_newer_commands_have_trees`.
"""

import pytest

from resp_read import RespSet, read_value
from wire import Conn, resp_encode

# One matrix entry: COMMAND DOCS is a table, compared with redis-server's.
pytestmark = [pytest.mark.resp, pytest.mark.spinel_only, pytest.mark.one_backend]

PROSE = {b"summary", b"complexity", b"history", b"replaced_by"}
# 7.2's WITHSCORE: the last argument of ours, which 7.0 lacks.
NEWER_LAST_ARGUMENT = {"zrank": b"withscore", "zrevrank": b"withscore"}
# Subcommands newer than 7.0 (7.2's).
NEWER_SUBCOMMANDS = {b"client|no-touch", b"client|setinfo", b"cluster|myshardid"}


def ask(port, *args, resp3):
    with Conn(port) as c:
        if resp3:
            c.send(resp_encode("HELLO", "3"))
            read_value(c)
        c.send(resp_encode(*args))
        return read_value(c)


def pairs(value, resp3):
    """A map's (key, value) pairs in order: RESP3 sends pairs, RESP2 a flat array."""
    if resp3:
        return value
    assert len(value) % 2 == 0, value
    return list(zip(value[::2], value[1::2]))


def kind(value):
    """Sets (RESP3 flags) and arrays stay told apart."""
    return ("set" if isinstance(value, RespSet) else "array", list(value))


def normal_arg(arg, resp3):
    out = []
    for field, value in pairs(arg, resp3):
        if field == b"arguments":
            value = [normal_arg(a, resp3) for a in value]
        elif field == b"flags":
            value = kind(value)
        out.append((field, value))
    return out


def normal_docs(docs, resp3):
    """A command's docs without the prose, nested maps read in order."""
    out = []
    for field, value in pairs(docs, resp3):
        if field in PROSE:
            continue
        if field == b"arguments":
            value = [normal_arg(a, resp3) for a in value]
        elif field == b"doc_flags":
            value = kind(value)
        elif field == b"subcommands":
            value = {name: normal_docs(sub, resp3) for name, sub in pairs(value, resp3)}
        out.append((field, value))
    return out


def docs_of(port, name, resp3):
    reply = pairs(ask(port, "COMMAND", "DOCS", name, resp3=resp3), resp3)
    return dict(reply).get(name.encode())


def common_subcommands(ours, theirs):
    """Our subcommands that Redis has too (ours may be newer; some of Redis's, such as
    LATENCY GRAPH, Spinel does not have)."""
    ours, theirs = dict(ours), dict(theirs)
    if b"subcommands" in ours and b"subcommands" in theirs:
        mine, others = ours[b"subcommands"], theirs[b"subcommands"]
        assert set(mine) - set(others) <= NEWER_SUBCOMMANDS
        ours[b"subcommands"] = {name: mine[name] for name in others if name in mine}
        theirs[b"subcommands"] = {name: others[name] for name in mine if name in others}
    return list(ours.items()), list(theirs.items())


def drop_last_argument(docs, name):
    docs = dict(docs)
    assert dict(docs[b"arguments"][-1])[b"name"] == NEWER_LAST_ARGUMENT[name]
    docs[b"arguments"] = docs[b"arguments"][:-1]
    return list(docs.items())


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
def test_command_docs_match_redis(resp_port, redis_server, resp3):
    names = [n.decode() for n in ask(resp_port, "COMMAND", "LIST", resp3=resp3) if b"|" not in n]
    compared = with_arguments = 0
    for name in sorted(names):
        theirs = docs_of(redis_server.resp_port, name, resp3)
        if theirs is None:
            continue  # newer than the reference
        ours = docs_of(resp_port, name, resp3)
        assert dict(pairs(ours, resp3))[b"summary"], name
        ours, theirs = normal_docs(ours, resp3), normal_docs(theirs, resp3)
        ours, theirs = common_subcommands(ours, theirs)
        if name in NEWER_LAST_ARGUMENT:
            ours = drop_last_argument(ours, name)
        assert ours == theirs, name
        compared += 1
        with_arguments += b"arguments" in dict(ours)
    assert compared > 230 and with_arguments > 170


@pytest.mark.parametrize("name", ["config|get", "CLIENT|KILL", "xgroup|create", "object|freq"])
def test_subcommand_docs_by_full_name(resp_port, redis_server, name):
    for resp3 in (False, True):
        ours = ask(resp_port, "COMMAND", "DOCS", name, "nosuch|x", "get|x", resp3=resp3)
        theirs = ask(redis_server.resp_port, "COMMAND", "DOCS", name, "nosuch|x", "get|x",
                     resp3=resp3)
        [(our_name, our_docs)] = pairs(ours, resp3)
        [(their_name, their_docs)] = pairs(theirs, resp3)
        assert our_name == their_name == name.lower().encode()
        assert normal_docs(our_docs, resp3) == normal_docs(their_docs, resp3)


def test_all_docs_cover_every_command(resp_port):
    every = pairs(ask(resp_port, "COMMAND", "DOCS", resp3=True), True)
    assert len(every) == ask(resp_port, "COMMAND", "COUNT", resp3=True)
    docs = dict(every)
    subs = dict(dict(docs[b"config"])[b"subcommands"])
    assert dict(subs[b"config|set"])[b"group"] == b"server"


def args_of(port, name):
    return dict(docs_of(port, name, True))[b"arguments"]


def test_newer_commands_have_trees(resp_port):
    """Commands 7.0 lacks, from their syntax (Redis 7.4 and 8.0's declarations)."""
    fields = [(b"name", b"fields"), (b"type", b"block"), (b"token", b"FIELDS"),
              (b"arguments", [[(b"name", b"numfields"), (b"type", b"integer")],
                              [(b"name", b"field"), (b"type", b"string"),
                               (b"flags", RespSet(["multiple"]))]])]
    assert args_of(resp_port, "hpersist") == [
        [(b"name", b"key"), (b"type", b"key"), (b"key_spec_index", 0)], fields]
    hsetex = args_of(resp_port, "hsetex")
    assert [dict(arg)[b"name"] for arg in hsetex] == [
        b"key", b"condition", b"expiration", b"fields"]
    assert dict(hsetex[1])[b"flags"] == ["optional"]
    setinfo = args_of(resp_port, "client|setinfo")
    assert [dict(arg)[b"token"] for arg in dict(setinfo[0])[b"arguments"]] == [
        b"lib-name", b"lib-ver"]
    assert args_of(resp_port, "zrank")[-1] == [
        (b"name", b"withscore"), (b"type", b"pure-token"), (b"token", b"WITHSCORE"),
        (b"flags", RespSet(["optional"]))]
