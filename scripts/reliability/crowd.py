"""A crowd: --checked clients that each send one get and half-close (shutdown(SHUT_WR)), then
read to EOF, beside --partial connections holding a partial request and --hostile ones that
pipeline --mib MiB of gets of a 10 KB value without reading, then reset. Prints how many
checked clients got their whole reply then EOF, the server's peak RSS (--pid), and the longest
wait of a checked client. The server needs room for ~1,400 connections (-c 2000 /
--maxclients 2000); this raises RLIMIT_NOFILE's soft limit to the hard one."""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import connlib
from hostile import (PeakWatch, close_all, get_request_and_reply, half_close_exchange,
                     open_nonblocking, push_for, raise_nofile, store)


def main():
    p = connlib.parser(__doc__)
    p.add_argument("--checked", type=int, default=200)
    p.add_argument("--partial", type=int, default=1000)
    p.add_argument("--hostile", type=int, default=100)
    p.add_argument("--mib", type=int, default=20)
    p.add_argument("--push-secs", type=float, default=10.0,
                   help="longest the flood goes on; it stops (reset) once the checked are done")
    a = p.parse_args()
    raise_nofile(1 << 20)
    port, proto = connlib.target(a)
    big = b"c" * 10240
    store(port, proto, "crowd10k", big)
    store(port, proto, "crowd_small", b"hello")
    big_req, _ = get_request_and_reply(proto, "crowd10k", big)
    req, reply = get_request_and_reply(proto, "crowd_small", b"hello")
    partial_req = b"get crowd_sm" if proto == "mc" else b"*2\r\n$3\r\nGET\r\n$11\r\ncrowd"
    partials = []
    for _ in range(a.partial):
        s = open_nonblocking(port)
        s.sendall(partial_req)
        partials.append(s)
    hostiles = [open_nonblocking(port, rcvbuf=4096) for _ in range(a.hostile)]
    chunk = big_req * (65536 // len(big_req))
    stop = threading.Event()

    def abort():  # a runaway server: reset the flood at once, not only stop feeding it
        stop.set()
        close_all(hostiles, reset=True)

    with PeakWatch(a.pid, abort_kib=3 << 20, on_abort=abort) as w:
        pusher = threading.Thread(target=push_for, daemon=True,
                                  args=(hostiles, chunk, a.push_secs, a.mib << 20, stop))
        pusher.start()
        time.sleep(0.5)  # the flood under way before the checked clients come

        def checked(_):
            got, eof, secs = half_close_exchange(port, req, timeout=20)
            return got == reply and eof, secs, (got[:60], eof)

        with ThreadPoolExecutor(50) as ex:
            results = list(ex.map(checked, range(a.checked)))
        stop.set()  # push_for resets the hostile connections
        pusher.join(a.push_secs + 5)
        close_all(hostiles, reset=True)
        close_all(partials)
        time.sleep(0.5)
    ok = sum(r[0] for r in results)
    bad = [r[2] for r in results if not r[0]]
    print("ROW crowd: %d of %d / %.0f MiB / %s%s%s" % (
        ok, a.checked, w.peak_kib / 1024, fmt_secs(max(r[1] for r in results)),
        " (RSS abort)" if w.aborted else "",
        " (first failure: got %r, EOF %s)" % bad[0] if bad else ""))


def fmt_secs(s):
    return "%.2f s" % s if s >= 1 else "%.1f ms" % (s * 1000)


if __name__ == "__main__":
    main()
