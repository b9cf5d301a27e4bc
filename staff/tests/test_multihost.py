"""staff/multihost.py leaves nothing behind: no namespace, link, process or
file, when a step fails and when the run is killed.

  python3 -m pytest staff/tests/test_multihost.py -q      (as root, after `make build`)

The passing run itself is CTest's (ctest -L multihost). Without root these
tests skip, unless KIT_REQUIRE_MULTIHOST=1 (CI), where that is a failure.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

from kit.paths import KIT_DIR
from staff import multihost

pytestmark = pytest.mark.xdist_group("multihost")


@pytest.fixture(autouse=True)
def needs_root():
    if os.geteuid() != 0:
        if os.environ.get("KIT_REQUIRE_MULTIHOST") == "1":
            pytest.fail("KIT_REQUIRE_MULTIHOST=1 but not root: the multihost tests can't run")
        pytest.skip("needs root: network namespaces")


def start(tag: str, mode: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "staff.multihost", "--tag", tag, "--after-hosts", mode],
                            cwd=KIT_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def leftovers(tag: str):
    found = []
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [line.split()[0] for line in names.splitlines() if f"kit-mh-{tag}-" in line]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    found += [f"link kmh{tag}" for line in links.splitlines() if f"kmh{tag}" in line]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"KIT_MULTIHOST_TAG={tag}".encode() in f.read().split(b"\0"):
                    found.append(f"process {pid}")
        except OSError:
            pass
    return found


def test_a_failed_step_leaves_nothing_behind():
    tag = f"f{os.getpid()}"
    proc = start(tag, "fail")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1, out
    assert "FAILED: failing on purpose" in out, out
    assert leftovers(tag) == [], out


def test_a_killed_run_leaves_nothing_behind():
    tag = f"k{os.getpid()}"
    proc = start(tag, "hold")
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the namespaces and the process on host b exist once it says so
        line = proc.stdout.readline()
        lines.append(line)
        if line.startswith("holding") or not line:
            break
    assert lines[-1].startswith("holding"), "".join(lines)
    assert leftovers(tag), "the run made nothing to clean up"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1, "".join(lines) + out
    assert leftovers(tag) == [], "".join(lines) + out


def test_without_root_it_says_why_and_skips():
    assert multihost.SKIPPED == 77  # CTest's SKIP_RETURN_CODE (CMakeLists.txt)
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                           "staff.multihost"], cwd=KIT_DIR, capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != "KIT_REQUIRE_MULTIHOST"})
    assert proc.returncode == multihost.SKIPPED, proc.stdout + proc.stderr
    assert "SKIPPED: needs root" in proc.stdout
