"""A workload that makes the server use what a container deployment uses: memcached text and
meta over TCP and UDP, Redis commands (a pipeline, a blocking pop woken from another
connection, pub/sub, a script, a snapshot both ways), the metrics endpoint, a SIGHUP reload
and a clean SIGTERM stop. test_contrib.py runs it under strace to check that the shipped
seccomp profile allows every system call the server makes."""

import os
import signal
import socket
import threading
import time
import urllib.request

import redis

from conftest import free_port


def server_argv(binary, io, tmp_dir):
    """The argv for `binary`, and its (memcached, Redis, UDP, metrics) ports."""
    ports = [free_port() for _ in range(4)]
    mc_port, resp_port, udp_port, metrics_port = ports
    argv = [binary, "-p", str(mc_port), "--resp-port", str(resp_port), "-U", str(udp_port),
            "--metrics-port", str(metrics_port), "-l", "127.0.0.1", "-t", "2", "--io", io,
            "-m", "64", "--dir", str(tmp_dir), "-P", os.path.join(str(tmp_dir), "spinel.pid")]
    return argv, ports


def wait_listening(port, proc, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"port {port} not accepting after {timeout_s}s")


def memcache_exchange(port, request, until):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(request)
        got = b""
        while not got.endswith(until):
            chunk = conn.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def run_memcache(mc_port, udp_port):
    got = memcache_exchange(mc_port, b"set a 0 0 1\r\nx\r\nget a\r\nmg a v\r\nincr n 1\r\n"
                            b"set n 0 0 1\r\n5\r\nincr n 2\r\nstats\r\n", b"END\r\n")
    assert b"VALUE a 0 1\r\nx\r\n" in got, got
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.settimeout(5)
    # The 8-byte UDP frame header: request id 1, sequence 0, one datagram.
    udp.sendto(b"\x00\x01\x00\x00\x00\x01\x00\x00get a\r\n", ("127.0.0.1", udp_port))
    reply, _ = udp.recvfrom(65536)
    udp.close()
    assert b"VALUE a 0 1" in reply, reply


def run_redis(resp_port):
    r = redis.Redis(port=resp_port, socket_timeout=10)
    r.set("k", "v")
    assert r.get("k") == b"v"
    pipe = r.pipeline(transaction=False)
    for i in range(100):
        pipe.set(f"p{i}", i)
    pipe.execute()
    popped = []
    waiter = threading.Thread(
        target=lambda: popped.append(redis.Redis(port=resp_port).blpop("q", 5)))
    waiter.start()
    time.sleep(0.2)
    r.rpush("q", "item")
    waiter.join(10)
    assert popped == [(b"q", b"item")], popped
    sub = r.pubsub()
    sub.subscribe("ch")
    r.publish("ch", "hello")
    assert r.eval("return redis.call('GET', KEYS[1])", 1, "k") == b"v"
    r.save()
    r.bgsave()
    time.sleep(0.5)
    r.config_set("maxmemory-policy", "allkeys-lru")
    r.info()
    sub.close()
    r.close()


def run_all(proc, ports, tmp_dir):
    """Runs the workload, then stops the server. `proc` may be a tracer of the server (strace):
    the signals go to the server's own pid, from its pidfile."""
    mc_port, resp_port, udp_port, metrics_port = ports
    wait_listening(resp_port, proc)
    with open(os.path.join(str(tmp_dir), "spinel.pid")) as f:
        pid = int(f.read().strip())
    run_memcache(mc_port, udp_port)
    run_redis(resp_port)
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as page:
        assert page.status == 200
    os.kill(pid, signal.SIGHUP)
    time.sleep(0.3)
    os.kill(pid, signal.SIGTERM)
    assert proc.wait(10) == 0
