"""The binaries run on any host of their architecture: on x86-64,
instructions beyond SSE2 only in the dispatched GEMM kernels; on aarch64,
nothing beyond ARMv8.0-A (staff/portable.py); and the scan does see them.

  python3 -m pytest staff/tests/test_portable.py -q      (after `make build`)
"""
import os
import shutil
import subprocess

import pytest

from kit.paths import build_dir
from staff import portable

AVX_LOOP = "void scale(double* x, int n) { for (int i = 0; i < n; ++i) x[i] *= 3.0; }\n"


def test_the_kit_binaries_keep_avx_inside_the_dispatched_kernels():
    lines, ok = portable.check(build_dir())
    assert ok, "\n".join(lines)
    assert any(line.startswith("reference/unified_train (x86-64): ")
               and not line.startswith("reference/unified_train (x86-64): 0 ")
               for line in lines), "\n".join(lines)


def test_the_scan_flags_a_function_compiled_for_avx2(tmp_path):
    source = tmp_path / "scale.cpp"
    source.write_text(AVX_LOOP)
    for flags, expect_flagged in ((["-mavx2"], True), ([], False)):
        obj = tmp_path / "scale.o"
        subprocess.run(["g++", "-O3", "-c", *flags, str(source), "-o", str(obj)], check=True)
        found, _ = portable.scan(str(obj))
        assert ("scale(double*, int)" in found) == expect_flagged, (flags, found)


def test_the_scan_flags_an_aarch64_function_compiled_for_sve(tmp_path):
    compiler = shutil.which("aarch64-linux-gnu-g++")
    if compiler is None:
        assert not os.environ.get("CI"), "CI installs g++-aarch64-linux-gnu (make check-arm64 needs it)"
        pytest.skip("no aarch64-linux-gnu-g++ (apt-get install g++-aarch64-linux-gnu)")
    source = tmp_path / "scale.cpp"
    source.write_text(AVX_LOOP)
    for flags, expect_flagged in ((["-march=armv8.2-a+sve"], True), ([], False)):
        obj = tmp_path / "scale.o"
        subprocess.run([compiler, "-O3", "-c", *flags, str(source), "-o", str(obj)], check=True)
        assert portable.machine(str(obj)) == portable.EM_AARCH64
        found, _ = portable.scan(str(obj))
        assert ("scale(double*, int)" in found) == expect_flagged, (flags, found)
