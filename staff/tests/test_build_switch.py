"""Switching an extension part's grading on or off rebuilds nothing: the
build compiles every part the copy holds, graded or not, so a course that
changes `extensions` (or KIT_EXTENSIONS) gets the same commands for every
step of the build (Ninja runs a step again when its command changes) and
the same generated headers, their time stamps kept: `make build` runs no
step but CMake's configure.

  /usr/bin/python3 -m pytest staff/tests/test_build_switch.py -p no:cacheprovider -q   (it configures the kit twice)
"""
import os
import shutil
import subprocess

import pytest

from kit.paths import KIT_DIR


def configure(build, graded):
    env = dict(os.environ, KIT_EXTENSIONS=graded)
    subprocess.run(["cmake", "-S", KIT_DIR, "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    commands = subprocess.run(["ninja", "-C", str(build), "-t", "commands"], check=True,
                              stdout=subprocess.PIPE, universal_newlines=True).stdout
    generated = build / "generated"
    stamps = {p.name: p.stat().st_mtime_ns for p in generated.iterdir() if p.suffix == ".h"}
    return commands, stamps


@pytest.mark.skipif(not shutil.which("ninja"), reason="the kit's builds use Ninja where setup.sh installed it")
def test_switching_a_part_changes_no_build_step(tmp_path):
    build = tmp_path / "build"
    off, off_stamps = configure(build, "0")
    assert "ddp_buckets.cpp" in off  # held, so built, though not graded
    on, on_stamps = configure(build, "part13_ddp")
    assert on == off, "grading Part 13 changes the build's steps"
    assert on_stamps == off_stamps, "grading Part 13 rewrites a generated header"
