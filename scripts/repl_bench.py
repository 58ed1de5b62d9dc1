#!/usr/bin/env python3
"""Redis replication, Spinel as the primary beside redis-server 7.0 and Valkey 8 (issue 35):
full-sync time and the primary's extra memory, replication lag under load, and the primary's
throughput with 0, 1 and 2 replicas.

    scripts/repl_bench.py --part sync|lag|throughput|bgsave [--spinel S] [--bench B]
        [--sizes-mib 256,1024] [--repeat 3] [--big-repeat 1] [--seconds N]
        [--primaries spinel,redis,valkey] [--spinel-replica] [--write-rate N]

Parts (run one at a time; each is bounded and stops by itself):
  sync        Each primary is filled with SIZE MiB of strings (16-byte keys `key:%012d`, values
              of --value-bytes random base64 characters, so LZF finds nothing to pack; SIZE
              counts key+value bytes), by `redis-cli --pipe`, then an empty replica
              is sent REPLICAOF. Measured: seconds until the replica's link is up, and until it
              is caught up (link up, its slave_repl_offset equal to the primary's
              master_repl_offset); the primary's peak extra memory, sampled every 50 ms: VmRSS
              minus VmRSS before REPLICAOF, plus the Private_Dirty (smaps_rollup) of every
              child process of the primary (redis-server's and Valkey's forked RDB writer;
              Spinel forks none). The replica's key count is checked.
  lag         A replica is attached, then spinel-bench's 9:1 get:set load (the bench
              defaults: 50 connections, pipeline 1, 20-byte keys and values, 10,000 keys) runs
              against the primary for --seconds; every 100 ms the primary's
              master_repl_offset, its slave0 offset (the replica's last REPLCONF ACK, sent once
              a second) and the replica's own slave_repl_offset (what it has applied) are read.
              Lag = primary offset minus each. After the load stops: the time until the
              replica has applied, and acknowledged, everything.
  throughput  The same load for --seconds with 0, 1 and 2 replicas attached (each caught up
              first): requests/s and the primary's CPU seconds (utime+stime, children too).
  bgsave      Each server is filled as for sync, then sent BGSAVE: the time until INFO shows
              it done (rdb_saves up, none in progress), and the server's peak extra memory,
              sampled as for sync, and also as the growth of the PSS of the server and its
              children together (smaps_rollup: a fork's shared pages count once until
              copied). With --write-rate N, each case runs twice: idle, and while random
              existing keys are overwritten at about N SETs/s.
With --write-rate N, sync overwrites random existing keys at about N SETs/s from REPLICAOF
until the link is up: the memory a copy costs while writes go on (redis-server's and
Valkey's fork copy pages on write; Spinel's primary keeps the stream in its backlog).

Placement on this 2-core machine: the primary on CPU 1 (Spinel with -t 1, so one worker like
redis-server's one main thread; its RDB thread and redis's fork child share CPU 1 too), the
replicas and the load (nice 10) on CPU 0. redis-server and Valkey primaries run with
`repl-diskless-sync-delay 0` (the default, 5 s, waits for more replicas before the copy
starts); everything else is as it comes. A Valkey 8 primary has a Valkey 8 replica: Valkey
writes RDB version 11, which redis-server 7.0 refuses. Cases are interleaved, repetitions
outermost. Only the processes this script starts are stopped, by their handle (pid).
"""
import argparse
import base64
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_servers import encode, free_port  # noqa: E402

TCK = os.sysconf("SC_CLK_TCK")
PRIMARY_CPU, SIDE_CPU = "1", "0"
KEY_BYTES = 16
LOAD = ["-c", "50", "-t", "1", "--pipeline", "1", "--ratio", "1:9", "--key-size", "20",
        "--value-size", "20", "--keyspace", "10000"]
BINARIES = {"redis": "redis-server", "valkey": "/work/peers/valkey-server"}


class Conn:
    """One RESP connection: a command, its parsed reply."""

    def __init__(self, port, timeout_s=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.rfile = self.sock.makefile("rb")

    def close(self):
        self.rfile.close()
        self.sock.close()

    def call(self, *args):
        self.sock.sendall(encode(*args))
        return self.reply()

    def reply(self):
        line = self.rfile.readline()
        if not line:
            raise ConnectionError("server closed the connection")
        kind, body = line[:1], line[1:-2]
        if kind == b"-":
            raise RuntimeError(body.decode())
        if kind == b":":
            return int(body)
        if kind == b"$":
            n = int(body)
            return None if n < 0 else self.rfile.read(n + 2)[:-2]
        if kind == b"*":
            return [self.reply() for _ in range(int(body))]
        return body.decode()

    def info(self, section="replication"):
        text = self.call("INFO", section).decode()
        return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)


# ---------------------------------------------------------------- processes

class Server:
    def __init__(self, kind, cpu, mem_mib, tmp_root, extra=()):
        self.kind, self.port = kind, free_port()
        self.dir = tempfile.mkdtemp(prefix=f"{kind}-", dir=tmp_root)
        argv = self.argv(mem_mib, extra)
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.proc = subprocess.Popen(["taskset", "-c", cpu, *argv], stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd=self.dir)
        self.pid = self.proc.pid
        self.wait_ping()

    def argv(self, mem_mib, extra):
        if self.kind == "spinel":
            return [ARGS.spinel, "-p", "0", "--resp-port", str(self.port), "-l", "127.0.0.1",
                    "-t", "1", "-m", str(mem_mib), "-M", "--dir", self.dir,
                    *ARGS.spinel_args.split(), *extra]
        return [BINARIES[self.kind], "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", self.dir,
                "--repl-diskless-sync-delay", "0", *extra]

    def wait_ping(self, timeout_s=15):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited at start, see {self.dir}/log")
            try:
                c = Conn(self.port, 1)
                c.call("PING")
                c.close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.kind} did not answer PING in {timeout_s}s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self.log.close()


def proc_field_kib(pid, path, field):
    try:
        with open(f"/proc/{pid}/{path}") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def child_pids(pid):
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return out


def cpu_secs(pid, children=True):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TCK


def pss_kib(pid):
    """The PSS of `pid` and its children (smaps_rollup): their memory, each shared page
    split among its sharers, so a fork's pages count once until copied on write."""
    return sum(proc_field_kib(p, "smaps_rollup", "Pss") for p in [pid, *child_pids(pid)])


class MemorySampler(threading.Thread):
    """Every 50 ms: the primary's VmRSS growth plus its children's Private_Dirty, and the
    growth of the PSS of the primary and its children together."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.stop_flag = pid, threading.Event()
        self.base_kib = proc_field_kib(pid, "status", "VmRSS")
        self.base_pss_kib = pss_kib(pid)
        self.peak_kib = self.peak_rss_kib = self.peak_child_kib = self.peak_pss_kib = 0
        self.samples = 0

    def run(self):
        while not self.stop_flag.is_set():
            rss = proc_field_kib(self.pid, "status", "VmRSS") - self.base_kib
            child = sum(proc_field_kib(c, "smaps_rollup", "Private_Dirty")
                        for c in child_pids(self.pid))
            self.peak_kib = max(self.peak_kib, rss + child)
            self.peak_rss_kib = max(self.peak_rss_kib, rss)
            self.peak_child_kib = max(self.peak_child_kib, child)
            self.peak_pss_kib = max(self.peak_pss_kib, pss_kib(self.pid) - self.base_pss_kib)
            self.samples += 1
            self.stop_flag.wait(0.05)

    def finish(self):
        self.stop_flag.set()
        self.join()


# ---------------------------------------------------------------- data and load

def fill_file(size_mib, tmp_root):
    """A redis-cli --pipe input of SIZE MiB of items (made once per size)."""
    value_bytes = ARGS.value_bytes
    path = os.path.join(tmp_root, f"fill-{size_mib}-{value_bytes}.resp")
    count = size_mib * (1 << 20) // (KEY_BYTES + value_bytes)
    if os.path.exists(path):
        return path, count
    pool = base64.b64encode(os.urandom(1 << 20))
    span = len(pool) - value_bytes
    head = b"*3\r\n$3\r\nSET\r\n$%d\r\n" % KEY_BYTES
    mid = b"\r\n$%d\r\n" % value_bytes
    with open(path, "wb") as f:
        for start in range(0, count, 100_000):
            f.write(b"".join(
                head + b"key:%012d" % i + mid + pool[(i * 7919) % span:][:value_bytes] + b"\r\n"
                for i in range(start, min(count, start + 100_000))))
    return path, count


def fill(server, path, count):
    with open(path, "rb") as f:
        done = subprocess.run(["nice", "-n", "10", "taskset", "-c", SIDE_CPU, "redis-cli",
                               "-p", str(server.port), "--pipe"], stdin=f,
                              capture_output=True, text=True, timeout=300)
    c = Conn(server.port)
    keys = c.call("DBSIZE")
    c.close()
    if done.returncode != 0 or keys != count:
        raise RuntimeError(f"fill of {server.kind}: {keys} keys of {count}: {done.stdout[-300:]}")


def bench(port, seconds, extra=(), wait=True):
    argv = ["nice", "-n", "10", "taskset", "-c", SIDE_CPU, ARGS.bench, "-s",
            f"127.0.0.1:{port}", "--protocol", "resp", *LOAD, "--json", "-q",
            "--duration", f"{seconds}s", *extra]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return bench_result(proc, seconds) if wait else proc


def bench_result(proc, seconds):
    out, err = proc.communicate(timeout=seconds + 60)
    if proc.returncode != 0:
        raise RuntimeError(f"spinel-bench exit {proc.returncode}: {err.strip()}")
    result = json.loads(out)
    bad = result["corrupt"] + result["errors_total"]
    if bad:
        raise RuntimeError(f"spinel-bench: {bad} corrupt or failed requests")
    return result


class Overwriter(threading.Thread):
    """Overwrites existing keys (random ones of the fill, same value length) at about
    `rate` SETs a second, in pipelined batches every 10 ms, from CPU 0, until stopped."""

    def __init__(self, port, count, rate):
        super().__init__(daemon=True)
        self.port, self.count, self.rate = port, count, rate
        self.stop_flag, self.done, self.error = threading.Event(), 0, None

    def run(self):
        os.sched_setaffinity(threading.get_native_id(), {int(SIDE_CPU)})
        pool = base64.b64encode(os.urandom(1 << 16))
        span = len(pool) - ARGS.value_bytes
        rng = __import__("random").Random(7)
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        rfile = sock.makefile("rb")
        t0 = time.monotonic()
        try:
            while not self.stop_flag.is_set():
                due = int((time.monotonic() - t0) * self.rate) - self.done
                batch = min(max(due, 0), 5000)
                if batch:
                    sock.sendall(b"".join(
                        encode("SET", b"key:%012d" % rng.randrange(self.count),
                               pool[(o := rng.randrange(span)):o + ARGS.value_bytes])
                        for _ in range(batch)))
                    for _ in range(batch):
                        if not rfile.readline().startswith(b"+"):
                            raise RuntimeError("a SET failed")
                    self.done += batch
                self.stop_flag.wait(0.01)
        except Exception as e:  # noqa: BLE001 - reported by finish()
            self.error = e
        finally:
            rfile.close()
            sock.close()
        self.secs = time.monotonic() - t0

    def finish(self):
        self.stop_flag.set()
        self.join()
        if self.error:
            raise RuntimeError(f"overwriter: {self.error}")
        return self.done


# ---------------------------------------------------------------- replication state

def offsets(primary_conn, replica_conn):
    """(primary master_repl_offset, slave0's acknowledged offset, replica's applied offset,
    replica link up)."""
    # The replica first: the primary's offset, read after, is at least as new, so each lag
    # is an upper bound (it includes the time between the two reads).
    r = replica_conn.info()
    p = primary_conn.info()
    ack = -1
    if "slave0" in p:
        fields = dict(kv.split("=", 1) for kv in p["slave0"].split(","))
        ack = int(fields.get("offset", -1))
    return (int(p["master_repl_offset"]), ack, int(r.get("slave_repl_offset", -1)),
            r.get("master_link_status") == "up")


def attach(primary, replica, timeout_s, on_up=None):
    """REPLICAOF, then (seconds to link up, seconds to caught up); `on_up` runs once the
    link is up."""
    pc, rc = Conn(primary.port), Conn(replica.port)
    try:
        t0 = time.monotonic()
        rc.call("REPLICAOF", "127.0.0.1", primary.port)
        up_s = None
        while time.monotonic() - t0 < timeout_s:
            master, _, applied, up = offsets(pc, rc)
            now = time.monotonic() - t0
            if up and up_s is None:
                up_s = now
                if on_up:
                    on_up()
                    continue
            if up and applied == master:
                return up_s, now
            time.sleep(0.05)
        read = rc.info().get("master_sync_read_bytes", "?")
        raise RuntimeError(f"{primary.kind} -> {replica.kind}: not caught up in {timeout_s}s "
                           f"(link up after {up_s}s, {read} RDB bytes read)")
    finally:
        pc.close()
        rc.close()


def replica_kind(primary_kind):
    return "valkey" if primary_kind == "valkey" else "redis"


def stop_all(servers):
    for s in reversed(servers):
        s.stop()


# ---------------------------------------------------------------- part 1: full sync

def sync_once(primary_kind, rep_kind, size_mib, tmp_root):
    path, count = fill_file(size_mib, tmp_root)
    mem_mib = max(512, size_mib * 3)
    servers = []
    try:
        primary = Server(primary_kind, PRIMARY_CPU, mem_mib, tmp_root)
        servers.append(primary)
        t0 = time.monotonic()
        fill(primary, path, count)
        note(f"{primary_kind}: {count:,} keys in {time.monotonic() - t0:.1f}s, syncing")
        replica = Server(rep_kind, SIDE_CPU, mem_mib, tmp_root)
        servers.append(replica)
        time.sleep(1)
        sampler = MemorySampler(primary.pid)
        cpu_before = cpu_secs(primary.pid)
        sampler.start()
        writer = Overwriter(primary.port, count, ARGS.write_rate) if ARGS.write_rate else None
        writes = []
        stop_writer = (lambda: writes.append(writer.finish())) if writer else None
        if writer:
            writer.start()
        try:
            up_s, caught_s = attach(primary, replica, on_up=stop_writer,
                                    timeout_s=ARGS.sync_timeout_s or 30 + size_mib / 10)
        except RuntimeError as e:
            note(str(e))
            return {"failed": True, "peak_extra_mib": sampler.peak_kib / 1024}
        finally:
            sampler.finish()
            if writer and not writes:
                writes.append(writer.finish())
        c = Conn(replica.port)
        keys = c.call("DBSIZE")
        c.close()
        if keys != count:
            raise RuntimeError(f"replica has {keys} keys of {count}")
        return {"up_s": up_s, "caught_s": caught_s, "base_mib": sampler.base_kib / 1024,
                "peak_extra_mib": sampler.peak_kib / 1024,
                "peak_rss_mib": sampler.peak_rss_kib / 1024,
                "peak_child_mib": sampler.peak_child_kib / 1024,
                "peak_pss_mib": sampler.peak_pss_kib / 1024, "writes": sum(writes),
                "cpu_s": cpu_secs(primary.pid) - cpu_before, "keys": count,
                "samples": sampler.samples, "load": load_1min()}
    finally:
        stop_all(servers)


def sync_cases():
    out = [(p, replica_kind(p)) for p in ARGS.primaries.split(",")]
    if ARGS.spinel_replica:
        out.append(("spinel", "spinel"))
    return out


def part_sync(tmp_root):
    print(f"{'run':34} {'up s':>6} {'sync s':>7} {'base MiB':>9} {'peak+ MiB':>9} "
          f"{'rss+ MiB':>8} {'child MiB':>9} {'pss+ MiB':>8} {'writes':>8} {'cpu s':>6} "
          f"{'load':>5}", flush=True)
    runs = {}
    for size in [int(s) for s in ARGS.sizes_mib.split(",")]:
        repeat = ARGS.big_repeat if size >= 1024 else ARGS.repeat
        for rep in range(1, repeat + 1):
            for case in sync_cases():
                r = sync_once(*case, size, tmp_root)
                if r.get("failed"):
                    print(f"{rep} {size} MiB {case[0]}->{case[1]}: NOT CAUGHT UP (peak extra "
                          f"{r['peak_extra_mib']:.1f} MiB)", flush=True)
                    continue
                runs.setdefault((size, case), []).append(r)
                print(f"{rep} {size} MiB {case[0]}->{case[1]:22} {r['up_s']:>6.2f} "
                      f"{r['caught_s']:>7.2f} {r['base_mib']:>9.0f} {r['peak_extra_mib']:>9.1f} "
                      f"{r['peak_rss_mib']:>8.1f} {r['peak_child_mib']:>9.1f} "
                      f"{r['peak_pss_mib']:>8.1f} {r['writes']:>8} {r['cpu_s']:>6.2f} "
                      f"{r['load']:>5.1f}", flush=True)
    print("\nmedians\n| data | primary -> replica | runs | keys | link up s | caught up s | "
          "primary RSS before MiB | peak extra MiB (RSS + child dirty) | peak extra PSS MiB | "
          "SETs during the copy | primary CPU s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (size, case), rs in runs.items():
        def med(k):
            return statistics.median(r[k] for r in rs)
        print(f"| {size} MiB | {case[0]} -> {case[1]} | {len(rs)} | {rs[0]['keys']:,} | "
              f"{med('up_s'):.2f} | {med('caught_s'):.2f} | {med('base_mib'):,.0f} | "
              f"{med('peak_extra_mib'):,.1f} ({med('peak_rss_mib'):,.1f} + "
              f"{med('peak_child_mib'):,.1f}) | {med('peak_pss_mib'):,.1f} | "
              f"{med('writes'):,.0f} | {med('cpu_s'):.2f} |")


# ---------------------------------------------------------------- part 2: lag

def with_replicas(primary_kind, n, tmp_root):
    """A primary with the bench's keys preloaded and n caught-up replicas."""
    servers = [Server(primary_kind, PRIMARY_CPU, 512, tmp_root)]
    try:
        bench(servers[0].port, 1, ["--preload"])
        for _ in range(n):
            servers.append(Server(replica_kind(primary_kind), SIDE_CPU, 512, tmp_root))
            attach(servers[0], servers[-1], timeout_s=30)
    except Exception:
        stop_all(servers)
        raise
    return servers


def lag_once(primary_kind, tmp_root):
    servers = with_replicas(primary_kind, 1, tmp_root)
    primary, replica = servers
    pc, rc = Conn(primary.port), Conn(replica.port)
    try:
        start = offsets(pc, rc)[0]
        proc = bench(primary.port, ARGS.seconds, wait=False)
        samples = []
        while proc.poll() is None:
            samples.append(offsets(pc, rc))
            time.sleep(0.1)
        stopped = time.monotonic()
        result = bench_result(proc, ARGS.seconds)
        applied_s = acked_s = None
        while time.monotonic() - stopped < 30 and acked_s is None:
            master, ack, applied, _ = offsets(pc, rc)
            now = time.monotonic() - stopped
            applied_s = now if applied_s is None and applied == master else applied_s
            acked_s = now if ack == master else None
            time.sleep(0.01)
        end = offsets(pc, rc)[0]
    finally:
        pc.close()
        rc.close()
        stop_all(servers)
    ack_lag = [m - a for m, a, _, _ in samples if a >= 0]
    applied_lag = [m - p for m, _, p, _ in samples if p >= 0]
    return {"ack_lag": ack_lag, "applied_lag": applied_lag, "applied_s": applied_s,
            "acked_s": acked_s, "stream_bps": (end - start) / result["duration_secs"],
            "rps": result["requests"] / result["duration_secs"], "load": load_1min()}


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def part_lag(tmp_root):
    print("| primary -> replica | req/s | stream KB/s | applied lag median / p99 B | "
          "acked lag median / p99 B | applied after stop s | acked after stop s | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for rep in range(1, ARGS.repeat + 1):
        for kind in ARGS.primaries.split(","):
            r = lag_once(kind, tmp_root)
            fmt = (lambda v: "never" if v is None else f"{v:.2f}")
            print(f"| {rep}: {kind} -> {replica_kind(kind)} | {r['rps']:,.0f} | "
                  f"{r['stream_bps'] / 1000:,.0f} | {pct(r['applied_lag'], .5):,} / "
                  f"{pct(r['applied_lag'], .99):,} | {pct(r['ack_lag'], .5):,} / "
                  f"{pct(r['ack_lag'], .99):,} | {fmt(r['applied_s'])} | {fmt(r['acked_s'])} | "
                  f"{r['load']:.1f} |", flush=True)


# ---------------------------------------------------------------- part 3: throughput

def throughput_once(primary_kind, n, tmp_root):
    servers = with_replicas(primary_kind, n, tmp_root)
    try:
        before = cpu_secs(servers[0].pid)
        result = bench(servers[0].port, ARGS.seconds)
        cpu = cpu_secs(servers[0].pid) - before
    finally:
        stop_all(servers)
    return {"rps": result["requests"] / result["duration_secs"],
            "cpu": cpu, "per_cpu": result["requests"] / cpu if cpu else float("nan"),
            "p99_us": result["latency_us"]["p99"], "load": load_1min()}


def part_throughput(tmp_root):
    runs = {}
    print(f"{'run':30} {'req/s':>9} {'primary CPU s':>13} {'req/CPU-s':>10} {'p99 us':>7} "
          f"{'load':>5}", flush=True)
    for rep in range(1, ARGS.repeat + 1):
        for n in (0, 1, 2):
            for kind in ARGS.primaries.split(","):
                r = throughput_once(kind, n, tmp_root)
                runs.setdefault((kind, n), []).append(r)
                print(f"{rep} {kind} + {n} replicas{'':12} {r['rps']:>9,.0f} {r['cpu']:>13.2f} "
                      f"{r['per_cpu']:>10,.0f} {r['p99_us']:>7} {r['load']:>5.1f}", flush=True)
    print("\nmedians\n| primary | replicas | req/s | primary CPU s | req / primary CPU-s |")
    print("|---|---:|---:|---:|---:|")
    for (kind, n), rs in runs.items():
        def med(k):
            return statistics.median(r[k] for r in rs)
        print(f"| {kind} | {n} | {med('rps'):,.0f} | {med('cpu'):.2f} | {med('per_cpu'):,.0f} |")


# ---------------------------------------------------------------- part 4: BGSAVE

def bgsave_once(kind, size_mib, rate, tmp_root):
    """Fills a server, then BGSAVE (with an overwriter at `rate` SETs/s from just before
    until it ends): its wall time and the server's peak extra memory."""
    path, count = fill_file(size_mib, tmp_root)
    server = Server(kind, PRIMARY_CPU, max(512, size_mib * 3), tmp_root)
    try:
        fill(server, path, count)
        time.sleep(1)
        c = Conn(server.port)
        saves = int(c.info("persistence")["rdb_saves"])
        sampler = MemorySampler(server.pid)
        cpu_before = cpu_secs(server.pid)
        sampler.start()
        writer = Overwriter(server.port, count, rate) if rate else None
        if writer:
            writer.start()
        t0 = time.monotonic()
        try:
            c.call("BGSAVE")
            deadline = t0 + (ARGS.sync_timeout_s or 60 + size_mib / 10)
            while True:
                info = c.info("persistence")
                if int(info["rdb_saves"]) > saves and info["rdb_bgsave_in_progress"] == "0":
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{kind}: BGSAVE not done in {deadline - t0:.0f}s")
                time.sleep(0.05)
            secs = time.monotonic() - t0
        finally:
            writes = writer.finish() if writer else 0
            sampler.finish()
        if info["rdb_last_bgsave_status"] != "ok":
            raise RuntimeError(f"{kind}: BGSAVE failed")
        c.close()
        return {"secs": secs, "base_mib": sampler.base_kib / 1024,
                "peak_extra_mib": sampler.peak_kib / 1024,
                "peak_rss_mib": sampler.peak_rss_kib / 1024,
                "peak_child_mib": sampler.peak_child_kib / 1024,
                "peak_pss_mib": sampler.peak_pss_kib / 1024, "writes": writes,
                "cpu_s": cpu_secs(server.pid) - cpu_before, "keys": count,
                "load": load_1min()}
    finally:
        server.stop()


def part_bgsave(tmp_root):
    rates = [0, ARGS.write_rate] if ARGS.write_rate else [0]
    print(f"{'run':34} {'save s':>7} {'base MiB':>9} {'peak+ MiB':>9} {'rss+ MiB':>8} "
          f"{'child MiB':>9} {'pss+ MiB':>8} {'writes':>8} {'cpu s':>6} {'load':>5}",
          flush=True)
    runs = {}
    for size in [int(s) for s in ARGS.sizes_mib.split(",")]:
        repeat = ARGS.big_repeat if size >= 1024 else ARGS.repeat
        for rep in range(1, repeat + 1):
            for rate in rates:
                for kind in ARGS.primaries.split(","):
                    r = bgsave_once(kind, size, rate, tmp_root)
                    runs.setdefault((size, rate, kind), []).append(r)
                    print(f"{rep} {size} MiB {kind} {rate}/s{'':14} {r['secs']:>7.2f} "
                          f"{r['base_mib']:>9.0f} {r['peak_extra_mib']:>9.1f} "
                          f"{r['peak_rss_mib']:>8.1f} {r['peak_child_mib']:>9.1f} "
                          f"{r['peak_pss_mib']:>8.1f} {r['writes']:>8} {r['cpu_s']:>6.2f} "
                          f"{r['load']:>5.1f}", flush=True)
    print("\nmedians\n| data | server | SETs/s asked | runs | keys | BGSAVE s | RSS before MiB | "
          "peak extra MiB (RSS + child dirty) | peak extra PSS MiB | SETs during it | CPU s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (size, rate, kind), rs in runs.items():
        def med(k):
            return statistics.median(r[k] for r in rs)
        print(f"| {size} MiB | {kind} | {rate:,} | {len(rs)} | {rs[0]['keys']:,} | "
              f"{med('secs'):.2f} | {med('base_mib'):,.0f} | {med('peak_extra_mib'):,.1f} "
              f"({med('peak_rss_mib'):,.1f} + {med('peak_child_mib'):,.1f}) | "
              f"{med('peak_pss_mib'):,.1f} | {med('writes'):,.0f} | {med('cpu_s'):.2f} |")


def note(text):
    print(f"  [{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def load_1min():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", required=True,
                        choices=["sync", "lag", "throughput", "bgsave"])
    parser.add_argument("--spinel", default="target/release/spinel")
    parser.add_argument("--bench", default="target/release/spinel-bench")
    parser.add_argument("--sizes-mib", default="256")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big-repeat", type=int, default=1, help="repetitions at 1024 MiB+")
    parser.add_argument("--seconds", type=int, default=5, help="load duration (lag, throughput)")
    parser.add_argument("--primaries", default="spinel,redis,valkey")
    parser.add_argument("--spinel-replica", action="store_true",
                        help="sync: also a Spinel replica of a Spinel primary")
    parser.add_argument("--value-bytes", type=int, default=84,
                        help="sync: value length (keys are 16 bytes); above 20 RDB writers "
                        "try LZF on each value")
    parser.add_argument("--sync-timeout-s", type=float, default=0,
                        help="sync: give up after this (default 30 s + 1 s per 10 MiB)")
    parser.add_argument("--write-rate", type=int, default=0,
                        help="sync, bgsave: overwrite random existing keys at about this "
                        "many SETs/s (pipelined, from CPU 0) during the copy (sync: until "
                        "the link is up) or the save (bgsave: runs 0 and this rate)")
    parser.add_argument("--spinel-args", default="", help="extra arguments for every Spinel")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ARGS = parser.parse_args()
    ARGS.spinel, ARGS.bench = os.path.abspath(ARGS.spinel), os.path.abspath(ARGS.bench)
    tmp_root = tempfile.mkdtemp(prefix="repl-bench-")
    try:
        {"sync": part_sync, "lag": part_lag, "throughput": part_throughput,
         "bgsave": part_bgsave}[ARGS.part](tmp_root)
    finally:
        if not ARGS.keep:
            shutil.rmtree(tmp_root, ignore_errors=True)
        else:
            print(f"kept {tmp_root}")


ARGS = None

if __name__ == "__main__":
    main()
