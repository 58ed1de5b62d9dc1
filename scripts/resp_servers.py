"""Starting a RESP server (redis-server or Spinel) for a measuring script: a free loopback
port, PING on a new connection, and a start that waits for the first PONG. Shared by
scripts/redis_suite.py and scripts/redis_py_suite.py."""

import socket
import subprocess
import sys
import time


def encode(*args):
    """A command as RESP's array of bulk strings (str and int arguments as their text)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ping_reply(port, timeout_secs=2.0):
    """The first line of the reply to PING on a new connection, or why there is none."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_secs) as s:
            s.sendall(b"PING\r\n")
            return s.recv(200).decode(errors="replace").split("\r\n")[0]
    except socket.timeout:
        return "no reply"
    except OSError as e:
        return str(e)


def ping(port, timeout_secs=2.0):
    return ping_reply(port, timeout_secs) == "+PONG"


def start_server(kind, cmd, port, log_path):
    """Runs `cmd` (in its own session, output to `log_path`) until PING on `port` answers;
    exits the script naming `kind` if it dies or stays silent for 10 s."""
    log = open(log_path, "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{kind} exited at start (status {proc.returncode}), see {log_path}")
        if ping(port):
            return proc
        time.sleep(0.1)
    proc.kill()
    sys.exit(f"{kind} did not answer PING within 10s, see {log_path}")
