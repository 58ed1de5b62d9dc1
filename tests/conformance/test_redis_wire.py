"""Raw RESP on the Redis port: inline commands, redis-cli, protocol errors, HELLO, pipelining.

The exact replies are what redis-server 7.0 sends (validated with CONFORMANCE_TARGET=redis).
"""

import shutil
import subprocess

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def test_inline_commands(c, key):
    k = key.encode()
    c.rt(b"PING\r\n", b"+PONG\r\n")
    c.rt(b"ping\n", b"+PONG\r\n")  # a bare LF ends an inline command too
    c.rt(b"SET " + k + b" b\r\n", b"+OK\r\n")
    c.rt(b"GET " + k + b"\r\n", b"$1\r\nb\r\n")
    c.rt(b"set " + k + b' "hello world"\r\n', b"+OK\r\n")
    c.rt(b"get " + k + b"\r\n", b"$11\r\nhello world\r\n")
    c.rt(b"get " + k + b"_missing\r\n", b"$-1\r\n")
    c.rt(b"\r\n", b"")  # an empty line is ignored
    c.rt(b"PING\r\n", b"+PONG\r\n")


def test_multibulk_commands(c, key):
    c.rt(resp_encode("SET", key, "x\r\ny"), b"+OK\r\n")
    c.rt(resp_encode("GET", key), b"$4\r\nx\r\ny\r\n")
    c.rt(resp_encode("DEL", key, key), b":1\r\n")
    c.rt(b"*0\r\n" + resp_encode("PING"), b"+PONG\r\n")  # an empty array is skipped


def test_unknown_command_and_arity_wording(c):
    c.rt(b"NOSUCH x y\r\n",
         b"-ERR unknown command 'NOSUCH', with args beginning with: 'x' 'y' \r\n")
    c.rt(resp_encode("nosuch"), b"-ERR unknown command 'nosuch', with args beginning with: \r\n")
    c.rt(b"get\r\n", b"-ERR wrong number of arguments for 'get' command\r\n")
    c.rt(resp_encode("GET", "a", "b"), b"-ERR wrong number of arguments for 'get' command\r\n")
    c.rt(resp_encode("SET", "a"), b"-ERR wrong number of arguments for 'set' command\r\n")


@pytest.mark.parametrize(
    "request_bytes, reply",
    [
        (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*1\r\n$abc\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$600000000\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*2\r\n$3\r\nGET\r\n:1\r\n", b"-ERR Protocol error: expected '$', got ':'\r\n"),
        (b'set a "b\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
    ],
    ids=["multibulk-len", "bulk-len", "bulk-too-big", "expected-dollar", "unbalanced-quotes"],
)
def test_protocol_errors_close(c, request_bytes, reply):
    c.send(request_bytes)
    assert c.read_all_until_close(5.0) == reply


def test_hello(c):
    c.send(b"HELLO 3\r\n")
    head = c.read_line()
    assert head.startswith(b"%")  # a RESP3 map
    # Read the map's entries (bulk keys; values are bulk, integer or array).
    fields = {}
    for _ in range(int(head[1:-2])):
        assert c.read_line().startswith(b"$")
        name = c.read_line()[:-2]
        vline = c.read_line()
        if vline.startswith(b"$"):
            value = c.read_line()[:-2]
        elif vline.startswith(b":"):
            value = int(vline[1:-2])
        elif vline.startswith(b"*"):
            for _ in range(int(vline[1:-2])):
                c.read_line()
            value = []
        else:
            raise AssertionError(vline)
        fields[name] = value
    assert fields[b"proto"] == 3
    for name in (b"server", b"version", b"id", b"mode", b"role", b"modules"):
        assert name in fields
    # RESP3 from here on: a missing value is `_`.
    c.rt(resp_encode("GET", "hello-missing-key"), b"_\r\n")
    c.send(b"HELLO 2\r\n")
    assert c.read_line() == b"*14\r\n"
    for _ in range(13):
        c.read_line()
    c.read_until(b"*0\r\n")
    c.rt(resp_encode("GET", "hello-missing-key"), b"$-1\r\n")


def test_hello_unsupported_version(c):
    c.rt(b"HELLO 4\r\n", b"-NOPROTO unsupported protocol version\r\n")
    c.rt(b"PING\r\n", b"+PONG\r\n")


def test_pipeline_1000_commands_one_write(c, key):
    req = b"".join(resp_encode("INCR", key) for _ in range(1000))
    expect = b"".join(b":%d\r\n" % i for i in range(1, 1001))
    c.rt(req, expect)
    inline = b"".join(b"GET " + key.encode() + b"\r\n" for _ in range(1000))
    c.rt(inline, b"$4\r\n1000\r\n" * 1000)


def redis_cli(port, *args, timeout=5):
    exe = shutil.which("redis-cli") or pytest.skip("redis-cli not installed")
    return subprocess.run([exe, "-h", "127.0.0.1", "-p", str(port), *args],
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_redis_cli(resp_port, key):
    out = redis_cli(resp_port, "set", key, "v")
    assert out.returncode == 0 and out.stdout == b"OK\n", out
    out = redis_cli(resp_port, "--no-raw", "get", key)
    assert out.stdout == b'"v"\n', out
    out = redis_cli(resp_port, "get", key)
    assert out.stdout == b"v\n", out
    out = redis_cli(resp_port, "--no-raw", "incr", key + "_n")
    assert out.stdout == b"(integer) 1\n", out
    out = redis_cli(resp_port, "--no-raw", "get", key + "_missing")
    assert out.stdout == b"(nil)\n", out
    out = redis_cli(resp_port, "-3", "--no-raw", "get", key + "_missing")
    assert out.stdout == b"(nil)\n", out
    out = redis_cli(resp_port, "--no-raw", "nosuchcmd")
    assert out.stdout.startswith(b"(error) ERR unknown command"), out
