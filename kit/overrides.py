"""The environment's one-command overrides of the kit's Python, read once,
here, when the kit loads; every module takes them from this one. The
course's own overrides (KIT_COURSE, KIT_EXTENSIONS, KIT_MPI, KIT_TIME_BUDGET)
are read with the course file, by kit/course.py. docs/course-staff.md,
"Environment variables", lists every variable the kit reads, and what each
does (staff/tests/test_course.py checks both).

  python3 -c "from kit import overrides; print(vars(overrides))"
"""
import os
from typing import List, Optional


def _get(name: str) -> Optional[str]:
    value = os.environ.get(name)
    return value if value else None


BUILD: Optional[str] = _get("KIT_BUILD")                  # the build directory
MPI: Optional[str] = _get("KIT_MPI")                      # the MPI a command asks for (kit/paths.py checks the build's)
TIME_SCALE: Optional[str] = _get("KIT_TIME_SCALE")        # kit/limits.py checks it: a number in (0, 1]
STATIC_CHECKS_WARN: bool = _get("KIT_STATIC_CHECKS") == "warn"    # staff: refusals only warned about
SYSCALL_FILTER: Optional[str] = _get("KIT_SYSCALL_FILTER")        # "on" (the kit's checks) or "off" (staff)
SANDBOX_UID: Optional[str] = _get("KIT_SANDBOX_UID")      # the sandbox users' first uid
SANDBOX_NAMESPACES_OFF: bool = _get("KIT_SANDBOX_NAMESPACES") == "off"
SANDBOX_KEEP: List[str] = [p for p in (_get("KIT_SANDBOX_KEEP") or "").split(os.pathsep) if p]
CPU_SHARES_OFF: bool = _get("KIT_CPU_SHARES") == "off"    # staff: a batch without CPU shares
CALIBRATION_SCALE: Optional[str] = _get("KIT_CALIBRATION_SCALE")  # staff: grade as if this machine were F times slower
DATA_DIR: Optional[str] = _get("DTRAIN_DATA")             # where the Fashion-MNIST files are
