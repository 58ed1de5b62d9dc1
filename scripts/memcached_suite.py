#!/usr/bin/env python3
"""memcached 1.6.18's own test suite (t/*.t, run by `prove`), file by file, against Spinel and
against memcached, and a table of the assertions that pass on each.

    scripts/memcached_suite.py [FILE ...] [--spinel target/release/spinel]
        [--memcached /usr/bin/memcached] [--file-timeout 300] [--servers memcached,spinel]
        [--jobs 4] [--out DIR]

FILE defaults to every t/*.t of the suite (names as in t/, with or without the .t). Each file
runs once per server under `prove -v`, bounded by --file-timeout (the whole process group,
servers included, is killed when it runs past it).

The suite starts its servers itself: t/lib/MemcachedTest.pm runs `$builddir/timedrun 600
$builddir/memcached-debug ARGS`, with $builddir the working directory, and asks
`memcached-debug -h` which features the server has. Each server gets its own builddir under
--out: `t` links to the suite, `memcached-debug` is a wrapper that execs the server under
test with the suite's ARGS (Spinel with `--resp-port 0` first, so no Redis port is opened), and
`timedrun` execs its command without a timer (the file timeout bounds the run instead).

The suite is Debian bookworm's memcached source package (1.6.18, Debian's security patches on
top), fetched once with `apt-get source` into .cache/memcached-tests (gitignored); deb-src
lines for bookworm are added under /etc/apt/sources.list.d when apt has none, and dpkg-dev is
installed when dpkg-source is missing (both need root). Not for CI: it needs the network the
first time and takes minutes.

Writes into --out (default .cache/memcached-tests/results):
  table.md      per file: assertions passed on memcached and on Spinel, and whether the file
                ran to its end on each (every planned assertion reported, no timeout, exit 0
                or the failures' count)
  failures.md   per file, the assertions that pass on memcached but not on Spinel, each with
                the first lines of Spinel's diagnostics, then those that fail on memcached too
  FILE.SERVER.log   prove's verbose output with the test's diagnostics
"""

import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time

from debian_source import APT_TIMEOUT_SECS, apt_install, enable_deb_src, has_source, run_checked

UPSTREAM_VERSION = "1.6.18"
SOURCES_FILE = "/etc/apt/sources.list.d/memcached-tests-src.sources"
TAP_RESULT = re.compile(r"^(not ok|ok) (\d+)(?: - (.*?))?(?: # (skip|SKIP|TODO).*)?$")
TAP_PLAN = re.compile(r"^1\.\.(\d+)")
PROVE_SKIPPED = re.compile(r"^t/\S+\.t \.\. skipped: (.*)$")
DIAG_LINES_KEPT = 4
# Test files whose servers listen on fixed ports: never run beside another file.
FIXED_PORT_FILES = {"issue_67"}

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ensure_tools():
    if shutil.which("prove") is None:
        sys.exit("prove (Perl's TAP harness, in the perl package) is missing")
    if shutil.which("dpkg-source") is None:
        apt_install(["dpkg-dev"])


def fetch_suite(cache):
    """The unpacked source tree (with Debian's patches), fetched on first use."""
    tree = os.path.join(cache, f"memcached-{UPSTREAM_VERSION}")
    if os.path.exists(os.path.join(tree, "t", "lib", "MemcachedTest.pm")):
        return tree
    ensure_tools()
    if not has_source("memcached", f"Version: {UPSTREAM_VERSION}-"):
        enable_deb_src(SOURCES_FILE)
    dl = os.path.join(cache, "download")
    os.makedirs(dl, exist_ok=True)
    run_checked(["apt-get", "source", "--download-only", "memcached"], APT_TIMEOUT_SECS, cwd=dl)
    dsc = sorted(glob.glob(os.path.join(dl, f"memcached_{UPSTREAM_VERSION}-*.dsc")))
    if not dsc:
        sys.exit(f"apt-get source fetched no memcached {UPSTREAM_VERSION} (.dsc missing in {dl})")
    shutil.rmtree(tree, ignore_errors=True)
    run_checked(["dpkg-source", "-x", dsc[-1], tree], APT_TIMEOUT_SECS)
    return tree


def write_executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def make_builddir(kind, args, tree, out_dir):
    """A directory the suite takes for memcached's build tree, running the server under test
    (one per run's --out, so runs at once with other binaries do not share one)."""
    builddir = os.path.join(out_dir, f"builddir-{kind}")
    shutil.rmtree(builddir, ignore_errors=True)
    os.makedirs(builddir)
    os.symlink(os.path.join(tree, "t"), os.path.join(builddir, "t"))
    write_executable(os.path.join(builddir, "memcached-debug"), server_wrapper(kind, args))
    # timedrun SECS CMD...: the file timeout bounds the run; the server keeps the suite's pid.
    write_executable(os.path.join(builddir, "timedrun"), '#!/bin/sh\nshift\nexec "$@"\n')
    return builddir


def server_wrapper(kind, args):
    """The script the suite runs as memcached-debug. The suite always passes `-o
    relaxed_privileges`, a suboption only builds with privilege dropping know: Debian's
    memcached has none and refuses to start with it, so both wrappers leave that pair out
    (Spinel drops no privileges either). The server gets SIGTERM when the test that started
    it ends (PR_SET_PDEATHSIG): one a dying test leaves running would otherwise hold prove's
    pipes open, and prove would wait for it until the file timeout."""
    exe, first = (args.spinel, ["--resp-port", "0"]) if kind == "spinel" else (args.memcached, [])
    return ("#!/usr/bin/env python3\nimport ctypes, os, signal, sys\n"
            "PR_SET_PDEATHSIG = 1\n"
            "ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)\n"
            "args, i = sys.argv[1:], 0\n"
            "while i < len(args) - 1:\n"
            "    if args[i] == '-o' and args[i + 1] == 'relaxed_privileges':\n"
            "        del args[i:i + 2]\n"
            "    else:\n"
            "        i += 1\n"
            f"os.execv({exe!r}, [{exe!r}] + {first!r} + args)\n")


class FileRun:
    """What one test file's run on one server showed."""

    def __init__(self):
        self.results = {}  # assertion number -> (passed, description, diagnostics)
        self.planned = None
        self.skipped_all = None
        self.exit_status = None
        self.timed_out = False
        self.wall_secs = 0.0

    def passed(self):
        return sum(1 for ok, _, _ in self.results.values() if ok)

    def failed(self):
        return sorted(n for n, (ok, _, _) in self.results.items() if not ok)

    def ran_to_end(self):
        if self.timed_out:
            return "no: file timeout"
        if self.skipped_all is not None:
            return "skipped: " + self.skipped_all
        if self.planned is None:
            return f"no: no plan (exit {self.exit_status})"
        if len(self.results) < self.planned:
            return f"no: {len(self.results)} of {self.planned} reported (exit {self.exit_status})"
        if self.exit_status not in (0, min(len(self.failed()), 254)):
            return f"no: exit {self.exit_status}"
        return "yes"


def parse_tap(text, run):
    last = None
    for line in text.splitlines():
        line = line.rstrip()
        skipped = PROVE_SKIPPED.match(line)
        if skipped:
            run.skipped_all = skipped.group(1)[:80]
            continue
        plan = TAP_PLAN.match(line)
        if plan:
            run.planned = int(plan.group(1))
            if "# skip" in line.lower() or "# SKIP" in line:
                run.skipped_all = line.split("#", 1)[1].strip()[:80]
            continue
        result = TAP_RESULT.match(line)
        if result:
            last = int(result.group(2))
            run.results[last] = (result.group(1) == "ok", result.group(3) or "", [])
            continue
        if line.startswith("#") and last is not None and not run.results[last][0]:
            diags = run.results[last][2]
            if len(diags) < DIAG_LINES_KEPT:
                diags.append(line.lstrip("# ").rstrip())


def run_file(kind, name, builddir, args, out_dir):
    """One file under prove. Its output goes to the log file, not a pipe: a server a dying
    test leaves behind keeps its descriptors, and the run ends when prove does."""
    run = FileRun()
    started = time.monotonic()
    log_path = os.path.join(out_dir, f"{name}.{kind}.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(["prove", "-v", "--norc", f"t/{name}.t"], cwd=builddir,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=args.file_timeout)
        except subprocess.TimeoutExpired:
            run.timed_out = True
    kill_group(proc.pid)  # on a timeout the test too, else the servers it left behind
    proc.wait()
    run.wall_secs = time.monotonic() - started
    with open(log_path, errors="replace") as f:
        text = f.read()
    parse_tap(text, run)
    run.exit_status = test_exit_status(text)
    return run


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_exit_status(text):
    """The test script's own exit status as prove reports it (0 when it reports none)."""
    wstat = re.search(r"Wstat: (\d+)", text)
    if wstat and "Tests=" in text:
        status = int(wstat.group(1))
        return status >> 8 if status & 0xff == 0 else -(status & 0x7f)
    return 0


def test_files(tree, names):
    if names:
        return [n[:-2] if n.endswith(".t") else n for n in (os.path.basename(x) for x in names)]
    return sorted(os.path.basename(p)[:-2] for p in glob.glob(os.path.join(tree, "t", "*.t")))


def write_reports(results, out_dir):
    table = ["| file | passed on memcached | passed on Spinel | ran to end: memcached"
             " | ran to end: Spinel | Spinel secs |",
             "| --- | ---: | ---: | --- | --- | ---: |"]
    details, totals = [], {"memcached": [0, 0], "spinel": [0, 0]}
    for name, runs in results.items():
        cells = []
        for kind in ("memcached", "spinel"):
            run = runs.get(kind)
            if run:
                totals[kind][0] += run.passed()
                totals[kind][1] += run.passed() + len(run.failed())
            cells.append(run)
        mc, sp = cells
        table.append(f"| {name} | {mc.passed() if mc else '-'} | {sp.passed() if sp else '-'} | "
                     f"{mc.ran_to_end() if mc else '-'} | {sp.ran_to_end() if sp else '-'} | "
                     f"{f'{sp.wall_secs:.0f}' if sp else '-'} |")
        if sp and (sp.failed() or (mc and mc.passed() > sp.passed())):
            details.append(file_details(name, mc, sp))
    table.append(f"| **all** | {totals['memcached'][0]} of {totals['memcached'][1]} | "
                 f"{totals['spinel'][0]} of {totals['spinel'][1]} | | | |")
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write("\n".join(table) + "\n")
    with open(os.path.join(out_dir, "failures.md"), "w") as f:
        f.write("\n".join(details))
    print("\n".join(table))


def file_details(name, mc, sp):
    """Spinel's failed assertions: first those memcached passes, then those it fails too."""
    mc_passes = {n for n, (ok, _, _) in mc.results.items() if ok} if mc else set()
    only = [n for n in sp.failed() if n in mc_passes]
    both = [n for n in sp.failed() if n not in mc_passes]
    lines = [f"## {name}: {len(only)} pass on memcached, not on Spinel "
             f"(Spinel: {sp.ran_to_end()})", ""]
    for n in only:
        _, desc, diags = sp.results[n]
        lines.append(f"- {n} {desc}")
        lines += [f"  - {d}" for d in diags]
    if mc:
        unreported = [n for n in sorted(mc_passes) if n not in sp.results]
        if unreported:
            lines.append(f"- never reported on Spinel: {len(unreported)} assertion(s) from "
                         f"{unreported[0]}")
    if both:
        lines += ["", "Failing on memcached too: " + ", ".join(map(str, both))]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--spinel", default=os.path.join(REPO, "target/release/spinel"))
    ap.add_argument("--memcached", default="/usr/bin/memcached")
    ap.add_argument("--servers", default="memcached,spinel",
                    help="which of memcached,spinel to run")
    ap.add_argument("--file-timeout", type=int, default=300,
                    help="seconds for one test file on one server")
    ap.add_argument("--jobs", type=int, default=4, help="test files run at once")
    ap.add_argument("--cache", default=os.path.join(REPO, ".cache/memcached-tests"))
    ap.add_argument("--out", default=None, help="default: CACHE/results")
    args = ap.parse_args()
    args.spinel = os.path.abspath(args.spinel)
    cache = os.path.abspath(args.cache)
    out_dir = os.path.abspath(args.out or os.path.join(cache, "results"))
    os.makedirs(out_dir, exist_ok=True)
    tree = fetch_suite(cache)
    kinds = [k for k in args.servers.split(",") if k]
    builddirs = {kind: make_builddir(kind, args, tree, out_dir) for kind in kinds}
    names = test_files(tree, args.files)
    results = {name: {} for name in names}
    def report(name, kind, run):
        results[name][kind] = run
        print(f"{name} on {kind}: {run.passed()} passed, {len(run.failed())} failed, "
              f"ran to end: {run.ran_to_end()} ({run.wall_secs:.0f}s)", file=sys.stderr)

    parallel = [name for name in names if name not in FIXED_PORT_FILES]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_file, kind, name, builddirs[kind], args, out_dir):
                   (name, kind) for name in parallel for kind in kinds}
        for fut in concurrent.futures.as_completed(futures):
            report(*futures[fut], fut.result())
    # Files that start servers on fixed ports (11211, 11212...) run alone, one server after
    # the other, once the rest is done: run beside each other they would take each other's.
    for name in (name for name in names if name in FIXED_PORT_FILES):
        for kind in kinds:
            report(name, kind, run_file(kind, name, builddirs[kind], args, out_dir))
    write_reports(results, out_dir)


if __name__ == "__main__":
    main()
