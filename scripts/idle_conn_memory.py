#!/usr/bin/env python3
"""Server memory per idle connection: RSS growth of a server while N clients sit idle.

    scripts/idle_conn_memory.py [--conns 10000] [--servers spinel,spinel-resp,memcached,redis]
                                [--spinel target/release/spinel] [--spinel-args '--io epoll']

spinel is measured on its memcached port, spinel-resp on its Redis port.

Each server is started on a free loopback port with room for the connections, given one
request on every connection (so each has been read from and written to once, as a pooled
client connection has), then left idle. The figure is (RSS with N idle connections - RSS
before) / N, from /proc/PID/status VmRSS. Kernel socket buffers are not in RSS and not
counted (they are the same for every server). Bounded: each server gets 60 s.
Only the processes this script starts are stopped.
"""
import argparse
import os
import resource
import shutil
import socket
import subprocess
import sys
import time

REQUEST = {"mc": b"version\r\n", "resp": b"PING\r\n"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def wait_port(port, deadline):
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} did not open")


def command(name, port, conns, spinel, spinel_args):
    limit = conns + 100
    if name == "spinel":
        return "mc", [spinel, "-p", str(port), "--resp-port", "0", "-t", "1", "-c", str(limit),
                      *spinel_args]
    if name == "spinel-resp":
        return "resp", [spinel, "-p", "0", "--resp-port", str(port), "-t", "1", "-c", str(limit),
                        *spinel_args]
    if name == "memcached":
        return "mc", ["memcached", "-u", "root", "-l", "127.0.0.1", "-p", str(port), "-U", "0",
                      "-t", "1", "-c", str(limit)]
    return "resp", ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                    "--appendonly", "no", "--maxclients", str(limit), "--logfile", ""]


def measure(name, conns, spinel, spinel_args):
    port = free_port()
    proto, argv = command(name, port, conns, spinel, spinel_args)
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socks = []
    try:
        deadline = time.time() + 60
        wait_port(port, deadline)
        time.sleep(0.3)
        before = rss_kib(server.pid)
        for _ in range(conns):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(REQUEST[proto])
            socks.append(s)
        for s in socks:
            if not s.recv(256):
                raise RuntimeError(f"{name}: a connection was closed")
        time.sleep(1.0)
        after = rss_kib(server.pid)
        return before, after
    finally:
        for s in socks:
            s.close()
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conns", type=int, default=10000)
    parser.add_argument("--servers", default="spinel,memcached,redis")
    parser.add_argument("--spinel", default="target/release/spinel")
    parser.add_argument("--spinel-args", default="", help="extra spinel flags, e.g. '--io epoll'")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2 * args.conns + 1000
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    print(f"{'server':10} {'conns':>6} {'rss_before_kib':>14} {'rss_after_kib':>13} "
          f"{'bytes_per_conn':>14}")
    for name in args.servers.split(","):
        exe = args.spinel if name.startswith("spinel") else {"memcached": "memcached",
                                                     "redis": "redis-server"}[name]
        if not (os.path.exists(exe) or shutil.which(exe)):
            print(f"{name:10} skipped: {exe} not found")
            continue
        before, after = measure(name, args.conns, args.spinel, args.spinel_args.split())
        per_conn = (after - before) * 1024 / args.conns
        print(f"{name:10} {args.conns:>6} {before:>14} {after:>13} {per_conn:>14.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
