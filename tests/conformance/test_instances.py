"""Several instances per host from the templated unit contrib/spinel@.service: the unit passes
systemd's own check, and three instances started from its ExecStart line (as systemd runs it:
%i filled in, NOTIFY_SOCKET set, one configuration file each, made from contrib/spinel.toml
with the instance's own ports) each report ready, serve their own ports and their own data,
and stop independently (SIGTERM by pid) while the others keep serving (spinel only)."""

import configparser
import os
import re
import shlex
import shutil
import signal
import subprocess

import pytest

from conftest import free_port, spinel_bin
from test_service import Notified
from wire import Conn

pytestmark = pytest.mark.spinel_only

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEMPLATE = os.path.join(ROOT, "contrib", "spinel@.service")
SINGLE = os.path.join(ROOT, "contrib", "spinel.service")
EXAMPLE_CONFIG = os.path.join(ROOT, "contrib", "spinel.toml")
INSTALLED_BIN = "/usr/local/bin/spinel"
CONFIG_DIR = "/etc/spinel"


def service_section(path):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    with open(path) as f:
        parser.read_file(f)
    return parser["Service"]


def test_template_passes_systemd_analyze_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (scripts/install-test-deps installs it)")
    text = open(TEMPLATE).read().replace(INSTALLED_BIN, spinel_bin())
    (tmp_path / "spinel@.service").write_text(text)
    # An instance of the template, as `systemctl start spinel@21211` would load it.
    result = subprocess.run(["systemd-analyze", "verify", "--man=no",
                             str(tmp_path / "spinel@21211.service")],
                            capture_output=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr.decode().strip() == "", result.stderr.decode()


def test_template_is_the_single_unit_per_instance():
    template, single = service_section(TEMPLATE), service_section(SINGLE)
    assert template["Type"] == "notify"
    argv = shlex.split(template["ExecStart"])
    assert argv == [INSTALLED_BIN, "--config", f"{CONFIG_DIR}/%i.toml"], argv
    assert "%i" in template["RuntimeDirectory"] and "%i" in template["SyslogIdentifier"]
    # The same service settings (readiness, reload, stop, hardening) as the single unit.
    for key in single:
        if key != "ExecStart":
            assert template.get(key) == single[key], key


def instance_config(directory, name, mc_port, resp_port):
    """/etc/spinel/NAME.toml: the example file with this instance's ports, one loop."""
    text = open(EXAMPLE_CONFIG).read()
    text, ports = re.subn(r"(?m)^port = 11211$", f"port = {mc_port}", text)
    text, resps = re.subn(r"(?m)^resp-port = 6379$", f"resp-port = {resp_port}", text)
    assert (ports, resps) == (1, 1), "contrib/spinel.toml no longer names both ports"
    text = text.replace("# threads = 4", "threads = 1")
    with open(os.path.join(directory, f"{name}.toml"), "w") as f:
        f.write(text)


def exec_start_argv(name, config_dir):
    """The template's ExecStart for instance `name`, with %i filled in as systemd does."""
    line = service_section(TEMPLATE)["ExecStart"].replace("%i", name)
    argv = [spinel_bin() if a == INSTALLED_BIN else a for a in shlex.split(line)]
    return [a.replace(CONFIG_DIR, str(config_dir)) for a in argv]


def serves(instance, key):
    """Both of the instance's ports answer, and each sees only its own instance's key."""
    with Conn(instance["mc"]) as mc:
        mc.send(b"get shared-key\r\n")
        reply = mc.read_until(b"END\r\n")
        assert reply.endswith(f"{key}\r\nEND\r\n".encode()), reply
    with Conn(instance["resp"]) as resp:
        resp.send(b"*2\r\n$3\r\nGET\r\n$10\r\nshared-key\r\n")
        assert resp.read_until(b"\r\n" + key.encode() + b"\r\n").endswith(key.encode() + b"\r\n")


def start_instances(config_dir, count):
    instances = []
    for _ in range(count):
        mc, resp = free_port(), free_port()
        # Named after their memcached port, as operators often name memcached@ instances.
        name = str(mc)
        instance_config(config_dir, name, mc, resp)
        server = Notified(argv=exec_start_argv(name, config_dir))
        instances.append({"name": name, "mc": mc, "resp": resp, "server": server})
    return instances


def test_three_instances_start_serve_and_stop_independently(tmp_path):
    instances = start_instances(tmp_path, 3)
    try:
        for instance in instances:
            instance["server"].wait_for("READY=1")
            # Each instance's own value under one key: the stores are separate.
            with Conn(instance["mc"]) as mc:
                value = instance["name"].encode()
                mc.send(b"set shared-key 0 0 %d\r\n%s\r\n" % (len(value), value))
                assert mc.read_until(b"\r\n") == b"STORED\r\n"
        for instance in instances:
            serves(instance, instance["name"])
        first, middle, last = instances
        for stopping, still in ((middle, (first, last)), (first, (last,)), (last, ())):
            stopping["server"].proc.send_signal(signal.SIGTERM)
            stopping["server"].wait_for("STOPPING=1")
            assert stopping["server"].proc.wait(10) == 0
            with pytest.raises(ConnectionRefusedError):
                Conn(stopping["mc"]).close()
            for instance in still:
                assert instance["server"].proc.poll() is None
                serves(instance, instance["name"])
    finally:
        for instance in instances:
            instance["server"].close()
