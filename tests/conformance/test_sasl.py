"""memcached's authentication: binary SASL (-S) and the text protocol's auth file (-Y).

Real memcached 1.6.18 is the reference for every byte here. Its -S uses Cyrus SASL, so for it
the users go into a sasldb (saslpasswd2) named by a memcached.conf in SASL_CONF_PATH with
`mech_list: plain`; Spinel has no Cyrus and checks PLAIN against the -Y file format
(user:password lines) named by MEMCACHED_SASL_PWDB, memcached's variable for its built-in
password file. Both get the same users. -Y is the same flag and file on both.

What memcached does, and these tests hold both servers to:
- -S: binary only; before authentication every opcode but the SASL ones and Version gets
  `Auth failure.` and a hang-up; SASL List Mechs, Auth and Step each drop the connection's
  authentication first; PLAIN with a message authenticates at once, without one it asks for a
  Step (status 0x21).
- -Y: text only; before authentication every line gets `CLIENT_ERROR unauthenticated`, except
  `set <k> <f> <e> <len>` whose data is `user password`: `STORED` or `CLIENT_ERROR
  authentication failure`. Replies to one batch of input overwrite each other (memcached reuses
  one reply object), so only the last arrives. SIGHUP re-reads the file.
"""

import os
import shutil
import signal
import struct
import subprocess
import time

import pytest

from conftest import spinel_bin
from wire import Conn, resp_encode

pytestmark = pytest.mark.memcache

GET, SET, DELETE, INCR, QUIT, FLUSH, NOOP, VERSION, STAT = 0x00, 0x01, 0x04, 0x05, 0x07, 0x08, 0x0A, 0x0B, 0x10
SASL_LIST, SASL_AUTH, SASL_STEP = 0x20, 0x21, 0x22
OK, ENOENT, EINVAL, AUTH_ERROR, AUTH_CONTINUE = 0x00, 0x01, 0x04, 0x20, 0x21
OPAQUE = 0x01020304
USERS = {"alice": "secret", "bob": "pw:x"}
RELOAD_TIMEOUT_S = 5.0


def req(op, key=b"", extras=b"", value=b"", opaque=OPAQUE):
    body = len(extras) + len(key) + len(value)
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0, body, opaque, 0) \
        + extras + key + value


def resp(op, status=OK, value=b"", opaque=OPAQUE, key=b"", extras=b"", cas=0):
    body = len(extras) + len(key) + len(value)
    return struct.pack(">BBHBBHIIQ", 0x81, op, len(key), len(extras), 0, status, body, opaque,
                       cas) + extras + key + value


def auth_failure(op, opaque=OPAQUE):
    return resp(op, AUTH_ERROR, b"Auth failure.", opaque)


def plain(user, password, authzid=b""):
    return authzid + b"\0" + user + b"\0" + password


AUTHENTICATED = resp(SASL_AUTH, value=b"Authenticated")
GET_MISS = resp(GET, ENOENT, b"Not found")


def read_packet(c):
    head = c.read_exact(24)
    body = c.read_exact(struct.unpack(">I", head[8:12])[0])
    return head, body


def binary_stats(c, group=b""):
    c.send(req(STAT, group))
    stats = {}
    while True:
        head, body = read_packet(c)
        keylen = struct.unpack(">H", head[2:4])[0]
        if keylen == 0:
            return stats
        stats[body[:keylen].decode()] = body[keylen:].decode()


def write_users(path, users):
    path.write_text("".join(f"{user}:{password}\n" for user, password in users.items()))


# ------------------------------------------------------------------------------------------
# Servers


@pytest.fixture
def sasl_server(make_server, target, tmp_path, monkeypatch):
    """A server started with -S, knowing USERS."""
    if target == "memcached":
        saslpasswd2 = shutil.which("saslpasswd2") or pytest.skip("saslpasswd2 (sasl2-bin) missing")
        db = tmp_path / "sasldb"
        for user, password in USERS.items():
            subprocess.run([saslpasswd2, "-p", "-c", "-f", str(db), "-a", "memcached", user],
                           input=password.encode(), check=True, timeout=10)
        (tmp_path / "memcached.conf").write_text(f"mech_list: plain\nsasldb_path: {db}\n")
        monkeypatch.setenv("SASL_CONF_PATH", str(tmp_path))
    else:
        pwdb = tmp_path / "pwdb"
        write_users(pwdb, USERS)
        monkeypatch.setenv("MEMCACHED_SASL_PWDB", str(pwdb))
    return make_server(extra=["-S"])


@pytest.fixture
def c(sasl_server):
    with Conn(sasl_server.mc_port) as conn:
        yield conn


@pytest.fixture
def auth_file(tmp_path):
    path = tmp_path / "auth"
    write_users(path, USERS)
    return path


@pytest.fixture
def ascii_server(make_server, auth_file):
    return make_server(extra=["-Y", str(auth_file)])


@pytest.fixture
def t(ascii_server):
    with Conn(ascii_server.mc_port) as conn:
        yield conn


def authenticate(c):
    c.rt(req(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"secret")), AUTHENTICATED)


def assert_refused_and_closed(c, op=GET, packet=None):
    c.send(packet or req(op, b"k"))
    assert c.read_all_until_close() == auth_failure(op)


# ------------------------------------------------------------------------------------------
# Binary SASL (-S)


def test_list_mechs(c):
    c.rt(req(SASL_LIST), resp(SASL_LIST, value=b"PLAIN"))


@pytest.mark.parametrize("user", ["alice", "bob"])
def test_auth_then_commands_work(c, user, key):
    value = plain(user.encode(), USERS[user].encode())
    c.rt(req(SASL_AUTH, b"PLAIN", value=value, opaque=7), resp(SASL_AUTH, value=b"Authenticated",
                                                                 opaque=7))
    k = key.encode()
    c.rt(req(GET, k), resp(GET, ENOENT, b"Not found"))
    c.send(req(SET, k, struct.pack(">II", 5, 0), b"val"))
    head, body = read_packet(c)
    assert head[6:8] == b"\0\0" and body == b""
    c.send(req(GET, k))
    head, body = read_packet(c)
    assert head[6:8] == b"\0\0" and body == struct.pack(">I", 5) + b"val"


@pytest.mark.parametrize("mech,message", [
    (b"PLAIN", plain(b"alice", b"wrong")),
    (b"PLAIN", plain(b"eve", b"secret")),
    (b"PLAIN", plain(b"alice", b"")),
    (b"PLAIN", plain(b"", b"secret")),
    (b"PLAIN", plain(b"alice", b"secret", authzid=b"bob")),
    (b"PLAIN", b"alice\0secret"),
    (b"PLAIN", b"alicesecret"),
    (b"PLAIN", plain(b"alice", b"secret") + b"\0"),
    (b"CRAM-MD5", b""),
    (b"XYZ", plain(b"alice", b"secret")),
], ids=["wrong-password", "unknown-user", "empty-password", "empty-user", "other-authzid",
        "one-nul", "no-nul", "nul-in-password", "cram-md5", "unknown-mech"])
def test_auth_failure_keeps_the_connection_unauthenticated(c, mech, message):
    c.rt(req(SASL_AUTH, mech, value=message), auth_failure(SASL_AUTH))
    assert_refused_and_closed(c)


@pytest.mark.parametrize("mech,message", [
    (b"plain", plain(b"alice", b"secret")),
    (b"PLAIN", plain(b"alice", b"secret", authzid=b"alice")),
], ids=["lowercase-mech", "own-authzid"])
def test_auth_accepts(c, mech, message):
    c.rt(req(SASL_AUTH, mech, value=message), AUTHENTICATED)
    c.rt(req(GET, b"k"), GET_MISS)


def test_auth_without_message_then_step(c):
    c.rt(req(SASL_AUTH, b"PLAIN"), resp(SASL_AUTH, AUTH_CONTINUE))
    # The step's mechanism name is not looked at.
    c.rt(req(SASL_STEP, b"ANY", value=plain(b"bob", b"pw:x")),
         resp(SASL_STEP, value=b"Authenticated"))
    c.rt(req(GET, b"k"), GET_MISS)


def test_step_failure_can_be_retried(c):
    c.rt(req(SASL_AUTH, b"PLAIN"), resp(SASL_AUTH, AUTH_CONTINUE))
    c.rt(req(SASL_STEP, b"PLAIN", value=plain(b"alice", b"nope")), auth_failure(SASL_STEP))
    c.rt(req(SASL_STEP, b"PLAIN", value=b""), auth_failure(SASL_STEP))
    c.rt(req(SASL_STEP, b"PLAIN", value=plain(b"alice", b"secret")),
         resp(SASL_STEP, value=b"Authenticated"))


@pytest.mark.parametrize("before", [
    [],
    [(req(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"x")), auth_failure(SASL_AUTH))],
    [(req(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"secret")), AUTHENTICATED)],
], ids=["fresh", "after-failed-auth", "after-auth"])
def test_step_without_an_exchange_awaiting_fails(c, before):
    for send, expect in before:
        c.rt(send, expect)
    c.rt(req(SASL_STEP, b"PLAIN", value=plain(b"alice", b"secret")), auth_failure(SASL_STEP))
    assert_refused_and_closed(c)


@pytest.mark.parametrize("again", [
    (req(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"wrong")), auth_failure(SASL_AUTH)),
    (req(SASL_LIST), resp(SASL_LIST, value=b"PLAIN")),
], ids=["failed-reauth", "list-mechs"])
def test_sasl_opcodes_drop_the_authentication(c, again):
    authenticate(c)
    c.rt(*again)
    assert_refused_and_closed(c)


@pytest.mark.parametrize("packet", [
    req(GET, b"k"),
    req(SET, b"k", struct.pack(">II", 0, 0), b"v"),
    req(DELETE, b"k"),
    req(INCR, b"k", struct.pack(">QQI", 1, 0, 0)),
    req(NOOP),
    req(QUIT),
    req(FLUSH),
    req(STAT),
    req(0x1B, extras=b"\0\0\0\0"),
    req(0x50),
], ids=lambda p: f"op{p[1]:#x}")
def test_every_command_before_auth_is_refused_and_closes(c, packet):
    assert_refused_and_closed(c, packet[1], packet)


def test_refusal_waits_for_extras_and_key(c):
    packet = req(SET, b"key", struct.pack(">II", 0, 0), b"v")
    c.send(packet[:24 + 8 + 2])
    c.assert_quiet(wait=0.2)
    c.send(packet[24 + 8 + 2:])
    assert c.read_all_until_close() == auth_failure(SET)


def test_version_is_allowed_before_auth(c):
    c.send(req(VERSION))
    head, body = read_packet(c)
    assert head[:2] == b"\x81\x0b" and head[6:8] == b"\0\0" and body.startswith(b"1.6.")
    c.rt(req(SASL_LIST), resp(SASL_LIST, value=b"PLAIN"))


@pytest.mark.parametrize("packet,status,closes", [
    (req(SASL_LIST, b"x"), EINVAL, True),
    (req(SASL_AUTH, value=b"abc"), EINVAL, True),
    (req(SASL_AUTH, b"PLAIN", extras=b"1234"), EINVAL, True),
    (req(SASL_AUTH, b"P" * 251), EINVAL, True),
    (req(SASL_AUTH, b"P" * 33, value=b"abc"), EINVAL, False),
], ids=["list-with-key", "auth-without-mech", "auth-with-extras", "key-over-250",
        "mech-over-32"])
def test_malformed_sasl_packets(c, packet, status, closes):
    c.send(packet + req(VERSION))
    expect = resp(packet[1], status, b"Invalid arguments")
    if closes:
        assert c.read_all_until_close() == expect
    else:
        assert c.read_exact(len(expect)) == expect
        head, _ = read_packet(c)
        assert head[1] == VERSION


def test_text_protocol_is_closed_once_a_header_is_there(c):
    # memcached reads a whole 24-byte header before it judges the magic.
    c.send(b"get foo\r\n")
    c.assert_quiet(wait=0.2)
    assert c.is_open()
    c.send(b"get some_other_key\r\n")
    assert c.read_all_until_close() == b""


def test_stats_count_attempts(sasl_server):
    with Conn(sasl_server.mc_port) as c:
        c.rt(req(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"bad")), auth_failure(SASL_AUTH))
        c.rt(req(SASL_AUTH, b"PLAIN"), resp(SASL_AUTH, AUTH_CONTINUE))
        c.rt(req(SASL_STEP, b"PLAIN", value=plain(b"alice", b"secret")),
             resp(SASL_STEP, value=b"Authenticated"))
        stats = binary_stats(c)
        assert (stats["auth_cmds"], stats["auth_errors"]) == ("2", "1")
        settings = binary_stats(c, b"settings")
        assert settings["auth_enabled_sasl"] == "yes"
        assert settings["auth_enabled_ascii"] == "no"
        assert settings["binding_protocol"] == "binary"


@pytest.mark.spinel_only
def test_sighup_rereads_the_sasl_file(sasl_server, tmp_path):
    pwdb = tmp_path / "pwdb"
    write_users(pwdb, {"carol": "new"})
    sasl_server.signal(signal.SIGHUP)
    carol = req(SASL_AUTH, b"PLAIN", value=plain(b"carol", b"new"))
    wait_until_accepted(sasl_server.mc_port, carol, AUTHENTICATED)
    with Conn(sasl_server.mc_port) as c:
        c.rt(req(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"secret")), auth_failure(SASL_AUTH))
    # A file that cannot be parsed keeps the list in force.
    pwdb.write_text("carol:new\n\nbroken\n")
    sasl_server.signal(signal.SIGHUP)
    time.sleep(0.5)
    with Conn(sasl_server.mc_port) as c:
        c.rt(carol, AUTHENTICATED)


def wait_until_accepted(port, packet, expect):
    deadline = time.monotonic() + RELOAD_TIMEOUT_S
    while True:
        with Conn(port) as c:
            c.send(packet)
            got = c.read_exact(len(expect)) if expect[:1] == b"\x81" else c.read_line()
            if got == expect:
                return
        assert time.monotonic() < deadline, f"still {got!r} after SIGHUP"
        time.sleep(0.1)


# ------------------------------------------------------------------------------------------
# Text protocol authentication (-Y)


def auth_set(user, password, key=b"k"):
    data = user + b" " + password
    return b"set %s 0 0 %d\r\n%s\r\n" % (key, len(data), data)


@pytest.mark.parametrize("line", [
    b"get k\r\n", b"gets k\r\n", b"delete k\r\n", b"incr k 1\r\n", b"touch k 0\r\n",
    b"stats\r\n", b"version\r\n", b"quit\r\n", b"flush_all\r\n", b"verbosity 1\r\n",
    b"mn\r\n", b"mg k v\r\n", b"\r\n", b"set k 0 0\r\n", b"add k 0 0 1\r\n",
    b"set k 0 0 abc\r\n", b"set k 0 0 -1\r\n", b"set\tk 0 0 1\r\n", b"get k\n",
])
def test_every_line_before_auth_is_refused(t, line):
    t.rt(line, b"CLIENT_ERROR unauthenticated\r\n")
    assert t.is_open()


@pytest.mark.parametrize("user", ["alice", "bob"])
def test_text_auth_then_commands_work(t, user, key):
    t.rt(auth_set(user.encode(), USERS[user].encode()), b"STORED\r\n")
    k = key.encode()
    t.rt(b"set %s 3 0 2\r\nhi\r\n" % k, b"STORED\r\n")
    t.rt(b"get %s\r\n" % k, b"VALUE %s 3 2\r\nhi\r\nEND\r\n" % k)


@pytest.mark.parametrize("send,reply", [
    (auth_set(b"alice", b"wrong"), b"CLIENT_ERROR authentication failure\r\n"),
    (auth_set(b"eve", b"secret"), b"CLIENT_ERROR authentication failure\r\n"),
    (b"set k 0 0 5\r\nalice\r\n", b"CLIENT_ERROR bad authentication token format\r\n"),
    (b"set k 0 0 12\r\nalice\tsecret\r\n", b"CLIENT_ERROR bad authentication token format\r\n"),
    (b"set k 0 0 0\r\n\r\n", b"CLIENT_ERROR bad authentication token format\r\n"),
    (b"set k 0 0 12\r\nalice secretXY", b"CLIENT_ERROR bad command line termination\r\n"),
], ids=["wrong-password", "unknown-user", "one-token", "tab", "empty", "bad-termination"])
def test_text_auth_failures(t, send, reply):
    t.rt(send, reply)
    t.rt(b"get k\r\n", b"CLIENT_ERROR unauthenticated\r\n")


def test_failed_logins_never_lock_out_the_right_password(sasl_server, ascii_server):
    """memcached has no lockout, and neither has Spinel: one address's wrong passwords must
    not keep a user who shares that address (a NAT, a proxy, the loopback) out."""
    with Conn(sasl_server.mc_port) as c:
        wrong = req(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"wrong"))
        for _ in range(25):
            c.rt(wrong, auth_failure(SASL_AUTH))
        c.rt(req(SASL_AUTH, b"PLAIN", value=plain(b"alice", b"secret")), AUTHENTICATED)
    with Conn(ascii_server.mc_port) as t:
        failure = b"CLIENT_ERROR authentication failure\r\n"
        for _ in range(25):
            t.rt(auth_set(b"alice", b"wrong"), failure)
        t.rt(auth_set(b"alice", b"secret"), b"STORED\r\n")


@pytest.mark.parametrize("send", [
    b"set k 1 2 12 noreply\r\nalice secret\r\n",
    b"set k 0 0 +12\r\nalice secret\r\n",
    b"set k 0 0 12\nalice secret\r\n",
    b"set k 0 0 12 \r\nalice secret\r\n",
    b"set k 0 0 18\r\nalice secret extra\r\n",
    b"set k 0 0 13\r\nalice  secret\r\n",
], ids=["noreply-ignored", "plus-sign", "bare-newline", "trailing-space", "extra-token",
        "double-space"])
def test_text_auth_accepts(t, send):
    t.rt(send, b"STORED\r\n")
    t.rt(b"get k_absent\r\n", b"END\r\n")


def test_text_auth_data_in_pieces(t):
    t.send(b"set k 0 0 12\r\nali")
    t.assert_quiet(wait=0.2)
    t.rt(b"ce secret\r\n", b"STORED\r\n")


@pytest.mark.parametrize("send,reply", [
    (b"get a\r\nget b\r\nget c\r\n", b"CLIENT_ERROR unauthenticated\r\n"),
    (b"set k 0 0 5\r\nalice\r\nget b\r\n", b"CLIENT_ERROR unauthenticated\r\n"),
    (auth_set(b"alice", b"bad") + auth_set(b"alice", b"secret") + b"get b\r\n",
     b"STORED\r\nEND\r\n"),
    (b"get a\r\n" + auth_set(b"alice", b"secret") + b"mn\r\n", b"STORED\r\nMN\r\n"),
], ids=["refusals", "bad-format-then-refusal", "failure-then-success", "refusal-then-success"])
def test_replies_to_one_batch_overwrite_each_other(t, send, reply):
    t.rt(send, reply)


def test_junk_without_newline_closes(t):
    t.send(b"x" * 2049)
    assert t.read_all_until_close() == b""


def test_oversized_auth_data_closes(t):
    t.send(b"set k 0 0 16383\r\n")
    t.assert_quiet(wait=0.2)
    t.send(b"alice secret" + b" " * 16371 + b"\r\n")
    assert t.read_all_until_close() == b""


def test_text_stats_after_auth(ascii_server, auth_file):
    with Conn(ascii_server.mc_port) as t:
        t.rt(auth_set(b"alice", b"wrong"), b"CLIENT_ERROR authentication failure\r\n")
        t.rt(auth_set(b"alice", b"secret"), b"STORED\r\n")
        t.send(b"stats\r\n")
        stats = t.read_until(b"END\r\n")
        assert b"STAT auth_cmds 2\r\nSTAT auth_errors 1\r\n" in stats
        t.send(b"stats settings\r\n")
        settings = t.read_until(b"END\r\n")
        assert b"STAT binding_protocol ascii\r\n" in settings
        assert b"STAT auth_enabled_sasl no\r\n" in settings
        assert b"STAT auth_enabled_ascii %s\r\n" % str(auth_file).encode() in settings


def test_sighup_rereads_the_auth_file(ascii_server, auth_file):
    write_users(auth_file, {"carol": "new"})
    ascii_server.signal(signal.SIGHUP)
    # memcached re-reads the file at its next clock tick (within a second).
    wait_until_accepted(ascii_server.mc_port, auth_set(b"carol", b"new"), b"STORED\r\n")
    with Conn(ascii_server.mc_port) as t:
        t.rt(auth_set(b"alice", b"secret"), b"CLIENT_ERROR authentication failure\r\n")
    # A malformed file keeps the list in force.
    auth_file.write_text("carol:other\n\nbroken\n")
    ascii_server.signal(signal.SIGHUP)
    time.sleep(1.5)
    with Conn(ascii_server.mc_port) as t:
        t.rt(auth_set(b"carol", b"new"), b"STORED\r\n")


# ------------------------------------------------------------------------------------------
# Start-up rules


def server_argv(target, flags):
    if target == "memcached":
        exe = shutil.which("memcached") or pytest.skip("memcached not installed")
        argv = [exe, "-l", "127.0.0.1", "-p", "0"]
        if os.geteuid() == 0:
            argv += ["-u", "root"]
        return argv + flags
    return [spinel_bin(), "-l", "127.0.0.1", "-p", "0", "--resp-port", "0"] + flags


@pytest.mark.parametrize("flags,status", [
    (["-S", "-B", "ascii"], 64),
    (["-S", "-B", "auto"], 64),
    (["-S", "-U", "11311"], 64),
    (["-Y", "{auth}", "-B", "binary"], 64),
    (["-Y", "{auth}", "-U", "11311"], 64),
    (["-Y", "{missing}"], 1),
    (["-Y", "{malformed}"], 1),
], ids=["sasl-ascii", "sasl-auto", "sasl-udp", "auth-binary", "auth-udp", "auth-missing",
        "auth-malformed"])
def test_refused_combinations(target, tmp_path, auth_file, flags, status):
    malformed = tmp_path / "malformed"
    malformed.write_text("alice:x\n\nbob:y\n")
    names = {"auth": auth_file, "missing": tmp_path / "missing", "malformed": malformed}
    flags = [f.format(**names) for f in flags]
    done = subprocess.run(server_argv(target, flags), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=10)
    assert done.returncode == status, done.stderr


@pytest.mark.spinel_only
def test_sasl_without_a_password_file_checks_the_acl_users(make_server, monkeypatch):
    """-S with no MEMCACHED_SASL_PWDB: the Redis port's users (requirepass is `default`'s
    password, ACL SETUSER adds more) log in over SASL with what AUTH takes; a disabled or
    passwordless user does not; changes apply to the next attempt."""
    monkeypatch.delenv("MEMCACHED_SASL_PWDB", raising=False)
    server = make_server(extra=["-S", "--requirepass", "hunter2"])
    ok = resp(SASL_AUTH, value=b"Authenticated")
    with Conn(server.mc_port) as c:
        c.rt(req(SASL_AUTH, b"PLAIN", value=plain(b"default", b"hunter2")), ok)
        c.rt(req(SASL_AUTH, b"PLAIN", value=plain(b"default", b"wrong")), auth_failure(SASL_AUTH))
        c.rt(req(SASL_AUTH, b"PLAIN", value=plain(b"carol", b"pw")), auth_failure(SASL_AUTH))
    with Conn(server.resp_port) as r:
        r.rt(resp_encode("AUTH", "hunter2"), b"+OK\r\n")
        r.rt(resp_encode("ACL", "SETUSER", "carol", "on", ">pw", "+@all", "~*"), b"+OK\r\n")
        r.rt(resp_encode("ACL", "SETUSER", "dave", "on", "nopass", "+@all", "~*"), b"+OK\r\n")
    with Conn(server.mc_port) as c:
        c.rt(req(SASL_AUTH, b"PLAIN", value=plain(b"carol", b"pw")), ok)
        c.send(req(SET, b"k", struct.pack(">II", 0, 0), b"v"))
        head, _ = read_packet(c)
        assert head[6:8] == b"\0\0"
        c.rt(req(SASL_AUTH, b"PLAIN", value=plain(b"dave", b"anything")), auth_failure(SASL_AUTH))
    with Conn(server.resp_port) as r:
        r.rt(resp_encode("AUTH", "hunter2"), b"+OK\r\n")
        r.rt(resp_encode("ACL", "SETUSER", "carol", "off"), b"+OK\r\n")
    with Conn(server.mc_port) as c:
        c.rt(req(SASL_AUTH, b"PLAIN", value=plain(b"carol", b"pw")), auth_failure(SASL_AUTH))
        assert_refused_and_closed(c)


def test_sasl_with_auth_file_is_text_authentication(make_server, auth_file, target, tmp_path,
                                                    monkeypatch):
    # memcached applies -Y after -S: text protocol, -Y's file, auth_enabled_sasl yes.
    if target == "memcached":
        monkeypatch.setenv("SASL_CONF_PATH", str(tmp_path))
        (tmp_path / "memcached.conf").write_text("mech_list: plain\n")
    else:
        monkeypatch.setenv("MEMCACHED_SASL_PWDB", str(auth_file))
    server = make_server(extra=["-S", "-Y", str(auth_file)])
    with Conn(server.mc_port) as t:
        t.rt(b"get k\r\n", b"CLIENT_ERROR unauthenticated\r\n")
        t.rt(auth_set(b"alice", b"secret"), b"STORED\r\n")
        t.send(b"stats settings\r\n")
        settings = t.read_until(b"END\r\n")
        assert b"STAT auth_enabled_sasl yes\r\n" in settings
        assert b"STAT binding_protocol ascii\r\n" in settings


# ------------------------------------------------------------------------------------------
# A real client: pylibmc (libmemcached) with binary=True and SASL credentials


def _pylibmc():
    """pylibmc, with its bundled Cyrus library pointed at the system's SASL plugins (the
    manylinux wheel's own default plugin path does not exist on Debian; libsasl2-modules
    provides PLAIN in the system one)."""
    for plugins in ("/usr/lib/x86_64-linux-gnu/sasl2", "/usr/lib/aarch64-linux-gnu/sasl2",
                    "/usr/lib/sasl2"):
        if os.path.isdir(plugins):
            os.environ.setdefault("SASL_PATH", plugins)
            break
    return pytest.importorskip("pylibmc")


def test_pylibmc_with_sasl(sasl_server, key):
    pylibmc = _pylibmc()
    server = [f"127.0.0.1:{sasl_server.mc_port}"]
    client = pylibmc.Client(server, binary=True, username="alice", password="secret")
    try:
        k1, k2, counter = f"{key}_1", f"{key}_2", f"{key}_n"
        assert client.get(k1) is None
        assert client.set(k1, b"one") and client.set(k2, "two")
        assert client.get(k1) == b"one"
        assert client.set(counter, 41)
        assert client.incr(counter) == 42
        assert client.get_multi([k1, k2, counter, f"{key}_absent"]) == {
            k1: b"one", k2: "two", counter: 42}
        assert client.delete(k1)
        assert client.get(k1) is None
    finally:
        client.disconnect_all()
    wrong = pylibmc.Client(server, binary=True, username="alice", password="wrong")
    with pytest.raises(pylibmc.Error):
        wrong.get(key)
    wrong.disconnect_all()
