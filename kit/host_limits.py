"""The limits of the machine or container the kit runs in, as the kernel
states them: the CPUs a job may use (cgroup quota, CPU affinity), its
memory (cgroup limit), how often the kernel's OOM killer struck in it,
and the process limits a grader inherits (ulimit -u, -f).

  python3 -m kit.host_limits      prints them, and whether a grading job fits

The one place that reads cgroups: cgroup v2 (cpu.max, memory.max,
memory.events) and v1 (cpu.cfs_quota_us / cpu.cfs_period_us,
memory.limit_in_bytes, memory.oom_control). A container sees its own
cgroup at its mount of the hierarchy (v1: a bind mount whose root is the
container's cgroup; v2: a cgroup namespace), a host process at its path
in /proc/self/cgroup: each mount's root in /proc/self/mountinfo says
which. Every cgroup from the process's own up to the mount is read, and
the tightest limit wins (a parent's quota binds its children).

The grader reads them before it grades (`requirements`): a container
that can't hold a job is the platform's setting, named in a grader error,
never a handin's fault. The test binary gets the CPUs as `--cpus`, so its
watchdog counts a case's time at the pace the quota allows (tests/harness/watchdog.cpp).
"""
import functools
import os
import resource
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from kit import facts
from kit import limits

MOUNTINFO = "/proc/self/mountinfo"
CGROUPS = "/proc/self/cgroup"
UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a page-rounded 2^63


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


@functools.lru_cache(maxsize=None)
def _mounts() -> Tuple[Tuple[str, str, str, str], ...]:
    """(fstype, root, mount point, super options) of every cgroup mount."""
    found = []
    for line in (_read(MOUNTINFO) or "").splitlines():
        fields, _, rest = line.partition(" - ")
        parts, tail = fields.split(), rest.split()
        if len(parts) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((tail[0], parts[3], parts[4].replace("\\040", " "), tail[2]))
    return tuple(found)


@functools.lru_cache(maxsize=None)
def _memberships() -> Dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path."""
    out: Dict[str, str] = {}
    for line in (_read(CGROUPS) or "").splitlines():
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        for c in controllers.split(",") if controllers else [""]:
            out[c] = path
    return out


def cgroup_dirs(controller: str) -> List[str]:
    """The directories of this process's cgroup for `controller` ("cpu",
    "memory", "pids"), its own first, up to the hierarchy's mount."""
    dirs: List[str] = []
    for fstype, root, point, options in _mounts():
        if fstype == "cgroup" and controller not in options.split(","):
            continue
        path = _memberships().get("" if fstype == "cgroup2" else controller)
        if path is None:
            continue
        relative = os.path.relpath(path, root) if (path + "/").startswith(root.rstrip("/") + "/") else "."
        start = os.path.normpath(os.path.join(point, relative))
        # A path that is not below this mount (a v1 container's host path):
        # the mount is the container's own cgroup.
        at = start if os.path.isdir(start) else point
        while True:
            dirs.append(at)
            if at == point or len(at) <= len(point):
                break
            at = os.path.dirname(at)
    return list(dict.fromkeys(dirs))


def _numbers(text: Optional[str]) -> List[str]:
    return text.split() if text else []


def cpu_quota() -> Optional[float]:
    """CPUs' worth of time per period the cgroup allows, or None."""
    quotas = []
    for d in cgroup_dirs("cpu"):
        v2 = _numbers(_read(os.path.join(d, "cpu.max")))  # "max 100000" or "50000 100000"
        if len(v2) == 2 and v2[0] != "max":
            quotas.append(int(v2[0]) / int(v2[1]))
        quota = _numbers(_read(os.path.join(d, "cpu.cfs_quota_us")))
        period = _numbers(_read(os.path.join(d, "cpu.cfs_period_us")))
        if quota and period and int(quota[0]) > 0:
            quotas.append(int(quota[0]) / int(period[0]))
    return min(quotas) if quotas else None


def cpus() -> float:
    """The CPUs this process's jobs may use at once: its affinity (the
    cores, or a cpuset), capped by the cgroup's quota."""
    quota = cpu_quota()
    return min(float(cores()), quota) if quota else float(cores())


def cores() -> int:
    """The cores this process may run on (its affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def runnable_tasks() -> int:
    """Tasks the host could run now, less the one asking: the 4th field of
    /proc/loadavg ("runnable/total"); 0 where unknown."""
    text = _read("/proc/loadavg") or ""
    fields = text.split()
    try:
        return max(1, int(fields[3].split("/")[0]) - 1)
    except (IndexError, ValueError):
        return 0


def memory_limit() -> Optional[int]:
    """Bytes the cgroup may hold (page cache included), or None."""
    limits = []
    for d in cgroup_dirs("memory"):
        for name in ("memory.max", "memory.limit_in_bytes"):
            text = _numbers(_read(os.path.join(d, name)))
            if text and text[0] != "max" and int(text[0]) < UNLIMITED:
                limits.append(int(text[0]))
    return min(limits) if limits else None


def oom_kills() -> int:
    """How many processes the OOM killer has ended in this cgroup (and its
    parents): a count that rises during a job means the job ran out of
    memory, which no handin can cause within its budget."""
    total = 0
    for d in cgroup_dirs("memory"):
        for name in ("memory.events", "memory.oom_control"):
            for line in (_read(os.path.join(d, name)) or "").splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip().isdigit():
                    total += int(value)
    return total


def pids_limit() -> Optional[int]:
    limits = [int(t[0]) for d in cgroup_dirs("pids") for t in [_numbers(_read(os.path.join(d, "pids.max")))]
              if t and t[0] != "max"]
    return min(limits) if limits else None


class ResourceFailure(Exception):
    """The compiler, the linker or the MPI launcher was killed (out of
    memory, a file or CPU limit, or from outside): the grading host's
    fault, never the code's. Its text names what ran out and the setting."""


# The settings that give a grading job more of each resource, by platform.
RAISE = {
    "memory": ("raise the memory (Gradescope: the autograder's memory setting; PrairieLearn: the grader host's "
               "graderDockerMemory; Autolab: the image's docker -m; docker/podman: --memory)"),
    "time": ("raise the grading time (the course's time budget, course.toml [time_budget], then make autograder; "
             "Autolab: also the assessment's autograding timeout; Gradescope: the autograder timeout; "
             "grader/grade --time-budget)"),
    "CPU": "raise the CPU quota (docker/podman: --cpus; PrairieLearn: graderDockerCpuQuota)",
    "processes": "raise it (Autolab: Tango's VM_ULIMIT_USER_PROC; docker/podman: --pids-limit or --ulimit nproc)",
    "file size": "raise it (Autolab: Tango's VM_ULIMIT_FILE_SIZE; ulimit -f)",
}


def killed_by_oom(before: int) -> Optional[str]:
    """The words for a process killed since the OOM killer's count was
    `before`, or None if it struck no process."""
    if oom_kills() <= before:
        return None
    limit = memory_limit()
    held = f" at this container's limit of {limit >> 20} MiB" if limit else ""
    return f"memory: the kernel's OOM killer ended it{held}; {RAISE['memory']}"


def _rlimit(which: int) -> Optional[int]:
    soft, _ = resource.getrlimit(which)
    return None if soft == resource.RLIM_INFINITY else soft


# What one grading job of 8 ranks needs of the container: each rank at its
# data and stack limits, and the kit's own share (kit/limits.py,
# JOB_MEMORY_MIB); and its processes and threads. Measured in `make check-platforms`.
JOB_RANKS = limits.JOB_RANKS
JOB_TASKS = 90
MIN_CPUS = 0.25     # below this the watchdog's stretch of a time limit (8x at most) no longer covers a correct case
BINARY_MIB = facts.FILE_LIMIT_BYTES >> 20  # the largest file a grading writes (the test binary, an object)


def compile_workers() -> int:
    """Compilers to run at once: no more than the CPUs (a quota of 0.5 runs
    one), nor than the memory holds beside the grader."""
    by_cpu = max(1, int(cpus() + 0.5))
    limit = memory_limit()
    by_memory = max(1, (limit - (limits.KIT_SHARE_MIB << 20)) // (limits.COMPILE_DATA_MIB << 20)) if limit else by_cpu
    return int(min(by_cpu, by_memory))


def memory_needed() -> int:
    """Bytes a grading job may hold at most: 8 ranks and their MPI sides at their limits, and the kit's share."""
    return limits.JOB_MEMORY_MIB << 20


@dataclass
class Shortfall:
    what: str      # "memory", "CPU", ...
    message: str   # what the container gives, what a job needs, and the setting to raise


def requirements(root: bool) -> List[Shortfall]:
    """Where this container can't hold a grading job, each named with the
    platform setting to raise. `root`: the grader runs jobs as a sandbox
    user, whose process limit the grader sets itself."""
    found: List[Shortfall] = []
    mib = lambda n: f"{n / (1 << 20):.0f} MiB"  # noqa: E731
    limit = memory_limit()
    if limit is not None and limit < memory_needed():
        found.append(Shortfall("memory", (
            f"this container may hold {mib(limit)} of memory, and a grading job needs up to {mib(memory_needed())} "
            f"({JOB_RANKS} ranks of {limits.RANK_DATA_LIMIT_MIB} MiB of private memory and a {limits.RANK_STACK_LIMIT_MIB} "
            f"MiB stack each, {limits.SIDE_DATA_LIMIT_MIB} MiB for each rank's MPI side, and {limits.KIT_SHARE_MIB} MiB "
            f"for the kit's processes): {RAISE['memory']}")))
    have = cpus()
    if have < MIN_CPUS:
        found.append(Shortfall("CPU", (
            f"this container may use {have:.2f} CPUs, and the kit's time limits hold from {MIN_CPUS} CPUs up: "
            f"{RAISE['CPU']}")))
    tasks = [(n, what) for n, what in ((pids_limit(), "the container's process limit (pids.max)"),
                                       (None if root else _rlimit(resource.RLIMIT_NPROC),
                                        "the user's process limit (ulimit -u)"))
             if n is not None and n < JOB_TASKS]
    for n, what in tasks:
        found.append(Shortfall("processes", (
            f"{what} is {n}, and a grading job runs up to {JOB_TASKS} processes and threads: {RAISE['processes']}")))
    fsize = _rlimit(resource.RLIMIT_FSIZE)
    if fsize is not None and fsize < BINARY_MIB << 20:
        found.append(Shortfall("file size", (
            f"the file size limit (ulimit -f) is {mib(fsize)}, and grading writes files of up to {BINARY_MIB} MiB: "
            f"{RAISE['file size']}")))
    return found


def describe() -> Dict:
    """The limits, for the report's record."""
    return {"cpus": round(cpus(), 2), "cpu_quota": cpu_quota(), "memory_limit": memory_limit(),
            "pids_limit": pids_limit(), "nproc": _rlimit(resource.RLIMIT_NPROC),
            "fsize": _rlimit(resource.RLIMIT_FSIZE)}


def main() -> int:
    for key, value in describe().items():
        print(f"{key:<13} {'none' if value is None else value}")
    print(f"{'job needs':<13} {memory_needed() >> 20} MiB of memory, {JOB_TASKS} tasks, {MIN_CPUS} CPUs")
    short = requirements(os.geteuid() == 0)
    for s in short:
        print(f"short of {s.what}: {s.message}")
    if not short:
        print("a grading job fits here")
    return 1 if short else 0


if __name__ == "__main__":
    raise SystemExit(main())
