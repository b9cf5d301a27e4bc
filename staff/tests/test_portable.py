"""The binaries run on any x86-64 host: instructions beyond SSE2 only in the
dispatched GEMM kernels (staff/portable.py), and the scan does see them.

  python3 -m pytest staff/tests/test_portable.py -q      (after `make build`)
"""
import subprocess

from kit.paths import build_dir
from staff import portable

AVX_LOOP = "void scale(double* x, int n) { for (int i = 0; i < n; ++i) x[i] *= 3.0; }\n"


def test_the_kit_binaries_keep_avx_inside_the_dispatched_kernels():
    lines, ok = portable.check(build_dir())
    assert ok, "\n".join(lines)
    assert any(line.startswith("reference/unified_train: ") and not line.startswith("reference/unified_train: 0 ")
               for line in lines), "\n".join(lines)


def test_the_scan_flags_a_function_compiled_for_avx2(tmp_path):
    source = tmp_path / "scale.cpp"
    source.write_text(AVX_LOOP)
    for flags, expect_flagged in ((["-mavx2"], True), ([], False)):
        obj = tmp_path / "scale.o"
        subprocess.run(["g++", "-O3", "-c", *flags, str(source), "-o", str(obj)], check=True)
        found, _ = portable.scan(str(obj))
        assert ("scale(double*, int)" in found) == expect_flagged, (flags, found)
