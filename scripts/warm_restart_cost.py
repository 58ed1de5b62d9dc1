#!/usr/bin/env python3
"""Warm restart cost: time to save and to restore about --fill-mib of items of each size,
and the hit ratio of a short zipf run right after a warm restart against one after a cold
start.

    scripts/warm_restart_cost.py [--binary target/release/spinel] [--sizes 20/20,64/1024]
        [--fill-mib 1024] [--memory-mib 1536] [--run-secs 3]

For each key/value size: starts Spinel (-t 2, -m --memory-mib, -A, -e FILE) pinned to CPU 1,
preloads keys with spinel-bench (pinned to CPU 0) until `stats bytes` holds --fill-mib,
stops it with `shutdown graceful` (the save), starts it again with the same -e (the
restore), runs `spinel-bench --ratio 1:9 --key-distribution zipf:0.99` for --run-secs and
prints its hit ratio; then does the same run after a cold start. Save and restore times are
the server's own (its log lines), and the wall time from the stop to the exit and from the
start to the port answering. Only the processes it starts are stopped.
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from large_list_cost import free_port  # noqa: E402


def start(binary, port, memory_mib, memory_file):
    argv = ["taskset", "-c", "1", binary, "-p", str(port), "--resp-port", "0", "-l",
            "127.0.0.1", "-t", "2", "-m", str(memory_mib), "-A", "-v", "-e", memory_file]
    began = time.monotonic()
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, time.monotonic() - began
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(proc.stderr.read())
            time.sleep(0.01)


def command(port, line):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(line)
        data = b""
        while not data.endswith(b"END\r\n"):
            data += s.recv(65536)
        return data.decode()


def stat(port, name):
    return int(re.search(rf"STAT {name} (\d+)", command(port, b"stats\r\n")).group(1))


def bench(port, extra):
    argv = ["taskset", "-c", "0", "target/release/spinel-bench", "-s", f"127.0.0.1:{port}",
            "--json", "-q", "-c", "20"] + extra
    return json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)


def fill(port, key, value, fill_bytes):
    keys = fill_bytes // (key + value)
    bench(port, ["--keyspace", str(keys), "--key-size", str(key), "--value-size", str(value),
                 "--preload", "--ratio", "0:1", "--requests", "1"])
    return keys


def stop_graceful(proc, port):
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"shutdown graceful\r\n")
    proc.wait(timeout=600)
    return time.monotonic() - began, proc.stderr.read()


def zipf_run(port, keys, key, value, secs):
    result = bench(port, ["--keyspace", str(keys), "--key-size", str(key), "--value-size",
                          str(value), "--ratio", "1:9", "--key-distribution", "zipf:0.99",
                          "--duration", f"{secs}s"])
    return result["hit_ratio"]


def one_size(args, key, value):
    port = free_port()
    memory_file = os.path.join(tempfile.mkdtemp(), "memory")
    proc, _ = start(args.binary, port, args.memory_mib, memory_file)
    keys = fill(port, key, value, args.fill_mib << 20)
    stored = stat(port, "bytes")
    items = stat(port, "curr_items")
    stop_secs, log = stop_graceful(proc, port)
    saved_ms = re.search(r"saved \d+ items to .* \((\d+) bytes, (\d+) ms\)", log)
    proc, start_secs = start(args.binary, port, args.memory_mib, memory_file)
    time.sleep(0.2)
    restored = stat(port, "curr_items")
    warm = zipf_run(port, keys, key, value, args.run_secs)
    proc.terminate()
    log = proc.communicate(timeout=60)[1]
    restored_ms = re.search(r"restored \d+ items from .* \(\d+ bytes, (\d+) ms", log)
    proc, _ = start(args.binary, port, args.memory_mib, memory_file + ".none")
    cold = zipf_run(port, keys, key, value, args.run_secs)
    proc.terminate()
    proc.communicate(timeout=60)
    print(f"{key}/{value}: {items} items, {stored / 2**20:.0f} MiB of item bytes; "
          f"file {int(saved_ms.group(1)) / 2**20:.0f} MiB; save {saved_ms.group(2)} ms "
          f"(stop to exit {stop_secs:.2f} s); restore {restored_ms.group(1)} ms "
          f"(start to port {start_secs:.2f} s), {restored} items back; "
          f"zipf 1:9 hit ratio warm {warm:.3f}, cold {cold:.3f}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="target/release/spinel")
    parser.add_argument("--sizes", default="20/20,64/1024")
    parser.add_argument("--fill-mib", type=int, default=1024)
    parser.add_argument("--memory-mib", type=int, default=1536)
    parser.add_argument("--run-secs", type=float, default=3)
    args = parser.parse_args()
    for size in args.sizes.split(","):
        key, value = map(int, size.split("/"))
        one_size(args, key, value)


if __name__ == "__main__":
    main()
