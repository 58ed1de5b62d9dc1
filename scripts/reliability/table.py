"""The side-by-side table of issue 16 ("Reliability first") from one run: for each target
(spinel with io_uring, spinel with epoll, memcached, Redis) and each row, a fresh server on
free loopback ports with the row's settings, the row's script against it, the server stopped
by its pid; then a markdown table, one row per scenario.

    python3 scripts/reliability/table.py --spinel-bin target/release/spinel
    python3 scripts/reliability/table.py --targets memcached,redis --rows unread,crowd

A script's figure is what it prints on `ROW <name>: <figure>` lines (several joined with
"; "), else its unindented summary lines. Progress goes to stderr, the table to stdout."""
import argparse
import os
import resource
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PID_SCRIPTS = {"half_close.py", "unread.py", "crowd.py", "churn.py"}
TARGETS = ["spinel-uring", "spinel-epoll", "memcached", "redis"]
HEADER = {"spinel-uring": "Spinel io_uring", "spinel-epoll": "Spinel epoll",
          "memcached": "memcached", "redis": "Redis"}


class Row:
    """One scenario. `runs[kind]` (kind: spinel, memcached, redis) lists the runs that make
    its cell, each a fresh server: "mc" (memcached port), "resp", or "both"; absent: n/a."""

    def __init__(self, name, label, script, args=(), mem=64, conns=False,
                 spinel=("mc",), memcached=("mc",), redis=("resp",), timeout=120):
        self.name, self.label, self.script, self.args = name, label, script, list(args)
        self.mem, self.conns, self.timeout = mem, conns, timeout
        self.runs = {"spinel": spinel, "memcached": memcached, "redis": redis}


ROWS = [
    Row("nc", "client sends requests then `shutdown(SHUT_WR)` (`nc -N`, `nc -q1`), 20 tries "
        "each: replies received", "half_close.py", ["--only", "nc"], spinel=("both",)),
    Row("quickstart", "quick-start command (`printf 'set a 0 0 1\\r\\nx\\r\\nget a\\r\\n' | "
        "nc -q1`), 20 tries", "half_close.py", ["--only", "quickstart"], redis=()),
    Row("pipeline", "1,000 pipelined gets of a 10 KB value, then half-close: replies received",
        "half_close.py", ["--only", "pipeline"]),
    Row("crowd", "200 clients that half-close after one request, beside 1,000 holding partial "
        "requests and 100 that pipeline 20 MB of gets and reset: got all replies then EOF / "
        "server peak RSS / longest wait of a checked client", "crowd.py", conns=True),
    Row("unread", "100 connections x 2,000 pipelined gets of a 10 KB value, replies not read "
        "for 5 s: peak RSS rise / longest wait of another client's `version`", "unread.py"),
    Row("unread_reset", "the same, connections reset at once", "unread.py", ["--reset"]),
    Row("drift", "drifting value sizes at `-m 64` (100 B, 100-500 KB, 50 B, 1 B-512 KB): "
        "refused sets in evict mode; acknowledged values missing (evictions explain them: "
        "the live data outgrows the limit) or wrong", "drift.py", ["--phase-secs", "4"],
        spinel=("both",)),
    Row("drift_small", "the same on 32 keys (under 16 MB live): refused sets; acknowledged "
        "values missing or wrong (none may be, nor evicted)", "drift.py",
        ["--phase-secs", "2", "--keys", "32"], spinel=("both",)),
    Row("large_sets", "100 sets of 560 KB at `-m 48`, each read back", "large_sets.py",
        mem=48, spinel=("mc", "resp")),
    Row("appends_1024", "8 processes appending 12-byte tokens to 128 keys (~9 MB live) at "
        "`-m 1024`: refused, keys gone, keys missing an acknowledged token", "appends.py",
        mem=1024, spinel=("mc", "resp")),
    Row("appends_64", "the same at `-m 64` (none may be lost: the live data is an eighth of "
        "the limit)", "appends.py", mem=64, spinel=("mc", "resp")),
    Row("big_after_churn", "a 600 KB set after 8,200 sets of 8 KB on one key and 300 of 100 KB "
        "on another", "big_after_churn.py"),
    Row("expiry", "100k keys with 1-3 s TTLs, never read: items still counted 30 s later",
        "expiry_counts.py", ["--watch-secs", "30"]),
    Row("churn", "after 19,000 connections open and close, RSS vs start (target: within "
        "max(4 MiB, 25% of growth))", "churn.py", conns=True),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(ports, proc, secs=10.0):
    deadline = time.monotonic() + secs
    for port in ports:
        while True:
            if proc.poll() is not None:
                raise RuntimeError("server exited with %s" % proc.returncode)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("server not listening on %d" % port)
                time.sleep(0.05)


def server_cmd(target, row, spinel_bin, port, resp_port):
    if target.startswith("spinel"):
        cmd = [spinel_bin, "-p", str(port), "--resp-port", str(resp_port), "-m", str(row.mem),
               "-t", "2", "--io", target.split("-")[1]]
        return cmd + (["-c", "2000"] if row.conns else [])
    if target == "memcached":
        cmd = ["memcached", "-u", "nobody", "-U", "0", "-l", "127.0.0.1", "-p", str(port),
               "-m", str(row.mem), "-t", "2"]
        return cmd + (["-c", "2000"] if row.conns else [])
    cmd = ["redis-server", "--port", str(resp_port), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "no", "--maxmemory", "%dmb" % row.mem,
           "--maxmemory-policy", "allkeys-lru"]
    return cmd + (["--maxclients", "2000"] if row.conns else [])


def figure_of(out):
    rows = [l[4:] for l in out.splitlines() if l.startswith("ROW ")]
    if not rows:
        rows = [l for l in out.splitlines() if l.strip() and not l[0].isspace()]
    if len(rows) == 1:
        return rows[0].split(": ", 1)[-1]
    return "; ".join(rows)


def one_run(target, row, which, spinel_bin):
    port, resp_port = free_port(), free_port()
    proc = subprocess.Popen(server_cmd(target, row, spinel_bin, port, resp_port),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if target == "memcached":
            listen = [port]
        elif target == "redis":
            listen = [resp_port]
        else:
            listen = [port, resp_port]
        wait_listening(listen, proc)
        # The store scripts (drift.py ...) take no --pid; the connection ones read RSS with it.
        args = ["--pid", str(proc.pid)] if row.script in PID_SCRIPTS else []
        if which in ("mc", "both") and target != "redis":
            args += ["--port", str(port)]
        if which in ("resp", "both") and target != "memcached":
            args += ["--resp-port", str(resp_port)]
        cmd = [sys.executable, os.path.join(HERE, row.script)] + row.args + args
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=row.timeout)
        except subprocess.TimeoutExpired as e:
            return "timed out after %d s" % row.timeout, e.stdout or ""
        fig = figure_of(res.stdout)
        if res.returncode:
            tail = (res.stderr.strip().splitlines() or ["?"])[-1]
            fig = (fig + "; " if fig else "") + "failed: " + tail[:120]
        return fig, res.stdout + res.stderr
    except RuntimeError as e:
        return "server: %s" % e, ""
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cell(target, row, spinel_bin, log):
    kind = "spinel" if target.startswith("spinel") else target
    runs = row.runs[kind]
    if not runs:
        return "n/a"
    figs = []
    for which in runs:
        start = time.monotonic()
        fig, out = one_run(target, row, which, spinel_bin)
        print("[%s %s %s] %.1f s: %s" % (target, row.name, which, time.monotonic() - start,
                                        fig), file=sys.stderr, flush=True)
        if log:
            log.write("== %s %s %s\n%s\n" % (target, row.name, which, out))
            log.flush()
        figs.append(("RESP: " if which == "resp" and len(runs) > 1 else "") + fig)
    return " / ".join(figs)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--targets", default=",".join(TARGETS), help="comma-separated, of "
                   + ", ".join(TARGETS))
    p.add_argument("--rows", default=",".join(r.name for r in ROWS), help="comma-separated, of "
                   + ", ".join(r.name for r in ROWS))
    p.add_argument("--spinel-bin", default=os.environ.get("SPINEL_BIN",
                                                          "target/release/spinel"))
    p.add_argument("--log", help="append every script's full output to this file")
    a = p.parse_args()
    targets = [t for t in a.targets.split(",") if t]
    names = [n for n in a.rows.split(",") if n]
    bad = [t for t in targets if t not in TARGETS] + [
        n for n in names if n not in {r.name for r in ROWS}]
    if bad:
        p.error("unknown: %s" % ", ".join(bad))
    rows = [r for r in ROWS if r.name in names]
    # Servers and scripts inherit this: 2,000 connections need more than 1,024 fds.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    log = open(a.log, "a") if a.log else None
    start = time.monotonic()
    cells = {(t, r.name): cell(t, r, a.spinel_bin, log) for r in rows for t in targets}
    print("| scenario | " + " | ".join(HEADER[t] for t in targets) + " |")
    print("|---|" + "---|" * len(targets))
    for r in rows:
        print("| %s | %s |" % (r.label, " | ".join(
            cells[(t, r.name)].replace("|", "\\|") for t in targets)))
    print("\n%d targets x %d rows in %.0f s" % (len(targets), len(rows),
                                              time.monotonic() - start))


if __name__ == "__main__":
    main()
