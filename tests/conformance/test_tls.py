"""TLS on the memcached port (memcached's -Z, -o ssl_*) and on a Redis TLS port beside the plain
one (--tls-port, --tls-*): real clients (redis-py, pymemcache, redis-cli, openssl s_client) and
raw ssl sockets against certificates made here with the openssl CLI: a CA, server certificates
for 127.0.0.1, a client certificate, and a second, unrelated CA with a client of its own.
The flags are the real servers' own, so the memcache-marked tests pass with
CONFORMANCE_TARGET=memcached and the resp-marked ones with CONFORMANCE_TARGET=redis.
"""

import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time

import pytest
import redis
from pymemcache.client.base import Client as MemcacheClient

from conftest import free_port

OPENSSL = shutil.which("openssl")
REFUSED = (ssl.SSLError, ConnectionError, OSError, redis.exceptions.ConnectionError)
IO_TIMEOUT_S = 5.0

pytestmark = pytest.mark.skipif(OPENSSL is None, reason="openssl CLI not installed")


# ------------------------------------------------------------------------------------------
# Certificates


def _openssl(*args, cwd):
    subprocess.run([OPENSSL, *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def _signed(directory, name, cn, ca):
    """A key and a certificate for `cn`, valid for 127.0.0.1 and localhost, signed by `ca`."""
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-subj",
             f"/CN={cn}", "-out", f"{name}.csr", cwd=directory)
    with open(os.path.join(directory, f"{name}.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-days", "2", "-out", f"{name}.crt", "-extfile", f"{name}.ext",
             cwd=directory)


def _authority(directory, name, cn):
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-subj",
             f"/CN={cn}", "-days", "2", "-out", f"{name}.crt", cwd=directory)


class Certs:
    def __init__(self, directory):
        self.dir = str(directory)
        _authority(self.dir, "ca", "test-ca")
        _authority(self.dir, "other-ca", "other-ca")
        _signed(self.dir, "server-a", "server-a", "ca")
        _signed(self.dir, "server-b", "server-b", "ca")
        _signed(self.dir, "client", "client", "ca")
        _signed(self.dir, "stranger", "stranger", "other-ca")

    def path(self, name):
        return os.path.join(self.dir, name)

    def live(self, name):
        """A copy of server-a's files under `name`, for a server whose files a test replaces."""
        for ext in ("crt", "key"):
            shutil.copyfile(self.path(f"server-a.{ext}"), self.path(f"{name}.{ext}"))
        return self.path(f"{name}.crt"), self.path(f"{name}.key")

    def client_context(self, cert=None, maximum=None, minimum=None):
        context = ssl.create_default_context(cafile=self.path("ca.crt"))
        if cert:
            context.load_cert_chain(self.path(f"{cert}.crt"), self.path(f"{cert}.key"))
        if maximum:
            context.maximum_version = maximum
        if minimum:
            context.minimum_version = minimum
        return context


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return Certs(tmp_path_factory.mktemp("tls"))


# ------------------------------------------------------------------------------------------
# Servers and clients


def wait_listening(server, port):
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if server.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"port {port} never listened\n{server.describe()}")
            time.sleep(0.05)


def memcache_tls(make_server, certs, cert=None, key=None, **ssl):
    """A server whose memcached port speaks TLS (-Z); `ssl` adds -o ssl_* suboptions."""
    options = {"ssl_chain_cert": cert or certs.path("server-a.crt"),
               "ssl_key": key or certs.path("server-a.key"), **ssl}
    extended = ",".join(f"{k}={v}" for k, v in options.items())
    return make_server(extra=["-Z", "-o", extended])


def resp_tls(make_server, certs, auth_clients="no", cert=None, key=None, extra=()):
    """A server with a TLS RESP port beside its plain one; returns (server, tls port)."""
    port = free_port()
    server = make_server(extra=[
        "--tls-port", str(port),
        "--tls-cert-file", cert or certs.path("server-a.crt"),
        "--tls-key-file", key or certs.path("server-a.key"),
        "--tls-ca-cert-file", certs.path("ca.crt"),
        "--tls-auth-clients", auth_clients,
        *extra,
    ])
    wait_listening(server, port)
    return server, port


def tls_socket(port, context):
    raw = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def exchange(port, context, request, until):
    """One TLS connection: sends `request`, reads until the reply ends with `until`."""
    with tls_socket(port, context) as s:
        s.sendall(request)
        return read_until(s, until)


def read_until(s, until):
    reply = b""
    while not reply.endswith(until):
        chunk = s.recv(1 << 16)
        if not chunk:
            raise ConnectionError(f"closed after {reply[-200:]!r}")
        reply += chunk
    return reply


def served_cn(port, context):
    """The common name of the certificate the server shows a new connection."""
    with tls_socket(port, context) as s:
        subject = dict(item[0] for item in s.getpeercert()["subject"])
        return subject["commonName"]


def closes_on_plain_text(port, request):
    """Plain text sent to a TLS port: the server answers at most an alert, then closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S) as s:
        s.sendall(request)
        received = b""
        try:
            while chunk := s.recv(4096):
                received += chunk
        except ConnectionResetError:
            pass
        return received


# ------------------------------------------------------------------------------------------
# Redis: a TLS port beside the plain one


@pytest.mark.resp
def test_redis_py_over_tls_beside_the_plain_port(make_server, certs):
    server, port = resp_tls(make_server, certs)
    secure = redis.Redis(port=port, ssl=True, ssl_ca_certs=certs.path("ca.crt"),
                         socket_timeout=IO_TIMEOUT_S)
    plain = redis.Redis(port=server.resp_port, socket_timeout=IO_TIMEOUT_S)
    assert secure.set("tls:k", "v")
    assert plain.get("tls:k") == b"v", "one store behind both ports"
    assert secure.ping() and plain.ping()
    secure.close()
    plain.close()


@pytest.mark.resp
def test_redis_cli_tls(make_server, certs):
    _, port = resp_tls(make_server, certs)
    cli = shutil.which("redis-cli") or pytest.skip("redis-cli not installed")
    base = [cli, "--tls", "--cacert", certs.path("ca.crt"), "-h", "127.0.0.1", "-p", str(port)]
    run = lambda *args: subprocess.run(base + list(args), capture_output=True, text=True,
                                       timeout=10)
    assert run("PING").stdout.strip() == "PONG"
    assert run("SET", "cli:k", "hello").stdout.strip() == "OK"
    assert run("GET", "cli:k").stdout.strip() == "hello"


@pytest.mark.resp
def test_redis_large_value_and_pipeline_over_tls(make_server, certs):
    _, port = resp_tls(make_server, certs)
    r = redis.Redis(port=port, ssl=True, ssl_ca_certs=certs.path("ca.crt"),
                    socket_timeout=IO_TIMEOUT_S)
    value = os.urandom(2 << 20)
    assert r.set("tls:big", value)
    assert r.get("tls:big") == value
    pipe = r.pipeline(transaction=False)
    for i in range(1000):
        pipe.set(f"tls:p{i}", i)
        pipe.get(f"tls:p{i}")
    replies = pipe.execute()
    assert replies[1::2] == [str(i).encode() for i in range(1000)]
    r.close()


@pytest.mark.resp
def test_redis_large_mget_over_tls_beside_plain(make_server, certs):
    # Large values leave plain connections from item memory, TLS ones copied (records are
    # sealed from the output buffer): both get the same 48 values of 10 KB, whole.
    server, port = resp_tls(make_server, certs)
    tls = redis.Redis(port=port, ssl=True, ssl_ca_certs=certs.path("ca.crt"),
                      socket_timeout=IO_TIMEOUT_S)
    plain = redis.Redis(port=server.resp_port, socket_timeout=IO_TIMEOUT_S)
    values = {f"tls:m{i:02d}": os.urandom(10000) for i in range(48)}
    assert plain.mset(values)
    keys = list(values)
    for client in (tls, plain, tls):
        assert client.mget(keys) == [values[k] for k in keys]
        assert client.get(keys[7]) == values[keys[7]]
    tls.close()
    plain.close()


@pytest.mark.resp
def test_redis_mutual_tls(make_server, certs):
    server, port = resp_tls(make_server, certs, auth_clients="yes")
    with_cert = redis.Redis(port=port, ssl=True, ssl_ca_certs=certs.path("ca.crt"),
                            ssl_certfile=certs.path("client.crt"),
                            ssl_keyfile=certs.path("client.key"), socket_timeout=IO_TIMEOUT_S)
    assert with_cert.ping()
    for cert in (None, "stranger"):
        context = certs.client_context(cert=cert)
        with pytest.raises(REFUSED):
            exchange(port, context, b"PING\r\n", b"\r\n")
    assert with_cert.set("mtls:k", "v"), "a refused client leaves the others alone"
    assert redis.Redis(port=server.resp_port).get("mtls:k") == b"v"
    with_cert.close()


@pytest.mark.resp
def test_redis_client_cert_optional(make_server, certs):
    _, port = resp_tls(make_server, certs, auth_clients="optional")
    assert exchange(port, certs.client_context(), b"PING\r\n", b"\r\n") == b"+PONG\r\n"
    with_cert = certs.client_context(cert="client")
    assert exchange(port, with_cert, b"PING\r\n", b"\r\n") == b"+PONG\r\n"
    with pytest.raises(REFUSED):
        exchange(port, certs.client_context(cert="stranger"), b"PING\r\n", b"\r\n")


@pytest.mark.resp
@pytest.mark.parametrize("protocols", ["TLSv1.2", "TLSv1.3"])
def test_redis_tls_protocols(make_server, certs, protocols):
    _, port = resp_tls(make_server, certs, extra=["--tls-protocols", protocols])
    tls12 = certs.client_context(maximum=ssl.TLSVersion.TLSv1_2)
    tls13 = certs.client_context(minimum=ssl.TLSVersion.TLSv1_3)
    allowed, refused = (tls12, tls13) if protocols == "TLSv1.2" else (tls13, tls12)
    with tls_socket(port, allowed) as s:
        assert s.version() == protocols
        s.sendall(b"PING\r\n")
        assert read_until(s, b"\r\n") == b"+PONG\r\n"
    with pytest.raises(REFUSED):
        exchange(port, refused, b"PING\r\n", b"\r\n")


@pytest.mark.resp
def test_redis_plain_text_on_the_tls_port_is_closed(make_server, certs):
    server, port = resp_tls(make_server, certs)
    received = closes_on_plain_text(port, b"PING\r\n" * 100)
    assert b"PONG" not in received
    assert exchange(port, certs.client_context(), b"PING\r\n", b"\r\n") == b"+PONG\r\n"
    assert redis.Redis(port=server.resp_port).ping()


@pytest.mark.resp
@pytest.mark.spinel_only
def test_redis_certificates_reload_on_sighup(make_server, certs):
    cert, key = certs.live("resp-live")
    server, port = resp_tls(make_server, certs, cert=cert, key=key)
    context = certs.client_context()
    assert served_cn(port, context) == "server-a"
    kept = tls_socket(port, context)  # a connection made before the reload
    for ext in ("crt", "key"):
        shutil.copyfile(certs.path(f"server-b.{ext}"), certs.path(f"resp-live.{ext}"))
    server.signal(signal.SIGHUP)
    deadline = time.monotonic() + 5
    while served_cn(port, context) != "server-b":
        assert time.monotonic() < deadline, server.describe()
        time.sleep(0.05)
    kept.sendall(b"PING\r\n")
    assert read_until(kept, b"\r\n") == b"+PONG\r\n"
    kept.close()


# ------------------------------------------------------------------------------------------
# memcached: -Z on the memcached port


@pytest.mark.memcache
def test_pymemcache_over_tls(make_server, certs):
    server = memcache_tls(make_server, certs)
    client = MemcacheClient(("127.0.0.1", server.mc_port), tls_context=certs.client_context(),
                            timeout=IO_TIMEOUT_S)
    client.set("tls-k", b"v")
    assert client.get("tls-k") == b"v"
    value = os.urandom(1_000_000)  # near the 1 MiB item limit
    assert client.set("tls-big", value, noreply=False)
    assert client.get("tls-big") == value
    client.close()


@pytest.mark.memcache
def test_memcache_pipelined_batch_over_tls(make_server, certs):
    server = memcache_tls(make_server, certs)
    count = 500
    batch = b"".join(b"set p%d 0 0 %d\r\n%d\r\n" % (i, len(str(i)), i) for i in range(count))
    batch += b"".join(b"get p%d\r\n" % i for i in range(count)) + b"version\r\n"
    with tls_socket(server.mc_port, certs.client_context()) as s:
        s.sendall(batch)
        reply = read_until(s, b"\r\n")
        while b"VERSION" not in reply:
            reply += read_until(s, b"\r\n")
    assert reply.count(b"STORED\r\n") == count
    for i in (0, 250, count - 1):
        assert b"VALUE p%d 0 %d\r\n%d\r\nEND\r\n" % (i, len(str(i)), i) in reply


@pytest.mark.memcache
def test_memcache_wide_multiget_to_a_slow_reader_over_tls(make_server, certs):
    """A 10 MB reply (one get of 200 values of 50 KB) to a reader that starts late: the
    server answers it in chunks under its output bounds, each sealed, and all arrives."""
    server = memcache_tls(make_server, certs)
    value = b"x" * 50_000
    keys = [b"wide%d" % i for i in range(200)]
    with tls_socket(server.mc_port, certs.client_context()) as s:
        s.sendall(b"".join(b"set %s 0 0 %d noreply\r\n%s\r\n" % (k, len(value), value)
                           for k in keys))
        s.sendall(b"get " + b" ".join(keys) + b"\r\n")
        time.sleep(0.3)
        reply = read_until(s, b"END\r\n")
    assert reply.count(b"VALUE wide") == len(keys)
    assert len(reply) > len(keys) * len(value)


@pytest.mark.memcache
def test_close_notify_is_answered(make_server, certs):
    """A client's close_notify after its requests gets the server's close_notify: a clean
    TLS shutdown, which unwrap() waits for."""
    server = memcache_tls(make_server, certs)
    s = tls_socket(server.mc_port, certs.client_context())
    s.sendall(b"set cn 0 0 1\r\nx\r\nget cn\r\n")
    assert read_until(s, b"END\r\n") == b"STORED\r\nVALUE cn 0 1\r\nx\r\nEND\r\n"
    raw = s.unwrap()
    raw.close()


@pytest.mark.memcache
def test_endless_line_over_tls_is_cut_off(make_server, certs):
    """The parsers' limits hold over TLS: a command line that never ends (5 MiB with no
    newline) gets the connection closed, and the server serves the next client."""
    server = memcache_tls(make_server, certs)
    s = tls_socket(server.mc_port, certs.client_context())
    closed = False
    try:
        s.sendall(b"get " + b"k" * (5 << 20))
        closed = s.recv(4096) == b""
    except REFUSED:
        closed = True
    s.close()
    assert closed
    assert exchange(server.mc_port, certs.client_context(), b"version\r\n", b"\r\n") \
        .startswith(b"VERSION ")


@pytest.mark.memcache
@pytest.mark.spinel_only
def test_multiget_under_a_tight_output_limit_over_tls(make_server, certs):
    """--output-limit 1 (MiB) and a 4 MB multiget over TLS: the reply is made in chunks of
    about the pause threshold, each sealed as it is made, so it is served whole."""
    port_flags = ["-Z", "-o", f"ssl_chain_cert={certs.path('server-a.crt')},"
                  f"ssl_key={certs.path('server-a.key')}"]
    server = make_server(extra=port_flags + ["--output-limit", "1"])
    value = b"y" * 2000
    keys = [b"lim%d" % i for i in range(2000)]
    with tls_socket(server.mc_port, certs.client_context()) as s:
        s.sendall(b"".join(b"set %s 0 0 %d noreply\r\n%s\r\n" % (k, len(value), value)
                           for k in keys))
        s.sendall(b"get " + b" ".join(keys) + b"\r\n")
        reply = read_until(s, b"END\r\n")
    assert reply.count(b"VALUE lim") == len(keys)


@pytest.mark.memcache
def test_openssl_s_client_handshake(make_server, certs):
    server = memcache_tls(make_server, certs)
    done = subprocess.run(
        [OPENSSL, "s_client", "-connect", f"127.0.0.1:{server.mc_port}", "-CAfile",
         certs.path("ca.crt"), "-verify_return_error", "-ign_eof"],
        input=b"version\r\nquit\r\n", capture_output=True, timeout=10)
    out = done.stdout.decode("utf-8", "replace")
    assert "Verify return code: 0 (ok)" in out, out
    assert "VERSION " in out, out


@pytest.mark.memcache
def test_memcache_plain_text_on_the_tls_port_is_closed(make_server, certs):
    server = memcache_tls(make_server, certs)
    received = closes_on_plain_text(server.mc_port, b"version\r\n" * 100)
    assert b"VERSION" not in received
    assert exchange(server.mc_port, certs.client_context(), b"version\r\n", b"\r\n") \
        .startswith(b"VERSION ")
    stats = exchange(server.mc_port, certs.client_context(), b"stats\r\n", b"END\r\n")
    errors = re.search(rb"STAT ssl_handshake_errors (\d+)\r\n", stats)
    assert errors and int(errors.group(1)) >= 1, errors  # memcached counts this one twice
    assert b"STAT time_since_server_cert_refresh " in stats
    settings = exchange(server.mc_port, certs.client_context(), b"stats settings\r\n",
                        b"END\r\n")
    for line in (b"ssl_enabled yes", b"ssl_verify_mode 0", b"ssl_min_version tlsv1.2",
                 b"ssl_chain_cert " + certs.path("server-a.crt").encode()):
        assert b"STAT " + line + b"\r\n" in settings, line


@pytest.mark.memcache
@pytest.mark.parametrize("minimum", ["2", "3"])  # tlsv1.2, tlsv1.3 (memcached takes numbers)
def test_minimum_version(make_server, certs, minimum):
    server = memcache_tls(make_server, certs, ssl_min_version=minimum)
    tls12 = certs.client_context(maximum=ssl.TLSVersion.TLSv1_2)
    tls13 = certs.client_context(minimum=ssl.TLSVersion.TLSv1_3)
    assert exchange(server.mc_port, tls13, b"version\r\n", b"\r\n").startswith(b"VERSION")
    if minimum == "3":
        with pytest.raises(REFUSED):
            exchange(server.mc_port, tls12, b"version\r\n", b"\r\n")
    else:
        with tls_socket(server.mc_port, tls12) as s:
            assert s.version() == "TLSv1.2"
            s.sendall(b"version\r\n")
            assert read_until(s, b"\r\n").startswith(b"VERSION")


@pytest.mark.memcache
@pytest.mark.parametrize("mode", ["1", "2"])
def test_memcache_client_certificates(make_server, certs, mode):
    server = memcache_tls(make_server, certs, ssl_ca_cert=certs.path("ca.crt"),
                          ssl_verify_mode=mode)
    port = server.mc_port
    good = certs.client_context(cert="client")
    assert exchange(port, good, b"version\r\n", b"\r\n").startswith(b"VERSION")
    with pytest.raises(REFUSED):
        exchange(port, certs.client_context(cert="stranger"), b"version\r\n", b"\r\n")
    without = certs.client_context()
    if mode == "2":
        with pytest.raises(REFUSED):
            exchange(port, without, b"version\r\n", b"\r\n")
    else:
        assert exchange(port, without, b"version\r\n", b"\r\n").startswith(b"VERSION")
    assert exchange(port, good, b"version\r\n", b"\r\n").startswith(b"VERSION")


@pytest.mark.memcache
def test_refresh_certs(make_server, certs):
    cert, key = certs.live("mc-live")
    server = memcache_tls(make_server, certs, cert=cert, key=key)
    context = certs.client_context()
    assert served_cn(server.mc_port, context) == "server-a"
    with tls_socket(server.mc_port, context) as admin:
        for ext in ("crt", "key"):
            shutil.copyfile(certs.path(f"server-b.{ext}"), certs.path(f"mc-live.{ext}"))
        admin.sendall(b"refresh_certs\r\n")
        assert read_until(admin, b"\r\n") == b"OK\r\n"
        assert served_cn(server.mc_port, context) == "server-b"
        with open(certs.path("mc-live.crt"), "w") as f:
            f.write("not a certificate\n")
        admin.sendall(b"refresh_certs\r\n")
        refused = read_until(admin, b"\r\n")
        assert refused.startswith(b"Error loading the certificate chain: "), refused
        assert served_cn(server.mc_port, context) == "server-b", "a bad file keeps the old"
        admin.sendall(b"version\r\n")
        assert read_until(admin, b"\r\n").startswith(b"VERSION")


@pytest.mark.memcache
@pytest.mark.spinel_only
def test_memcache_certificates_reload_on_sighup(make_server, certs):
    cert, key = certs.live("mc-hup")
    server = memcache_tls(make_server, certs, cert=cert, key=key)
    context = certs.client_context()
    assert served_cn(server.mc_port, context) == "server-a"
    for ext in ("crt", "key"):
        shutil.copyfile(certs.path(f"server-b.{ext}"), certs.path(f"mc-hup.{ext}"))
    server.signal(signal.SIGHUP)
    deadline = time.monotonic() + 5
    while served_cn(server.mc_port, context) != "server-b":
        assert time.monotonic() < deadline, server.describe()
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------
# Both ports under mixed, partly hostile load


@pytest.mark.spinel_only
def test_mixed_hostile_load_on_both_tls_ports(make_server, certs):
    """For about two seconds, 16 threads open connections to the memcached (-Z) and Redis
    TLS ports: garbage bytes, a ClientHello cut short, a handshake then a close, a request
    cut off midway, and complete pipelines whose replies are checked. Good clients never
    see an error, and the server serves afterwards."""
    port = free_port()
    server = make_server(extra=[
        "-Z", "-o", f"ssl_chain_cert={certs.path('server-a.crt')},"
        f"ssl_key={certs.path('server-a.key')}",
        "--tls-port", str(port), "--tls-cert-file", certs.path("server-a.crt"),
        "--tls-key-file", certs.path("server-a.key"), "--tls-auth-clients", "no",
    ])
    wait_listening(server, port)
    context = certs.client_context()
    deadline = time.monotonic() + 2
    failures = []

    def good(target, number):
        value = b"%d" % number * 100
        if target == server.mc_port:
            request = b"set m%d 0 0 %d\r\n%s\r\nget m%d\r\n" % (number, len(value), value,
                                                                   number)
            want = b"STORED\r\nVALUE m%d 0 %d\r\n%s\r\nEND\r\n" % (number, len(value), value)
        else:
            key = b"r%d" % number  # one thread's own: no other writes it
            request = b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (
                len(key), key, len(value), value)
            request += b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key)
            want = b"+OK\r\n$%d\r\n%s\r\n" % (len(value), value)
        with tls_socket(target, context) as s:
            s.sendall(request * 20)
            got = b""
            while len(got) < len(want) * 20:
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                got += chunk
        if got != want * 20:
            failures.append((target, number, got[-100:]))

    def hostile(kind, target):
        try:
            with socket.create_connection(("127.0.0.1", target), timeout=IO_TIMEOUT_S) as s:
                if kind == 0:
                    s.sendall(os.urandom(3000))
                elif kind == 1:
                    s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
                else:
                    with context.wrap_socket(s, server_hostname="127.0.0.1") as t:
                        if kind == 3:
                            t.sendall(b"set half 0 0 100\r\nonly part")
        except REFUSED:
            pass

    def client(seed):
        number = seed
        while time.monotonic() < deadline:
            number += 16
            target = (server.mc_port, port)[number % 2]
            if number % 3:
                good(target, number)
            else:
                hostile(number % 4, target)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:3]
    assert server.proc.poll() is None
    assert exchange(port, context, b"PING\r\n", b"\r\n") == b"+PONG\r\n"
    assert exchange(server.mc_port, context, b"version\r\n", b"\r\n").startswith(b"VERSION")
