"""A CPU cgroup per sandbox slot, so that the gradings of a batch share the
CPUs equally however many threads each handin starts (grader/README.md,
"Timeouts and limits").

  python3 -m grader.cpu_share        as root: says where a slot's group would go, or why none can

Root only. Each slot (its sandbox user id) gets a group of its own below
the grader's own CPU cgroup, `kit-slot-<uid>`, with the weight of a job's
8 ranks (cgroup v1 cpu.shares 8 x 1024, v2 cpu.weight 8 x 100): a handin
that spins 200 threads gets the CPU its 8 ranks would get, and the slot
beside it as much, whatever the handins do. Every compile and test job of
the slot joins it before it drops to the sandbox user (`join_prefix`); the
grader removes the group when the slot is released, and the next grader of
that user reuses one a killed grader left.

Where no group can be made (no cpu controller, a read-only cgroup file
system in a container, cgroup v2 whose parent holds processes), `why_not`
says so, the report notes it, and what bounds a handin's CPU is its
sandbox user's process limit (256 processes and threads, sandbox.LIMITS).
"""
import os
from dataclasses import dataclass
from typing import Optional, Tuple

from kit import host_limits
from kit import limits
from kit import overrides

PREFIX = "kit-slot-"
V1_SHARES = 1024 * limits.JOB_RANKS   # cpu.shares of one task is 1024
V2_WEIGHT = 100 * limits.JOB_RANKS    # cpu.weight of one task is 100


@dataclass
class CpuGroup:
    path: str       # the group's directory
    version: int    # 1 or 2

    @property
    def procs(self) -> str:
        return os.path.join(self.path, "cgroup.procs")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _parent() -> Tuple[Optional[str], int, str]:
    """(directory to make slot groups in, cgroup version, why not): the
    grader's own CPU cgroup, where the cpu controller is found."""
    for d in host_limits.cgroup_dirs("cpu")[:1]:
        if os.path.isfile(os.path.join(d, "cpu.shares")):
            return d, 1, ""
    for d in host_limits.cgroup_dirs("")[:1]:
        controllers = (host_limits._read(os.path.join(d, "cgroup.controllers")) or "").split()
        if "cpu" in controllers:
            return d, 2, ""
        return None, 2, "cgroup v2 without the cpu controller here"
    return None, 0, "no cpu cgroup mounted"


def slot_group(uid: int) -> Tuple[Optional[CpuGroup], str]:
    """The slot's group, made (or reused) with its weight; or (None, why not)."""
    if os.geteuid() != 0:
        return None, "the grader is not root"
    if overrides.CPU_SHARES_OFF:  # staff: to see a batch without them
        return None, "KIT_CPU_SHARES=off"
    return make(f"{PREFIX}{uid}")


def make(name: str) -> Tuple[Optional[CpuGroup], str]:
    """A group `name` below this process's own CPU cgroup, with a job's weight."""
    parent, version, why = _parent()
    if parent is None:
        return None, why
    group = CpuGroup(os.path.join(parent, name), version)
    try:
        if version == 2:
            # A v2 group's children get the cpu controller only through the
            # parent's subtree_control, refused while the parent holds
            # processes other than at the root.
            control = os.path.join(parent, "cgroup.subtree_control")
            if "cpu" not in (host_limits._read(control) or "").split():
                _write(control, "+cpu")
        os.makedirs(group.path, exist_ok=True)
        if version == 1:
            _write(os.path.join(group.path, "cpu.shares"), str(V1_SHARES))
        else:
            _write(os.path.join(group.path, "cpu.weight"), str(V2_WEIGHT))
    except OSError as e:
        remove(group)
        return None, f"cannot make a CPU cgroup in {parent} ({e.strerror})"
    return group, ""


def join_prefix(group: Optional[CpuGroup]) -> list:
    """Put before a command (as root) to run it in `group`: the shell moves
    itself there, then execs the command, which keeps its pid. If the group
    has gone, the command runs anyway: fairness is lost, not the grade."""
    if group is None:
        return []
    return ["sh", "-c", 'echo $$ 2>/dev/null > "$0"; exec "$@"', group.procs]


def remove(group: Optional[CpuGroup]) -> None:
    """Removes the group once its processes are gone (the sandbox kills them
    first); a group that still holds one stays for the slot's next grader."""
    if group is None:
        return
    try:
        os.rmdir(group.path)
    except OSError:
        pass


def main() -> int:
    group, why = slot_group(0xFFFF)
    if group is None:
        print(f"no CPU cgroup per slot: {why}; a handin's CPU is bounded by its process limit alone")
        return 1
    print(f"cgroup v{group.version}: slot groups in {os.path.dirname(group.path)}, "
          f"weight {V1_SHARES if group.version == 1 else V2_WEIGHT} each")
    remove(group)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
