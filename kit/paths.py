"""Where the kit is and which build it uses, computed once for every module.

The build directory is, in this order: the one a command is given
(--build), $KIT_BUILD, or build/ in the kit. It is always made absolute,
because the grader runs jobs in a scratch directory of their own.

A build is made for one MPI (CMake records it in BUILD/kit_mpi.txt), and its
programs must start with that MPI's launcher: tools/kitrun finds the file
beside a program of the build, and the grader names it (KIT_MPI) to the
jobs of its sandbox, where the build tree can't be read. Importing this
module, or finding a build, changes no environment.
"""
import os
from typing import Optional

from kit import overrides

KIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KITRUN = os.path.join(KIT_DIR, "tools", "kitrun")
STUBS_DIR = os.path.join(KIT_DIR, "student")        # what a missing or refused file is graded as
REFERENCE_DIR = os.path.join(KIT_DIR, "reference")  # staff copies only
FRAMEWORK_DIR = os.path.join(KIT_DIR, "framework")
# The headers a student file sees: the only kit directory on its include path.
PUBLIC_HEADERS_DIR = os.path.join(FRAMEWORK_DIR, "include")


def build_path(given: Optional[str] = None) -> str:
    """The build directory's absolute path, and nothing else: build_dir()
    also checks its MPI against the one the command asks for."""
    return os.path.abspath(given or overrides.BUILD or os.path.join(KIT_DIR, "build"))


def build_dir(given: Optional[str] = None) -> str:
    build = build_path(given)
    recorded = build_mpi(build)
    if recorded:
        asked = overrides.MPI
        if asked and asked != recorded:
            # A configuration mistake, found before anything runs: stop with the fix.
            raise SystemExit(f"kit: {build} was built for {recorded}, not {asked} (KIT_MPI); use a build "
                             f"directory of its own: `make ... MPI={asked}` builds in build-{asked}")
    return build


def build_mpi(build: str) -> Optional[str]:
    """The MPI a build was configured for: openmpi, mpich, or None (not configured yet)."""
    try:
        with open(os.path.join(build, "kit_mpi.txt")) as f:
            return f.read().strip() or None
    except OSError:
        return None


def test_binary(build: str, impl: str) -> str:
    return os.path.join(build, impl, "kit_tests")


def driven_harness(build: str) -> str:
    """The driven harness (docs/driven-calls.md), built once per build: it
    holds no student code, and the hidden cases where the copy holds the grader."""
    return os.path.join(build, "kit_tests_driven")


def student_program(build: str, impl: str) -> str:
    """What carries out the driven harness's calls: an implementation's files and the server."""
    return os.path.join(build, impl, "student_server")


def impl_dir(impl: str) -> str:
    return os.path.join(KIT_DIR, impl)
