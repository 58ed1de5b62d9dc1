"""Unread pipelines: --conns connections each send --gets pipelined gets of a 10 KB value and
do not read the replies for --hold seconds (then close; with --reset, they reset at once after
sending, SO_LINGER 0). Prints the server's peak RSS rise (--pid) and the longest wait of
another client's `version` / `PING`, sampled every 10 ms."""
import time

import connlib
from hostile import (LatencyProbe, PeakWatch, close_all, get_request_and_reply,
                     open_nonblocking, push_for, store)


def main():
    p = connlib.parser(__doc__)
    p.add_argument("--conns", type=int, default=100)
    p.add_argument("--gets", type=int, default=2000)
    p.add_argument("--hold", type=float, default=5.0)
    p.add_argument("--reset", action="store_true")
    a = p.parse_args()
    port, proto = connlib.target(a)
    value = b"u" * 10240
    store(port, proto, "unread10k", value)
    req, _ = get_request_and_reply(proto, "unread10k", value)
    payload = req * a.gets
    socks = [open_nonblocking(port, rcvbuf=4096) for _ in range(a.conns)]
    probe = LatencyProbe(port, proto, period_s=0.01)
    with PeakWatch(a.pid, abort_kib=3 << 20, on_abort=lambda: close_all(socks, reset=True)) as w:
        with probe:
            start = time.monotonic()
            # Each connection sends its whole pipeline once (a server that stops reading
            # leaves the rest unsent), for at most --hold seconds.
            push_for(socks, payload, a.hold, len(payload))
            if a.reset:
                close_all(socks, reset=True)
                time.sleep(max(1.0, a.hold - (time.monotonic() - start)))
            else:
                time.sleep(max(0.0, a.hold - (time.monotonic() - start)))
                close_all(socks)
            time.sleep(0.5)
    print("ROW unread%s: +%.0f MiB / %.0f ms%s" % (
        "_reset" if a.reset else "", w.rise_mib, probe.max_s * 1000,
        (" (probe errors: %s)" % probe.errors[:1]) if probe.errors else ""))


if __name__ == "__main__":
    main()
