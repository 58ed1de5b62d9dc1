#!/usr/bin/env python3
"""What one Prometheus scrape costs: starts Spinel (`-t 1 -m 256 --metrics-port`), writes
--keys keys with SET (pipelined), then times --scrapes GETs of /metrics and prints the
median and minimum milliseconds and the body's size. Only the process it starts is stopped.

    scripts/metrics_scrape_cost.py [--keys 100000] [--scrapes 10] [--binary target/release/spinel]
"""
import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from large_list_cost import free_port, run_batch  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--scrapes", type=int, default=10)
    parser.add_argument("--binary", default="target/release/spinel")
    args = parser.parse_args()
    resp_port, metrics_port = free_port(), free_port()
    argv = [args.binary, "-p", "0", "--resp-port", str(resp_port), "--metrics-port",
            str(metrics_port), "-t", "1", "-m", "256"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        conn = socket.create_connection(("127.0.0.1", resp_port))
        for start in range(0, args.keys, 1000):
            end = min(args.keys, start + 1000)
            run_batch(conn, [["SET", f"key:{i}", "v"] for i in range(start, end)])
        times, body = [], b""
        for _ in range(args.scrapes):
            started = time.perf_counter()
            body = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics").read()
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        print(f"{args.keys} keys: scrape median {times[len(times) // 2]:.1f} ms, "
              f"min {times[0]:.1f} ms, {len(body)} bytes")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
