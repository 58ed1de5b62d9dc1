#!/usr/bin/env python3
"""Requests per server CPU-second over TLS and over plain TCP, for Spinel (memcached port with
-Z, Redis port with --tls-port), memcached (-Z) and redis-server (--tls-port), in one run.

Each server runs one worker thread pinned to --server-cpu; this client is pinned to
--client-cpu. For every (server, protocol, transport) the client opens --conns connections,
sends --rounds batches of --depth pipelined GETs of one 32-byte value on each, and reads the
replies; server CPU is the sum of /proc/PID/task/*/schedstat (all threads, ns) over that time. Certificates are made with the openssl CLI in a temporary directory. Only processes it
starts are stopped, by pid.

    scripts/tls_cost.py [--binary target/release/spinel] [--conns 8] [--depth 32] [--rounds 400]
"""
import argparse
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

VALUE = b"v" * 32


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_certs(directory):
    def run(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-subj",
        "/CN=bench-ca", "-days", "2", "-out", "ca.crt")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-subj",
        "/CN=127.0.0.1", "-out", "server.csr")
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-out", "server.crt", "-extfile", "server.ext")
    return {name: os.path.join(directory, name) for name in ("ca.crt", "server.crt", "server.key")}


def cpu_seconds(pid):
    """CPU time of every thread of `pid` (schedstat's first field, ns; finer than stat's ticks)."""
    total_ns = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total_ns += int(f.read().split()[0])
        except FileNotFoundError:
            pass  # a thread that ended meanwhile
    return total_ns / 1e9


def wait_port(port, proc):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited: {proc.args}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"port {port} never listened: {proc.args}")


def start(argv, cpu, ports):
    proc = subprocess.Popen(["taskset", "-c", str(cpu), *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for port in ports:
        wait_port(port, proc)
    return proc


def connect(port, context):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return context.wrap_socket(s, server_hostname="127.0.0.1") if context else s


def read_exact(s, size):
    data = bytearray()
    while len(data) < size:
        chunk = s.recv(min(1 << 20, size - len(data)))
        if not chunk:
            raise ConnectionError("server closed")
        data += chunk
    return bytes(data)


PROTOCOLS = {
    # request to set the key, its reply, one GET, its reply
    "memcache": (b"set k 0 0 32\r\n" + VALUE + b"\r\n", b"STORED\r\n",
                 b"get k\r\n", b"VALUE k 0 32\r\n" + VALUE + b"\r\nEND\r\n"),
    "resp": (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$32\r\n" + VALUE + b"\r\n", b"+OK\r\n",
             b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", b"$32\r\n" + VALUE + b"\r\n"),
}


def measure(pid, port, protocol, context, args):
    set_request, set_reply, get_request, get_reply = PROTOCOLS[protocol]
    conns = [connect(port, context) for _ in range(args.conns)]
    conns[0].sendall(set_request)
    assert read_exact(conns[0], len(set_reply)) == set_reply
    batch, expected = get_request * args.depth, len(get_reply) * args.depth
    for s in conns:  # warm up: handshakes done, buffers grown
        s.sendall(batch)
        read_exact(s, expected)
    cpu_before, wall_before = cpu_seconds(pid), time.monotonic()
    for _ in range(args.rounds):
        for s in conns:
            s.sendall(batch)
        for s in conns:
            read_exact(s, expected)
    cpu = cpu_seconds(pid) - cpu_before
    wall = time.monotonic() - wall_before
    for s in conns:
        s.close()
    requests = args.rounds * args.conns * args.depth
    return requests, cpu, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default="target/release/spinel")
    parser.add_argument("--conns", type=int, default=8)
    parser.add_argument("--depth", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--server-cpu", type=int, default=0)
    parser.add_argument("--client-cpu", type=int, default=1)
    parser.add_argument("--io", default="epoll", help="spinel's --io")
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.client_cpu})
    directory = tempfile.mkdtemp(prefix="tls-cost-")
    certs = make_certs(directory)
    context = ssl.create_default_context(cafile=certs["ca.crt"])
    mc, mc_tls, resp, resp_tls = (free_port() for _ in range(4))
    spinel_tls_flags = ["-Z", "-o", f"ssl_chain_cert={certs['server.crt']},"
                        f"ssl_key={certs['server.key']}"]
    redis_tls_flags = ["--tls-port", str(resp_tls), "--tls-cert-file", certs["server.crt"],
                       "--tls-key-file", certs["server.key"], "--tls-auth-clients", "no"]
    user = ["-u", "root"] if os.geteuid() == 0 else []
    servers = [
        # (name, argv, ports to wait for, [(protocol, transport, port)])
        ("spinel", [args.binary, "-p", str(mc), "--resp-port", str(resp), "-t", "1", "-m", "64",
                    "--io", args.io], [mc, resp], [("memcache", "plain", mc),
                                                   ("resp", "plain", resp)]),
        ("spinel", [args.binary, "-p", str(mc_tls), "--resp-port", "0", "-t", "1", "-m", "64",
                    "--io", args.io, *spinel_tls_flags, *redis_tls_flags],
         [mc_tls, resp_tls], [("memcache", "tls", mc_tls), ("resp", "tls", resp_tls)]),
        ("memcached", [shutil.which("memcached"), "-p", str(mc), "-U", "0", "-t", "1", "-m", "64",
                       "-l", "127.0.0.1", *user], [mc], [("memcache", "plain", mc)]),
        ("memcached", [shutil.which("memcached"), "-p", str(mc_tls), "-U", "0", "-t", "1", "-m",
                       "64", "-l", "127.0.0.1", *user, *spinel_tls_flags], [mc_tls],
         [("memcache", "tls", mc_tls)]),
        ("redis", [shutil.which("redis-server"), "--port", str(resp), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no", *redis_tls_flags], [resp, resp_tls],
         [("resp", "plain", resp), ("resp", "tls", resp_tls)]),
    ]
    results = {}
    print(f"{args.conns} connections x {args.depth} pipelined GETs x {args.rounds} rounds; "
          f"server on CPU {args.server_cpu}, client on CPU {args.client_cpu}; spinel --io "
          f"{args.io}")
    print(f"{'server':10} {'protocol':9} {'transport':9} {'requests':>9} {'cpu s':>7} "
          f"{'req/cpu-s':>10} {'req/s':>9}")
    for name, argv, ports, runs in servers:
        proc = start(argv, args.server_cpu, ports)
        try:
            for protocol, transport, port in runs:
                ctx = context if transport == "tls" else None
                requests, cpu, wall = measure(proc.pid, port, protocol, ctx, args)
                rate = requests / cpu if cpu else float("inf")
                results[(name, protocol, transport)] = rate
                print(f"{name:10} {protocol:9} {transport:9} {requests:9} {cpu:7.2f} "
                      f"{rate:10.0f} {requests / wall:9.0f}")
        finally:
            proc.terminate()
            proc.wait(10)
    print("\nTLS / plain, requests per server CPU-second:")
    for name, protocol in sorted({(n, p) for n, p, _ in results}):
        plain, tls = results.get((name, protocol, "plain")), results.get((name, protocol, "tls"))
        if plain and tls:
            print(f"  {name:10} {protocol:9} {tls / plain:.2f}")
    shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
