#!/usr/bin/env python3
"""What the per-command counts, latency histograms and slow-log timing cost.

Two sides of one division:
1. The added nanoseconds per command, in process (no sockets, no kernel, so small
   differences are not lost in the noise of two shared cores): the example
   `crates/exec/examples/command_cost.rs` built as usual and with
   `--features no-command-stats`, run interleaved, best of each; GET and SET in batches of
   32, with the slow log on (Redis's default: every SET is timed) and off (the histogram's
   sample alone).
2. What a request costs the server, natively: `spinel-bench compare` against the server
   binary, pipelined 32 deep (the cheapest requests, where a fixed cost weighs most),
   requests per server CPU-second.

The cost is (1) divided by (2)'s nanoseconds per request.

Build:
  cargo build --release -p server -p exec --example command_cost
  cargo build --release -p exec --example command_cost --features no-command-stats \\
      --target-dir target-nostats
Run:
  scripts/metrics_overhead.py target/release/examples/command_cost \\
      target-nostats/release/examples/command_cost --server target/release/spinel
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile


def run_example(binary):
    out = subprocess.run(["taskset", "-c", "1", binary], capture_output=True, text=True,
                         check=True, timeout=600).stdout
    return {name: float(ns) for name, ns in (line.split() for line in out.splitlines())}


def in_process(with_bin, without_bin, runs):
    best = {"with": {}, "without": {}}
    for run in range(runs):
        order = [("with", with_bin), ("without", without_bin)]
        for label, binary in order if run % 2 == 0 else order[::-1]:
            for name, ns in run_example(binary).items():
                best[label][name] = min(ns, best[label].get(name, ns))
    return best


def native_ns_per_request(server, repeat):
    """Server CPU nanoseconds per request, pipelined 32 deep, by workload (get, 9:1)."""
    bench = os.path.join(os.path.dirname(server), "spinel-bench")
    with tempfile.TemporaryDirectory() as out:
        cmd = [bench, "compare", "--servers", "measured", "--server-cmd",
               f"measured:resp={os.path.abspath(server)} -p 0 --resp-port {{port}} -t 1 -m {{memory_mib}}",
               "--mix", "get,9:1", "--keys-per-get", "1", "--sizes", "20/20", "--pipeline",
               "32", "--repeat", str(repeat), "--duration", "2s", "--out", out]
        subprocess.run(cmd, capture_output=True, check=True, timeout=900)
        with open(os.path.join(out, "compare.json")) as f:
            report = json.load(f)
    return {row["workload"]: 1e9 / row["req_per_server_cpu_sec"]["median"]
            for row in report["rows"] if row["server"] == "measured"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("with_example")
    parser.add_argument("without_example")
    parser.add_argument("--server", help="the server binary, for the native cost per request")
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--bench-repeat", type=int, default=5)
    args = parser.parse_args()
    best = in_process(args.with_example, args.without_example, args.runs)
    print(f"# in process, ns per command, best of {args.runs} interleaved runs")
    print("| workload | with | without | added ns |\n|---|--:|--:|--:|")
    added = {}
    for name in best["with"]:
        if name == "clock-pair":
            continue
        added[name] = best["with"][name] - best["without"][name]
        print(f"| {name} | {best['with'][name]:.1f} | {best['without'][name]:.1f} | "
              f"{added[name]:+.1f} |")
    print(f"\nA pair of clock reads: {best['with']['clock-pair']:.1f} ns")
    if not args.server:
        return 0
    native = native_ns_per_request(args.server, args.bench_repeat)
    print("\n# natively, server CPU ns per request (spinel-bench, pipeline 32, 20/20)")
    for workload, ns in native.items():
        print(f"- {workload}: {ns:.0f} ns")
    get_ns = next((ns for w, ns in native.items() if w.startswith("get")), None)
    if get_ns:
        print("\n# added cost as a share of a pipelined GET's server CPU")
        for name, ns in added.items():
            print(f"- {name}: {ns / get_ns:+.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
