"""The handout's cut (staff/dist.py): the text for the course's switch, and
the switch itself in the copy's kit/parts.py.

  python3 -m pytest staff/tests/test_handout_cut.py -q
"""
import pytest

from staff import dist

TEXT = """intro
<!-- extension part -->
about part 11
<!-- end of extension part -->
<!-- without the extension parts -->
three files
<!-- end of without the extension parts -->
<!-- extension part -->
five files
<!-- end of extension part -->
end
"""


def test_the_cut_keeps_the_text_of_its_course_and_drops_every_marker():
    assert dist.for_the_course(TEXT, with_extensions=False) == "intro\nthree files\nend\n"
    assert dist.for_the_course(TEXT, with_extensions=True) == "intro\nabout part 11\nfive files\nend\n"


@pytest.mark.parametrize("broken, says", [
    ("<!-- extension part -->\nx\n", "never ends"),
    ("x\n<!-- end of extension part -->\n", "never opened"),
    ("<!-- extension part -->\n<!-- without the extension parts -->\n", "opens inside"),
    ("<!-- extension part -->\n<!-- end of without the extension parts -->\n", "never opened"),
])
def test_a_marker_out_of_place_stops_the_cut(broken, says):
    with pytest.raises(SystemExit, match=says):
        dist.for_the_course(broken, with_extensions=True)


def test_the_copy_s_switch_is_the_cut_s():
    with open(f"{dist.KIT}/kit/parts.py") as f:
        original = f.read()
    for on in (True, False):
        shipped = dist.shipped_parts(on)
        assert f"\nEXTENSIONS_ON = {on}\n" in shipped
        assert [a for a, b in zip(original.splitlines(), shipped.splitlines()) if a != b] in \
            ([], ["EXTENSIONS_ON = False"], ["EXTENSIONS_ON = True"])
