"""The admin commands of what Spinel does not have, as far as clients use them, as
redis-server 7.0 answers them (these pass with CONFORMANCE_TARGET=redis): DEBUG ERROR behind
`enable-debug-command`, REPLICAOF / SLAVEOF NO ONE, MODULE LIST and HELP, and MODULE LOAD /
LOADEX / UNLOAD refused behind `enable-module-command`. redis-py's own test suite makes the
server send LOADING, READONLY and OOM errors with DEBUG ERROR, promotes its server with
REPLICAOF NO ONE and lists modules with MODULE LIST.

Spinel runs no other DEBUG subcommand (answered as Redis answers one it does not know), does
not replicate (REPLICAOF with a master is refused: a Spinel-only error, not checked here
beyond its port check, which is Redis's) and loads no module (MODULE LOAD's error once
allowed is Spinel's own)."""

import pytest

from test_redis_hash import read_reply
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

NOT_ALLOWED = (b"-ERR DEBUG command not allowed. If the enable-debug-command option is set to "
               b"\"local\", you can run it from a local connection, otherwise you need to set "
               b"this option in the configuration file, and then restart the server.\r\n")


def debug_server(make_server, target, tmp_path, setting, name="enable-debug-command"):
    """A server started with `<name> <setting>`, as each takes it."""
    if target == "spinel":
        conf = tmp_path / "redis.conf"
        conf.write_text(f"{name} {setting}\n")
        return make_server(extra=["--redis-conf", str(conf)])
    return make_server(extra=[f"--{name}", setting])


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


MODULE_NOT_ALLOWED = (
    b"-ERR MODULE command not allowed. If the enable-module-command option is set to "
    b"\"local\", you can run it from a local connection, otherwise you need to set this "
    b"option in the configuration file, and then restart the server.\r\n")


def test_module_list_and_help(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        c.rt(resp_encode("MODULE", "LIST"), b"*0\r\n")
        c.send(resp_encode("MODULE", "HELP"))
        assert c.read_line() == b"*11\r\n"
        lines = [c.read_line() for _ in range(11)]
        assert lines[0] == b"+MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"
        assert lines[6] == (b"+    Load a module library from <path>, while passing it module "
                            b"configurations and optional arguments.\r\n")
        assert lines[-1] == b"+    Prints this help.\r\n"
        c.rt(resp_encode("MODULE", "nosuch"),
             b"-ERR unknown subcommand 'nosuch'. Try MODULE HELP.\r\n")
        c.rt(resp_encode("MODULE"), b"-ERR wrong number of arguments for 'module' command\r\n")
        c.rt(resp_encode("MODULE", "LIST", "x"),
             b"-ERR wrong number of arguments for 'module|list' command\r\n")


def test_module_load_and_unload_are_refused_unless_enabled(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        c.rt(resp_encode("MODULE", "LOAD", "/nonexistent.so"), MODULE_NOT_ALLOWED)
        c.rt(resp_encode("MODULE", "LOADEX", "/nonexistent.so", "ARGS", "x"), MODULE_NOT_ALLOWED)
        c.rt(resp_encode("MODULE", "UNLOAD", "json"), MODULE_NOT_ALLOWED)


def test_module_unload_finds_no_module_when_enabled(make_server, target, tmp_path):
    server = debug_server(make_server, target, tmp_path, "yes", name="enable-module-command")
    with Conn(server.resp_port) as c:
        c.rt(resp_encode("MODULE", "UNLOAD", "json"),
             b"-ERR Error unloading module: no such module with that name\r\n")
        c.send(resp_encode("MODULE", "LOAD", "/nonexistent.so"))
        assert c.read_line().startswith(b"-ERR Error loading the extension")
        c.rt(resp_encode("MODULE", "LIST"), b"*0\r\n")


def test_module_in_the_command_table(make_server):
    """COMMAND INFO module: the container, then its subcommands (in Spinel's order, which
    is not Redis's: compared as a set), each with Redis's flags and categories."""
    server = make_server()
    with Conn(server.resp_port) as c:
        c.send(resp_encode("COMMAND", "INFO", "module"))
        (module,) = read_reply(c)
        assert module[:7] == [b"module", -2, [], 0, 0, 0, [b"@slow"]]
        subs = {sub[0]: (sub[1], sub[2], sub[6], sub[7]) for sub in module[9]}
        dangerous = [b"@admin", b"@slow", b"@dangerous"]
        loading = [b"admin", b"noscript", b"no_async_loading"]
        assert subs == {
            b"module|help": (2, [b"loading", b"stale"], [b"@slow"], []),
            b"module|list": (2, [b"admin", b"noscript"], dangerous,
                             [b"nondeterministic_output_order"]),
            b"module|load": (-3, loading, dangerous, []),
            b"module|loadex": (-3, loading, dangerous, []),
            b"module|unload": (3, loading, dangerous, []),
        }
