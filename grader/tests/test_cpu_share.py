"""CPU fairness in a batch: each sandbox slot's processes share a CPU cgroup
of their own (grader/cpu_share.py), so a handin that spins a few hundred
threads leaves the handin graded beside it its share of the CPUs.

  python3 -m pytest grader/tests/test_cpu_share.py -q      (as root, after `make build`)

The batch runs in a CPU cgroup the test makes, as a platform's container
would: the kernel's autogroup (one share per session), which evens the
load out on a host's root cgroup, does nothing there. With KIT_CPU_SHARES=off
(staff only) the spinning handin starves its neighbour in it and the second
test fails.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import BUILD, GRADE, KIT, handin, make_tar, marked, source
from grader import cpu_share
from grader.sandbox import Sandbox
from kit import parts as table
from kit.limits import STUDENT_PROCESS_DATA_MIB, THREAD_STACK_KIB

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("KIT_REQUIRE_SANDBOX"),
                               reason="the CPU groups are made by a root grader")

# Each rank's student process starts spinning threads until its process
# limit (256 for the sandbox user) or its data limit (a 1 MiB stack each)
# refuses one: some 40 a rank, and Part 1's cases run on one. They stop
# after a while (spin_seconds), so the batch ends.
SPINNERS = r"""
#include <chrono>
#include <thread>
namespace {
void spin_everywhere() {
  static bool started = false;
  if (started) return;
  started = true;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(SECONDS);
  for (int i = 0; i < 400; ++i) {
    try {
      std::thread([until] { while (std::chrono::steady_clock::now() < until) {} }).detach();
    } catch (const std::exception&) {
      break;
    }
  }
}
}  // namespace
"""


def normal_seconds(alone: float) -> float:
    """The longest the honest handin may take beside the spinner, from its
    time alone. The groups give it half the container's CPU, as a second
    honest handin beside it would take: twice its time alone on a quiet
    host. The container's own share of the host is not the test's: under
    make check-long the suites beside it (CTest's training runs and
    builds) take more of the host at one moment than at another, and CI
    once saw 4.1 s alone and 21.0 s beside. The bound leaves room for that
    (4 times, and 20 s) and still fails without the groups, which leave the
    honest handin next to nothing until the spinners stop (spin_seconds)."""
    return 4 * alone + 20


def spin_seconds(alone: float) -> int:
    """How long the spinners run. Without the groups the honest handin gets
    next to no CPU while they run, so it ends after them: spinning past
    normal_seconds is enough for the test to fail then (KIT_CPU_SHARES=off),
    and 10 s past it leaves a margin. A longer spin costs no time when the
    test passes: the batch is stopped once the honest handin is graded."""
    return int(normal_seconds(alone)) + 10


def spinning_handin(path: str, seconds: int) -> str:
    text = source("reference", "data_parallel_preprocess.cpp").decode()
    at = text.index("{", text.index("split_data(")) + 1
    spinners = SPINNERS.replace("SECONDS", str(seconds))
    spinner = "#include <stdexcept>\n" + spinners + text[:at] + "\n  spin_everywhere();" + text[at:]
    return make_tar(path, [("student/data_parallel_preprocess.cpp", spinner.encode())] +
                    [("student/" + f, source("reference", f)) for f in table.IMPL_FILES if f != "data_parallel_preprocess.cpp"])


@ROOT_ONLY
def test_each_slot_runs_in_a_group_of_its_own_removed_after(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    box = Sandbox(KIT, BUILD, str(scratch))
    if box.cpu is None:
        box.release()
        pytest.skip(f"no CPU cgroup here: {box.cpu_why}")
    try:
        assert box.cpu is not None, box.cpu_why
        weight = "cpu.shares" if box.cpu.version == 1 else "cpu.weight"
        with open(os.path.join(box.cpu.path, weight)) as f:
            assert int(f.read()) == (cpu_share.V1_SHARES if box.cpu.version == 1 else cpu_share.V2_WEIGHT)
        seen = box.run(["cat", "/proc/self/cgroup"], 30).stdout.decode()
        assert f"/{cpu_share.PREFIX}{box.uid}" in seen, seen
    finally:
        box.release()
    assert not os.path.exists(box.cpu.path), "the slot's CPU group outlived its grader"


@pytest.fixture
def container():
    """A CPU cgroup for the batch, as a container gives its grader."""
    group, why = cpu_share.make(f"kit-test-container-{os.getpid()}")
    if group is None:
        pytest.skip(f"no CPU cgroup here: {why}")
    yield group
    cpu_share.remove(group)


def batch(tmp_path, inbox, env, group, until=None):
    """Grades `inbox` as one batch of two jobs in `group`. With `until` (a
    handin's name), the batch is stopped by Ctrl-C once that handin's result
    is written: what the test looks at is then known, and the rest would
    only be waited for (the batch stops cleanly: test_batches.py)."""
    out = tmp_path / "out"
    started = time.monotonic()
    job = subprocess.Popen(cpu_share.join_prefix(group) + [sys.executable, GRADE, "--build", BUILD, "--batch", str(inbox),
                           "--jobs", "2", "--csv", str(out / "gradebook.csv")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=env)
    if until:
        wanted = out / "gradebook.results" / (os.path.splitext(until)[0] + ".json")
        while job.poll() is None and not wanted.exists() and time.monotonic() - started < 900:
            time.sleep(0.2)
        if job.poll() is None:
            job.send_signal(signal.SIGINT)
    said, _ = job.communicate(timeout=900)
    assert job.returncode == 0 or (until and job.returncode == 130), said
    results = {}
    for path in glob.glob(str(out / "gradebook.results" / "*.json")):
        with open(path) as f:
            r = json.load(f)
        results[r["handin"]] = r
    return results, time.monotonic() - started, said


@ROOT_ONLY
@pytest.mark.long
def test_a_handin_spinning_hundreds_of_threads_leaves_its_neighbour_full_marks_in_time(tmp_path, container):
    alone = tmp_path / "alone"
    alone.mkdir()
    handin(alone, name="honest.tar")
    env = dict(marked(tmp_path), KIT_STATIC_CHECKS="warn")  # std::thread passes the link check only as a warning
    solo, _, said = batch(tmp_path / "solo", alone, env, container)
    assert solo["honest.tar"]["total"] == table.TOTAL_POINTS, said
    both = tmp_path / "both"
    both.mkdir()
    handin(both, name="honest.tar")
    spinning_handin(str(both / "spinner.tar"), spin_seconds(solo["honest.tar"]["seconds"]))
    load = []
    stop = threading.Event()

    def watch():  # the host's runnable tasks, to show the spinners ran (an instant's count: sampled often)
        while not stop.wait(0.2):
            with open("/proc/loadavg") as f:
                load.append(int(f.read().split()[3].split("/")[0]))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        beside, _, said = batch(tmp_path / "beside", both, env, container, until="honest.tar")
    finally:
        stop.set()
        watcher.join()
    honest = beside["honest.tar"]
    # Part 1's cases run on one rank, whose student process holds as many
    # spinning threads as its data limit has room for stacks: some 40
    # (STUDENT_PROCESS_DATA_MIB of THREAD_STACK_KIB stacks), against a handful without them.
    spinners = STUDENT_PROCESS_DATA_MIB * 1024 // THREAD_STACK_KIB
    assert max(load) > spinners // 2, f"the spinners never ran (runnable tasks at most {max(load)})"
    assert honest["status"] == "graded" and honest["total"] == table.TOTAL_POINTS, (honest, said)
    normal = normal_seconds(solo["honest.tar"]["seconds"])
    assert honest["seconds"] <= normal, (f"graded in {honest['seconds']} s beside the spinner, "
                                         f"{solo['honest.tar']['seconds']} s alone")
