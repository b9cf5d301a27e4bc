"""The handout's cut (staff/dist.py): the text for the extension parts the
course grades, and the configuration in the copy's kit/parts.py.

  python3 -m pytest staff/tests/test_handout_cut.py -q
"""
import re

import pytest

from staff import dist

TEXT = """intro
<!-- extension parts -->
some extension parts
<!-- end of extension parts -->
<!-- extension part: part11_ring -->
about part 11
<!-- end of extension part -->
<!-- extension part: part13_ddp -->
about part 13
<!-- end of extension part -->
<!-- without the extension parts -->
none of them
<!-- end of without the extension parts -->
end
"""


def test_the_cut_keeps_the_text_of_its_course_and_drops_every_marker():
    assert dist.for_the_course(TEXT, ()) == "intro\nnone of them\nend\n"
    assert dist.for_the_course(TEXT, ("part13_ddp",)) == "intro\nsome extension parts\nabout part 13\nend\n"
    assert dist.for_the_course(TEXT, ("part11_ring", "part13_ddp")) == \
        "intro\nsome extension parts\nabout part 11\nabout part 13\nend\n"


@pytest.mark.parametrize("broken, says", [
    ("<!-- extension part: part11_ring -->\nx\n", "never ends"),
    ("x\n<!-- end of extension part -->\n", "never opened"),
    ("<!-- extension part: part11_ring -->\n<!-- without the extension parts -->\n", "opens inside"),
    ("<!-- extension parts -->\n<!-- end of extension part -->\n", "never opened"),
])
def test_a_marker_out_of_place_stops_the_cut(broken, says):
    with pytest.raises(SystemExit, match=says):
        dist.for_the_course(broken, ("part11_ring",))


def test_the_copy_s_configuration_is_the_cut_s(monkeypatch):
    with open(f"{dist.KIT}/kit/parts.py") as f:
        original = f.read()
    for graded, cut, mpi, lines in (
            ("", "handout", None, ['EXTENSIONS = {}', 'MPI = "openmpi"', 'HOLDS = ()']),
            ("part12", "handout", None, ['EXTENSIONS = {"part12_pipeline": True}', 'MPI = "openmpi"', 'HOLDS = ()']),
            ("1", "autograder", "mpich", ['EXTENSIONS = {"part11_ring": True, "part12_pipeline": True, '
                                          '"part13_ddp": True}', 'MPI = "mpich"', 'HOLDS = ("grader",)'])):
        monkeypatch.setenv("KIT_EXTENSIONS", graded)
        shipped = dist.shipped_configuration(cut, mpi)
        changed = [b for a, b in zip(original.splitlines(), shipped.splitlines()) if a != b]
        assert changed == [line for line in lines if line not in original.splitlines()], graded
        assert [line for line in shipped.splitlines() if re.match(r"^(EXTENSIONS|MPI|HOLDS) = ", line)] == lines
