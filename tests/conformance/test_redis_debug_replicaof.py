"""DEBUG ERROR behind `enable-debug-command`, and REPLICAOF / SLAVEOF NO ONE, as
redis-server 7.0 answers them (these pass with CONFORMANCE_TARGET=redis). redis-py's own test
suite makes the server send LOADING, READONLY and OOM errors with DEBUG ERROR, and promotes
its server with REPLICAOF NO ONE.

Spinel runs no other DEBUG subcommand (answered as Redis answers one it does not know) and
does not replicate: REPLICAOF with a master is refused (a Spinel-only error, not checked
here beyond its port check, which is Redis's)."""

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

NOT_ALLOWED = (b"-ERR DEBUG command not allowed. If the enable-debug-command option is set to "
               b"\"local\", you can run it from a local connection, otherwise you need to set "
               b"this option in the configuration file, and then restart the server.\r\n")


def debug_server(make_server, target, tmp_path, setting):
    """A server started with `enable-debug-command <setting>`, as each takes it."""
    if target == "spinel":
        conf = tmp_path / "redis.conf"
        conf.write_text(f"enable-debug-command {setting}\n")
        return make_server(extra=["--redis-conf", str(conf)])
    return make_server(extra=["--enable-debug-command", setting])


def test_debug_is_refused_unless_enabled(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        c.rt(resp_encode("CONFIG", "GET", "enable-debug-command"),
             b"*2\r\n$20\r\nenable-debug-command\r\n$2\r\nno\r\n")
        c.rt(resp_encode("DEBUG", "ERROR", "LOADING x"), NOT_ALLOWED)
        c.rt(resp_encode("DEBUG", "nosuch"), NOT_ALLOWED)
        # Arity is checked first.
        c.rt(resp_encode("DEBUG"), b"-ERR wrong number of arguments for 'debug' command\r\n")


@pytest.mark.parametrize("setting", ["yes", "local"])
def test_debug_error_sends_its_argument_as_the_error(make_server, target, tmp_path, setting):
    server = debug_server(make_server, target, tmp_path, setting)
    with Conn(server.resp_port) as c:
        c.rt(resp_encode("DEBUG", "ERROR", "LOADING fake message"), b"-LOADING fake message\r\n")
        c.rt(resp_encode("debug", "error", "READONLY blah blah"), b"-READONLY blah blah\r\n")
        c.rt(resp_encode("DEBUG", "ERROR", "OOM blah"), b"-OOM blah\r\n")
        c.rt(resp_encode("DEBUG", "ERROR", "ERR invalid password"), b"-ERR invalid password\r\n")
        # No newline reaches the wire: CR and LF become spaces.
        c.rt(resp_encode("DEBUG", "ERROR", "a\r\nb"), b"-a  b\r\n")
        # The connection goes on.
        c.rt(resp_encode("PING"), b"+PONG\r\n")


def test_debug_other_subcommands_and_arities(make_server, target, tmp_path):
    server = debug_server(make_server, target, tmp_path, "yes")
    with Conn(server.resp_port) as c:
        for args, name in [(("nosuch",), "nosuch"), (("ERROR",), "ERROR"),
                           (("error", "a", "b"), "error")]:
            c.rt(resp_encode("DEBUG", *args),
                 b"-ERR unknown subcommand or wrong number of arguments for '%s'. "
                 b"Try DEBUG HELP.\r\n" % name.encode())
        # Redis cuts the name at 128 bytes.
        c.rt(resp_encode("DEBUG", "x" * 300),
             b"-ERR unknown subcommand or wrong number of arguments for '%s'. "
             b"Try DEBUG HELP.\r\n" % (b"x" * 128))


def test_debug_in_the_command_table(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        c.rt(resp_encode("COMMAND", "INFO", "debug"),
             b"*1\r\n*10\r\n$5\r\ndebug\r\n:-2\r\n*4\r\n+admin\r\n+noscript\r\n+loading\r\n"
             b"+stale\r\n:0\r\n:0\r\n:0\r\n*3\r\n+@admin\r\n+@slow\r\n+@dangerous\r\n"
             b"*0\r\n*0\r\n*0\r\n")


@pytest.mark.parametrize("name", ["REPLICAOF", "SLAVEOF"])
def test_replicaof_no_one(make_server, name):
    server = make_server()
    with Conn(server.resp_port) as c:
        c.rt(resp_encode(name, "NO", "ONE"), b"+OK\r\n")
        c.rt(resp_encode(name.lower(), "no", "one"), b"+OK\r\n")
        c.rt(resp_encode(name, "NO ONE"),
             b"-ERR wrong number of arguments for '%s' command\r\n" % name.lower().encode())
        for port in ("99999", "-1", "abc", "1.5"):
            c.rt(resp_encode(name, "localhost", port), b"-ERR Invalid master port\r\n")
        c.rt(resp_encode("ROLE"), b"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n")


@pytest.mark.parametrize("name", ["replicaof", "slaveof"])
def test_replicaof_in_the_command_table(make_server, name):
    server = make_server()
    with Conn(server.resp_port) as c:
        n = len(name)
        c.rt(resp_encode("COMMAND", "INFO", name),
             b"*1\r\n*10\r\n$%d\r\n%s\r\n:3\r\n*4\r\n+admin\r\n+noscript\r\n+stale\r\n"
             b"+no_async_loading\r\n:0\r\n:0\r\n:0\r\n*3\r\n+@admin\r\n+@slow\r\n"
             b"+@dangerous\r\n*0\r\n*0\r\n*0\r\n" % (n, name.encode()))
