"""spinel's command line: --help, refusal of bad values, accepted memcached compatibility
flags, the TOML config file, and SIGTERM (spinel only; these run once, not per matrix entry)."""

import os
import signal
import subprocess

import pytest

from conftest import DEFAULT_MATRIX, Server, free_port, spinel_bin
from wire import Conn

pytestmark = pytest.mark.spinel_only

FLAGS = ["-p", "-l", "-m", "-c", "-t", "-I", "-M", "-C", "-v", "-u", "-U", "-o", "-F", "-B",
         "-b", "-R", "-A", "--resp-port", "--io", "--pin", "--busy-poll-us", "--idle-timeout",
         "--config"]


def first_io():
    entry = os.environ.get("SPINEL_MATRIX", DEFAULT_MATRIX).split(",")[0]
    return entry.partition(":")[0].strip() or "epoll"


def base_args(mc_port=None, resp_port=None):
    return [spinel_bin(), "-p", str(mc_port or free_port()),
            "--resp-port", str(resp_port or free_port()),
            "-l", "127.0.0.1", "-t", "1", "--io", first_io(), "-m", "64"]


def run(argv, timeout=5):
    return subprocess.run(argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_help_mentions_every_flag():
    out = run([spinel_bin(), "--help"])
    assert out.returncode == 0, out
    text = out.stdout.decode() + out.stderr.decode()
    missing = [f for f in FLAGS if f not in text]
    assert not missing, f"--help does not mention {missing}"


@pytest.mark.parametrize(
    "flags, word",
    [
        (["-c", "0"], "-c"),
        (["-t", "0"], "-t"),
        (["-l", "nonsense"], "nonsense"),
        (["-o", "unknown_option=1"], "unknown_option"),
        (["-p", "notaport"], "notaport"),
        (["-m", "-5"], "-m"),
        (["--io", "kqueue"], "kqueue"),
    ],
    ids=["c0", "t0", "listen", "o-unknown", "port", "mem", "io"],
)
def test_invalid_values_exit_nonzero(flags, word):
    out = run(base_args() + flags)
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode != 0, f"accepted {flags}; stderr: {err}"
    assert err.strip(), "no message on stderr"
    assert word.lstrip("-") in err or word in err, f"message does not name {word!r}: {err}"


def start(argv, mc_port, resp_port):
    return Server("spinel", argv, mc_port, resp_port).wait_ready()


def test_slab_reassign_accepted_with_warning():
    mc, resp = free_port(), free_port()
    server = start(base_args(mc, resp) + ["-o", "slab_reassign"], mc, resp)
    try:
        with Conn(mc) as c:
            c.rt(b"mn\r\n", b"MN\r\n")
        assert "slab_reassign" in server.stderr(), server.describe()
    finally:
        assert server.stop() == 0


def test_udp_off_accepted():
    mc, resp = free_port(), free_port()
    server = start(base_args(mc, resp) + ["-U", "0"], mc, resp)
    try:
        with Conn(mc) as c:
            c.rt(b"mn\r\n", b"MN\r\n")
    finally:
        server.cleanup()


def test_toml_config_file(tmp_path):
    mc, resp = free_port(), free_port()
    config = tmp_path / "spinel.toml"
    config.write_text(
        f'port = {mc}\n'
        f'resp-port = {resp}\n'
        f'listen = "127.0.0.1"\n'
        f'memory-limit = 32\n'
        f'conn-limit = 100\n'
        f'threads = 1\n'
        f'max-item-size = "2k"\n'
        f'io = "{first_io()}"\n'
        f'idle-timeout = 0\n'
    )
    server = start([spinel_bin(), "--config", str(config)], mc, resp)
    try:
        with Conn(mc) as c:
            c.send(b"stats\r\n")
            stats = c.read_until(b"END\r\n")
            assert b"STAT limit_maxbytes %d\r\n" % (32 * 1024 * 1024) in stats
            assert b"STAT threads 1\r\n" in stats
            c.rt(b"set big 0 0 4096\r\n" + b"x" * 4096 + b"\r\n",
                 b"SERVER_ERROR object too large for cache\r\n")
        with Conn(resp) as c:
            c.rt(b"PING\r\n", b"+PONG\r\n")
    finally:
        server.cleanup()


def test_command_line_overrides_config(tmp_path):
    mc, resp, other = free_port(), free_port(), free_port()
    config = tmp_path / "spinel.toml"
    config.write_text(f'port = {other}\nresp-port = {resp}\nlisten = "127.0.0.1"\n')
    server = start([spinel_bin(), "--config", str(config), "-p", str(mc),
                    "--io", first_io(), "-t", "1"], mc, resp)
    try:
        with Conn(mc) as c:
            c.rt(b"mn\r\n", b"MN\r\n")
    finally:
        server.cleanup()


def test_bad_config_file_exits_nonzero(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("port = [not toml\n")
    out = run([spinel_bin(), "--config", str(config)])
    assert out.returncode != 0 and out.stderr.strip()
    out = run([spinel_bin(), "--config", str(tmp_path / "missing.toml")])
    assert out.returncode != 0 and out.stderr.strip()


def test_sigterm_exits_zero():
    mc, resp = free_port(), free_port()
    server = start(base_args(mc, resp), mc, resp)
    with Conn(mc) as c:
        c.rt(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n")
    server.signal(signal.SIGTERM)
    assert server.proc.wait(5) == 0, server.describe()
    server.cleanup()
