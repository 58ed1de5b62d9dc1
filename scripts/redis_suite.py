#!/usr/bin/env python3
"""Redis 7.0's own test suite (tests/unit/*.tcl) in external-server mode, unit by unit, against
Spinel and against redis-server, and a table of what passes on each.

    scripts/redis_suite.py [UNIT ... | --all] [--spinel target/release/spinel]
        [--redis redis-server] [--unit-timeout 240] [--servers spinel,redis] [--out DIR]

UNIT defaults to the units issue #31 names (scripting functions pubsub pubsubshard tracking acl
introspection introspection-2 multi dump other) and those of issue #34 that pass in full
(type/list type/list-2 type/hash type/set type/zset type/incr expire scan bitfield
info-command protocol). --all runs every unit of the suite's own list (`all_tests` in
tests/test_helper.tcl: unit/..., integration/..., unit/cluster/...), each as the suite would in
external mode: tests tagged external:skip (most of integration/, which needs a server of its
own, a replica or a restart) and those of the excluded tags are left out on both servers, so a
unit whose tests are all left out shows 0 and 0. A UNIT is named as in that list or, for
unit/NAME, as NAME alone. Each unit runs once per server, each time on a
fresh server on a free port, bounded by --unit-timeout; the server is then checked: still
running, still answering PING.

The suite is Debian bookworm's redis source package (7.0.15, Debian's security patches on top),
fetched once with `apt-get source` into .cache/redis-tests (gitignored); deb-src lines for
bookworm are added under /etc/apt/sources.list.d when apt has none, and tcl is installed when
tclsh8.6 is missing (both need root). Not for CI: it needs the network the first time and takes
minutes.

Tests the external mode cannot run are left out by tags (--exclude-tags; by default
needs:repl, needs:debug, needs:save, needs:local-process, large-memory, needs:config-maxmemory;
the suite itself skips external:skip). --durable keeps a
unit going past a failed test, so one failure does not hide the rest.

Writes into --out (default .cache/redis-tests/results):
  table.md       per unit: tests passed on redis-server and on Spinel, the ratio, and whether
                 the unit ran to its end on each (no timeout, no exception, server alive)
  failures.md    per unit, the tests that pass on redis-server but not on Spinel, each with
                 the first line of Spinel's failure (or why it never ran)
  UNIT.SERVER.log / UNIT.SERVER.server.log   the suite's output and the server's own output
                 (a / in UNIT written as _: type_list.spinel.log)
"""

import argparse
import collections
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

from resp_servers import free_port, ping, ping_reply, start_server
from debian_source import APT_TIMEOUT_SECS, apt_install, enable_deb_src, has_source, run_checked

DEFAULT_UNITS = [
    "scripting", "functions", "pubsub", "pubsubshard", "tracking", "acl",
    "introspection", "introspection-2", "multi", "dump", "other",
    # Issue #34's that pass in full, about 50 s on Spinel together (type/list-3, 41 s, and
    # hyperloglog, whose fuzz test outlasts the 30 s no-progress limit on both servers, are
    # left to be named).
    "type/list", "type/list-2", "type/hash", "type/set", "type/zset", "type/incr", "expire",
    "scan", "bitfield", "info-command", "protocol",
]
# Tags whose tests need what an external server cannot give (a replica, DEBUG, SAVE, the
# server's pid, gigabytes), left out on both servers alike. needs:config-maxmemory is the
# suite's own tag for servers whose maxmemory cannot be set to 1 byte (Spinel's store refuses
# a limit that small): those tests leave their client inside MULTI when the CONFIG SET fails,
# and every later test in the block then fails for that reason alone.
EXCLUDED_TAGS = ["needs:repl", "needs:debug", "needs:save", "needs:local-process", "large-memory",
                 "needs:config-maxmemory"]
UPSTREAM_VERSION = "7.0.15"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TEST_SUFFIX = re.compile(r" in tests/(unit|integration)/[\w/.-]+\.tcl$")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ensure_tools():
    missing = [pkg for tool, pkg in (("tclsh8.6", "tcl8.6"), ("dpkg-source", "dpkg-dev"))
               if shutil.which(tool) is None]
    apt_install(missing)


def fetch_suite(cache):
    """The unpacked source tree (with Debian's patches), fetched on first use."""
    tree = os.path.join(cache, f"redis-{UPSTREAM_VERSION}")
    if os.path.exists(os.path.join(tree, "tests", "test_helper.tcl")):
        return tree
    ensure_tools()
    if not has_source("redis", f":{UPSTREAM_VERSION}-"):
        enable_deb_src("/etc/apt/sources.list.d/redis-tests-src.sources")
    dl = os.path.join(cache, "download")
    os.makedirs(dl, exist_ok=True)
    run_checked(["apt-get", "source", "--download-only", "redis"], APT_TIMEOUT_SECS, cwd=dl)
    dsc = sorted(glob.glob(os.path.join(dl, f"redis_{UPSTREAM_VERSION}-*.dsc")))
    if not dsc:
        sys.exit(f"apt-get source fetched no redis {UPSTREAM_VERSION} (.dsc missing in {dl})")
    shutil.rmtree(tree, ignore_errors=True)
    run_checked(["dpkg-source", "-x", dsc[-1], tree], APT_TIMEOUT_SECS)
    # The suite runs src/redis-cli for its CLI helpers: the installed client, the same for both
    # servers. src/redis-server stays absent: the tests that run it check redis-server's own
    # argument parsing, not the server under test, so they fail alike on both.
    for tool in ("redis-cli", "redis-benchmark"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, os.path.join(tree, "src", tool))
    return tree








def server_cmd(kind, args, port, workdir):
    if kind == "spinel":
        return [args.spinel, "-p", "0", "--resp-port", str(port), "-l", "127.0.0.1",
                "-t", str(args.spinel_threads), "-m", "256", "--dir", workdir]
    # As an operator would run it, with what the suite's own default.conf turns on for tests.
    return [args.redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", workdir, "--daemonize", "no",
            "--enable-debug-command", "yes", "--enable-protected-configs", "yes"]




def stop_server(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def suite_units(tree):
    """The units of the suite's own `all_tests` list, in its order, as written there."""
    with open(os.path.join(tree, "tests", "test_helper.tcl")) as f:
        text = f.read()
    listed = re.search(r"set ::all_tests \{(.*?)\}", text, re.DOTALL)
    if not listed:
        sys.exit("tests/test_helper.tcl has no `set ::all_tests {...}` list")
    return listed.group(1).split()


def unit_path(unit):
    """The suite's own name for UNIT: unit/NAME for a bare NAME (type/list, keyspace)."""
    return unit if unit.startswith(("unit/", "integration/")) else f"unit/{unit}"


def runtest_cmd(unit, port, timeout_secs, excluded_tags):
    # The suite's own test server listens just below --baseport (21111 by default): two runs
    # at once would both take 21079. Each run takes its own range, below the ephemeral ports.
    baseport = 12000 + (port % 200) * 100
    cmd = ["tclsh8.6", "tests/test_helper.tcl", "--host", "127.0.0.1", "--port", str(port),
           "--baseport", str(baseport),
           "--singledb", "--ignore-encoding", "--durable", "--clients", "1",
           "--timeout", str(timeout_secs), "--single", unit_path(unit)]
    for tag in excluded_tags:
        cmd += ["--tags", "-" + tag]
    return cmd


class UnitRun:
    """What one unit's run on one server showed: the events of its last attempt, and the tests
    that hung or took the server down in earlier attempts (each skipped by the next)."""

    def __init__(self):
        self.events = []  # ("ok", name) / ("err", name, first_line) / ("abort", first_line)
        self.done = False
        self.exception = None
        self.timed_out = False
        self.in_progress = None  # the test running when the suite's no-progress timeout hit
        self.server_end = "alive"
        self.stoppers = []  # (test name, what happened): hangs and crashes, one per attempt
        self.wall_secs = 0.0

    def passed(self):
        return [e[1] for e in self.events if e[0] == "ok"]

    def failed(self):
        return [e for e in self.events if e[0] in ("err", "abort")] + self.stoppers

    def ran_to_end(self):
        if self.stoppers:
            hangs = sum(what.startswith("hang") for _, what in self.stoppers)
            crashes = [what for _, what in self.stoppers if not what.startswith("hang")]
            parts = ([f"{hangs} test(s) hung"] if hangs else []) + crashes
            return "no: " + ", ".join(parts)
        if self.timed_out:
            return "no: unit timeout"
        if self.server_end != "alive":
            return "no: server " + self.server_end
        if self.exception:
            return "no: exception"
        return "yes" if self.done else "no: stopped early"


def failure_line(lines, i):
    """The first line of the failure whose [err] line is lines[i]. In --durable mode the suite
    drops the first 10 characters of a non-assertion error (meant to strip "assertion:"), then
    prints the whole error as the first line of its stack trace: that line is the better one."""
    first = lines[i + 1] if i + 1 < len(lines) else ""
    second = lines[i + 2] if i + 2 < len(lines) else ""
    if second and second[10:] == first:
        return second
    return first


def parse_log(text, run):
    lines = [ANSI.sub("", line).rstrip() for line in text.splitlines()]
    for i, line in enumerate(lines):
        ok = re.match(r"^\[ok\]: (.*) \(\d+ ms\)$", line)
        if ok:
            run.events.append(("ok", ok.group(1)))
        elif line.startswith("[err]: "):
            rest = line[len("[err]: "):]
            if TEST_SUFFIX.search(rest):
                run.events.append(("err", TEST_SUFFIX.sub("", rest), failure_line(lines, i)))
            else:  # an error between tests: the rest of its start_server block was skipped
                run.events.append(("abort", rest))
        elif line.startswith("[exception]: "):
            run.exception = " ".join(lines[i:i + 3])[:300]
        elif line.startswith("[TIMEOUT]"):
            run.timed_out = True
            state = lines[i + 1] if i + 1 < len(lines) else ""
            # "sock.. => (IN PROGRESS) NAME", or (OK)/(ERR) NAME when the hang came after
            # the test's end (a script it started still running, say): blamed on NAME too.
            known = re.search(r"=> \((IN PROGRESS|OK|ERR)\) (.*)$", state)
            if known:
                run.in_progress = TEST_SUFFIX.sub("", known.group(2))
        elif re.match(r"^\[\d+/\d+ done\]: ", line):
            run.done = True


LOST_CONNECTION = re.compile(r"I/O error|connection refused|broken pipe|connection reset|"
                             r"couldn't open socket|EOF", re.IGNORECASE)


def stopper(run):
    """The test that stopped this attempt, and how, or None when nothing did."""
    if run.timed_out and run.in_progress:
        return run.in_progress, f"hang (no reply in {run.test_timeout}s, server {run.server_end})"
    if run.server_end.startswith("died"):
        lost = next((e for e in run.events if e[0] == "err" and LOST_CONNECTION.search(e[2])),
                    None)
        if lost:
            return lost[1], "server " + run.server_end
    return None


def run_unit(kind, unit, args, tree, out_dir):
    """Attempts until one is not stopped by a hang or a crash (at most args.attempts), each on
    a fresh server, each skipping the tests that stopped the ones before."""
    stoppers, started = [], time.monotonic()
    for attempt in range(args.attempts):
        run = run_attempt(kind, unit, args, tree, out_dir, [n for n, _ in stoppers], attempt)
        stop = stopper(run)
        if stop is None:
            break
        stoppers.append(stop)
    run.stoppers = stoppers
    run.wall_secs = time.monotonic() - started
    return run


def run_attempt(kind, unit, args, tree, out_dir, skip_tests, attempt):
    port = free_port()
    workdir = os.path.join(out_dir, "work", f"{unit}.{kind}")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    # type/list and the like: one file name, not a folder.
    name = f"{unit.replace('/', '_')}.{kind}" + (f".{attempt}" if attempt else "")
    log_path = os.path.join(out_dir, name + ".server.log")
    proc = start_server(kind, server_cmd(kind, args, port, workdir), port, log_path)
    run = UnitRun()
    run.test_timeout = args.test_timeout
    cmd = runtest_cmd(unit, port, args.test_timeout, args.exclude_tags)
    for test in skip_tests:
        cmd += ["--skiptest", test]
    text = run_suite(cmd, tree, args.unit_timeout, run)
    with open(os.path.join(out_dir, name + ".log"), "w") as f:
        f.write(text)
    parse_log(text, run)
    run.server_end = server_state(proc, port)
    stop_server(proc)
    return run


def run_suite(cmd, tree, timeout_secs, run):
    """The suite's output; on a timeout its whole process group (the test server and the
    client it spawned) is killed."""
    suite = subprocess.Popen(cmd, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, errors="replace", start_new_session=True,
                             env={**os.environ, "TERM": "dumb"})
    try:
        return suite.communicate(timeout=timeout_secs)[0]
    except subprocess.TimeoutExpired:
        run.timed_out = True
        os.killpg(suite.pid, signal.SIGKILL)
        return suite.communicate()[0]


def server_state(proc, port):
    status = proc.poll()
    if status is not None:
        if status < 0:
            return f"died ({signal.Signals(-status).name})"
        return f"died (exit {status})"
    reply = ping_reply(port, timeout_secs=5)
    return "alive" if reply == "+PONG" else f"alive, PING: {reply}"


def missing_on(spinel, redis):
    """(name, why) for each test that passed on redis-server but not on Spinel, in the order
    redis-server ran them. A test Spinel never reported is put down to the first block abort
    Spinel had after the last test both reported before it, else to how Spinel's run ended."""
    spinel_pos = {}
    for pos, event in enumerate(spinel.events):
        if event[0] in ("ok", "err"):
            spinel_pos.setdefault(event[1], []).append(pos)
    left = collections.Counter(spinel.passed())
    errors = {name: what for name, what in spinel.stoppers}
    for event in spinel.events:
        if event[0] == "err":
            errors.setdefault(event[1], event[2])
    out, last_seen = [], -1
    for name in redis.passed():
        if name in spinel_pos:
            last_seen = spinel_pos[name][0]
        if left[name] > 0:
            left[name] -= 1
            continue
        if name in errors:
            out.append((name, errors[name]))
            continue
        abort = next((e[1] for e in spinel.events[last_seen + 1:] if e[0] == "abort"), None)
        last = f"stopped at '{spinel.stoppers[-1][0]}'" if spinel.stoppers else \
            spinel.ran_to_end()
        why = f"never ran: its block aborted on: {abort}" if abort else \
            f"never ran: Spinel's last attempt {last}"
        out.append((name, why))
    return out


def ratio(a, b):
    return f"{a / b:.0%}" if b else "-"


def write_reports(results, out_dir):
    table = ["| unit | passed on redis-server | passed on Spinel | ratio | ran to end: redis-server"
             " | ran to end: Spinel | Spinel secs |",
             "| --- | ---: | ---: | ---: | --- | --- | ---: |"]
    details = []
    totals = [0, 0]
    for unit, runs in results.items():
        redis, spinel = runs.get("redis"), runs.get("spinel")
        r_pass = len(redis.passed()) if redis else 0
        s_pass = len(spinel.passed()) if spinel else 0
        totals[0] += r_pass
        totals[1] += s_pass
        table.append(f"| {unit} | {r_pass if redis else '-'} | {s_pass if spinel else '-'} | "
                     f"{ratio(s_pass, r_pass) if redis and spinel else '-'} | "
                     f"{redis.ran_to_end() if redis else '-'} | "
                     f"{spinel.ran_to_end() if spinel else '-'} | "
                     f"{f'{spinel.wall_secs:.0f}' if spinel else '-'} |")
        if redis and spinel:
            details.append(unit_details(unit, redis, spinel))
    table.append(f"| **all** | {totals[0]} | {totals[1]} | {ratio(totals[1], totals[0])} | | | |")
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write("\n".join(table) + "\n")
    with open(os.path.join(out_dir, "failures.md"), "w") as f:
        f.write("\n".join(details))
    print("\n".join(table))


def unit_details(unit, redis, spinel):
    missing = missing_on(spinel, redis)
    lines = [f"## {unit}: {len(missing)} pass on redis-server, not on Spinel", ""]
    lines += [f"- {name}\n  - {why}" for name, why in missing]
    aborts = [e[1] for e in spinel.events if e[0] == "abort"]
    if aborts:
        lines += ["", "Blocks aborted on Spinel (an error outside a test):"]
        lines += [f"- {a}" for a in aborts]
    if spinel.stoppers:
        lines += ["", "Stopped Spinel's attempts (each skipped by the next attempt):"]
        lines += [f"- {name}: {what}" for name, what in spinel.stoppers]
    if spinel.exception:
        lines += ["", f"Exception: {spinel.exception}"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("units", nargs="*", default=None)
    ap.add_argument("--all", action="store_true",
                    help="every unit of the suite's own all_tests list (test_helper.tcl)")
    ap.add_argument("--spinel", default=os.path.join(REPO, "target/release/spinel"))
    ap.add_argument("--spinel-threads", type=int, default=2)
    ap.add_argument("--redis", default="redis-server")
    ap.add_argument("--servers", default="redis,spinel", help="which of redis,spinel to run")
    ap.add_argument("--unit-timeout", type=int, default=300,
                    help="seconds for one attempt at a unit on one server")
    ap.add_argument("--test-timeout", type=int, default=30,
                    help="seconds without progress after which a test counts as hung")
    ap.add_argument("--attempts", type=int, default=6,
                    help="attempts per unit and server, each skipping the tests that hung or "
                    "crashed the server in the ones before")
    ap.add_argument("--exclude-tags", default=",".join(EXCLUDED_TAGS),
                    help="comma-separated suite tags whose tests are left out on both servers")
    ap.add_argument("--cache", default=os.path.join(REPO, ".cache/redis-tests"))
    ap.add_argument("--out", default=None, help="default: CACHE/results")
    args = ap.parse_args()
    args.spinel = os.path.abspath(args.spinel)
    args.exclude_tags = [t for t in args.exclude_tags.split(",") if t]
    out_dir = os.path.abspath(args.out or os.path.join(args.cache, "results"))
    os.makedirs(out_dir, exist_ok=True)
    tree = fetch_suite(os.path.abspath(args.cache))
    if args.all and args.units:
        sys.exit("name units or give --all, not both")
    units = suite_units(tree) if args.all else (args.units or DEFAULT_UNITS)
    results = {}
    for unit in units:
        results[unit] = {}
        for kind in args.servers.split(","):
            run = run_unit(kind, unit, args, tree, out_dir)
            print(f"{unit} on {kind}: {len(run.passed())} passed, {len(run.failed())} failed, "
                  f"ran to end: {run.ran_to_end()} ({run.wall_secs:.0f}s)", file=sys.stderr)
            results[unit][kind] = run
    write_reports(results, out_dir)


if __name__ == "__main__":
    main()
