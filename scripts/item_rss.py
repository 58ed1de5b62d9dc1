#!/usr/bin/env python3
"""Usage: scripts/item_rss.py [--items N] [--key-size K] [--value-size V] [--memory-mib M]
[--servers spinel,memcached,redis,valkey] [--spinel-bin PATH]

RSS per item of a whole server: starts each server (127.0.0.1, ports 22130-22133, one
thread, a limit of M MiB that the items fit in), writes N distinct K/V items (keys are a
zero-padded counter; memcached text `set ... noreply`, Redis SET pipelined), checks that
none was evicted, and prints (RSS after - RSS before) / N. Stops what it starts."""
import argparse, socket, subprocess, time

def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])

def connect(port):
    for _ in range(200):
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"no server on {port}")

def ask(s, request, end):
    s.sendall(request)
    buf = b""
    while not buf.endswith(end):
        buf += s.recv(1 << 16)
    return buf

def fill(s, proto, n, k, v, batch=2000):
    val = b"x" * v
    for start in range(0, n, batch):
        out = []
        for i in range(start, min(n, start + batch)):
            key = f"{i:0{k}d}".encode()
            if proto == "mc":
                out.append(b"set %s 0 0 %d noreply\r\n%s\r\n" % (key, v, val))
            else:
                out.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (k, key, v, val))
        s.sendall(b"".join(out))
        if proto == "resp":
            got = b""
            while got.count(b"\r\n") < len(out):
                got += s.recv(1 << 20)

def items_and_evictions(s, proto):
    if proto == "mc":
        text = ask(s, b"stats\r\n", b"END\r\n").decode()
        st = dict(l.split()[1:3] for l in text.split("\r\n") if l.startswith("STAT "))
        return int(st["curr_items"]), int(st["evictions"])
    size = int(ask(s, b"*1\r\n$6\r\nDBSIZE\r\n", b"\r\n")[1:-2])
    info = ask(s, b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n", b"\r\n\r\n").decode()
    ev = int(info.split("evicted_keys:")[1].split("\r\n")[0])
    return size, ev

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--key-size", type=int, default=20)
    ap.add_argument("--value-size", type=int, default=20)
    ap.add_argument("--memory-mib", type=int, default=1024)
    ap.add_argument("--servers", default="spinel,memcached,redis")
    ap.add_argument("--spinel-bin", default="target/release/spinel")
    ap.add_argument("--valkey-bin", default="/work/peers/valkey-server")
    a = ap.parse_args()
    m = str(a.memory_mib)
    servers = {
        "spinel": ([a.spinel_bin, "-p", "22130", "--resp-port", "0", "-l", "127.0.0.1",
                    "-t", "1", "-m", m], "mc", 22130),
        "memcached": (["memcached", "-p", "22131", "-l", "127.0.0.1", "-U", "0", "-t", "1",
                       "-m", m, "-u", "root"], "mc", 22131),
        "redis": (["redis-server", "--port", "22132", "--bind", "127.0.0.1", "--maxmemory",
                   f"{m}mb", "--maxmemory-policy", "allkeys-lru", "--save", "",
                   "--appendonly", "no"], "resp", 22132),
        "valkey": ([a.valkey_bin, "--port", "22133", "--bind", "127.0.0.1", "--maxmemory",
                    f"{m}mb", "--maxmemory-policy", "allkeys-lru", "--save", "",
                    "--appendonly", "no"], "resp", 22133),
    }
    for name in a.servers.split(","):
        cmd, proto, port = servers[name]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            s = connect(port)
            time.sleep(0.3)
            before = rss_kib(p.pid)
            fill(s, proto, a.items, a.key_size, a.value_size)
            items, evictions = items_and_evictions(s, proto)
            time.sleep(0.5)
            after = rss_kib(p.pid)
            per = (after - before) * 1024 / items
            print(f"{name} items={items} evictions={evictions} rss_before_mib={before/1024:.1f} "
                  f"rss_after_mib={after/1024:.1f} rss_bytes_per_item={per:.1f}")
        finally:
            p.terminate()
            p.wait()

main()
