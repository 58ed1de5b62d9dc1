"""The operator's files in contrib/: the systemd unit passes systemd's own check, and its
ExecStart and ExecReload, run as systemd would run them (NOTIFY_SOCKET set, the example
configuration file in place of /etc/spinel/spinel.toml), start a server that reports ready,
reloads and stops cleanly (spinel only)."""

import configparser
import os
import shlex
import shutil
import signal
import subprocess

import pytest

from conftest import free_port, spinel_bin
from test_service import Notified

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
