#!/usr/bin/env python3
"""Locked instructions (atomic read-modify-writes: `lock`-prefixed, or `xchg` with memory)
the server executes per request, by source line, counted by callgrind on the real binary.

    scripts/atomics_per_request.py BIN [--rows mc-get-hit,...] [--requests 3000]
        [--threads 2] [--conns 4] [--io epoll|uring] [--json OUT] [--check]

Every atomic read-modify-write on x86 is one of these instructions: a parking_lot lock or
unlock, an Arc count, a fetch_add, a compare_exchange, a SeqCst store (`xchg`), an epoch
pin. So the count is a measurement that fails when a change adds one to the request path,
whichever crate it is in. What it cannot see: plain stores to lines other threads use
(Release/Relaxed stores compile to `mov`); the store's `count-shared-writes` feature counts
those of the store (crates/store/src/shared_writes.rs).

For each row the server runs under `valgrind --tool=callgrind --dump-instr=yes` with
`--threads` workers, `--conns` connections are opened (the kernel spreads them over the
workers' SO_REUSEPORT listeners), the row's setup runs, the counters are zeroed, then each
connection sends `--requests / --conns` requests one at a time (pipeline 1: a request is a
batch, as under `spinel-bench compare`'s load), and the counters are dumped. Each executed
locked instruction is mapped to its function and source line (objdump, addr2line); the
table gives executions per request and which line each writes (`CLASSES`: owned by the
worker, the key's, a sub-table's, amortized); with --check a site outside those fails the
run. The ticks (each worker's, every 100 ms) run meanwhile
(many per request under valgrind): an idle phase of the same length follows, and its counts
are taken off site by site, so tick sites come out near 0 (plus or minus a tick's worth).
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_requests import count_replies, free_port, resp, wait_port  # noqa: E402

VALUE = b"v" * 20
# --check's threshold: a site below it is amortized over many requests.
CHECK_MIN = 0.05
MGET_KEYS = 48


def mc_set(key):
    return b"set %s 0 0 %d\r\n%s\r\n" % (key, len(VALUE), VALUE)


def key(i):
    return b"key:%08d" % i


def warm_keys(n):
    """Set n keys and read each three times (the store's access frequency saturates)."""
    sets = [mc_set(key(i)) for i in range(n)]
    return sets + [b"get %s\r\n" % key(i) for _ in range(3) for i in range(n)]


def mix91(i):
    return mc_set(key(i % 100)) if i % 10 == 9 else b"get %s\r\n" % key(i % 100)


def resp_mix91(i):
    k = key(i % 100)
    return resp("SET", k, VALUE) if i % 10 == 9 else resp("GET", k)


def resp_warm(n):
    return [resp("SET", key(i), VALUE) for i in range(n)] + \
        [resp("GET", key(i)) for _ in range(3) for i in range(n)]


MGET = b"get " + b" ".join(key(i) for i in range(MGET_KEYS)) + b"\r\n"

# name -> (port kind, setup requests, request i -> bytes)
ROWS = {
    "mc-get-hit": ("mc", lambda: warm_keys(100), lambda i: b"get %s\r\n" % key(i % 100)),
    "mc-get-miss": ("mc", lambda: [], lambda i: b"get absent:%08d\r\n" % i),
    "mc-set-new": ("mc", lambda: [], lambda i: mc_set(b"new:%08d" % i)),
    "mc-set-over": ("mc", lambda: warm_keys(100), lambda i: mc_set(key(i % 100))),
    "mc-mget48": ("mc", lambda: warm_keys(MGET_KEYS), lambda i: MGET),
    "mc-mix91": ("mc", lambda: warm_keys(100), mix91),
    "resp-get": ("resp", lambda: resp_warm(100), lambda i: resp("GET", key(i % 100))),
    "resp-set": ("resp", lambda: resp_warm(100), lambda i: resp("SET", key(i % 100), VALUE)),
    "resp-mix91": ("resp", lambda: resp_warm(100), resp_mix91),
}


def drive_one_by_one(socks, kind, requests):
    """Round-robin over the connections, one request in flight on each."""
    bufs = [b""] * len(socks)
    for start in range(0, len(requests), len(socks)):
        batch = requests[start:start + len(socks)]
        for sock, request in zip(socks, batch):
            sock.sendall(request)
        for n, sock in enumerate(socks[:len(batch)]):
            while True:
                done, used = count_replies(bufs[n], kind)
                if done:
                    bufs[n] = bufs[n][used:]
                    break
                chunk = sock.recv(1 << 20)
                if not chunk:
                    raise RuntimeError("server closed the connection")
                bufs[n] += chunk


def drive_setup(sock, kind, requests):
    for request in requests:
        drive_one_by_one([sock], kind, [request])


def control(pid, flag):
    subprocess.run(["callgrind_control", flag, str(pid)], check=True, timeout=300,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_row(binary, row, args):
    kind, setup, request = ROWS[row]
    mc_port, resp_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--dump-instr=yes",
               f"--callgrind-out-file={out}", binary, "-t", str(args.threads),
               "-l", "127.0.0.1", "-p", str(mc_port), "--resp-port", str(resp_port),
               "-U", "0", "-m", "256", "--io", args.io]
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port = mc_port if kind == "mc" else resp_port
            socks = [wait_port(port) for _ in range(args.conns)]
            drive_setup(socks[0], kind, setup())
            requests = [request(i) for i in range(args.requests)]
            control(server.pid, "-z")
            started = time.time()
            drive_one_by_one(socks, kind, requests)
            control(server.pid, "-d")
            # The same time idle: what the ticks did meanwhile, taken off below.
            idle_secs = time.time() - started
            control(server.pid, "-z")
            time.sleep(idle_secs)
            control(server.pid, "-d")
            for sock in socks:
                sock.close()
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=120)
        with open(out + ".1") as f:
            costs = parse_callgrind(f)
        with open(out + ".2") as f:
            for site, ir in parse_callgrind(f).items():
                costs[site] -= ir
    return costs


def parse_position(field, last):
    if field == "*":
        return last
    if field[0] in "+-":
        return last + int(field, 0)
    return int(field, 0)


def parse_callgrind(lines):
    """(object, instruction address) -> Ir executed there (self cost only)."""
    costs = defaultdict(int)
    names = {}
    obj = None
    last_addr = 0
    skip_next = False
    for line in lines:
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        if line[0].isalpha():
            tag, _, rest = line.partition("=")
            if tag == "ob":
                obj = compressed_name(rest, names, "ob")
            elif tag in ("cob", "cfi", "cfl", "cfn", "fn", "fl", "fi", "fe"):
                compressed_name(rest, names, tag[-2:] if tag != "cob" else "ob")
            elif tag == "calls":
                skip_next = True
            continue
        fields = line.split()
        if not fields or not (fields[0][0] in "+-*0123456789"):
            continue
        addr = parse_position(fields[0], last_addr)
        last_addr = addr
        if skip_next:
            skip_next = False
            continue
        ir = int(fields[2]) if len(fields) > 2 else 0
        costs[(obj, addr)] += ir
    return costs


def compressed_name(rest, names, kind):
    m = re.match(r"\((\d+)\)(?: (.*))?$", rest.strip())
    if not m:
        return rest.strip()
    ident, name = (kind, m.group(1)), m.group(2)
    if name is not None:
        names[ident] = name
    return names.get(ident, rest)


_locked_cache = {}


def locked_instructions(path):
    """File address -> (instruction text, function) of every locked instruction in `path`."""
    if path in _locked_cache:
        return _locked_cache[path]
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", path],
                         capture_output=True, text=True, check=True).stdout
    found, function = {}, "?"
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            function = m.group(1)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if not m:
            continue
        text = m.group(2)
        if re.match(r"lock\b", text) or (re.match(r"xchg", text) and "(" in text):
            found[int(m.group(1), 16)] = (text.split("#")[0].strip(), function)
    _locked_cache[path] = found
    return found


def source_lines(path, addrs):
    """Address -> "innermost line < first workspace frame" (the inlining chain, by
    addr2line -i; a 0 address between two real ones marks where a chain ends)."""
    if not addrs:
        return {}
    query = []
    for a in addrs:
        query += [hex(a), "0x0"]
    out = subprocess.run(["addr2line", "-e", path, "-i"] + query,
                         capture_output=True, text=True).stdout.splitlines()
    result, chain, n = {}, [], 0
    for line in out:
        if line.startswith("??:"):
            if n < len(addrs):
                result[addrs[n]] = describe_chain(chain)
            chain, n = [], n + 1
        else:
            chain.append(short_path(line))
    return result


def describe_chain(chain):
    if not chain:
        return "?"
    ours = [c for c in chain if c.split("/", 1)[0] in WORKSPACE]
    if not ours or ours[0] == chain[0]:
        return chain[0]
    return f"{chain[0]} < {ours[0]}"


WORKSPACE = {"store", "exec", "rt", "server", "proto-memcache", "proto-resp", "values"}


def short_path(loc):
    loc = re.sub(r" \(discriminator \d+\)", "", loc)
    for marker in ("/crates/", "/rustc/", "/.cargo/registry/src/"):
        if marker in loc:
            tail = loc.split(marker, 1)[1]
            if marker == "/rustc/":
                tail = "std:" + tail.split("/library/", 1)[-1]
            if marker == "/.cargo/registry/src/":
                tail = tail.split("/", 1)[1]
            return tail
    return os.path.basename(loc)


# Functions the ticks run (store maintenance, the loops' per-tick publishing), not a request:
# their counts are what is left of the idle subtraction, reported apart from the total.
TICK_FUNCTIONS = ("refresh_held", "sweep_until", "take_dead", "reclaim", "maintain",
                  "rt::event_loop::run", "tick")


# Which line each known site writes, by a pattern on "function | source": `owned` (only
# this worker writes the line on the request path; others may read it), `key` (a line of the
# key's stripe or index bucket: two workers meet there only on the same key or stripe),
# `table` (an index sub-table's entry count: one of 64 lines, every new key or removal in
# that sub-table), `amortized` (a line every worker writes, but once per many requests).
# Anything else is `shared` or, if unknown, `unclassified`; --check fails on both.
CLASSES = [
    (r"exec/src/gate\.rs", "owned", "gate: this worker's inside flag (SeqCst store), "
     "entering and leaving a batch"),
    (r"crossbeam_epoch::default::with_handle", "owned",
     "epoch pin: this thread's participant record"),
    (r"crossbeam_epoch::internal::Global::try_advance", "amortized",
     "global epoch: every 128th pin scans and may advance it"),
    (r"cancellation\.c", "owned", "glibc: this thread's cancel state around a cancellable "
     "system call (epoll_wait, recv, send; not io_uring_enter)"),
    (r"store/src/bytes\.rs", "owned", "segment append: the writer line of this thread's "
     "active segment (reserve, used_end, inflight)"),
    (r"store/src/shared_writes\.rs:15\d|store/src/store/core\.rs:85", "key",
     "stripe lock and unlock (1 of 1024 stripes)"),
    (r"store/src/index\.rs:63\d", "key", "index: a new key's slot claimed (its bucket)"),
    (r"store/src/index\.rs:3[78]\d|store/src/index\.rs:41\d", "table",
     "index: the sub-table's entry count (1 of 64)"),
]


def classify(function, source):
    text = f"{function} | {source}"
    for pattern, kind, what in CLASSES:
        if re.search(pattern, text):
            return kind, what
    return "unclassified", ""


def is_tick(function):
    return any(name in function for name in TICK_FUNCTIONS)


def attribute(costs, requests):
    """Rows of (executions per request, object, function, instruction, source). Callgrind
    gives addresses in each object's own file addresses (the load base taken off)."""
    by_obj = defaultdict(list)
    for (obj, addr), ir in costs.items():
        by_obj[obj].append((addr, ir))
    rows, total = [], 0.0
    for obj, items in by_obj.items():
        path = os.path.realpath(obj) if obj else None
        if not path or not os.path.exists(path):
            continue
        locked = locked_instructions(path)
        hits = [(addr, ir) for addr, ir in items if addr in locked and ir != 0]
        lines = source_lines(path, [a for a, _ in hits])
        for addr, ir in hits:
            text, function = locked[addr]
            per = ir / requests
            if not is_tick(function):
                total += per
            rows.append((per, os.path.basename(path), function, text, lines.get(addr, "?")))
    rows.sort(reverse=True)
    return total, rows


def short_function(name, width=70):
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    return name if len(name) <= width else "..." + name[-(width - 3):]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--io", default="epoll", help="uring can hang under valgrind with 2 workers")
    ap.add_argument("--min", type=float, default=0.005, help="hide sites below this per request")
    ap.add_argument("--json", help="write every row's sites here")
    ap.add_argument("--check", action="store_true",
                    help=f"exit 1 if a site not known to be owned, per key or amortized "
                    f"runs {CHECK_MIN} times a request or more")
    args = ap.parse_args()
    report, failures = {}, []
    for row in args.rows.split(","):
        started = time.time()
        costs = run_row(args.binary, row, args)
        total, sites = attribute(costs, args.requests)
        report[row] = {"per_request": total, "sites": sites}
        print(f"\n## {row}: {total:.2f} locked instructions per request "
              f"({args.requests} requests, {args.threads} workers, {args.conns} conns, "
              f"{time.time() - started:.0f} s)")
        print("| per request | line | function | instruction | source |")
        print("|--:|---|---|---|---|")
        ticks = 0.0
        for per, obj, function, text, source in sites:
            if is_tick(function):
                ticks += per
                continue
            kind, _ = classify(function, source)
            if abs(per) >= args.min:
                print(f"| {per:.3f} | {kind} | {obj}: {short_function(function)} | `{text}` "
                      f"| {source} |")
            if kind in ("shared", "unclassified") and per >= CHECK_MIN:
                failures.append(f"{row}: {per:.3f}/request {kind} at {function} ({source})")
        print(f"| {ticks:.3f} | ticks | (left after the idle phase's counts: noise) | | |")
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if failures:
        print("\nlocked instructions on lines other workers write, per request:\n  " +
              "\n  ".join(failures))
        if args.check:
            sys.exit(1)


if __name__ == "__main__":
    main()
