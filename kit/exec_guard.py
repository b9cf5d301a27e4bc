"""The grader's guard around MPI's launcher (tools/exec_guard.cpp): where
this machine allows it, a graded test job's launcher runs under it, so that
once the ranks have started nothing of the job can start a program
(MPI_Comm_spawn, called by address from a rank, asks the launcher, which the
ranks' system-call filter does not hold). tools/kitrun puts it before the
launcher when KIT_EXEC_GUARD names it.

  python3 -m kit.exec_guard [BUILD]      whether it works here, and if not why
"""
import os
import shutil
import subprocess
import sys
from typing import Callable, Dict, Optional, Tuple

NAME = "exec_guard"
# Whether the guard works, by what decides it (the kernel, namespaces or
# not): a batch asks once.
_PROBED: Dict[Tuple, Optional[str]] = {}


def install(build_dir: str, dest: str, run: Callable[[list], subprocess.CompletedProcess],
            context: Tuple = ()) -> Optional[str]:
    """Copies the build's guard to `dest` (root's, run by anyone: the sandbox
    hides the build) and asks it, through `run` (the sandbox's), whether it
    can guard a job here. None if it can, else why not."""
    built = os.path.join(build_dir, NAME)
    if not os.access(built, os.X_OK):
        return f"the build has no {NAME} (make build)"
    shutil.copyfile(built, dest)
    os.chmod(dest, 0o755)
    key = (os.uname().release,) + tuple(context)
    if key not in _PROBED:
        try:
            proc = run([dest, "--probe"])
            said = proc.stdout.decode("utf-8", errors="replace").strip().replace("exec_guard: ", "")
            _PROBED[key] = None if proc.returncode == 0 else (said or f"its probe failed with status {proc.returncode}")
        except subprocess.TimeoutExpired:
            _PROBED[key] = "its probe did not finish"
    return _PROBED[key]


def main(argv) -> int:
    build = argv[0] if argv else "build"
    built = os.path.join(build, NAME)
    if not os.access(built, os.X_OK):
        print(f"no {built}: make build")
        return 1
    proc = subprocess.run([built, "--probe"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    print("the exec guard works here" if proc.returncode == 0 else proc.stdout.decode(errors="replace").strip())
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
