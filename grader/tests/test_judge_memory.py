"""No process that runs student code holds a hidden case's expected value:
while the grader runs a handin's cases, hidden Part 9 cases among them, this
test reads the memory of every rank process as root (/proc/PID/mem) and
looks for the doubles the judge expects there (grader/hidden/KEY/expected.txt).
A sentinel the handin itself keeps in memory must be found, so a scan that
reads nothing cannot pass.

  python3 -m pytest grader/tests/test_judge_memory.py     (as root, after `make build`)
"""
import os
import re
import struct
from array import array
import subprocess
import sys
import threading
import time

import pytest

from conftest import BUILD, GRADE, KIT, make_tar, marked, source
from kit import judge

# The stubs, with Adam's step keeping a sentinel and sleeping, so the scan
# finds every rank inside a Part 9 case, the hidden ones included.
SENTINEL = 0.1234567890123456
STEP = ('static std::vector<double> keep(64, %r); keep[0] = keep[1]; '
        'std::this_thread::sleep_for(std::chrono::milliseconds(400));' % SENTINEL)


def hidden_values() -> dict:
    """The 8-byte patterns of the judge's values for the hidden Part 9 cases
    that no input or stub could hold by chance, with where each is expected:
    not round numbers, and only what a step or a layer computes (Adam's
    moments, forward's and backward's results); a weight after a step may
    equal its input, where its gradient was 0."""
    expected = judge.load_all(judge.files(KIT)[1])
    found = {}
    for case, values in expected.values.items():
        if not case.startswith("HiddenPart9"):
            continue
        for (label, rank), observed in values.items():
            if not (".m#" in label or ".v#" in label or label.startswith(("forward#", "backward.grad_x#"))):
                continue
            for v in observed.values:
                if v is not None and abs(v - round(v, 3)) > 1e-9:
                    found[struct.unpack("<Q", struct.pack("<d", v))[0]] = f"{case} {label} rank {rank}: {v!r}"
    return found


def rank_pids(uid: int):
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                status = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        real_uid = re.search(r"^Uid:\s+(\d+)", status, re.M)
        if real_uid and uid <= int(real_uid.group(1)) < uid + 16 and b"kit_tests" in cmd.split(b"\0")[0]:
            yield int(name)


def words_of(pid: int) -> set:
    """The 8-byte words at 8-byte boundaries of the process's data: where a
    double of an array lives."""
    data = memory_of(pid)
    return set(array("Q", data[:len(data) // 8 * 8]))


def memory_of(pid: int) -> bytes:
    chunks = []
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            for line in maps:
                fields = line.split()
                start, end = (int(x, 16) for x in fields[0].split("-"))
                path = fields[5] if len(fields) > 5 else ""
                # Libraries hold no case data; the binary, the heap, the stacks,
                # anonymous maps and MPI's shared memory may.
                ours = not path or path in ("[heap]", "[stack]") or "kit_tests" in path or path.startswith("/dev/shm")
                if not fields[1].startswith("r") or end - start > 64 << 20 or not ours:
                    continue
                try:
                    mem.seek(start)
                    chunks.append(mem.read(end - start))
                except OSError:
                    continue
    except OSError:
        pass
    return b"".join(chunks)


@pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("KIT_REQUIRE_SANDBOX"), reason="needs root")
def test_no_rank_holds_a_hidden_expected_value(tmp_path):
    assert os.geteuid() == 0, "the memory test needs root (the grader's sandbox and /proc/PID/mem)"
    secrets = hidden_values()
    assert len(secrets) > 20, "expected.txt has no hidden Part 9 values to look for"
    stub = source("student", "zero_dp_stage3.cpp").decode()
    marker = 'throw NotImplemented("ZeroDPAdam::step"'
    assert marker in stub
    stub = "#include <chrono>\n#include <thread>\n#include <vector>\n" + stub.replace(marker, STEP + "\n  " + marker)
    tar = make_tar(str(tmp_path / "sleepy.tar"), [("student/zero_dp_stage3.cpp", stub.encode())])
    uid = 62900
    env = dict(marked(tmp_path), KIT_SANDBOX_UID=str(uid), KIT_STATIC_CHECKS="warn")
    grader = subprocess.Popen([sys.executable, GRADE, "--build", BUILD, tar], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env=env)
    scans, sentinel_seen, leaks = 0, 0, []
    pattern = struct.unpack("<Q", struct.pack("<d", SENTINEL))[0]
    deadline = time.monotonic() + 240
    while grader.poll() is None and time.monotonic() < deadline:
        for pid in list(rank_pids(uid)):
            words = words_of(pid)
            if not words:
                continue
            scans += 1
            sentinel_seen += pattern in words
            leaks += [secrets[w] for w in words & secrets.keys()][:3]
        time.sleep(0.05)
    out = grader.communicate(timeout=60)[0].decode(errors="replace")
    assert grader.returncode == 0, out
    assert sentinel_seen >= 2, f"the scan never found the handin's own sentinel ({scans} scans): it reads nothing"
    assert not leaks, f"hidden expected values found in the memory of rank processes: {leaks[:10]}"
