"""Where the kit is and which build it uses, computed once for every module.

The build directory is, in this order: the one a command is given
(--build), $KIT_BUILD, or build/ in the kit. It is always made absolute,
because the grader runs jobs in a scratch directory of their own.
"""
import os
from typing import Optional

KIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KITRUN = os.path.join(KIT_DIR, "tools", "kitrun")
STUBS_DIR = os.path.join(KIT_DIR, "student")        # what a missing or refused file is graded as
REFERENCE_DIR = os.path.join(KIT_DIR, "reference")  # staff copies only
FRAMEWORK_DIR = os.path.join(KIT_DIR, "framework")


def build_dir(given: Optional[str] = None) -> str:
    return os.path.abspath(given or os.environ.get("KIT_BUILD") or os.path.join(KIT_DIR, "build"))


def test_binary(build: str, impl: str) -> str:
    return os.path.join(build, impl, "kit_tests")


def impl_dir(impl: str) -> str:
    return os.path.join(KIT_DIR, impl)
