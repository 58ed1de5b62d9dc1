"""The script engine as an attacker meets it: each published Lua or Lua-library CVE that Redis
fixed in its scripting (2015-2025) replayed over the wire, the sandbox's read-only tables, and
state that must not outlive a script or SCRIPT FLUSH. Every test ends by checking that the
server still answers and still holds a key written before the attack.

Run against redis-server too (CONFORMANCE_TARGET=redis): where Redis 7.0.15 still carries a
bug that its later releases fixed, the test says so and checks only that the server survives.
"""

import socket
import threading
import time

import pytest
import redis

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


@pytest.fixture
def client(resp_port):
    c = redis.Redis(port=resp_port, socket_timeout=20)
    c.set("hostile:witness", "alive")
    yield c
    # The server is up and nothing acknowledged is lost.
    assert redis.Redis(port=resp_port, socket_timeout=10).get("hostile:witness") == b"alive"
    c.close()


def error_of(client, body, *args, numkeys=0):
    with pytest.raises(redis.ResponseError) as raised:
        client.eval(body, numkeys, *args)
    return str(raised.value)


def test_cve_2025_46817_unpack_range_overflow(client):
    message = error_of(client, "return {unpack({1,2,3}, -2, 2147483647)}")
    assert "too many results to unpack" in message
    message = error_of(client, "return {unpack({1,2,3}, 0, 2147483647)}")
    assert "too many results to unpack" in message
    assert client.eval("return {unpack({1,2,3}, 2, 3)}", 0) == [2, 3]


def test_cve_2018_11218_cmsgpack_deep_nesting(client):
    # 200,000 nested one-element arrays: an error, never a stack overflow.
    body = "return cmsgpack.unpack(string.rep(string.char(0x91), 200000) .. string.char(0xc0))"
    with pytest.raises(redis.ResponseError):
        client.eval(body, 0)
    # Circular tables pack as nested arrays cut at 16 levels, as lua-cmsgpack does.
    packed = client.eval("local a = {} a[1] = a return cmsgpack.pack(a)", 0)
    assert packed.startswith(b"\x91\x91")


def test_cve_2018_11219_struct_integer_overflow(client, target):
    for body in [
        "return {pcall(struct.unpack, 'xxxxs', 'a')}",
        "return {pcall(struct.unpack, 'c0', string.rep('x', 10))}",
        "return {pcall(struct.unpack, 'i4c0', struct.pack('i4', 2147483647))}",
        "return {pcall(struct.pack, 'i99', 1)}",
        "return {pcall(struct.unpack, 'x', '', 1e300)}",
        "return {pcall(struct.size, 'c2147483647c2147483647')}",
    ]:
        # Twice: a crash that only shows on the second run (a dead worker) counts too.
        for _ in range(2):
            client.eval(body, 0)


def test_cve_2024_31449_bit_tohex_extreme_width(client):
    assert client.eval("return bit.tohex(65535, -2147483648)", 0) == b"0000FFFF"
    assert client.eval("return bit.tohex(65535, 2147483647)", 0) == b"0000ffff"


def test_cve_2015_4335_bytecode_is_refused(client):
    # A precompiled chunk passed to EVAL, and one loaded from inside a script.
    with pytest.raises(redis.ResponseError) as raised:
        client.eval(b"\x1bLua\x51\x00\x01\x04\x08\x04\x08\x00", 0)
    assert "Error compiling script" in str(raised.value)
    message = error_of(client, "return loadstring(string.dump(function() return 1 end))()")
    assert "attempt to call" in message or "nonexistent global" in message
    assert client.eval("return loadstring('\\27Lua') == nil", 0) == 1
    assert client.eval("return loadstring('return 6 * 7')()", 0) == 42


def test_cve_2022_24735_readonly_globals_and_libraries(client):
    for body in [
        "redis = function() return 1 end",
        "rawset(_G, 'redis', 1)",
        "setmetatable(_G, {})",
        "local g = getmetatable(_G); g.__index = {}",
        "_G = {}",
        "redis.call = function() return 1 end",
        "rawset(redis, 'call', function() return 1 end)",
        "cjson.encode = function() return 1 end",
        "cmsgpack.pack = function() return 1 end",
        "bit.band = function() return 1 end",
        "struct.pack = function() return 1 end",
        "string.format = function() return 1 end",
        "rawset(string, 'rep', function() return 1 end)",
        "table.insert(string, 1)",
        "math.floor = nil",
        "rawset(table, 'concat', tostring)",
    ]:
        assert "Attempt to modify a readonly table" in error_of(client, body), body


def test_cve_2025_46818_basic_type_metatables(client, target):
    # Redis 7.0.15 predates the fix: the string metatable there is writable.
    if target == "redis":
        pytest.skip("redis-server 7.0.15 predates the fix for CVE-2025-46818")
    for body in [
        "getmetatable('').__index = function() return 'owned' end",
        "rawset(getmetatable(''), '__index', {})",
        "setmetatable(getmetatable(''), {})",
    ]:
        assert "Attempt to modify a readonly table" in error_of(client, body), body
    assert client.eval("return ('abc'):upper()", 0) == b"ABC"


def test_another_users_script_runs_with_its_own_rights(client, resp_port, target):
    """A low-privilege user cannot plant code that a later script of another user runs."""
    client.execute_command("ACL", "SETUSER", "hostile-low", "on", ">lowpw", "~low:*",
                           "+eval", "+get")
    client.set("high:secret", "s3cret")
    low = redis.Redis(port=resp_port, username="hostile-low", password="lowpw")
    try:
        for body in [
            "rawset(_G, 'redis', {call = function() return 'x' end})",
            "getmetatable('').__index = function() return redis.call('get', 'high:secret') end",
            "string.upper = function() return redis.call('get', 'high:secret') end",
        ]:
            with pytest.raises(redis.ResponseError):
                low.eval(body, 0)
        with pytest.raises(redis.ResponseError) as raised:
            low.eval("return redis.call('get', 'high:secret')", 0)
        assert "The user executing the script can't access" in str(raised.value)
        assert client.eval("return string.upper('a')", 0) == b"A"
    finally:
        low.close()
        client.execute_command("ACL", "DELUSER", "hostile-low")


def test_script_flush_gives_a_new_state(client, target):
    if target == "spinel":
        with pytest.raises(redis.ResponseError):
            client.eval("rawset(_G, 'planted', 1)", 0)
    client.script_flush()
    message = error_of(client, "return planted")
    assert "nonexistent global variable 'planted'" in message


def test_unbounded_memory_is_refused(client, target):
    if target == "redis":
        pytest.skip("redis-server sets no memory limit on Lua")
    body = "local t = {} for i = 1, 1e8 do t[i] = string.rep('x', 1000) .. i end return #t"
    assert "not enough memory" in error_of(client, body)
    # The state is usable again, and its garbage went.
    assert client.eval("return 1", 0) == 1
    lua_bytes = int(client.info("memory")["used_memory_lua"])
    assert lua_bytes < 64 << 20, lua_bytes


def test_replies_cannot_carry_a_script_past_the_memory_limit(client, target):
    """Replies of redis.call made into Lua values fill the state only up to its limit
    (Spinel makes small ones without mlua's per-allocation guard, only while twice their
    size fits under the limit), and the limit holds after: an 8 MiB reply into a state
    at 120 MiB of its 128 is refused. Each reply differs, as Lua keeps one copy of equal
    strings."""
    if target == "redis":
        pytest.skip("redis-server sets no memory limit on Lua")
    client.set("hostile:10k", "v" * 10_000)
    client.set("hostile:8m", "w" * (8 << 20))
    fill = """
local t, most = {}, 0
while collectgarbage('count') < 120 * 1024 do
  redis.call('APPEND', KEYS[1], 'x')
  t[#t + 1] = redis.call('GET', KEYS[1])
  most = math.max(most, collectgarbage('count'))
end
"""
    count, most_kib = client.eval(fill + "return {#t, math.floor(most)}", 1, "hostile:10k")
    assert count > 1000 and most_kib <= 128 << 10, (count, most_kib)
    client.set("hostile:10k", "v" * 10_000)
    message = error_of(client, fill + "redis.call('GET', KEYS[2]) return #t", "hostile:10k",
                       "hostile:8m", numkeys=2)
    assert "not enough memory" in message
    assert client.eval("return 1", 0) == 1
    assert int(client.info("memory")["used_memory_lua"]) < 64 << 20
    client.delete("hostile:10k", "hostile:8m")


def test_runaway_recursion_is_an_error(client):
    for body in [
        "local function f() return 1 + f() end return f()",
        "local t = setmetatable({}, {}) getmetatable(t).__index = function(s, k) return s[k] end"
        " return t.x",
        "return cjson.decode(string.rep('[', 100000) .. string.rep(']', 100000))",
        "local t = {} local c = t for i = 1, 100000 do c[1] = {} c = c[1] end"
        " return cjson.encode(t)",
    ]:
        try:
            client.eval(body, 0)
        except redis.ResponseError:
            pass


def test_deeply_nested_result(resp_port):
    """10,000 nested tables as a reply (read raw: a client library's parser recurses)."""
    body = "local function f(n) if n == 0 then return {} end return {f(n - 1)} end return f(10000)"
    with Conn(resp_port) as c:
        c.send(resp_encode("EVAL", body, "0") + resp_encode("PING"))
        reply = c.read_until(b"+PONG\r\n", timeout=20)
        assert reply.startswith(b"*1\r\n")


def test_recursive_result_is_cut(resp_port):
    """A table that contains itself, as a reply: Redis stops at its stack limit with an error."""
    with Conn(resp_port) as c:
        c.send(resp_encode("EVAL", "local a = {} local b = {a} a[1] = b return a", "0"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            line = c.read_line()
            if line.startswith(b"-"):
                assert b"reached lua stack limit" in line
                break
            assert line == b"*1\r\n"
        c.rt(resp_encode("PING"), b"+PONG\r\n")


def test_killed_even_inside_pcall(resp_port, client):
    """SCRIPT KILL stops a read-only script that wraps its loop in pcall (with one worker
    thread too: the busy script yields to its loop, see test_hostile_busy.py)."""
    client.config_set("lua-time-limit", 100)
    body = "local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end"
    outcome = {}

    def run():
        runner = redis.Redis(port=resp_port, socket_timeout=30)
        try:
            runner.eval(body, 0)
        except redis.ResponseError as e:
            outcome["error"] = str(e)
        finally:
            runner.close()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        killed = False
        while time.monotonic() < deadline and not killed:
            time.sleep(0.2)
            # A fresh connection each time, on whichever worker it lands.
            try:
                with socket.create_connection(("127.0.0.1", resp_port), timeout=1) as s:
                    s.sendall(resp_encode("SCRIPT", "KILL"))
                    killed = s.recv(100).startswith(b"+OK")
            except OSError:
                pass
        assert killed
        thread.join(15)
        assert not thread.is_alive()
        assert "Script killed by user" in outcome.get("error", "")
    finally:
        client.config_set("lua-time-limit", 5000)
