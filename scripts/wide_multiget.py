#!/usr/bin/env python3
"""A 20,000-key text get, Spinel and memcached side by side: server CPU and wall time per get.

    taskset -c 0 python3 scripts/wide_multiget.py [--spinel target/release/spinel] [--gets 50]
                                                  [--keys 20000] [--rounds 3]

Each server runs pinned to CPU 1 with one worker thread and -m 256; KEYS keys of 10-byte
values are set, then one connection sends GETS gets naming every key (a 260 KB line for
20,000 keys) and reads each whole reply. Printed per server and round: line and reply bytes,
hits, and the server's CPU time (utime + stime from /proc) and the wall time per get. Rounds
interleave the servers. Only the processes this script starts are stopped.
"""
import argparse
import os
import random
import socket
import subprocess
import time


def cpu_secs(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_until(sock, end):
    buf = bytearray()
    while not buf.endswith(end):
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError("server closed the connection")
        buf += chunk
    return bytes(buf)


def connect(port, deadline_s=5.0):
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def measure(name, argv, port, keys, gets):
    proc = subprocess.Popen(["taskset", "-c", "1", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        sock = connect(port)
        names = [b"key:%08d" % i for i in range(keys)]
        sock.sendall(b"".join(b"set %s 0 0 10 noreply\r\n%s\r\n" % (k, b"v" * 10) for k in names))
        sock.sendall(b"mn\r\n")
        read_until(sock, b"MN\r\n")
        line = b"get " + b" ".join(names) + b"\r\n"
        cpu0, wall0 = cpu_secs(proc.pid), time.monotonic()
        for _ in range(gets):
            sock.sendall(line)
            reply = read_until(sock, b"END\r\n")
        cpu1, wall1 = cpu_secs(proc.pid), time.monotonic()
        sock.close()
    finally:
        proc.terminate()
        proc.wait(10)
    return (f"{name}: line {len(line)} B, reply {len(reply)} B, hits {reply.count(b'VALUE ')}, "
            f"server CPU {(cpu1 - cpu0) * 1000 / gets:.1f} ms/get, "
            f"wall {(wall1 - wall0) * 1000 / gets:.1f} ms/get")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--spinel", default="target/release/spinel")
    parser.add_argument("--gets", type=int, default=50)
    parser.add_argument("--keys", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for _ in range(args.rounds):
        for name in ("spinel", "memcached"):
            port = random.randint(30000, 50000)
            common = ["-p", str(port), "-t", "1", "-m", "256"]
            argv = ([args.spinel, *common, "--resp-port", "0"] if name == "spinel"
                    else ["memcached", "-u", "nobody", "-U", "0", *common])
            print(measure(name, argv, port, args.keys, args.gets), flush=True)


if __name__ == "__main__":
    main()
