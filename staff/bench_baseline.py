"""`make bench BASELINE=REV` (staff/bench.py): an earlier revision of the
kit, built beside this one, whose trainers run in the same bench, turn
about with this copy's, so that "as fast as before" is read from one run
on one host, whatever the host:

  make bench BASELINE=fce0282     # the kit before each rank's MPI side

The revision is checked out as a git worktree under
BUILD/bench-baseline/REV and built there with its own `make build` (a few
minutes the first time, with the compiler cache; kept for the next run).
"""
import os
import subprocess
from dataclasses import dataclass

from kit.paths import KIT_DIR as KIT
from staff.bench_table import BenchError


@dataclass(frozen=True)
class Baseline:
    rev: str      # as given
    tree: str     # its worktree
    build: str    # its build directory
    kitrun: str   # its launcher

    def program(self, name: str) -> str:
        return os.path.join(self.build, "reference", name)


def _git(*args: str) -> str:
    proc = subprocess.run(["git", "-C", KIT, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise BenchError(f"git {' '.join(args)}: {proc.stdout.strip()}")
    return proc.stdout.strip()


def prepare(rev: str, build: str) -> Baseline:
    """The revision's worktree, built (its trainers at least)."""
    full = _git("rev-parse", "--verify", rev + "^{commit}")
    tree = os.path.join(os.path.abspath(build), "bench-baseline", full[:12])
    if not os.path.isfile(os.path.join(tree, "Makefile")):
        _git("worktree", "add", "--force", "--detach", tree, full)
    base = Baseline(rev, tree, os.path.join(tree, "build"), os.path.join(tree, "tools", "kitrun"))
    if not all(os.access(base.program(p), os.X_OK) for p in ("unified_train", "zero_dp_train")):
        print(f"  bench: building {rev} in {tree} (its `make build`)", flush=True)
        proc = subprocess.run(["make", "--no-print-directory", "-C", tree, "build"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=3600)
        if proc.returncode != 0:
            raise BenchError(f"{rev}'s `make build` failed:\n" + "\n".join(proc.stdout.splitlines()[-15:]))
    return base
