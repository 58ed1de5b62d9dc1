#!/usr/bin/env python3
"""redis-py's own test suite (the tests/ of the redis-py release scripts/install-test-deps pins)
against redis-server and against Spinel, and the tests that pass on the first but not on the
second.

    scripts/redis_py_suite.py [--servers redis,spinel] [--spinel target/release/spinel]
        [--redis redis-server] [--files test_commands.py,...] [--test-timeout 30]
        [--run-timeout 900] [--out DIR] [-k EXPR] [--sync-only]

The suite is the sdist of redis-py (PyPI's redis-X.tar.gz carries tests/), fetched once with
`pip download` into .cache/redis-py (gitignored) and run from its own tree, so the client under
test is that release. pytest, pytest-timeout, pytest-asyncio and packaging go into a venv of their own,
.cache/redis-py/venv, not the conformance suite's. Not for CI: it needs the package registry the
first time and takes minutes.

Each server runs once, fresh, on a free port, with DEBUG allowed (as redis-py's CI runs its
server); the suite reads it from --redis-url. The sync half (tests/) and its asyncio twin
(tests/test_asyncio, --sync-only leaves it out) both run. Left out on both servers alike: what
needs a cluster (test_cluster, `onlycluster`), sentinels (test_sentinel*), TLS (test_ssl,
`ssl`), a replica (`replica`), Redis modules (test_bloom, test_graph, test_json, test_search,
test_timeseries, `redismod`, `graph`; the rest skip themselves through skip_ifmodversion_lt
when the server lists no module). A few tests connect to localhost:6379 whatever
--redis-url says and fail on both. Every test is bounded by --test-timeout (pytest-timeout),
the whole run by --run-timeout.

Prints per server passed/failed/skipped/errors and the tests failing on Spinel that pass on
redis-server, each with the first line of its failure; writes SERVER.xml (JUnit), SERVER.log
(pytest's output) and SERVER.server.log into --out (default .cache/redis-py/results).
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET

from resp_servers import free_port, ping, start_server

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(REPO, ".cache", "redis-py")
PIP_TIMEOUT_SECS = 300
# The suite's own runner: the pytest the conformance suite pins, pytest-timeout to bound each
# test, packaging (the suite's conftest compares server versions with it).
# pytest-asyncio runs the asyncio half (tests/test_asyncio), in its `auto` mode as redis-py's
# own pytest.ini sets it (the sdist leaves that file out).
RUNNER_PINS = ["pytest==8.3.5", "pytest-timeout==2.4.0", "packaging==24.2",
               "pytest-asyncio==0.23.8"]
LEFT_OUT_FILES = ["test_cluster.py", "test_sentinel.py", "test_ssl.py", "test_bloom.py",
                  "test_graph.py", "test_json.py", "test_search.py", "test_timeseries.py",
                  "test_sentinel_managed_connection.py"]
LEFT_OUT_MARKS = "not onlycluster and not redismod and not graph and not ssl and not replica"


def pinned_redis_py():
    """The redis-py version scripts/install-test-deps pins."""
    text = open(os.path.join(REPO, "scripts", "install-test-deps")).read()
    found = re.search(r"\bredis==([0-9][0-9.]*)", text)
    if not found:
        sys.exit("scripts/install-test-deps pins no redis==X")
    return found.group(1)


def run_checked(cmd, timeout_secs=PIP_TIMEOUT_SECS, **kw):
    print("+ " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, timeout=timeout_secs, **kw)


def ensure_venv():
    venv = os.path.join(CACHE, "venv")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        run_checked([sys.executable, "-m", "venv", venv])
    probe = ("import importlib.metadata as m, sys\n"
             "pins = [p.split('==') for p in sys.argv[1:]]\n"
             "def have(n):\n"
             "    try: return m.version(n)\n"
             "    except m.PackageNotFoundError: return None\n"
             "print(' '.join(f'{n}=={v}' for n, v in pins if have(n) != v))")
    stale = subprocess.run([python, "-c", probe, *RUNNER_PINS], capture_output=True,
                           text=True, timeout=60).stdout.split()
    if stale:
        run_checked([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                     *stale])
    return python


def ensure_suite(version, python):
    """The unpacked sdist (its tests/ and the redis package they import), fetched on first use
    with the runner venv's pip."""
    tree = os.path.join(CACHE, f"redis-{version}")
    if os.path.exists(os.path.join(tree, "tests", "conftest.py")):
        return tree
    os.makedirs(CACHE, exist_ok=True)
    sdist = os.path.join(CACHE, f"redis-{version}.tar.gz")
    if not os.path.exists(sdist):
        run_checked([python, "-m", "pip", "download", "-q", "--no-deps",
                     "--no-binary", ":all:", "--disable-pip-version-check",
                     f"redis=={version}", "-d", CACHE])
    with tarfile.open(sdist) as tar:
        tar.extractall(CACHE, filter="data")
    if not os.path.exists(os.path.join(tree, "tests", "conftest.py")):
        sys.exit(f"{sdist} has no tests/conftest.py")
    return tree






def server_cmd(kind, args, port, workdir):
    # DEBUG is on, as in redis-py's own CI: the tests of busy-loading, read-only and OOM replies
    # make the server send them with DEBUG ERROR.
    if kind == "spinel":
        conf = os.path.join(workdir, "redis.conf")
        with open(conf, "w") as f:
            f.write("enable-debug-command yes\n")
        return [args.spinel, "-p", "0", "--resp-port", str(port), "-l", "127.0.0.1",
                "-t", "2", "-m", "256", "--dir", workdir, "--redis-conf", conf]
    return [args.redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", workdir, "--daemonize", "no",
            "--enable-debug-command", "yes"]




def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def pytest_cmd(python, args, port, xml_path):
    url = f"redis://127.0.0.1:{port}/0"
    cmd = [python, "-m", "pytest", "-q", "-rN", "-p", "no:cacheprovider",
           "--redis-url", url, "--redis-mod-url", url, "-m", LEFT_OUT_MARKS,
           "--timeout", str(args.test_timeout), "--junitxml", xml_path]
    cmd += ["-o", "asyncio_mode=auto"]
    for name in LEFT_OUT_FILES:
        cmd += ["--ignore", os.path.join("tests", name)]
        cmd += ["--ignore", os.path.join("tests", "test_asyncio", name)]
    if args.sync_only:
        cmd += ["--ignore", os.path.join("tests", "test_asyncio")]
    if args.k:
        cmd += ["-k", args.k]
    files = [os.path.join("tests", f) for f in args.files.split(",")] if args.files else ["tests"]
    return cmd + files


def run_suite(kind, args, python, tree):
    port = free_port()
    workdir = os.path.join(args.out, f"{kind}.dir")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    server = start_server(kind, server_cmd(kind, args, port, workdir), port,
                          os.path.join(args.out, f"{kind}.server.log"))
    xml_path = os.path.join(args.out, f"{kind}.xml")
    if os.path.exists(xml_path):
        os.remove(xml_path)
    started = time.monotonic()
    try:
        with open(os.path.join(args.out, f"{kind}.log"), "wb") as log:
            runner = subprocess.Popen(pytest_cmd(python, args, port, xml_path), cwd=tree,
                                      stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
            try:
                runner.wait(timeout=args.run_timeout)
            except subprocess.TimeoutExpired:
                stop(runner)
                print(f"{kind}: the run outlasted --run-timeout {args.run_timeout}s",
                      file=sys.stderr)
        alive = server.poll() is None and ping(port)
    finally:
        stop(server)
    wall = time.monotonic() - started
    return read_junit(xml_path), alive, wall


def read_junit(xml_path):
    """{test id: (outcome, first line of the failure)}; outcome passed/failed/error/skipped."""
    results = {}
    if not os.path.exists(xml_path):
        return results
    for case in ET.parse(xml_path).iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        outcome, detail = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                detail = (child.get("message") or child.text or "").strip().split("\n")[0]
                break
        results[name] = (outcome, detail[:200])
    return results


def counts(results):
    tally = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for outcome, _ in results.values():
        tally[outcome] += 1
    return tally


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", default="redis,spinel")
    parser.add_argument("--spinel", default=os.path.join(REPO, "target", "release", "spinel"))
    parser.add_argument("--redis", default=shutil.which("redis-server") or "redis-server")
    parser.add_argument("--files", default="",
                        help="comma-separated files under tests/ (default: all but those left out)")
    parser.add_argument("-k", default="", help="pytest -k expression")
    parser.add_argument("--sync-only", action="store_true",
                        help="leave out the asyncio half (tests/test_asyncio)")
    parser.add_argument("--test-timeout", type=int, default=30)
    parser.add_argument("--run-timeout", type=int, default=900)
    parser.add_argument("--out", default=os.path.join(CACHE, "results"))
    args = parser.parse_args()
    args.out = os.path.abspath(args.out)
    args.spinel = os.path.abspath(args.spinel)
    os.makedirs(args.out, exist_ok=True)
    python = ensure_venv()
    tree = ensure_suite(pinned_redis_py(), python)
    runs = {}
    for kind in args.servers.split(","):
        results, alive, wall = run_suite(kind, args, python, tree)
        runs[kind] = results
        tally = counts(results)
        print(f"{kind}: {tally['passed']} passed, {tally['failed']} failed, "
              f"{tally['error']} errors, {tally['skipped']} skipped of {len(results)} "
              f"in {wall:.0f}s; server {'alive' if alive else 'DOWN'} at the end")
    if "redis" in runs and "spinel" in runs:
        behind = [(name, runs["spinel"].get(name, ("not run", ""))[1] or
                   runs["spinel"].get(name, ("not run", ""))[0])
                  for name, (outcome, _) in sorted(runs["redis"].items())
                  if outcome == "passed" and runs["spinel"].get(name, ("",))[0] != "passed"]
        print(f"\n{len(behind)} pass on redis-server but not on Spinel:")
        for name, why in behind:
            print(f"  {name}: {why}")


if __name__ == "__main__":
    main()
