"""Redis 7 functions: wire transcripts of FUNCTION LOAD/LIST/DELETE/FLUSH/DUMP/RESTORE/
STATS/KILL/HELP, FCALL and FCALL_RO, checked byte for byte against redis-server 7.0 with
CONFORMANCE_TARGET=redis (DUMP's payload is each server's own; RESTORE takes what DUMP
gave). Each test uses library and function names of its own, and cleans up, so tests can
share a server.
"""

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


def bulk(text):
    text = text.encode() if isinstance(text, str) else text
    return b"$%d\r\n%s\r\n" % (len(text), text)


LIB = ("#!lua name={lib}\n"
       "redis.register_function('{f}_keys', function(keys, args) return {{keys[1], args[1]}} end)\n"
       "redis.register_function{{function_name='{f}_ro', callback=function() return 2 end, "
       "flags={{'no-writes'}}, description='reads'}}\n"
       "redis.register_function('{f}_set', function(keys, args) "
       "return redis.call('set', keys[1], args[1]) end)\n")


def load(conn, lib, f, replace=False):
    code = LIB.format(lib=lib, f=f)
    args = ["FUNCTION", "LOAD"] + (["REPLACE"] if replace else []) + [code]
    conn.rt(resp_encode(*args), bulk(lib))
    return code


def test_load_and_call(resp_port, key):
    with Conn(resp_port) as c:
        load(c, "fl_lib", "fl")
        c.rt(resp_encode("FCALL", "fl_keys", "1", "k", "a"), b"*2\r\n$1\r\nk\r\n$1\r\na\r\n")
        c.rt(resp_encode("FCALL", "FL_KEYS", "0"), b"*0\r\n")
        c.rt(resp_encode("FCALL_RO", "fl_ro", "0"), b":2\r\n")
        c.rt(resp_encode("FCALL_RO", "fl_keys", "0"),
             b"-ERR Can not execute a script with write flag using *_ro command.\r\n")
        c.rt(resp_encode("FCALL", "fl_set", "1", key, "v"), b"+OK\r\n")
        c.rt(resp_encode("GET", key), bulk("v"))
        c.rt(resp_encode("FCALL", "nosuch_fn", "0"), b"-ERR Function not found\r\n")
        c.rt(resp_encode("FCALL", "fl_keys", "3", "a"),
             b"-ERR Number of keys can't be greater than number of args\r\n")
        c.rt(resp_encode("FUNCTION", "LOAD", LIB.format(lib="fl_lib", f="fl")),
             b"-ERR Library 'fl_lib' already exists\r\n")
        load(c, "fl_lib", "fl", replace=True)
        other = ("#!lua name=fl_other\n"
                 "redis.register_function('fl_keys', function() return 1 end)\n")
        c.rt(resp_encode("FUNCTION", "LOAD", other), b"-ERR Function fl_keys already exists\r\n")
        c.rt(resp_encode("FUNCTION", "DELETE", "fl_lib"), b"+OK\r\n")
        c.rt(resp_encode("FUNCTION", "DELETE", "fl_lib"), b"-ERR Library not found\r\n")
        c.rt(resp_encode("FCALL", "fl_keys", "0"), b"-ERR Function not found\r\n")
        c.rt(resp_encode("DEL", key), b":1\r\n")


def test_function_errors_at_run_time(resp_port):
    with Conn(resp_port) as c:
        code = ("#!lua name=fe_lib\n"
                "redis.register_function('fe_boom', function() error('boom') end)\n"
                "redis.register_function('fe_cmd', function() return redis.call('nosuch') end)\n"
                "redis.register_function('fe_global', function() return nope end)\n")
        c.rt(resp_encode("FUNCTION", "LOAD", code), bulk("fe_lib"))
        c.rt(resp_encode("FCALL", "fe_boom", "0"),
             b"-ERR user_function:2: boom script: fe_boom, on @user_function:2.\r\n")
        c.rt(resp_encode("FCALL", "fe_cmd", "0"),
             b"-ERR Unknown Redis command called from script script: fe_cmd, on "
             b"@user_function:3.\r\n")
        c.rt(resp_encode("FCALL", "fe_global", "0"),
             b"-ERR user_function:4: Script attempted to access nonexistent global variable "
             b"'nope' script: fe_global, on @user_function:4.\r\n")
        c.rt(resp_encode("FUNCTION", "DELETE", "fe_lib"), b"+OK\r\n")


def test_load_errors(resp_port):
    with Conn(resp_port) as c:
        for code, error in [
            ("return 1", b"-ERR Missing library metadata\r\n"),
            ("#!lua\nreturn 1", b"-ERR Library name was not given\r\n"),
            ("#!lua name=le_x\nreturn 1", b"-ERR No functions registered\r\n"),
            ("#!lua name=le_y foo=bar\nreturn 1",
             b"-ERR Invalid metadata value given: foo=bar\r\n"),
            ("#!pyth name=le_y\n", b"-ERR Engine 'pyth' not found\r\n"),
            ("#!lua name=le_y\nredis.call('set','a','b')",
             b"-ERR Error registering functions: ERR user_function:2: Script attempted to "
             b"access nonexistent global variable 'call'\r\n"),
            ("#!lua name=le_y\nx = 5",
             b"-ERR Error registering functions: ERR user_function:2: Attempt to modify a "
             b"readonly table\r\n"),
            ("#!lua name=le_y\nerror('boom')",
             b"-ERR Error registering functions: ERR user_function:2: Script attempted to "
             b"access nonexistent global variable 'error'\r\n"),
            ("#!lua name=le_y\nredis.register_function('b', 5)",
             b"-ERR Error registering functions: ERR second argument to "
             b"redis.register_function must be a function\r\n"),
            ("#!lua name=le_y\nredis.register_function('1a-', function() return 1 end)",
             b"-ERR Error registering functions: ERR Library names can only contain letters, "
             b"numbers, or underscores(_) and must be at least one character long\r\n"),
            ("#!lua name=le_y\nredis.register_function{function_name='b', "
             "callback=function() end, flags={'bad'}}",
             b"-ERR Error registering functions: ERR unknown flag given\r\n"),
            ("#!lua name=le_y\nredis.register_function('g', function() return 1 end)\n"
             "redis.register_function('g', function() return 1 end)",
             b"-ERR Error registering functions: ERR Function already exists in the "
             b"library\r\n"),
        ]:
            c.rt(resp_encode("FUNCTION", "LOAD", code), error)
        for args, error in [
            (("FUNCTION", "LOAD", "foo", "bar", "lib"), b"-ERR Unknown option given: foo\r\n"),
            (("FUNCTION", "FLUSH", "sync", "extra"),
             b"-ERR unknown subcommand or wrong number of arguments for 'FLUSH'. Try FUNCTION "
             b"HELP.\r\n"),
            (("FUNCTION", "RESTORE", "x", "flush", "extra"),
             b"-ERR unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION "
             b"HELP.\r\n"),
            (("FCALL", "nosuch", "bad"), b"-ERR Function not found\r\n"),
        ]:
            c.rt(resp_encode(*args), error)
        for call, message in [
            ("redis.register_function('x')",
             b"calling redis.register_function with a single argument is only applicable to "
             b"Lua table (representing named arguments)."),
            ("redis.register_function({}, function() end)",
             b"first argument to redis.register_function must be a string"),
            ("redis.register_function{function_name='x', callback=function() end, foo=1}",
             b"unknown argument given to redis.register_function"),
            ("redis.register_function{callback=function() end}",
             b"redis.register_function must get a function name argument"),
            ("redis.register_function{function_name='x'}",
             b"redis.register_function must get a callback argument"),
            ("redis.register_function{function_name='x', callback=function() end, "
             "description={}}",
             b"description argument given to redis.register_function must be a string"),
        ]:
            c.send(resp_encode("FUNCTION", "LOAD", "#!lua name=le_z\n" + call))
            line = c.read_line()
            assert message in line, (call, line)
        # The parser's own words differ (Lua 5.1 on redis-server, Luau on Spinel).
        c.send(resp_encode("FUNCTION", "LOAD", "#!lua name=le_y\nlocal x = ("))
        line = c.read_line()
        assert line.startswith(b"-ERR Error compiling function: user_function:2: "), line


def test_list_and_stats(resp_port):
    with Conn(resp_port) as c:
        # One function per library: Redis lists a library's functions in hash order.
        code = ("#!lua name=ls_lib\n"
                "redis.register_function{function_name='ls_ro', callback=function() return 2 end, "
                "flags={'no-writes', 'allow-oom'}, description='reads'}\n")
        c.rt(resp_encode("FUNCTION", "LOAD", code), bulk("ls_lib"))
        plain = ("#!lua name=ls_plain\n"
                 "redis.register_function('ls_plain_f', function() return 1 end)\n")
        c.rt(resp_encode("FUNCTION", "LOAD", plain), bulk("ls_plain"))
        entry = (b"*6\r\n$12\r\nlibrary_name\r\n$6\r\nls_lib\r\n$6\r\nengine\r\n$3\r\nLUA\r\n"
                 b"$9\r\nfunctions\r\n*1\r\n"
                 b"*6\r\n$4\r\nname\r\n$5\r\nls_ro\r\n$11\r\ndescription\r\n$5\r\nreads\r\n"
                 b"$5\r\nflags\r\n*2\r\n+no-writes\r\n+allow-oom\r\n")
        c.rt(resp_encode("FUNCTION", "LIST", "LIBRARYNAME", "ls_l*"), b"*1\r\n" + entry)
        with_code = entry.replace(b"*6\r\n$12\r\nlibrary_name", b"*8\r\n$12\r\nlibrary_name", 1)
        c.rt(resp_encode("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "ls_lib"),
             b"*1\r\n" + with_code + bulk("library_code") + bulk(code))
        c.rt(resp_encode("FUNCTION", "LIST", "LIBRARYNAME", "ls_plain"),
             b"*1\r\n*6\r\n$12\r\nlibrary_name\r\n$8\r\nls_plain\r\n$6\r\nengine\r\n"
             b"$3\r\nLUA\r\n$9\r\nfunctions\r\n*1\r\n*6\r\n$4\r\nname\r\n$10\r\nls_plain_f\r\n"
             b"$11\r\ndescription\r\n$-1\r\n$5\r\nflags\r\n*0\r\n")
        c.rt(resp_encode("FUNCTION", "DELETE", "ls_plain"), b"+OK\r\n")
        c.rt(resp_encode("FUNCTION", "LIST", "LIBRARYNAME", "nomatch*"), b"*0\r\n")
        c.rt(resp_encode("FUNCTION", "LIST", "bad"), b"-ERR Unknown argument bad\r\n")
        c.send(resp_encode("FUNCTION", "STATS"))
        head = c.read_until(b"engines\r\n")
        assert head == b"*4\r\n$14\r\nrunning_script\r\n$-1\r\n$7\r\nengines\r\n", head
        c.read_until(b"functions_count\r\n")
        c.read_line()
        c.rt(resp_encode("FUNCTION", "KILL"), b"-NOTBUSY No scripts in execution right now.\r\n")
        c.rt(resp_encode("FUNCTION", "FLUSH", "bad"),
             b"-ERR FUNCTION FLUSH only supports SYNC|ASYNC option\r\n")
        c.rt(resp_encode("FUNCTION", "RESTORE", "bad"),
             b"-ERR DUMP payload version or checksum are wrong\r\n")
        c.rt(resp_encode("FUNCTION", "FOO"),
             b"-ERR unknown subcommand 'FOO'. Try FUNCTION HELP.\r\n")
        c.send(resp_encode("FUNCTION", "HELP"))
        assert c.read_line() == b"*40\r\n"
        c.read_until(b"+    Prints this help.\r\n")
        c.rt(resp_encode("FUNCTION", "DELETE", "ls_lib"), b"+OK\r\n")


def test_dump_restore_and_flush(make_server):
    """On a server of its own: FLUSH and RESTORE's policies change every library."""
    server = make_server()
    with Conn(server.resp_port) as c:
        load(c, "dr_one", "dr1")
        load(c, "dr_two", "dr2")
        c.send(resp_encode("FUNCTION", "DUMP"))
        size = int(c.read_line()[1:])
        payload = c.read_exact(size + 2)[:-2]
        c.send(resp_encode("FUNCTION", "RESTORE", payload))
        # Which library collides first depends on the payload's order.
        assert c.read_line() in (b"-ERR Library dr_one already exists\r\n",
                                 b"-ERR Library dr_two already exists\r\n")
        c.rt(resp_encode("FUNCTION", "RESTORE", payload, "REPLACE"), b"+OK\r\n")
        c.rt(resp_encode("FUNCTION", "RESTORE", payload, "BAD"),
             b"-ERR Wrong restore policy given, value should be either FLUSH, APPEND or "
             b"REPLACE.\r\n")
        c.rt(resp_encode("FUNCTION", "FLUSH"), b"+OK\r\n")
        c.rt(resp_encode("FCALL", "dr1_ro", "0"), b"-ERR Function not found\r\n")
        c.rt(resp_encode("FUNCTION", "RESTORE", payload), b"+OK\r\n")
        c.rt(resp_encode("FCALL", "dr1_ro", "0"), b":2\r\n")
        c.rt(resp_encode("FCALL", "dr2_ro", "0"), b":2\r\n")
        load(c, "dr_three", "dr3")
        c.rt(resp_encode("FUNCTION", "RESTORE", payload, "FLUSH"), b"+OK\r\n")
        c.rt(resp_encode("FCALL", "dr3_ro", "0"), b"-ERR Function not found\r\n")
        c.rt(resp_encode("FUNCTION", "FLUSH", "SYNC"), b"+OK\r\n")
        c.rt(resp_encode("FUNCTION", "LIST"), b"*0\r\n")


def load_error(conn, code):
    conn.send(resp_encode("FUNCTION", "LOAD", "REPLACE", code))
    return conn.read_line()[:-2]


def test_load_sees_only_its_redis_table(resp_port):
    """While a library loads, only `redis` (register_function, log, versions) exists: no
    `math`, no `getmetatable`, no `redis.setresp` or `redis.call` (Redis 7.0.15)."""
    with Conn(resp_port) as c:
        for body, name in [("return math.random()", "math"),
                           ("return redis.setresp(3)", "setresp"),
                           ("return redis.call('ping')", "call"),
                           ("local g = getmetatable", "getmetatable")]:
            reply = load_error(c, "#!lua name=envlib\n" + body)
            assert b"attempted to access nonexistent global variable '%s'" % name.encode() in reply


def test_register_function_outside_load(resp_port):
    """At run time `redis.register_function` is a nil field; the load-time table kept by a
    library refuses with Redis's words."""
    code = ("#!lua name=reglib\nlocal lib = redis\n"
            "lib.register_function('reg_f1', function() "
            "redis.register_function('x', function() return 1 end) return 1 end)\n"
            "lib.register_function('reg_f2', function() "
            "lib.register_function('y', function() return 1 end) return 2 end)\n")
    with Conn(resp_port) as c:
        c.rt(resp_encode("FUNCTION", "LOAD", "REPLACE", code), bulk("reglib"))
        c.send(resp_encode("FCALL", "reg_f1", "0"))
        assert c.read_line() == (b"-ERR user_function:3: attempt to call field 'register_function'"
                                 b" (a nil value) script: reg_f1, on @user_function:3.\r\n")
        c.send(resp_encode("FCALL", "reg_f2", "0"))
        assert c.read_line() == (b"-ERR redis.register_function can only be called on FUNCTION "
                                 b"LOAD command script: reg_f2, on @user_function:4.\r\n")
        c.rt(resp_encode("FUNCTION", "DELETE", "reglib"), b"+OK\r\n")


def test_metadata_line_is_split_as_redis_splits_it(resp_port):
    body = "\nredis.register_function('meta_f', function() return 1 end)"
    with Conn(resp_port) as c:
        assert load_error(c, "#! name=metalib" + body) == b"-ERR Engine '' not found"
        assert load_error(c, "#!lua name=a name=b" + body) == \
            b"-ERR Invalid metadata value, name argument was given multiple times"
        assert load_error(c, '#!lua name="metalib"' + body) == b"$7"
        assert c.read_line() == b"metalib\r\n"
        assert load_error(c, '#!lua name="metalib' + body) == b"-ERR Invalid library metadata"
        assert load_error(c, "#!lua name=metalib") == b"-ERR Invalid library metadata"
        c.rt(resp_encode("FUNCTION", "DELETE", "metalib"), b"+OK\r\n")
