#!/usr/bin/env python3
"""Writes crates/proto-resp/src/commands/meta.rs: for every command and subcommand Spinel
lists, the parts of Redis's COMMAND INFO reply that Spinel's command table does not hold:
command tips, key specifications, and a subcommand's flags and key positions.

They are read from a running redis-server (7.0's COMMAND INFO, the reference installed
here); the commands it lacks (newer than 7.0) are described in ADDED below, from their
redis.io pages. The output is data, regenerated when commands are added:

    scripts/gen_command_meta.py --redis-port 6379 --spinel-port 6380 \
        > crates/proto-resp/src/commands/meta.rs
"""

import argparse
import socket
import sys

# Key-spec flags in the order Redis prints them.
KEY_FLAGS = ["RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key",
             "incomplete", "variable_flags"]

# Commands and subcommands redis-server 7.0 does not have: (tips, key specs, flags, keys).
# A key spec here is (notes, flags, begin index, ("range", last, step, limit)).
RANGE1 = ("range", 0, 1, 0)
ADDED = {
    "client|no-touch": ([], [], ["noscript", "loading", "stale"], (0, 0, 0)),
    "client|setinfo": ([], [], ["noscript", "loading", "stale"], (0, 0, 0)),
    "cluster|myshardid": (["nondeterministic_output"], [], ["stale"], (0, 0, 0)),
    "hexpire": ([], [("", ["RW", "update"], 1, RANGE1)], None, None),
    "hexpireat": ([], [("", ["RW", "update"], 1, RANGE1)], None, None),
    "hpexpire": ([], [("", ["RW", "update"], 1, RANGE1)], None, None),
    "hpexpireat": ([], [("", ["RW", "update"], 1, RANGE1)], None, None),
    "hpersist": ([], [("", ["RW", "update"], 1, RANGE1)], None, None),
    "httl": (["nondeterministic_output"], [("", ["RO", "access"], 1, RANGE1)], None, None),
    "hpttl": (["nondeterministic_output"], [("", ["RO", "access"], 1, RANGE1)], None, None),
    "hexpiretime": ([], [("", ["RO", "access"], 1, RANGE1)], None, None),
    "hpexpiretime": ([], [("", ["RO", "access"], 1, RANGE1)], None, None),
    "hgetdel": ([], [("", ["RW", "access", "delete"], 1, RANGE1)], None, None),
    "hgetex": ([], [("", ["RW", "access", "update"], 1, RANGE1)], None, None),
    "hsetex": ([], [("", ["RW", "update"], 1, RANGE1)], None, None),
}


def encode(*args):
    out = b"*%d\r\n" % len(args)
    for arg in args:
        arg = arg.encode()
        out += b"$%d\r\n%s\r\n" % (len(arg), arg)
    return out


def parse(buf, at=0):
    kind, end = buf[at:at + 1], buf.index(b"\r\n", at)
    line, at = buf[at + 1:end], end + 2
    if kind in (b"+", b"-"):
        return line.decode(), at
    if kind == b":":
        return int(line), at
    if kind == b"$":
        size = int(line)
        return (None, at) if size < 0 else (buf[at:at + size].decode(), at + size + 2)
    items = []
    for _ in range(max(int(line), 0)):
        item, at = parse(buf, at)
        items.append(item)
    return (None if int(line) < 0 else items), at


def call(port, *args):
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(encode(*args) + encode("PING"))
        buf = b""
        while not buf.endswith(b"+PONG\r\n"):
            buf += sock.recv(1 << 20)
    return parse(buf[:-7])[0]


def key_spec(fields):
    spec = dict(zip(fields[::2], fields[1::2]))
    begin = dict(zip(spec["begin_search"][::2], spec["begin_search"][1::2]))
    find = dict(zip(spec["find_keys"][::2], spec["find_keys"][1::2]))
    begin_spec = dict(zip(begin["spec"][::2], begin["spec"][1::2]))
    if begin["type"] == "unknown":
        # SORT's STORE and BY/GET keys: only the command finds them.
        assert find["type"] == "unknown", spec
        return (spec.get("notes", ""), spec["flags"], None, ("unknown",))
    if begin["type"] == "keyword":
        index = (begin_spec["keyword"], begin_spec["startfrom"])
    else:
        assert begin["type"] == "index", spec
        index = begin_spec["index"]
    numbers = dict(zip(find["spec"][::2], find["spec"][1::2]))
    if find["type"] == "range":
        how = ("range", numbers["lastkey"], numbers["keystep"], numbers["limit"])
    else:
        assert find["type"] == "keynum", spec
        how = ("keynum", numbers["keynumidx"], numbers["firstkey"], numbers["keystep"])
    return (spec.get("notes", ""), spec["flags"], index, how)


def rust_key_spec(spec):
    notes, flags, index, how = spec
    flag_expr = " | ".join("K::" + flag.upper() for flag in flags) or "0"
    notes_text = '"%s"' % notes.replace("\\", "\\\\").replace('"', '\\"')
    if how[0] == "unknown":
        return "ks_unknown(%s, %s)" % (notes_text, flag_expr)
    if how[0] == "range":
        find = "range(%d, %d, %d)" % how[1:]
    else:
        find = "keynum(%d, %d, %d)" % how[1:]
    if isinstance(index, tuple):
        return 'ks_after(%s, %s, ("%s", %d), %s)' % (notes_text, flag_expr, index[0], index[1], find)
    return "ks(%s, %s, %d, %s)" % (notes_text, flag_expr, index, find)


def strs(items):
    return "&[%s]" % ", ".join('"%s"' % item for item in items)


def version_and_names():
    """From the command line's two ports: redis-server's version and Spinel's command names
    (what a generator reads Redis's data for), sorted."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis-port", type=int, required=True)
    parser.add_argument("--spinel-port", type=int, required=True)
    args = parser.parse_args()
    version = call(args.redis_port, "INFO", "server").split("redis_version:")[1].split()[0]
    return version, sorted(call(args.spinel_port, "COMMAND", "LIST")), args


def main():
    version, names, args = version_and_names()
    print("//! Generated by `scripts/gen_command_meta.py` from redis-server %s's COMMAND INFO"
          % version)
    print("//! (and, for what it lacks, from redis.io): the tips, key specs and subcommand")
    print("//! flags of every command Spinel lists. Regenerate; do not edit by hand.")
    print()
    print("use super::keyspec::{keynum, ks, ks_after, ks_unknown, range, KeyFlags as K, Meta};")
    print()
    print("#[rustfmt::skip]")
    print("pub(super) static META: &[Meta] = &[")
    for name in names:
        info = call(args.redis_port, "COMMAND", "INFO", name)[0]
        if info is None:
            tips, specs, flags, keys = ADDED[name]
        else:
            tips, specs = info[7], [key_spec(fields) for fields in info[8]]
            flags, keys = info[2], tuple(info[3:6])
        if "|" not in name:
            flags, keys = [], (0, 0, 0)
        for spec in specs:
            assert all(flag in KEY_FLAGS for flag in spec[1]), spec
        print('    Meta { name: "%s", tips: %s, key_specs: &[%s], sub_flags: %s, sub_keys: %s },'
              % (name, strs(tips), ", ".join(rust_key_spec(s) for s in specs), strs(flags),
                 "(%d, %d, %d)" % keys))
    print("];")
    return 0


if __name__ == "__main__":
    sys.exit(main())
