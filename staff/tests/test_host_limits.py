"""kit/host_limits.py on cgroup trees made for the test: a v1 container (its
cgroup bind-mounted at the mount, its host path in /proc/self/cgroup), a v2
host path with a tighter parent, none at all; and what the grader says
where a container can't hold a job.

  python3 -m pytest staff/tests/test_host_limits.py -q
"""
import os

import pytest

from kit import host_limits
from kit import limits


def fake_system(tmp_path, monkeypatch, mounts, memberships, files):
    """mounts: (fstype, root, point, options); files: path -> text, under tmp_path."""
    lines = [f"{30 + i} 22 0:{40 + i} {root} {tmp_path}{point} rw - {fstype} {fstype} rw,{options}"
             for i, (fstype, root, point, options) in enumerate(mounts)]
    (tmp_path / "mountinfo").write_text("\n".join(lines) + "\n")
    (tmp_path / "cgroup").write_text("\n".join(memberships) + "\n")
    for path, text in files.items():
        full = tmp_path / path.lstrip("/")
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    monkeypatch.setattr(host_limits, "MOUNTINFO", str(tmp_path / "mountinfo"))
    monkeypatch.setattr(host_limits, "CGROUPS", str(tmp_path / "cgroup"))
    host_limits._mounts.cache_clear()
    host_limits._memberships.cache_clear()


@pytest.fixture(autouse=True)
def fresh_caches():
    yield
    host_limits._mounts.cache_clear()
    host_limits._memberships.cache_clear()


def test_a_v1_container_reads_its_own_cgroup_at_the_mount(tmp_path, monkeypatch):
    # Podman's and Docker's v1 layout: /proc/self/cgroup names the host's path,
    # which the container's mount (rooted at that path) does not hold below it.
    path = "/libpod_parent/libpod-1234"
    fake_system(tmp_path, monkeypatch,
                [("cgroup", path, "/sys/fs/cgroup/cpu", "cpu"), ("cgroup", path, "/sys/fs/cgroup/memory", "memory"),
                 ("cgroup", path, "/sys/fs/cgroup/pids", "pids")],
                [f"4:memory:{path}", f"1:cpu:{path}", f"8:pids:{path}", f"0::{path}"],
                {"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "50000\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
                 "sys/fs/cgroup/memory/memory.limit_in_bytes": str(768 << 20) + "\n",
                 "sys/fs/cgroup/memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
                 "sys/fs/cgroup/pids/pids.max": "max\n"})
    assert host_limits.cpu_quota() == 0.5
    assert host_limits.cpus() == 0.5
    assert host_limits.memory_limit() == 768 << 20
    assert host_limits.oom_kills() == 3
    assert host_limits.pids_limit() is None


def test_v2_takes_the_tightest_limit_along_the_path(tmp_path, monkeypatch):
    fake_system(tmp_path, monkeypatch, [("cgroup2", "/", "/sys/fs/cgroup", "")], ["0::/jobs/grader"],
                {"sys/fs/cgroup/jobs/grader/cpu.max": "max 100000\n",
                 "sys/fs/cgroup/jobs/cpu.max": "90000 100000\n",
                 "sys/fs/cgroup/jobs/grader/memory.max": str(2 << 30) + "\n",
                 "sys/fs/cgroup/jobs/memory.max": "max\n",
                 "sys/fs/cgroup/jobs/grader/memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n",
                 "sys/fs/cgroup/jobs/grader/pids.max": "1024\n"})
    assert host_limits.cpu_quota() == 0.9
    assert host_limits.memory_limit() == 2 << 30
    assert host_limits.oom_kills() == 1
    assert host_limits.pids_limit() == 1024


def test_no_cgroup_limits_mean_the_cores(tmp_path, monkeypatch):
    fake_system(tmp_path, monkeypatch, [("cgroup2", "/", "/sys/fs/cgroup", "")], ["0::/"],
                {"sys/fs/cgroup/cgroup.procs": "1\n"})
    assert host_limits.cpu_quota() is None and host_limits.memory_limit() is None
    assert host_limits.cpus() == float(len(os.sched_getaffinity(0)))
    assert host_limits.oom_kills() == 0


def test_a_container_too_small_is_named_with_the_setting_to_raise(tmp_path, monkeypatch):
    fake_system(tmp_path, monkeypatch, [("cgroup2", "/", "/sys/fs/cgroup", "")], ["0::/job"],
                {"sys/fs/cgroup/job/memory.max": str(512 << 20) + "\n", "sys/fs/cgroup/job/cpu.max": "10000 100000\n",
                 "sys/fs/cgroup/job/pids.max": "64\n"})
    short = {s.what: s.message for s in host_limits.requirements(root=True)}
    assert set(short) == {"memory", "CPU", "processes"}
    assert "may hold 512 MiB" in short["memory"] and f"{limits.RANK_DATA_LIMIT_MIB} MiB of private memory" in short["memory"]
    assert "Gradescope" in short["memory"] and "graderDockerMemory" in short["memory"]
    assert "0.10 CPUs" in short["CPU"] and "--cpus" in short["CPU"]
    assert "pids.max" in short["processes"] and "is 64" in short["processes"]


def test_eight_ranks_at_their_limits_fit_gradescopes_default_memory():
    # The job's total is the ranks' limits, their MPI sides', and the kit's share, and fits 768 MiB.
    rank = limits.RANK_DATA_LIMIT_MIB + limits.RANK_STACK_LIMIT_MIB + limits.SIDE_DATA_LIMIT_MIB
    assert host_limits.memory_needed() == (limits.JOB_RANKS * rank + limits.KIT_SHARE_MIB) << 20
    assert host_limits.memory_needed() <= 768 << 20 and limits.SMALLEST_PLATFORM_MIB == 768


@pytest.mark.parametrize("short_by", [0, 1])
def test_a_container_a_mib_under_the_job_total_is_refused(tmp_path, monkeypatch, short_by):
    fake_system(tmp_path, monkeypatch, [("cgroup2", "/", "/sys/fs/cgroup", "")], ["0::/job"],
                {"sys/fs/cgroup/job/memory.max": str((limits.JOB_MEMORY_MIB - short_by) << 20) + "\n"})
    short = {s.what: s.message for s in host_limits.requirements(root=True)}
    if not short_by:
        assert "memory" not in short, short
        return
    assert f"needs up to {limits.JOB_MEMORY_MIB} MiB" in short["memory"]
    assert "the autograder's memory setting" in short["memory"] and "--memory" in short["memory"]


def test_compilers_at_once_follow_the_cpus_and_the_memory(monkeypatch):
    monkeypatch.setattr(host_limits, "cpus", lambda: 0.5)
    monkeypatch.setattr(host_limits, "memory_limit", lambda: None)
    assert host_limits.compile_workers() == 1
    monkeypatch.setattr(host_limits, "cpus", lambda: 4.0)
    assert host_limits.compile_workers() == 4
    monkeypatch.setattr(host_limits, "memory_limit", lambda: 768 << 20)
    assert host_limits.compile_workers() == 1
