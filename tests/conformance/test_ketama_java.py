"""spymemcached's ketama ring (Java) against spinel-bench's and pylibmc's, over three nodes.

tests/clients/spymemcached/KetamaCheck.java stores spinel-bench's 3000 keys through
spymemcached 2.12.3, then each node is asked (`get`) which keys it holds, as in
test_ketama_agreement.py (whose nodes, layouts and helpers this reuses): every key on exactly
one node. That placement is compared with spinel-bench's ring (`--ketama-names libmemcached`),
with pylibmc's (`ketama_weighted`), with where spymemcached's own locator says each key goes,
and with a ring computed here from the names spymemcached reports for its nodes.

How spymemcached names a node on its ring (its KetamaNodeKeyFormatter, 2.12.x; each name is
hashed as NAME-REPETITION, 40 MD5s of 4 points each, 160 points a node, as libketama does):

- Format.SPYMEMCACHED, the one ConnectionFactoryBuilder's Locator.CONSISTENT uses (it builds
  `new KetamaNodeLocator(nodes, hashAlg)`): String.valueOf(the InetSocketAddress) less a
  leading "/". For a server given by IP literal ("127.0.0.1:PORT") that is "127.0.0.1:PORT"
  (a given host name would make it "name/ip:PORT"), and the port is kept when it is 11211.
- Format.LIBMEMCACHED (only through a KetamaNodeLocator built by hand: the builder cannot ask
  for it): InetSocketAddress.getHostName(), with ":PORT" unless the port is 11211. For an IP
  literal getHostName() is a reverse lookup: 127.0.0.1 becomes "localhost" here.

libmemcached names a server "host:port" as given, "host" alone on port 11211. So:

- free ports (127.0.0.1 and free ports): the builder's ketama (SPYMEMCACHED) names the nodes
  as libmemcached does, and every key agrees with spinel-bench and pylibmc. LIBMEMCACHED does
  NOT agree: its reverse lookup names the nodes "localhost:PORT" (asserted: most keys move).
- port 11211 (three random 127.a.b.c): the builder's ketama keeps ":11211" in the names and
  disagrees with libmemcached and spinel-bench (asserted: most keys elsewhere; spymemcached
  then matches neither). LIBMEMCACHED there names "127.a.b.c" (the reverse lookup finds no
  name) and agrees.

So the format that agrees with libketama/pylibmc depends on the addresses: servers by IP
literal on ports other than 11211 agree under the builder's default; nothing spymemcached
offers agrees for every address (a node on 11211 given by a resolvable IP, e.g. 127.0.0.1,
gets its reverse-looked-up name under LIBMEMCACHED, and its ":11211" under SPYMEMCACHED).

One node configuration (epoll, one worker), as in test_ketama_agreement.py; placement is the
client's, not the server's. With CONFORMANCE_TARGET=memcached the nodes are memcached.
"""

import bisect
import hashlib
import os
import shutil
import subprocess

import pytest

from test_ketama_agreement import (  # noqa: F401  (layout and nodes are fixtures)
    KEY_COUNT, address, bench_keys, bench_placement, disagreements, flush, layout, nodes,
    placement, pylibmc_placement)
from clients import client_dir

pytestmark = pytest.mark.memcache

SPY_DIR = client_dir("spymemcached")
JAR = os.path.join("target", "lib", "spymemcached-2.12.3.jar")
RUN_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def java():
    exe = shutil.which("java")
    if exe is None:
        pytest.fail("java is not installed; run scripts/install-test-deps")
    if not os.path.isfile(os.path.join(SPY_DIR, JAR)):
        pytest.fail(f"{JAR} is missing in {SPY_DIR}; run scripts/install-test-deps")
    return exe


def spymemcached_run(java, nodes):
    """Flush, store the keys through spymemcached's ketama (the builder's); returns where the
    nodes hold them, and per ring ("spymemcached", "libmemcached") its node names and where
    its locator puts each key."""
    flush(nodes)
    argv = [java, "-cp", JAR, "KetamaCheck.java", str(KEY_COUNT), *(address(n) for n in nodes)]
    done = subprocess.run(argv, cwd=SPY_DIR, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    out = done.stdout
    assert done.returncode == 0 and "2 passed, 0 failed" in out, out + done.stderr
    names = {"spymemcached": {}, "libmemcached": {}}
    claimed = {"spymemcached": {}, "libmemcached": {}}
    for line in out.splitlines():
        word, _, rest = line.partition(" ")
        if word == "name":
            ring, at, name = rest.split(" ", 2)
            names[ring][int(at)] = name
        elif word == "place":
            ring, key, at = rest.split()
            claimed[ring][key] = int(at)
    for ring in names:
        assert sorted(names[ring]) == list(range(len(nodes))), out
        assert len(claimed[ring]) == KEY_COUNT, out
        names[ring] = [names[ring][i] for i in range(len(nodes))]
    return placement(nodes, bench_keys()), names, claimed


def ketama_ring(names):
    """libketama's continuum: for each node name, MD5 of "NAME-I" for I in 0..39, each digest
    giving four little-endian 32-bit points. key -> index of the node of the first point at
    or after MD5(key)'s first four bytes, wrapping around."""
    points = []
    for index, name in enumerate(names):
        for i in range(40):
            digest = hashlib.md5(f"{name}-{i}".encode()).digest()
            for h in range(4):
                points.append((int.from_bytes(digest[4 * h:4 * h + 4], "little"), index))
    points.sort()
    hashes = [p for p, _ in points]

    def locate(key):
        h = int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "little")
        at = bisect.bisect_left(hashes, h)
        return points[at % len(points)][1]

    return {key: locate(key) for key in bench_keys()}


def libmemcached_name(node):
    return node.host if node.mc_port == 11211 else f"{node.host}:{node.mc_port}"


def test_spymemcached_ketama(java, nodes, layout):
    held, names, claimed = spymemcached_run(java, nodes)
    bench = bench_placement(nodes, "libmemcached")
    pylibmc = pylibmc_placement(nodes, {"ketama_weighted": True})
    assert not disagreements(bench, pylibmc)
    expected_names = [libmemcached_name(n) for n in nodes]

    # The builder's ring (Locator.CONSISTENT, KETAMA_HASH): the keys are where its locator
    # says, which is the ring of the names it reports: "host:port", 11211 included.
    assert held == claimed["spymemcached"]
    assert names["spymemcached"] == [f"{n.host}:{n.mc_port}" for n in nodes], names
    assert held == ketama_ring(names["spymemcached"])
    wrong = disagreements(bench, held)
    if layout == "free ports":
        assert not wrong, f"{len(wrong)} of {KEY_COUNT} keys elsewhere, e.g. " + ", ".join(
            f"{k}: bench {bench[k]}, spymemcached {held[k]}" for k in wrong[:5])
    else:
        # ":11211" stays in spymemcached's names and not in libmemcached's: another ring.
        assert len(wrong) > KEY_COUNT // 2, f"only {len(wrong)} keys elsewhere on port 11211"

    # Format.LIBMEMCACHED: its locator follows the ring of its names, which are host names
    # by reverse lookup, ":PORT" unless 11211.
    lib = claimed["libmemcached"]
    assert lib == ketama_ring(names["libmemcached"])
    if layout == "port 11211":
        # 127.a.b.c has no name: the address stays, the port 11211 goes, as libmemcached's.
        assert names["libmemcached"] == expected_names, names
    # On free ports 127.0.0.1 is named by its reverse lookup ("localhost" where /etc/hosts
    # says so), where libmemcached hashes the address as given: the rings agree exactly when
    # the names do.
    wrong = disagreements(bench, lib)
    if names["libmemcached"] == expected_names:
        assert not wrong, f"{len(wrong)} of {KEY_COUNT} keys elsewhere, e.g. " + ", ".join(
            f"{k}: bench {bench[k]}, LIBMEMCACHED format {lib[k]}" for k in wrong[:5])
    else:
        assert len(wrong) > KEY_COUNT // 2, f"only {len(wrong)} keys elsewhere ({names})"
