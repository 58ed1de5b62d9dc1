"""Minimal stdlib clients for the reliability scripts: memcached text protocol and RESP2.

Both pipeline: `send` many requests, then read as many replies. Replies are returned raw
enough for the scripts to classify them (stored, refused for memory, other).
"""
import argparse
import socket


STALL_SECS = 20


class Mc:
    def __init__(self, port, host="127.0.0.1"):
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # A write that stalls this long counts as a failure, not a hang of the script.
        self.sock.settimeout(STALL_SECS)
        self.buf = bytearray()

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                out = bytes(self.buf[:i])
                del self.buf[: i + 2]
                return out
            self._fill()

    def exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    @staticmethod
    def store_req(cmd, key, value, exptime=0):
        head = b"%s %s 0 %d %d\r\n" % (cmd.encode(), key.encode(), exptime, len(value))
        return head + value + b"\r\n"

    def send(self, data):
        self.sock.sendall(data)

    def store(self, cmd, key, value, exptime=0):
        self.send(self.store_req(cmd, key, value, exptime))
        return self.line()

    def get(self, key):
        self.send(b"get %s\r\n" % key.encode())
        line = self.line()
        if line == b"END":
            return None
        n = int(line.split()[3])
        value = self.exact(n + 2)[:-2]
        assert self.line() == b"END"
        return value

    def stats(self):
        self.send(b"stats\r\n")
        out = {}
        while True:
            line = self.line()
            if line == b"END":
                return out
            parts = line.decode().split()
            out[parts[1]] = parts[2]


class Resp:
    def __init__(self, port, host="127.0.0.1"):
        self.mc = Mc(port, host)

    @staticmethod
    def req(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def send(self, data):
        self.mc.send(data)

    def reply(self):
        line = self.mc.line()
        kind, rest = line[:1], line[1:]
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.mc.exact(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        if kind == b":":
            return int(rest)
        return line  # +OK or -ERR ... kept with its prefix

    def cmd(self, *args):
        self.send(self.req(*args))
        return self.reply()


def refused(reply):
    """A write refused for want of memory, in either protocol's words."""
    return reply.startswith(b"SERVER_ERROR") or reply.startswith(b"-OOM")


def evictions(args):
    """Items the server evicted so far (memcached `stats` evictions, Redis evicted_keys)."""
    if args.port:
        return int(Mc(args.port, args.host).stats()["evictions"])
    info = Resp(args.resp_port, args.host).cmd("INFO", "stats")
    return int(info.split(b"evicted_keys:")[1].split(b"\r\n")[0])


def item_count(port=None, resp_port=None):
    if port:
        return int(Mc(port).stats()["curr_items"])
    return Resp(resp_port).cmd("DBSIZE")


def parser(doc):
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--port", type=int, help="memcached text protocol port")
    p.add_argument("--resp-port", type=int, help="RESP port")
    p.add_argument("--host", default="127.0.0.1")
    return p
