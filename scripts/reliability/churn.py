"""Connection churn: --total connections opened then closed, in batches of --batch (within the
fd limit; RLIMIT_NOFILE soft is raised to hard). Each connection does one round trip
(`version` / `PING`) so the server has really taken it. Prints the server's RSS (--pid) at the
start, at its peak and --settle seconds after, and whether the end is within
max(4 MiB, 25% of the growth) of the start."""
import socket
import time

import connlib
from hostile import PeakWatch, raise_nofile, rss_kib


def main():
    p = connlib.parser(__doc__)
    p.add_argument("--total", type=int, default=19000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--settle", type=float, default=3.0)
    a = p.parse_args()
    raise_nofile(1 << 20)
    port, proto = connlib.target(a)
    request, end = (b"version\r\n", b"\r\n") if proto == "mc" else (b"PING\r\n", b"+PONG\r\n")
    start_kib = rss_kib(a.pid)
    failed = 0
    with PeakWatch(a.pid, abort_kib=6 << 20) as w:
        done = 0
        while done < a.total:
            n = min(a.batch, a.total - done)
            socks = []
            for _ in range(n):
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=5)
                    s.sendall(request)
                    socks.append(s)
                except OSError:
                    failed += 1
            for s in socks:
                try:
                    got = b""
                    while not got.endswith(end):
                        chunk = s.recv(4096)
                        if not chunk:
                            raise ConnectionError
                        got += chunk
                except OSError:
                    failed += 1
                s.close()
            done += n
        time.sleep(a.settle)
    end_kib = rss_kib(a.pid)
    growth = max(0, w.peak_kib - start_kib)
    allowed = max(4096, growth // 4)
    print("ROW churn: start %.1f MiB, peak %.1f, after %.0f s %.1f: %+.1f MiB against %.1f "
          "allowed (%s)%s" % (
              start_kib / 1024, w.peak_kib / 1024, a.settle, end_kib / 1024,
              (end_kib - start_kib) / 1024, allowed / 1024,
              "within" if end_kib - start_kib <= allowed else "NOT within",
              ", %d failed" % failed if failed else ""))


if __name__ == "__main__":
    main()
