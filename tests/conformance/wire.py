"""Raw-socket helpers: send bytes, read until the expected reply, compare exact bytes.

Every read has a deadline (READ_TIMEOUT_S), so a server that stalls fails the test instead of
hanging the suite.
"""

import re
import socket
import threading
import time

READ_TIMEOUT_S = 3.0
# How long `rt` waits for bytes past the expected reply. Short on purpose: the suite makes
# thousands of round trips, and at 50 ms this wait was most of its time. Bytes that arrive
# later still fail the test at the next read on the connection (every reply is compared
# whole, so stray bytes show up in front of it); only the last round trip of a connection
# relies on this wait alone. Checks that another connection stays silent pass their own,
# longer wait to `assert_quiet`.
RT_QUIET_S = 0.01


class Conn:
    def __init__(self, port, timeout=READ_TIMEOUT_S):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no reply in time; have {self.buf[:300]!r}")
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(262144)
        except socket.timeout:
            raise TimeoutError(f"no reply in time; have {self.buf[:300]!r}") from None
        if not chunk:
            raise ConnectionError(f"connection closed; have {self.buf[:300]!r}")
        self.buf += chunk

    def read_exact(self, n, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_until(self, terminator, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while terminator not in self.buf:
            self._fill(deadline)
        end = self.buf.index(terminator) + len(terminator)
        out, self.buf = self.buf[:end], self.buf[end:]
        return out

    def read_line(self, timeout=None):
        return self.read_until(b"\r\n", timeout)

    def rt(self, send, expect):
        """Round trip: send, read exactly len(expect) bytes, compare, and check nothing more
        is pending."""
        self.send(send)
        try:
            got = self.read_exact(len(expect))
        except (TimeoutError, ConnectionError) as e:
            raise AssertionError(f"sent {send[:200]!r}: expected {expect[:300]!r}: {e}") from None
        assert got == expect, f"sent {send[:200]!r}"
        try:
            self.assert_quiet(RT_QUIET_S)
        except AssertionError as e:
            raise AssertionError(f"sent {send[:200]!r}: {e}") from None
        return got

    def assert_quiet(self, wait=0.05):
        """Nothing more has arrived (a short wait; catches extra reply lines)."""
        self.sock.settimeout(wait)
        try:
            extra = self.sock.recv(65536)
        except socket.timeout:
            extra = b""
        except ConnectionResetError:
            extra = b""
        finally:
            self.sock.settimeout(self.timeout)
        extra = self.buf + extra
        self.buf = b""
        assert extra == b"", f"unexpected extra bytes {extra[:300]!r}"

    def read_all_until_close(self, timeout=5.0):
        """Everything the server sends until it closes; fails if it does not close in time."""
        deadline = time.monotonic() + timeout
        out = self.buf
        self.buf = b""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"connection still open after {timeout}s; got {out[:300]!r}")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except ConnectionResetError:
                return out
            if not chunk:
                return out
            out += chunk

    def is_open(self, wait=0.2):
        """True if the server has neither closed nor reset the connection within `wait`."""
        self.sock.settimeout(wait)
        try:
            chunk = self.sock.recv(65536, socket.MSG_PEEK)
            return chunk != b""
        except socket.timeout:
            return True
        except (ConnectionResetError, BrokenPipeError):
            return False
        finally:
            self.sock.settimeout(self.timeout)


def match_line(conn, pattern):
    """Read one line and match it (bytes regex, whole line without CRLF)."""
    line = conn.read_line()
    assert re.fullmatch(pattern, line[:-2]), f"{line!r} does not match {pattern!r}"
    return re.fullmatch(pattern, line[:-2])


def resp_encode(*args):
    """A RESP array of bulk strings, as clients send commands."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def rss_mib(pid):
    """A process's resident memory in MiB (VmRSS), for tests that bound a server's growth."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def open_hog(port):
    """A connection with a tiny receive buffer that will never read."""
    hog = socket.create_connection(("127.0.0.1", port), timeout=3)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    hog.setblocking(False)
    return hog


def reads_while_written(write, port, prefix, size, read, writers=2):
    """Runs `read()` while `writers` threads run `write(port, prefix, size, stop, counts)`
    (each bumping counts["writes"] a round until `stop` is set); returns what `read` returned
    and the write rounds made meanwhile."""
    stop, counts = threading.Event(), {"writes": 0}
    threads = [threading.Thread(target=write, args=(port, prefix, size, stop, counts))
               for _ in range(writers)]
    for thread in threads:
        thread.start()
    try:
        result = read()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    return result, counts["writes"]


def feed_hogs(hogs, request):
    """Writes `request` to each hog whose socket takes it; the bytes the kernel took."""
    sent = 0
    for hog in hogs:
        try:
            sent += hog.send(request)
        except BlockingIOError:
            pass
    return sent


def value_of(i, size):
    """A value whose bytes say which key and size it belongs to, so a reply out of order or
    cut and spliced is caught."""
    stem = b"%06d:" % i
    return (stem * (size // len(stem) + 1))[:size]
