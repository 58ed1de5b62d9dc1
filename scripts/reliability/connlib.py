"""Shared bits of the connection scripts: hostile.py helpers on the path, the common CLI."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "conformance"))
from rclient import parser as _parser  # noqa: E402


def parser(doc):
    p = _parser(doc)
    p.add_argument("--pid", type=int, help="server pid (RSS from /proc)")
    return p


def target(args):
    """(port, proto) to use: the memcached port if given, else RESP."""
    return (args.port, "mc") if args.port else (args.resp_port, "resp")
