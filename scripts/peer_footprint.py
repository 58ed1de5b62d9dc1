#!/usr/bin/env python3
"""Usage: scripts/peer_footprint.py MEMORY_MIB KEY_SIZE VALUE_SIZE (needs memcached and
redis-server on PATH; uses ports 22122/22123 on 127.0.0.1, stops what it starts).

Fill memcached (-m M) and Redis (maxmemory M) with distinct K/V items until the first
eviction; print items and (M MiB - N*(K+V))/N, the store footprint metric, plus RSS."""
import socket, subprocess, sys, time

def rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024

def conn(port):
    for _ in range(100):
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    raise SystemExit("no server")

def recv_until(s, end):
    buf = b""
    while not buf.endswith(end):
        buf += s.recv(1 << 20)
    return buf

def fill(proto, port, k, v, batch=2000):
    s = conn(port)
    val = b"x" * v
    i = 0
    while True:
        out = []
        for _ in range(batch):
            key = f"{i:0{k}d}".encode()
            i += 1
            if proto == "mc":
                out.append(b"set %s 0 0 %d noreply\r\n%s\r\n" % (key, v, val))
            else:
                out.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (k, key, v, val))
        s.sendall(b"".join(out))
        if proto == "mc":
            s.sendall(b"stats\r\n")
            st = dict(l.split()[1:3] for l in recv_until(s, b"END\r\n").decode().split("\r\n") if l.startswith("STAT "))
            items, ev = int(st["curr_items"]), int(st["evictions"])
        else:
            recv_until_count(s, batch)
            s.sendall(b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n")
            info = recv_info(s)
            ev = int(info["evicted_keys"])
            s.sendall(b"*1\r\n$6\r\nDBSIZE\r\n")
            items = int(recv_until(s, b"\r\n")[1:-2])
        if ev > 0:
            return items

def recv_until_count(s, n):
    got = 0; buf = b""
    while got < n:
        buf += s.recv(1 << 20)
        got = buf.count(b"\r\n")
    assert got == n, (got, n)

def recv_info(s):
    buf = recv_until(s, b"\r\n")
    ln = int(buf[1:buf.index(b"\r\n")])
    while len(buf) < buf.index(b"\r\n") + 2 + ln + 2:
        buf += s.recv(1 << 20)
    body = buf[buf.index(b"\r\n") + 2:].decode()
    return dict(l.split(":", 1) for l in body.split("\r\n") if ":" in l)

mib, k, v = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for name, cmd, proto, port in [
    ("memcached", ["memcached", "-p", "22122", "-l", "127.0.0.1", "-m", str(mib), "-U", "0", "-t", "1", "-u", "root"], "mc", 22122),
    ("redis", ["redis-server", "--port", "22123", "--bind", "127.0.0.1", "--maxmemory", f"{mib}mb", "--maxmemory-policy", "allkeys-lru", "--save", "", "--appendonly", "no"], "resp", 22123),
]:
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        n = fill(proto, port, k, v)
        x = (mib * 1024 * 1024 - n * (k + v)) / n
        print(f"{name} k={k} v={v} memory_mib={mib}: items={n} metadata_bytes_per_item={x:.2f} rss_mib={rss_mib(p.pid):.2f}")
    finally:
        p.terminate(); p.wait()
