"""What scripts/redis_suite.py and scripts/memcached_suite.py share: fetching a Debian
bookworm source package (the real servers' own test suites come from it) with a bounded time
for every apt step, adding deb-src lines when apt has none."""

import os
import subprocess
import sys

APT_TIMEOUT_SECS = 600


def run_checked(cmd, timeout_secs=APT_TIMEOUT_SECS, **kw):
    print("+ " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, timeout=timeout_secs, **kw)


def has_source(package, marker):
    """Whether apt knows `package`'s source at a version whose text contains `marker`."""
    out = subprocess.run(["apt-cache", "showsrc", package], capture_output=True, text=True,
                         timeout=60).stdout
    return marker in out


def enable_deb_src(sources_file):
    """deb-src for bookworm, its updates and its security suite, once."""
    keyring = "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    with open(sources_file, "w") as f:
        f.write("Types: deb-src\nURIs: http://deb.debian.org/debian\n"
                "Suites: bookworm bookworm-updates\nComponents: main\n" + keyring + "\n"
                "Types: deb-src\nURIs: http://deb.debian.org/debian-security\n"
                "Suites: bookworm-security\nComponents: main\n" + keyring)
    run_checked(["apt-get", "update"])


def apt_install(packages):
    if packages:
        run_checked(["apt-get", "install", "-y", "--no-install-recommends", *packages],
                    env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
