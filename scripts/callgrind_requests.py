#!/usr/bin/env python3
"""Instructions the server executes per request, by callgrind: deterministic where wall-clock
benchmarks on two shared cores are not, so a refactoring can be checked row by row.

    scripts/callgrind_requests.py BIN [BIN ...] [--rows mc-get,resp-get,...] [--small 4000]
        [--large 12000] [--repeat 1]

For each binary and row: the server runs under `valgrind --tool=callgrind` with one worker
(`-t 1`), the row's setup runs, the counters are zeroed (callgrind_control -z), then `--small`
requests go (pipelined 100 at a time, every reply read) and the counters are dumped; a second
run does `--large` requests. Instructions per request are (Ir(large) - Ir(small)) / (large -
small): start-up, setup and the fixed cost of a phase cancel out; idle ticks (about 1.6 M
instructions a second under valgrind) are the noise left.
CALLGRIND_SERVER_ARGS adds flags to Spinel's command line (`--io epoll` for the epoll back end).
Binaries are run in turn (A, B, A, B ...) with --repeat; the table shows each row's median and
the ratio to the first binary.
"""

import argparse
import hashlib
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_cost import SCRIPT  # noqa: E402

PIPELINE = 100
VALUE = b"v" * 32


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        arg = arg if isinstance(arg, bytes) else str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


def mc_get_setup():
    return [b"set key 0 0 32\r\n" + VALUE + b"\r\n"]


KEYS = 10_000


def mc_keys_setup():
    return [b"set k%d 0 0 20\r\n%s\r\n" % (i, VALUE[:20]) for i in range(KEYS)]


def resp_keys_setup():
    return [resp("SET", f"k{i}", VALUE[:20]) for i in range(KEYS)]


def key(i):
    """The i-th key of a request stream: spread over the KEYS keys, not in order."""
    return b"k%d" % (i * 7919 % KEYS)


VALUE128 = b"v" * 128


def key32(i):
    """The i-th key of a 32/128 request stream (the matrix's 32/128 row): 32 bytes, spread."""
    return b"k%031d" % (i * 7919 % KEYS)


def mc_set128(i):
    return b"set " + key32(i) + b" 0 0 128\r\n" + VALUE128 + b"\r\n"


VALUE1K = b"v" * 1024


def key64(i):
    """The i-th key of a 64/1024 request stream (the matrix's 64/1024 row): 64 bytes, spread."""
    return b"k%063d" % (i * 7919 % KEYS)


def mc_set1k(i):
    return b"set " + key64(i) + b" 0 0 1024\r\n" + VALUE1K + b"\r\n"


def hash100_setup():
    args = ["HSET", "big"]
    for i in range(100):
        args += [f"f{i}", "v" * 16]
    return [resp(*args)]


# name -> (port kind, setup requests, request i -> bytes, bytes a reply to one request ends with)
ROWS = {
    "mc-get": ("mc", mc_get_setup, lambda i: b"get key\r\n", b"END\r\n"),
    "mc-set": ("mc", lambda: [], lambda i: b"set k%d 0 0 32\r\n%s\r\n" % (i, VALUE), b"\r\n"),
    # 10,000 keys of 20 bytes, as in docs/benchmarks/batches.md.
    "mc-get-10k": ("mc", mc_keys_setup, lambda i: b"get " + key(i) + b"\r\n", b"END\r\n"),
    "mc-get48-10k": ("mc", mc_keys_setup,
                     lambda i: b"get " + b" ".join(key(i * 48 + j) for j in range(48)) + b"\r\n",
                     b"END\r\n"),
    "resp-get-10k": ("resp", resp_keys_setup, lambda i: resp("GET", key(i)), None),
    "resp-get": ("resp", lambda: [resp("SET", "key", VALUE)], lambda i: resp("GET", "key"), None),
    "resp-set": ("resp", lambda: [], lambda i: resp("SET", f"k{i}", VALUE), None),
    # Sets over 10,000 existing 32-byte keys with 128-byte values: the set of the 9:1 32/128
    # rows of docs/benchmarks/matrix.md (an overwrite, as there the key space is preloaded).
    "mc-set128-10k": ("mc", lambda: [mc_set128(i) for i in range(KEYS)], mc_set128, b"\r\n"),
    "resp-set128-10k": ("resp", lambda: [resp("SET", key32(i), VALUE128) for i in range(KEYS)],
                        lambda i: resp("SET", key32(i), VALUE128), None),
    "mc-get128-10k": ("mc", lambda: [mc_set128(i) for i in range(KEYS)],
                      lambda i: b"get " + key32(i) + b"\r\n", b"END\r\n"),
    "resp-get128-10k": ("resp", lambda: [resp("SET", key32(i), VALUE128) for i in range(KEYS)],
                        lambda i: resp("GET", key32(i)), None),
    # The same over 64-byte keys with 1 KiB values: the 9:1 64/1024 rows' set.
    "mc-set1k-10k": ("mc", lambda: [mc_set1k(i) for i in range(KEYS)], mc_set1k, b"\r\n"),
    "resp-set1k-10k": ("resp", lambda: [resp("SET", key64(i), VALUE1K) for i in range(KEYS)],
                       lambda i: resp("SET", key64(i), VALUE1K), None),
    "hset-new": ("resp", lambda: [], lambda i: resp("HSET", f"h{i}", "f", "v"), None),
    "hset-100": ("resp", hash100_setup, lambda i: resp("HSET", "big", f"f{i % 100}", i), None),
    "zadd": ("resp", lambda: [], lambda i: resp("ZADD", "z", i, f"m{i % 100}"), None),
    "lpush": ("resp", lambda: [], lambda i: resp("LPUSH", "l", "v" * 16), None),
    "xadd": ("resp", lambda: [],
             lambda i: resp("XADD", "s", "*", "event", "completed", "jobId", i), None),
    # Ten entries from an ID inside a node (the node is read from its front to there).
    "xrange": ("resp", lambda: stream_setup(),
               lambda i: resp("XRANGE", "x", f"{i % 1900 + 1}-1", "+", "COUNT", 10), None),
    "xrevrange": ("resp", lambda: stream_setup(),
                  lambda i: resp("XREVRANGE", "x", f"{i % 1900 + 50}-1", "-", "COUNT", 10), None),
}


# The 5-command script that scripts/script_cost.py measures (docs/benchmarks/redis-paths.md),
# taken from it so that both measure the same script.
EVAL_SCRIPT = SCRIPT
EVAL_SHA = hashlib.sha1(EVAL_SCRIPT.encode()).hexdigest()
ROWS["evalsha"] = ("resp", lambda: [resp("SCRIPT", "LOAD", EVAL_SCRIPT)],
                   lambda i: resp("EVALSHA", EVAL_SHA, 3, f"s:{i % 1000}", f"n:{i % 1000}",
                                  f"h:{i % 1000}", "value"), None)


def stream_setup():
    return [resp("XADD", "x", f"{n}-1", "event", "completed", "jobId", n)
            for n in range(1, 2001)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, deadline_secs=90):
    end = time.time() + deadline_secs
    while time.time() < end:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=60)
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"server on {port} did not come up")


def resp_end(buf, pos):
    """Where the RESP reply at `pos` ends (arrays of any depth), or None if incomplete."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        return None
    line, nxt = buf[pos:end], end + 2
    if line[:1] == b"$" and line != b"$-1":
        nxt += int(line[1:]) + 2
        return nxt if len(buf) >= nxt else None
    if line[:1] == b"*":
        for _ in range(max(int(line[1:]), 0)):
            nxt = resp_end(buf, nxt)
            if nxt is None:
                return None
    return nxt


def count_replies(buf, kind):
    """Complete replies at the front of buf: (count, bytes consumed). RESP replies are read
    whole (arrays too); memcached ones end with END or STORED."""
    count, pos = 0, 0
    while kind == "resp":
        end = resp_end(buf, pos)
        if end is None:
            return count, pos
        count, pos = count + 1, end
    while True:
        end = buf.find(b"\r\n", pos)
        if end < 0:
            return count, pos
        line = buf[pos:end]
        nxt = end + 2
        if kind == "resp" and line.startswith(b"$") and line != b"$-1":
            size = int(line[1:])
            if len(buf) < nxt + size + 2:
                return count, pos
            nxt += size + 2
        if kind == "mc" and line.startswith(b"VALUE "):
            size = int(line.split()[3])
            if len(buf) < nxt + size + 2:
                return count, pos
            pos = nxt + size + 2
            continue
        count += 1
        pos = nxt


def drive(sock, kind, requests):
    pending, buf = 0, b""
    for start in range(0, len(requests), PIPELINE):
        batch = requests[start:start + PIPELINE]
        sock.sendall(b"".join(batch))
        pending += len(batch)
        while pending:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("server closed the connection")
            buf += chunk
            done, used = count_replies(buf, kind)
            buf = buf[used:]
            pending -= done


def control(pid, flag):
    """callgrind_control -z (zero the counters) or -d (dump them to OUT.1); it returns once
    the server has done it."""
    subprocess.run(["callgrind_control", flag, str(pid)], check=True, timeout=120,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure(binary, row, requests, keep=None):
    kind, setup, request, _ = ROWS[row]
    mc_port, resp_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary,
               "-t", "1", "-l", "127.0.0.1", "-p", str(mc_port), "--resp-port", str(resp_port),
               "-U", "0", "-m", "1024"] + os.environ.get("CALLGRIND_SERVER_ARGS", "").split()
        if os.path.basename(binary) == "nullmc":  # nullmc PORT THREADS VALUE_SIZE, no store
            cmd = cmd[:3] + [binary, str(mc_port), "1", "20"]
        if os.path.basename(binary) == "pogocache":  # one port for both protocols; epoll
            resp_port = mc_port
            cmd = cmd[:3] + [binary, "-p", str(mc_port), "--threads", "1", "--uring", "no"]
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            sock = wait_port(mc_port if kind == "mc" else resp_port)
            drive(sock, kind, setup())
            batch = [request(i) for i in range(requests)]
            control(server.pid, "-z")
            drive(sock, kind, batch)
            control(server.pid, "-d")
            sock.close()
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=120)
        if keep:
            os.makedirs(keep, exist_ok=True)
            name = f"{os.path.basename(binary)}-{row}-{requests}.cg"
            subprocess.run(["cp", out + ".1", os.path.join(keep, name)], check=True)
        with open(out + ".1") as f:
            totals = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
        return int(totals.group(1))


def main():
    global PIPELINE
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--small", type=int, default=4000)
    ap.add_argument("--large", type=int, default=12000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--pipeline", type=int, default=100, help="requests per send")
    ap.add_argument("--keep", help="copy each callgrind output here (callgrind_annotate)")
    args = ap.parse_args()
    PIPELINE = args.pipeline
    rows = args.rows.split(",")
    per_request = {(b, r): [] for b in args.binaries for r in rows}
    for _ in range(args.repeat):
        for row in rows:
            for binary in args.binaries:
                small = measure(binary, row, args.small, args.keep)
                large = measure(binary, row, args.large, args.keep)
                value = (large - small) / (args.large - args.small)
                per_request[(binary, row)].append(value)
                print(f"{row:9} {binary}: {value:,.0f} Ir/request", file=sys.stderr, flush=True)
    first = args.binaries[0]
    print("| row | " + " | ".join(args.binaries) + " |")
    print("|---|" + "---:|" * len(args.binaries))
    for row in rows:
        base = statistics.median(per_request[(first, row)])
        cells = []
        for binary in args.binaries:
            value = statistics.median(per_request[(binary, row)])
            cells.append(f"{value:,.0f}" + ("" if binary == first else f" ({value / base:.3f})"))
        print(f"| {row} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
