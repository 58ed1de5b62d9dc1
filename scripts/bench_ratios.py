#!/usr/bin/env python3
"""Per-repetition ratios from scripts/bench_server.sh results (JSON lines from kvbench.py).

    scripts/bench_ratios.py [/tmp/bench_server.jsonl]

Ratios are taken within one repetition (servers interleaved, so drift hits all alike) on
keys per server CPU-second, then the median over repetitions is printed with every value.
Runs kvbench flagged noisy are marked with '*' in the efficiency table.
"""
import json
import statistics
import sys

PATTERNS = [("get", 1), ("mix91", 1), ("get", 48), ("mix91", 48)]
SERVERS = ["nullmc", "spinel-uring", "spinel-epoll", "memcached", "redis"]
RATIOS = [
    ("spinel-uring get / nullmc get", "spinel-uring", ("get", 1), "nullmc", ("get", 1)),
    ("spinel-epoll get / nullmc get", "spinel-epoll", ("get", 1), "nullmc", ("get", 1)),
    ("memcached get / nullmc get", "memcached", ("get", 1), "nullmc", ("get", 1)),
    ("spinel-uring get / memcached get", "spinel-uring", ("get", 1), "memcached", ("get", 1)),
    ("spinel-uring 48-key keys / memcached", "spinel-uring", ("get", 48), "memcached", ("get", 48)),
    ("spinel-epoll 48-key keys / memcached", "spinel-epoll", ("get", 48), "memcached", ("get", 48)),
    ("spinel-uring 48-key keys / redis", "spinel-uring", ("get", 48), "redis", ("get", 48)),
    ("spinel-uring 9:1 / 100% get", "spinel-uring", ("mix91", 1), "spinel-uring", ("get", 1)),
    ("spinel-epoll 9:1 / 100% get", "spinel-epoll", ("mix91", 1), "spinel-epoll", ("get", 1)),
    ("memcached 9:1 / 100% get", "memcached", ("mix91", 1), "memcached", ("get", 1)),
    ("spinel-uring 9:1 48-key / 48-key", "spinel-uring", ("mix91", 48), "spinel-uring", ("get", 48)),
]


def load(path):
    runs = {}
    for line in open(path):
        r = json.loads(line)
        name, _, rep = r["label"].partition("/")
        runs[(rep, name, r["pattern"], r["mget"])] = r
    return runs


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/bench_server.jsonl"
    runs = load(path)
    reps = sorted({key[0] for key in runs})
    print("keys per server CPU-second, by repetition (* = flagged noisy)")
    for pattern, mget in PATTERNS:
        for server in SERVERS:
            cells = []
            for rep in reps:
                r = runs.get((rep, server, pattern, mget))
                if r:
                    mark = "*" if r.get("noisy") else " "
                    cells.append(f"{r['keys_per_srv_cpu_s'] / 1000:8.1f}k{mark}")
            if cells:
                print(f"  {pattern:5} x{mget:<2} {server:13}" + "".join(cells))
    print("ratios (median over repetitions; each repetition's value after it)")
    for label, a, (pa, ma), b, (pb, mb) in RATIOS:
        values = []
        for rep in reps:
            x, y = runs.get((rep, a, pa, ma)), runs.get((rep, b, pb, mb))
            if x and y and y["keys_per_srv_cpu_s"]:
                values.append(x["keys_per_srv_cpu_s"] / y["keys_per_srv_cpu_s"])
        if values:
            shown = " ".join(f"{v:.2f}" for v in values)
            print(f"  {label:38} {statistics.median(values):.2f}   ({shown})")


if __name__ == "__main__":
    main()
