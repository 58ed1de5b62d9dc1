"""Runs a client check program (tests/clients/*) against a server and reads its verdict.

Each program prints "ok NAME" or "FAIL NAME: ..." per scenario, then "N passed, N failed",
and exits 1 when any scenario failed.
"""

import os
import re
import subprocess

import pytest

CLIENTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients")
RUN_TIMEOUT_S = 120


def client_dir(name):
    return os.path.join(CLIENTS_DIR, name)


def run_check(argv, cwd):
    """Run `argv` in `cwd`; fail the test on any FAIL line, a bad exit or a missing summary."""
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{argv[0]} ran past {RUN_TIMEOUT_S}s; its output so far:\n{exc.stdout}")
    out = proc.stdout + proc.stderr
    lines = out.splitlines()
    failures = [line for line in lines if line.startswith("FAIL ")]
    assert proc.returncode == 0 and not failures, out
    oks = [line for line in lines if line.startswith("ok ")]
    summary = re.search(r"^(\d+) passed, (\d+) failed$", out, re.M)
    assert summary and int(summary[1]) == len(oks) > 0 and summary[2] == "0", out
    return oks
