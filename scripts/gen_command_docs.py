#!/usr/bin/env python3
"""Writes crates/proto-resp/src/commands/docs_data.rs: for every command and subcommand
Spinel lists, the interface parts of Redis's COMMAND DOCS reply that Spinel's command
table does not hold: the argument tree (names, types, tokens, flags, key-spec indexes,
the versions that added or deprecated an argument), a subcommand's `since`, and the
`doc_flags` / `deprecated_since` of deprecated and system commands.

They are read from a running redis-server (7.0's COMMAND DOCS, the reference installed
here); the commands it lacks (newer than 7.0) and those Spinel answers as a newer Redis
does are described in ADDED below, from their syntax. Prose (summaries, complexity,
history, replaced_by) is not taken. The output is data, regenerated when commands are added:

    scripts/gen_command_docs.py --redis-port 6379 --spinel-port 6380 \
        > crates/proto-resp/src/commands/docs_data.rs

The argument tree is written in Spinel's own compact notation, read back by
`commands/docs.rs`: arguments are separated by spaces; each is `name:T` where T is the
type (s string, i integer, d double, k key, p pattern, t unix-time, T pure-token, o oneof,
b block), followed by `#N` (key_spec_index), `?` `*` `+` (optional, multiple,
multiple_token), `@V` (since), `!V` (deprecated_since), and last the token: `^` for the
name in capitals, `=TOKEN` otherwise; a oneof's or block's arguments follow in parentheses.
"""

import sys

from gen_command_meta import call, version_and_names

TYPES = {"string": "s", "integer": "i", "double": "d", "key": "k", "pattern": "p",
         "unix-time": "t", "pure-token": "T", "oneof": "o", "block": "b"}
FLAGS = {"optional": "?", "multiple": "*", "multiple_token": "+"}
DOC_FLAGS = ["deprecated", "syscmd"]
# Characters that end a name, token or version in the notation.
RESERVED = set(" ()#?*+@!^=")

# Commands Spinel answers that redis-server 7.0 lacks, or answers as a newer Redis does:
# (since for a subcommand, argument tree in the notation above).
FIELDS = "fields:b^(numfields:i field:s*)"
EXPIRY = "expiration:o?(seconds:i=EX milliseconds:i=PX unix-time-seconds:t=EXAT " \
    "unix-time-milliseconds:t=PXAT %s)"
COND4 = "condition:o?(nx:T^ xx:T^ gt:T^ lt:T^)"
ADDED = {
    "client|no-touch": ("7.2.0", "enabled:o(on:T^ off:T^)"),
    "client|setinfo": ("7.2.0", "attr:o(libname:s=lib-name libver:s=lib-ver)"),
    "cluster|myshardid": ("7.2.0", ""),
    "hexpire": ("", "key:k#0 seconds:i %s %s" % (COND4, FIELDS)),
    "hexpireat": ("", "key:k#0 unix-time-seconds:t %s %s" % (COND4, FIELDS)),
    "hpexpire": ("", "key:k#0 milliseconds:i %s %s" % (COND4, FIELDS)),
    "hpexpireat": ("", "key:k#0 unix-time-milliseconds:t %s %s" % (COND4, FIELDS)),
    "hpersist": ("", "key:k#0 " + FIELDS),
    "httl": ("", "key:k#0 " + FIELDS),
    "hpttl": ("", "key:k#0 " + FIELDS),
    "hexpiretime": ("", "key:k#0 " + FIELDS),
    "hpexpiretime": ("", "key:k#0 " + FIELDS),
    "hgetdel": ("", "key:k#0 " + FIELDS),
    "hgetex": ("", "key:k#0 %s %s" % (EXPIRY % "persist:T^", FIELDS)),
    "hsetex": ("", "key:k#0 condition:o?(fnx:T^ fxx:T^) %s "
               "fields:b^(numfields:i data:b*(field:s value:s))" % (EXPIRY % "keepttl:T^")),
    # 7.2's WITHSCORE, which Spinel takes (arity -3).
    "zrank": ("", "key:k#0 member:s withscore:T?^"),
    "zrevrank": ("", "key:k#0 member:s withscore:T?^"),
}


def pairs(flat):
    return dict(zip(flat[::2], flat[1::2]))


def plain(text):
    assert text and not RESERVED & set(text), text
    return text


def encode_arg(arg):
    arg = pairs(arg)
    word = plain(arg["name"]) + ":" + TYPES[arg["type"]]
    if "key_spec_index" in arg:
        word += "#%d" % arg["key_spec_index"]
    flags = arg.get("flags", [])
    assert flags == [f for f in FLAGS if f in flags], flags  # Redis's order
    word += "".join(FLAGS[f] for f in flags)
    if "since" in arg:
        word += "@" + plain(arg["since"])
    if "deprecated_since" in arg:
        word += "!" + plain(arg["deprecated_since"])
    assert set(arg) <= {"name", "type", "key_spec_index", "flags", "since",
                        "deprecated_since", "token", "arguments"}, arg
    if "token" in arg:
        token = arg["token"]
        assert not set(" ()") & set(token), token  # a token runs to the end of its word
        word += "^" if token and token == arg["name"].upper() else "=" + token
    if arg["type"] in ("oneof", "block"):
        word += "(" + encode_args(arg.get("arguments", [])) + ")"
    return word


def encode_args(args):
    return " ".join(encode_arg(arg) for arg in args)


def rust_str(text):
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def entry(name, docs):
    """(since, doc-flag bits, deprecated_since, argument tree) of one command."""
    if docs is None:
        since, tree = ADDED[name]
        return since, 0, "", tree
    docs = pairs(docs)
    since = docs["since"] if "|" in name else ""
    bits = 0
    for flag in docs.get("doc_flags", []):
        bits |= 1 << DOC_FLAGS.index(flag)
    tree = ADDED[name][1] if name in ADDED else encode_args(docs.get("arguments", []))
    return since, bits, docs.get("deprecated_since", ""), tree


def main():
    version, names, args = version_and_names()
    print("//! Generated by `scripts/gen_command_docs.py` from redis-server %s's COMMAND DOCS"
          % version)
    print("//! (and, for what it lacks, from the commands' syntax): the argument trees, in the")
    print("//! notation `docs.rs` reads, of every command Spinel lists. Regenerate; do not edit.")
    print()
    print("use super::docs::{Docs, DEPRECATED as D, SYSCMD as S};")
    print()
    print("#[rustfmt::skip]")
    print("pub(super) static DOCS: &[Docs] = &[")
    for name in names:
        found = call(args.redis_port, "COMMAND", "DOCS", name)
        since, bits, deprecated, tree = entry(name, found[1] if found else None)
        flag_expr = " | ".join(f for f, bit in (("D", 1), ("S", 2)) if bits & bit) or "0"
        print("    Docs { name: %s, since: %s, flags: %s, deprecated_since: %s, args: %s },"
              % (rust_str(name), rust_str(since), flag_expr, rust_str(deprecated),
                 rust_str(tree)))
    print("];")
    return 0


if __name__ == "__main__":
    sys.exit(main())
