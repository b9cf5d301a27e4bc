"""The handout's cut (staff/dist.py): the text for the extension parts the
course grades, and the copy's own course file.

  python3 -m pytest staff/tests/test_handout_cut.py -q
"""
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


def test_the_copy_s_course_is_the_cut_s(monkeypatch):
    import importlib
    from kit import parts
    from kit.toml_subset import loads
    with open(f"{dist.KIT}/kit/parts.py") as f:
        parts_source = f.read()
    try:
        for graded, cut, mpi, want in (
                ("", "handout", None, ([], "openmpi", [], [])),
                ("part12", "handout", None, (["part12_pipeline"], "openmpi", [], ["part12_pipeline"])),
                ("1", "autograder", "mpich", (["part11_ring", "part12_pipeline", "part13_ddp"], "mpich", ["grader"],
                                              ["part11_ring", "part12_pipeline", "part13_ddp"]))):
            monkeypatch.setenv("KIT_EXTENSIONS", graded)  # read once, when the kit loads
            importlib.reload(parts)
            shipped = loads(importlib.reload(dist).shipped_course(cut, mpi))
            assert (shipped["extensions"], shipped["mpi"], shipped["copy"]["holds"],
                    shipped["copy"]["extension_parts"]) == want, graded
            assert shipped["time_budget"] == {"autolab": 55, "gradescope": 540, "prairielearn": 27}
    finally:
        monkeypatch.delenv("KIT_EXTENSIONS")
        importlib.reload(parts)
        importlib.reload(dist)
    # The table's source ships as it is: no cut rewrites Python.
    assert "parts.py" not in " ".join(dist.MADE) and open(f"{dist.KIT}/kit/parts.py").read() == parts_source
