#!/usr/bin/env python3
"""N instances sharded by the client, and Redis Cluster, for Spinel, memcached and redis-server:
requests per second and per server CPU-second (issue 14).

    scripts/cluster_bench.py [--repeat 3] [--seconds 5] [--spinel target/release/spinel]
                             [--bench target/release/spinel-bench] [--only NAME,...]

Cases (each a fresh set of servers):
  ketama   N = 1, 2, 3 instances of one thread each, spinel-bench shards keys over them by
           ketama (`-s a,b,c`): Spinel and memcached on the memcached text protocol, Spinel and
           redis-server on RESP.
  cluster  3 Redis Cluster primaries, spinel-bench --cluster (CLUSTER SLOTS, keys by slot):
           Spinel nodes and redis-server nodes, each started from a nodes.conf written here (as
           tests/conformance/cluster_kit.py does); redis-server nodes join over their cluster bus
           and the run waits for cluster_state:ok on every node.

Every server process is pinned to CPU 1 (all N share it), spinel-bench to CPU 0. Workload as
scripts/twemproxy_cost.py (the bench's defaults): 50 clients, one client thread, pipeline 1, 9
gets to 1 set, 20-byte keys and values, 10,000 keys preloaded; each client has one connection per
server and one request in flight, so 50 requests are in flight whatever N is. Server CPU is
utime+stime from /proc/PID/stat summed over the case's servers, read around the measured run
(the preload and a 1 s warm-up are a run of their own before it). Cases alternate, repetitions
outermost; each run is printed, then the medians. A run with an error, a miss or a corrupt value
fails the script. Only the processes this script starts are stopped, by pid.
"""
import argparse
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

TCK = os.sysconf("SC_CLK_TCK")
KEYSPACE = 10000
LOAD = ["-c", "50", "-t", "1", "--pipeline", "1", "--ratio", "1:9", "--key-size", "20",
        "--value-size", "20", "--keyspace", str(KEYSPACE)]
SERVER_CPU = "1"
CLIENT_CPU = "0"
SLOTS = 16384
BENCH_TIMEOUT_S = 120


def cpu_secs(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TCK


def free_port(bus=False):
    """A free loopback port; with `bus`, one whose port + 10000 is free too (redis-server's
    cluster bus)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not bus:
            return port
        if port + 10000 < 65536:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10000))
                    return port
                except OSError:
                    pass


def wait_listening(proc, port, timeout_s=10):
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"port {port} not listening after {timeout_s}s")
            time.sleep(0.02)


def resp_command(port, *args):
    """One command, its reply's first line (enough for CLUSTER INFO's bulk: read it all)."""
    payload = f"*{len(args)}\r\n" + "".join(f"${len(a)}\r\n{a}\r\n" for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(payload.encode())
        data = b""
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if data.startswith(b"$") and b"\r\n" in data:
                length = int(data[1:data.index(b"\r\n")])
                if len(data) >= data.index(b"\r\n") + 2 + length + 2:
                    break
            elif data.endswith(b"\r\n"):
                break
        return data.decode(errors="replace")


def start(argv, port):
    proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_listening(proc, port)
    except Exception:
        proc.kill()
        proc.wait(timeout=10)
        raise
    return proc


def spinel_argv(spinel, port, protocol, extra=()):
    mc_port, resp_port = (port, 0) if protocol == "memcache" else (free_port(), port)
    return [spinel, "-p", str(mc_port), "--resp-port", str(resp_port), "-l", "127.0.0.1",
            "-t", "1", "-m", "256", *extra]


def memcached_argv(port):
    argv = ["memcached", "-p", str(port), "-l", "127.0.0.1", "-t", "1", "-U", "0", "-m", "256"]
    return argv + (["-u", "root"] if os.geteuid() == 0 else [])


def redis_argv(port, extra=()):
    return ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", *extra]


def nodes_conf(nodes, myself):
    """Redis's nodes.conf naming every primary and its even share of the slots."""
    lines = []
    for index, (node_id, port, (start, end)) in enumerate(nodes):
        flags = "myself,master" if index == myself else "master"
        lines.append(f"{node_id} 127.0.0.1:{port}@{port + 10000} {flags} - 0 0 {index + 1} "
                     f"connected {start}-{end}")
    lines.append(f"vars currentEpoch {len(nodes)} lastVoteEpoch 0")
    return "\n".join(lines) + "\n"


def wait_cluster_ok(ports, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while True:
        states = []
        for port in ports:
            try:
                states.append("cluster_state:ok" in resp_command(port, "CLUSTER", "INFO"))
            except OSError:
                states.append(False)
        if all(states):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"cluster not ok after {timeout_s}s: {states}")
        time.sleep(0.2)


def start_servers(case, args, tmp_dir, procs):
    """Starts the case's servers (appending each to `procs` at once, so a failure later still
    stops it); returns the bench's extra arguments."""
    kind, protocol, count, mode = case
    if mode == "ketama":
        ports = [free_port() for _ in range(count)]
        for port in ports:
            if kind == "spinel":
                argv = spinel_argv(args.spinel, port, protocol)
            elif kind == "memcached":
                argv = memcached_argv(port)
            else:
                argv = redis_argv(port)
            procs.append(start(argv, port))
        servers = ",".join(f"127.0.0.1:{p}" for p in ports)
        return ["-s", servers, "--protocol", protocol]
    ports = [free_port(bus=True) for _ in range(count)]
    per = SLOTS / count
    nodes = [(secrets.token_hex(20), port, (round(i * per), round((i + 1) * per) - 1))
             for i, port in enumerate(ports)]
    for index, port in enumerate(ports):
        node_dir = os.path.join(tmp_dir, str(port))
        os.makedirs(node_dir)
        with open(os.path.join(node_dir, "nodes.conf"), "w") as f:
            f.write(nodes_conf(nodes, index))
        cluster = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                   "--dir", node_dir]
        if kind == "spinel":
            argv = spinel_argv(args.spinel, port, "resp", cluster)
        else:
            argv = redis_argv(port, [*cluster, "--cluster-node-timeout", "5000"])
        procs.append(start(argv, port))
    wait_cluster_ok(ports)
    return ["-s", f"127.0.0.1:{ports[0]}", "--protocol", "resp", "--cluster"]


def bench(tool, target, *extra):
    argv = ["taskset", "-c", CLIENT_CPU, tool, *target, *LOAD, "--json", "-q", *extra]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=BENCH_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def measure(case, args):
    procs = []
    tmp_dir = tempfile.mkdtemp(prefix="cluster-bench-")
    try:
        target = start_servers(case, args, tmp_dir, procs)
        bench(args.bench, target, "--preload", "--duration", "1s")
        before = sum(cpu_secs(p.pid) for p in procs)
        result = bench(args.bench, target, "--duration", f"{args.seconds}s")
        server_cpu = sum(cpu_secs(p.pid) for p in procs) - before
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        shutil.rmtree(tmp_dir, ignore_errors=True)
    bad = result["corrupt"] + result["errors_total"] + result["misses"]
    if bad:
        raise RuntimeError(f"{label(case)}: {bad} corrupt, failed or missed requests")
    redirects = result.get("redirects", {})
    return {"requests": result["requests"], "secs": result["duration_secs"],
            "server_cpu": server_cpu, "p50_us": result["latency_us"]["p50"],
            "p99_us": result["latency_us"]["p99"],
            "redirects": redirects.get("moved", 0) + redirects.get("ask", 0),
            "load": load_1min()}


def load_1min():
    """The 1-minute load average after a run. The run itself accounts for about 2 (the bench
    and a server, each busy on its core); above 3, other work shared this 2-core machine and
    the row is flagged with `*`."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def label(case):
    kind, protocol, count, mode = case
    return f"{kind} {protocol} x{count} {mode}"


def row(name, runs):
    def median(f):
        return statistics.median(f(r) for r in runs)

    rate = median(lambda r: r["requests"] / r["secs"])
    per_cpu = median(lambda r: r["requests"] / r["server_cpu"])
    share = median(lambda r: r["server_cpu"] / r["secs"])
    p50, p99 = median(lambda r: r["p50_us"]), median(lambda r: r["p99_us"])
    redirects = max(r["redirects"] for r in runs)
    load = max(r["load"] for r in runs)
    print(f"{name:34} {rate:>9,.0f} {per_cpu:>14,.0f} {share:>7.0%} {p50:>7.0f} {p99:>7.0f} "
          f"{redirects:>9} {load:>5.1f}{'*' if load > 3 else ''}", flush=True)
    return rate, per_cpu


def cases():
    out = []
    for count in (1, 2, 3):
        out += [("spinel", "memcache", count, "ketama"), ("memcached", "memcache", count, "ketama"),
                ("spinel", "resp", count, "ketama"), ("redis", "resp", count, "ketama")]
    out += [("spinel", "resp", 3, "cluster"), ("redis", "resp", 3, "cluster")]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--spinel", default="target/release/spinel")
    parser.add_argument("--bench", default="target/release/spinel-bench")
    parser.add_argument("--only", default="", help="comma-separated substrings of case labels")
    args = parser.parse_args()
    chosen = [c for c in cases()
              if not args.only or any(w in label(c) for w in args.only.split(","))]
    print(f"{'run':34} {'req/s':>9} {'req/server CPU-s':>14} {'server':>7} {'p50 us':>7} "
          f"{'p99 us':>7} {'redirects':>9} {'load':>5}", flush=True)
    runs = {case: [] for case in chosen}
    for rep in range(1, args.repeat + 1):
        for case in chosen:
            r = measure(case, args)
            runs[case].append(r)
            row(f"{rep} {label(case)}", [r])
    print("medians")
    medians = {case: row(label(case), runs[case]) for case in chosen}
    print("ratios of medians (Spinel / peer: req/s, req/server CPU-s)")
    for case in chosen:
        kind, protocol, count, mode = case
        peer = ("memcached" if protocol == "memcache" else "redis", protocol, count, mode)
        if kind == "spinel" and peer in medians:
            (rate, cpu), (peer_rate, peer_cpu) = medians[case], medians[peer]
            print(f"{label(case)} vs {peer[0]}: {rate / peer_rate:.2f}x, {cpu / peer_cpu:.2f}x")


if __name__ == "__main__":
    main()
