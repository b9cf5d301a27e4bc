"""What the hostile gallery's look at the kit leaves out (conftest.py,
kit_snapshot): what CTest writes in the build beside it, never a grader
input, so that running the two side by side (make check) hides no change a
handin could make to what a grading reads.

  python3 -m pytest grader/tests/test_gallery_snapshot.py -q
"""
import os

import pytest

import conftest


def test_the_snapshot_leaves_out_ctests_writes_and_keeps_the_grader_inputs():
    build = os.path.relpath(conftest.BUILD, conftest.KIT)
    snap = conftest.kit_snapshot()
    left_out = [os.path.join(build, name) for name in conftest.CTEST_WRITES]
    assert not [p for p in snap if any(p == w or p.startswith(w + os.sep) for w in left_out)]
    kept = [os.path.relpath(p, conftest.KIT) for p in conftest.grader_inputs(conftest.BUILD)
            if os.path.isfile(p) and p.startswith(conftest.KIT + os.sep)]
    assert kept and not [p for p in kept if p not in snap]


def test_a_grader_input_among_ctests_writes_stops_the_gallery(monkeypatch):
    monkeypatch.setattr(conftest, "CTEST_WRITES", conftest.CTEST_WRITES + ("libdtrain_framework.a",))
    with pytest.raises(AssertionError, match="would not see these grader inputs change"):
        conftest.kit_snapshot()
