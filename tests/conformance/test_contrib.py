"""The operator's files in contrib/: the systemd unit passes systemd's own check, and its
ExecStart and ExecReload, run as systemd would run them (NOTIFY_SOCKET set, the example
configuration file in place of /etc/spinel/spinel.toml), start a server that reports ready,
reloads and stops cleanly (spinel only). The seccomp profile has the container runtimes'
format and allows every system call the server makes under a workload (strace)."""

import configparser
import json
import os
import re
import shlex
import shutil
import signal
import subprocess

import pytest

from conftest import free_port, spinel_bin
from test_service import Notified
import seccomp_workload

pytestmark = pytest.mark.spinel_only

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
UNIT = os.path.join(ROOT, "contrib", "spinel.service")
EXAMPLE_CONFIG = os.path.join(ROOT, "contrib", "spinel.toml")
INSTALLED_BIN = "/usr/local/bin/spinel"
INSTALLED_CONFIG = "/etc/spinel/spinel.toml"


def unit_service_section():
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    with open(UNIT) as f:
        parser.read_file(f)
    return parser["Service"]


def test_unit_passes_systemd_analyze_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (scripts/install-test-deps installs it)")
    unit = tmp_path / "spinel.service"
    # verify checks that ExecStart's program exists: point it at the binary under test.
    unit.write_text(open(UNIT).read().replace(INSTALLED_BIN, spinel_bin()))
    result = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)],
                            capture_output=True, timeout=60)
    # systemd reports unknown keys and bad values as warnings with exit status 0.
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr.decode().strip() == "", result.stderr.decode()


def test_unit_is_type_notify_with_reload():
    service = unit_service_section()
    assert service["Type"] == "notify"
    assert "-HUP $MAINPID" in service["ExecReload"]
    assert shlex.split(service["ExecStart"])[0] == INSTALLED_BIN


def exec_start_argv():
    """The unit's ExecStart with the binary under test and the example configuration; the
    ports are moved off the defaults (flags override the file) so tests can run side by side."""
    argv = shlex.split(unit_service_section()["ExecStart"])
    argv = [spinel_bin() if a == INSTALLED_BIN else a for a in argv]
    argv = [EXAMPLE_CONFIG if a == INSTALLED_CONFIG else a for a in argv]
    return argv + ["-p", str(free_port()), "--resp-port", str(free_port()), "-l", "127.0.0.1"]


def test_unit_commands_start_reload_and_stop_the_server():
    server = Notified(argv=exec_start_argv())
    try:
        server.wait_for("READY=1")
        reload = unit_service_section()["ExecReload"].replace("$MAINPID", str(server.proc.pid))
        subprocess.run(shlex.split(reload), check=True, timeout=10)
        server.wait_for("RELOADING=1")
        server.wait_for("READY=1")
        assert server.proc.poll() is None, "the server exited on reload"
        server.proc.send_signal(signal.SIGTERM)
        server.wait_for("STOPPING=1")
        assert server.proc.wait(10) == 0
    finally:
        server.close()


# ------------------------------------------------------------------------------------------
# contrib/seccomp-io-uring.json: a container profile that allows io_uring


SECCOMP_PROFILE = os.path.join(ROOT, "contrib", "seccomp-io-uring.json")
SECCOMP_ACTIONS = {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
                   "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP", "SCMP_ACT_TRACE", "SCMP_ACT_LOG"}
SECCOMP_ARCHES = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64",
                  "SCMP_ARCH_ARM"}
# The kernel's syscall tables as the headers have them: x86_64's own, and the generic one
# aarch64 uses.
SYSCALL_TABLES = {"x86_64": "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
                  "aarch64": "/usr/include/asm-generic/unistd.h"}


def seccomp_profile():
    with open(SECCOMP_PROFILE) as f:
        return json.load(f)


def allowed_syscalls(profile):
    """Names allowed unconditionally (no argument filter, no arch include/exclude)."""
    allowed = set()
    for rule in profile["syscalls"]:
        if rule["action"] == "SCMP_ACT_ALLOW" and not set(rule) & {"args", "includes",
                                                                    "excludes"}:
            allowed.update(rule["names"])
    return allowed


def test_seccomp_profile_has_the_runtime_format():
    profile = seccomp_profile()
    assert set(profile) <= {"comment", "defaultAction", "defaultErrnoRet", "archMap", "syscalls"}
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    assert profile["defaultErrnoRet"] == 1  # EPERM, as the runtimes' default profiles refuse
    for entry in profile["archMap"]:
        assert entry["architecture"] in SECCOMP_ARCHES
        assert set(entry["subArchitectures"]) <= SECCOMP_ARCHES
    names = []
    for rule in profile["syscalls"]:
        assert set(rule) <= {"names", "action", "comment", "errnoRet", "args", "includes",
                             "excludes"}, rule
        assert rule["action"] in SECCOMP_ACTIONS, rule
        assert rule["names"] and all(re.fullmatch(r"[a-z0-9_]+", n) for n in rule["names"])
        names += rule["names"]
    assert len(names) == len(set(names)), "a syscall is listed twice"
    assert {"io_uring_setup", "io_uring_enter", "io_uring_register"} <= allowed_syscalls(profile)


def test_seccomp_profile_names_real_syscalls():
    """Every name is a syscall of x86_64 or aarch64 (a runtime skips the names an
    architecture lacks, but a misspelt one would be skipped everywhere)."""
    tables = [t for t in SYSCALL_TABLES.values() if os.path.exists(t)]
    if not tables:
        pytest.skip("no kernel syscall headers (linux-libc-dev)")
    known = set()
    for table in tables:
        with open(table) as f:
            known.update(re.findall(r"#define __NR(?:3264)?_(\w+)", f.read()))
    names = {n for rule in seccomp_profile()["syscalls"] for n in rule["names"]}
    assert sorted(names - known) == []


def strace_usable():
    if shutil.which("strace") is None:
        return "strace is not installed (scripts/install-test-deps installs it)"
    probe = subprocess.run(["strace", "-f", "-o", "/dev/null", "true"], capture_output=True,
                           timeout=30)
    if probe.returncode != 0:
        return f"strace cannot trace here: {probe.stderr.decode().strip()}"
    return None


def strace_counted_syscalls(path):
    """The syscall names of an `strace -c` table."""
    names = set()
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 5 and re.fullmatch(r"[a-z0-9_]+", fields[-1]) and \
                    fields[-1] not in ("syscall", "total"):
                names.add(fields[-1])
    return names


@pytest.mark.parametrize("io", ["uring", "epoll"])
def test_seccomp_profile_allows_every_syscall_the_server_makes(io, tmp_path):
    """The server, run under strace through a workload of both protocols, TCP and UDP,
    snapshots, metrics, a reload and a stop, calls nothing the profile would refuse."""
    why_not = strace_usable()
    if why_not:
        pytest.skip(why_not)
    import conftest
    if io == "uring" and not conftest._uring_usable():
        pytest.skip("spinel cannot use io_uring on this machine")
    argv, ports = seccomp_workload.server_argv(spinel_bin(), io, tmp_path)
    counts = tmp_path / "strace.txt"
    with open(tmp_path / "stderr.txt", "wb") as err:
        proc = subprocess.Popen(["strace", "-f", "-c", "-o", str(counts)] + argv,
                                stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        try:
            seccomp_workload.run_all(proc, ports, tmp_path)
        finally:
            if proc.poll() is None:
                pid_file = tmp_path / "spinel.pid"
                if pid_file.exists():
                    os.kill(int(pid_file.read_text()), signal.SIGKILL)
                proc.wait(10)
    called = strace_counted_syscalls(counts)
    assert "accept4" in called or io == "uring", called  # the table was read
    if io == "uring":
        assert "io_uring_enter" in called, called
    else:
        assert "epoll_wait" in called or "epoll_pwait" in called, called
    assert sorted(called - allowed_syscalls(seccomp_profile())) == []
