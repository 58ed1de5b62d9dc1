"""Half-close: a client sends its requests then shutdown(SHUT_WR) and reads to EOF.
`nc -N` and `nc -q1` (the real nc), --tries each on each port given, plus the quick-start
command on the memcached port; then raw sockets: 1,000 pipelined gets of a 10 KB value, then
half-close, counting whole replies before EOF."""
import subprocess
from concurrent.futures import ThreadPoolExecutor

import connlib
from hostile import count_whole, get_request_and_reply, half_close_exchange, store


def nc_tries(port, variant, payload, want, tries, parallel=5):
    """How many of `tries` runs of nc got exactly `want` (`parallel` at a time: nc -q1 waits
    1 s after its input ends, which would make 20 sequential tries take 20 s)."""
    with ThreadPoolExecutor(parallel) as ex:
        return sum(ex.map(lambda _: nc_once(port, variant, payload, want), range(tries)))


def nc_once(port, variant, payload, want):
    try:
        out = subprocess.run(["nc", variant, "127.0.0.1", str(port)], input=payload,
                             capture_output=True, timeout=10).stdout
    except subprocess.TimeoutExpired:
        out = b""
    return out == want


def main():
    p = connlib.parser(__doc__)
    p.add_argument("--tries", type=int, default=20)
    p.add_argument("--gets", type=int, default=1000)
    p.add_argument("--only", choices=["nc", "quickstart", "pipeline"])
    a = p.parse_args()
    ports = [(a.port, "mc")] if a.port else []
    ports += [(a.resp_port, "resp")] if a.resp_port else []
    if a.only in (None, "nc"):
        for port, proto in ports:
            if proto == "mc":
                payload = b"set hc 0 0 1\r\nx\r\nget hc\r\n"
                want = b"STORED\r\nVALUE hc 0 1\r\nx\r\nEND\r\n"
            else:
                payload = b"SET hc x\r\nGET hc\r\n"
                want = b"+OK\r\n$1\r\nx\r\n"
            res = [nc_tries(port, v, payload, want, a.tries) for v in ("-N", "-q1")]
            print("ROW half_close_nc_%s: nc -N %d/%d, nc -q1 %d/%d"
                  % (proto, res[0], a.tries, res[1], a.tries), flush=True)
    if a.only in (None, "quickstart") and a.port:
        qs = nc_tries(a.port, "-q1", b"set a 0 0 1\r\nx\r\nget a\r\n",
                      b"STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n", a.tries)
        print("ROW half_close_quickstart: %d/%d" % (qs, a.tries), flush=True)
    if a.only in (None, "pipeline"):
        port, proto = connlib.target(a)
        value = b"v" * 10240
        store(port, proto, "hc10k", value)
        req, reply = get_request_and_reply(proto, "hc10k", value)
        got, eof, secs = half_close_exchange(port, req * a.gets, timeout=30)
        n, exact = count_whole(got, reply)
        print("ROW half_close_pipeline: %d of %d%s%s (%.2f s)"
              % (n, a.gets, "" if eof else ", no EOF", "" if exact else ", trailing junk", secs))


if __name__ == "__main__":
    main()
