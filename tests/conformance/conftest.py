"""Fixtures for the conformance suite: start servers on free loopback ports, stop them by pid.

The suite has one target, chosen with `--target` or CONFORMANCE_TARGET:

- `spinel` (default): every test runs against `$SPINEL_BIN`, once per entry of SPINEL_MATRIX
  ("io:threads" pairs, default "uring:1,uring:2,epoll:1,epoll:2").
- `memcached`: only tests marked `memcache` run, against the real memcached. This is how the
  memcached-protocol expectations are validated: real memcached is the specification.
- `redis`: only tests marked `resp` run, against the real redis-server.

Tests marked `spinel_only` (cross-protocol behavior, spinel's own flags) are skipped for the
real peers. Tests marked `slow` run on SLOW_ENTRIES of the matrix (one per I/O back end), and
tests marked `one_backend` (a property of the commands or the store, not of the I/O back end
or the worker count: model comparisons with redis-server, COMMAND DOCS, config parsing, long
measurements) on its first entry only; SPINEL_SLOW_EVERYWHERE=1 runs both on every entry.
An entry written "io:threads/workers" runs only the tests of WORKER_FILES (several workers at
once: wakeups between loops, fan-out, blocking, hostile churn), CI's way to cover io_uring with
two workers without running the whole suite a third time. Every process started here is recorded and stopped by its own pid; nothing else is
ever signalled.
"""

import collections
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

TARGETS = ("spinel", "memcached", "redis")
DEFAULT_MATRIX = "uring:1,uring:2,epoll:1,epoll:2"
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0


def pytest_addoption(parser):
    parser.addoption(
        "--target",
        choices=TARGETS,
        default=None,
        help="server to test: spinel (default), memcached or redis (env CONFORMANCE_TARGET)",
    )


def pytest_configure(config):
    for line in (
        "memcache: memcached-protocol test; also runs with --target memcached",
        "resp: Redis-protocol test; also runs with --target redis",
        "spinel_only: behavior only spinel has (cross-protocol, spinel flags)",
        "slow: takes more than a few seconds; runs on SLOW_ENTRIES of the matrix only",
        "one_backend: does not depend on the I/O back end or the worker count; runs on the "
        "matrix's first entry only",
    ):
        config.addinivalue_line("markers", line)


def target_of(config):
    target = config.getoption("--target") or os.environ.get("CONFORMANCE_TARGET", "spinel")
    if target not in TARGETS:
        raise pytest.UsageError(f"CONFORMANCE_TARGET must be one of {TARGETS}, not {target!r}")
    return target


# Tests marked slow run on these matrix entries only (one per I/O back end, one and two
# workers between them), unless SPINEL_SLOW_EVERYWHERE=1: they keep CI within its time.
SLOW_ENTRIES = ("uring:1", "epoll:2")


# The files whose tests exercise several workers at once (cross-loop wakeups and kills,
# fan-out, blocking, invalidation, concurrent writers, send paths under load): all that a
# "io:threads/workers" matrix entry runs.
WORKER_FILES = frozenset(
    f"test_{name}.py"
    for name in (
        "redis_blocking", "stream_blocking", "redis_pubsub", "redis_tracking",
        "redis_tracking_order", "memcache_tracking_outcome", "redis_clients", "redis_tx",
        "hostile_auth", "hostile_busy", "hostile_churn", "hostile_deadlock", "hostile_hangs",
        "hostile_scripting", "reliability", "reliability_store", "lent_values",
        "large_multiget", "large_resp_mget", "replication", "replication_cases",
        "memcache_conns", "read_buf_limit", "limits_hostile", "tls", "udp",
        "eviction_policies", "memory", "live_config", "instances", "redis_cluster_failover",
    )
)


def _limited_entries():
    """The matrix entries written "io:threads/workers"."""
    raw = os.environ.get("SPINEL_MATRIX", DEFAULT_MATRIX).split(",")
    return {e.strip().split("/")[0] for e in raw if e.strip().endswith("/workers")}


def _backend_of(item):
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("backend") if callspec else None


def pytest_collection_modifyitems(config, items):
    target = target_of(config)
    if target == "spinel":
        limited = _limited_entries()
        everywhere = os.environ.get("SPINEL_SLOW_EVERYWHERE") == "1"
        entries = [e.strip() for e in os.environ.get("SPINEL_MATRIX", DEFAULT_MATRIX).split(",")]
        # The full entries the tests were parametrized with (io_uring ones drop out where the
        # kernel refuses io_uring), in the matrix's order.
        present = {_backend_of(item) for item in items}
        entries = [e for e in entries if e in present and e not in limited] or sorted(present)
        # With none of the chosen entries among SLOW_ENTRIES, slow tests run everywhere.
        keep = [e for e in entries if e in SLOW_ENTRIES] or entries
        for item in items:
            backend = _backend_of(item)
            if backend is None:
                continue
            if backend in limited:
                if os.path.basename(str(item.fspath)) not in WORKER_FILES:
                    item.add_marker(pytest.mark.skip(reason=f"{backend}/workers: WORKER_FILES"))
                    continue
            if everywhere:
                continue
            if item.get_closest_marker("one_backend"):
                if backend != entries[0]:
                    item.add_marker(pytest.mark.skip(reason=f"one_backend: runs on {entries[0]}"))
            elif item.get_closest_marker("slow") and backend not in keep:
                item.add_marker(pytest.mark.skip(reason=f"slow: runs on {', '.join(keep)}"))
        return
    wanted = "memcache" if target == "memcached" else "resp"
    for item in items:
        if item.get_closest_marker("spinel_only"):
            item.add_marker(pytest.mark.skip(reason=f"spinel-only behavior; target is {target}"))
        elif not item.get_closest_marker(wanted):
            item.add_marker(pytest.mark.skip(reason=f"not a {wanted} test; target is {target}"))


def _target_at_import():
    # Fixture params are fixed at import time, before options are parsed; the env var is the
    # source there, and `--target` is reconciled in the `backend` fixture.
    import sys

    for i, arg in enumerate(sys.argv):
        if arg == "--target" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith("--target="):
            return arg.split("=", 1)[1]
    return os.environ.get("CONFORMANCE_TARGET", "spinel")


def _matrix():
    target = _target_at_import()
    if target != "spinel":
        return [target]
    entries = []
    for raw in os.environ.get("SPINEL_MATRIX", DEFAULT_MATRIX).split(","):
        raw = raw.strip()
        if not raw:
            continue
        io, _, threads = raw.removesuffix("/workers").partition(":")
        if io not in ("uring", "epoll") or not threads.isdigit() or int(threads) < 1:
            raise pytest.UsageError(
                f"bad SPINEL_MATRIX entry {raw!r}; want io:threads or io:threads/workers")
        entries.append(f"{io}:{threads}")
    if any(e.startswith("uring:") for e in entries) and not _uring_usable():
        # Loud, not silent: the run then covers epoll only, and says so.
        sys.stderr.write("conformance: WARNING: spinel cannot use io_uring on this machine "
                         "(see its message above); the uring matrix entries are skipped\n")
        entries = [e for e in entries if not e.startswith("uring:")]
    return entries


def _uring_usable():
    """Whether `spinel --io uring` starts here (a kernel with io_uring disabled or filtered
    makes it refuse at once with the reason)."""
    path = os.environ.get("SPINEL_BIN")
    if not path or not os.access(path, os.X_OK):
        return True  # spinel_bin() reports the missing binary properly later
    argv = [path, "--io", "uring", "-p", "0", "--resp-port", "0", "-t", "1", "-m", "8"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=1.0)
        sys.stderr.write(err.decode("utf-8", "replace"))
        return False  # it exited on its own: it refused to start
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.communicate(timeout=5)
        return True


# ------------------------------------------------------------------------------------------
# Processes


_RECENT_PORTS = collections.deque(maxlen=256)


def free_port():
    """A loopback port that was free a moment ago (the kernel picks it). The kernel may
    hand the same port out twice in a row once the first socket is closed, so ports
    given out recently are skipped: two calls for one server never collide."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _RECENT_PORTS:
            _RECENT_PORTS.append(port)
            return port


def spinel_bin():
    path = os.environ.get("SPINEL_BIN")
    if not path:
        root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
        for profile in ("release", "debug"):
            candidate = os.path.join(root, "target", profile, "spinel")
            if os.access(candidate, os.X_OK):
                return candidate
        pytest.fail("SPINEL_BIN is not set and target/{release,debug}/spinel does not exist")
    if not os.access(path, os.X_OK):
        pytest.fail(f"SPINEL_BIN={path} is not an executable file")
    return path


class Server:
    """One server process we started: its ports, pid and captured stderr."""

    def __init__(self, kind, argv, mc_port=None, resp_port=None, io=None, threads=None):
        self.kind = kind
        self.argv = argv
        self.mc_port = mc_port
        self.resp_port = resp_port
        self.io = io
        self.threads = threads
        self.stderr_file = tempfile.NamedTemporaryFile(
            prefix=f"conformance-{kind}-", suffix=".stderr", delete=False
        )
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self.stderr_file,
            stderr=self.stderr_file,
            start_new_session=True,
        )

    @property
    def pid(self):
        return self.proc.pid

    def stderr(self):
        self.stderr_file.flush()
        with open(self.stderr_file.name, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def describe(self):
        return f"{self.kind} pid {self.pid}: {' '.join(self.argv)}\n--- stderr ---\n{self.stderr()}"

    def wait_ready(self):
        ports = [p for p in (self.mc_port, self.resp_port) if p]
        deadline = time.monotonic() + START_TIMEOUT_S
        for port in ports:
            while True:
                if self.proc.poll() is not None:
                    pytest.fail(f"server exited with {self.proc.returncode}\n{self.describe()}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        self.stop()
                        pytest.fail(f"port {port} not accepting after {START_TIMEOUT_S}s\n"
                                    f"{self.describe()}")
                    time.sleep(0.05)
        return self

    def signal(self, sig):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self):
        """SIGTERM, then SIGKILL after a grace period; returns the exit status."""
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.wait(STOP_TIMEOUT_S)
        self.stderr_file.close()
        return self.proc.returncode

    def cleanup(self):
        self.stop()
        try:
            os.unlink(self.stderr_file.name)
        except OSError:
            pass


PORT_TRIES = 3


def start_on_free_ports(start):
    """`start(mc_port, resp_port)` on fresh free ports, again on new ones when a port was
    taken between `free_port` and the server's bind (another xdist worker's client socket
    can get it: CI saw "Address already in use" once)."""
    for attempt in range(PORT_TRIES):
        server = start(free_port(), free_port())
        try:
            return server.wait_ready()
        except pytest.fail.Exception:
            if attempt + 1 == PORT_TRIES or "Address already in use" not in server.stderr():
                raise
            server.cleanup()


def start_server(target, io=None, threads=1, conn_limit=None, idle_timeout=None, item_max=None,
                 extra=()):
    """Start one server of `target` with the generic limits translated to its own flags.

    item_max is memcached's -I value ("2k", "1m"). memcached refuses -I below its 512 KiB slab
    chunk size unless slab_chunk_max is lowered too, so that is added for it.
    """
    if target == "spinel":
        def start(mc_port, resp_port):
            argv = [spinel_bin(), "-p", str(mc_port), "--resp-port", str(resp_port),
                    "-l", "127.0.0.1", "-t", str(threads), "--io", io, "-m", "64"]
            if conn_limit is not None:
                argv += ["-c", str(conn_limit)]
            if idle_timeout is not None:
                argv += ["--idle-timeout", str(idle_timeout)]
            if item_max is not None:
                argv += ["-I", item_max]
            argv += list(extra)
            return Server("spinel", argv, mc_port, resp_port, io, threads)
        return start_on_free_ports(start)
    if target == "memcached":
        exe = shutil.which("memcached") or pytest.skip("memcached not installed")
        port = free_port()
        argv = [exe, "-p", str(port), "-l", "127.0.0.1", "-U", "0", "-m", "64"]
        if os.geteuid() == 0:
            argv += ["-u", "root"]  # memcached refuses to run as root without -u
        if conn_limit is not None:
            argv += ["-c", str(conn_limit)]
        if idle_timeout is not None:
            argv += ["-o", f"idle_timeout={idle_timeout}"]
        if item_max is not None:
            argv += ["-I", item_max]
            if item_max.lower().endswith("k"):
                chunk = min(int(item_max[:-1]) * 1024 // 2, 512 * 1024)
                argv += ["-o", f"slab_chunk_max={chunk}"]
        argv += list(extra)
        return Server("memcached", argv, mc_port=port).wait_ready()
    if target == "redis":
        exe = shutil.which("redis-server") or pytest.skip("redis-server not installed")
        port = free_port()
        argv = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no"]
        if conn_limit is not None:
            argv += ["--maxclients", str(conn_limit)]
        if idle_timeout is not None:
            argv += ["--timeout", str(idle_timeout)]
        argv += list(extra)
        return Server("redis", argv, resp_port=port).wait_ready()
    raise AssertionError(target)


# ------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="session")
def target(pytestconfig):
    return target_of(pytestconfig)


@pytest.fixture(scope="session", params=_matrix())
def backend(request, target):
    """The matrix entry: "io:threads" for spinel, or the peer's name."""
    if request.param in ("memcached", "redis") and request.param != target:
        pytest.skip(f"matrix entry {request.param} is not the target {target}")
    return request.param


def _split(backend):
    io, _, threads = backend.partition(":")
    return io, int(threads or 1)


@pytest.fixture(scope="session")
def servers(request):
    """Every server started in the session, stopped by pid at the end."""
    started = []
    yield started
    for server in started:
        server.cleanup()


@pytest.fixture(scope="session")
def shared_server(backend, target, servers):
    """One default-configured server per matrix entry, shared by tests that use unique keys."""
    if target == "spinel":
        io, threads = _split(backend)
        server = start_server("spinel", io=io, threads=threads)
        servers.append(server)
        return server
    if target == "memcached":
        server = start_server("memcached")
    else:
        server = start_server("redis")
    servers.append(server)
    return server


@pytest.fixture
def mc_port(shared_server, target):
    if target == "redis":
        pytest.skip("memcached port not available with target redis")
    return shared_server.mc_port


@pytest.fixture
def resp_port(shared_server, target):
    if target == "memcached":
        pytest.skip("RESP port not available with target memcached")
    return shared_server.resp_port


@pytest.fixture
def make_server(backend, target, request):
    """Factory for a server with test-specific limits; stopped when the test ends.

    On failure the stderr of every server it started is attached to the report.
    """
    started = []

    def make(**kwargs):
        if target == "spinel":
            io, threads = _split(backend)
            server = start_server("spinel", io=io, threads=threads, **kwargs)
        else:
            server = start_server(target, **kwargs)
        started.append(server)
        return server

    yield make
    failed = getattr(request.node, "rep_call", None)
    for server in started:
        if failed is not None and failed.failed:
            print(server.describe())
        server.cleanup()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
    # A failing test that used the shared server shows that server's stderr too.
    if rep.when == "call" and rep.failed and "shared_server" in item.fixturenames:
        server = item.funcargs.get("shared_server")
        if server is not None:
            rep.sections.append(("server stderr", server.describe()))


@pytest.fixture
def key(request):
    """A key unique to this test (and matrix entry), safe for both protocols."""
    name = request.node.name
    clean = "".join(c if c.isalnum() else "_" for c in name)[:80]
    return f"t_{clean}_{time.monotonic_ns() % 10**9}"


@pytest.fixture
def redis_server():
    """A real redis-server, whatever the target (the other side of cross-server tests)."""
    server = start_server("redis")
    yield server
    server.cleanup()
