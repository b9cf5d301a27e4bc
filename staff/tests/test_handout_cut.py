"""The handout's cut (staff/dist.py): the text for the parts the course
grades, each part's texts found by its key, no region marker anywhere, and
the copy's own course file.

  python3 -m pytest staff/tests/test_handout_cut.py -q
"""
import os

import pytest

from kit import handout_text
from kit import parts as table
from staff import dist

TEXT = """intro
<!-- filled by make handout: files (the extension parts' files) -->
middle
<!-- filled by make handout: sections (their sections) -->
<!-- filled by make handout: handin (their files) -->
end
"""


def graded(*keys):
    return [p for p in table.ALL_PARTS if not p.extension or p.key in keys]


def fill(text, *keys):
    return handout_text.for_the_course(text, graded(*keys), dist.KIT, table.CORE_FILES)


def test_the_cut_fills_each_slot_with_the_texts_of_the_graded_parts_found_by_key():
    assert fill(TEXT) == "intro\nmiddle\nend\n"
    section = open(os.path.join(dist.KIT, "handout", "parts", "part13_ddp.md")).read()
    assert fill(TEXT, "part13_ddp") == (
        "intro\n" + handout_text.FILES_LEAD +
        "- `student/ddp_buckets.cpp`: Part 13, gradient buckets and their overlap with backward\n"
        "middle\n" + section + "student/ddp_buckets.cpp\nend\n")
    both = fill(TEXT, "part11_ring", "part13_ddp")
    assert both.index("## Part 11") < both.index("## Part 13") and "Part 12" not in both
    assert "<!--" not in fill(TEXT, "part11_ring", "part12_pipeline", "part13_ddp")


def test_feedback_puts_each_part_s_questions_on_lines_of_their_own():
    with open(os.path.join(dist.KIT, "feedback.txt")) as f:
        made = fill(f.read(), "part11_ring", "part13_ddp")
    lines = made.splitlines()
    asked = [line.strip() for line in lines if "question" in line and line.strip().startswith("Part 1")]
    assert asked == [f"Part 11, question {n}:" for n in (1, 2, 3)] + [f"Part 13, question {n}:" for n in (1, 2, 3, 4)]
    last = lines.index("   Part 11, question 3:")
    assert lines[last + 1:last + 3] == ["", "   Part 13, question 1:"] and made.endswith("question 4:\n")


def test_a_cut_s_own_text_has_no_slot_and_needs_no_part_s_texts(tmp_path):
    """In a cut, the handout is made already; its copy holds no handout/parts/."""
    made = fill(TEXT, "part13_ddp")
    assert handout_text.for_the_course(made, graded("part13_ddp"), str(tmp_path)) == made


def test_an_unknown_slot_stops_the_cut():
    with pytest.raises(handout_text.HandoutError, match="the slot 'prose'"):
        fill("<!-- filled by make handout: prose (something) -->\n", "part11_ring")


def test_each_extension_part_s_files_are_found_by_its_key():
    """What only an extension part uses lies under its key, but its student
    file, its framework sources and headers and its kit commands."""
    for p in (p for p in table.ALL_PARTS if p.extension):
        for path in p.own_paths():
            assert os.path.isfile(os.path.join(dist.KIT, path)), path
            assert f"/{p.key}/" in path or f"/{p.key}." in path or path.startswith(("student/", "framework/", "kit/")), \
                (p.key, path)
        assert p.text("section") and p.adds.make == f"make/{p.key}.mk" and p.adds.allowlist == f"kit/allowlist/{p.key}.txt"


def kit_files():
    """The kit's own files: no build, no cut, no repository data."""
    for base, dirs, names in os.walk(dist.KIT):
        dirs[:] = [d for d in dirs if not d.startswith(("build", "dist", ".git", "__pycache__", "out"))]
        yield from (os.path.relpath(os.path.join(base, n), dist.KIT) for n in names)


def test_no_file_has_a_region_marker():
    """A course's copy is cut by key and by what it holds: no file marks
    regions of a part, nor the staff's (their targets are make/staff.mk)."""
    markers = ["# ---- extension " + "part", "<!-- extension " + "part", "<!-- without the extension " + "parts -->",
               "<!-- end of extension " + "part", "# ---- staff " + "only", "# ---- end of staff " + "only"]
    found = []
    for name in kit_files():
        try:
            with open(os.path.join(dist.KIT, name), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{name}: {m}" for m in markers if m in text]
    assert not found


def test_the_copy_s_course_is_the_cut_s(monkeypatch):
    import importlib
    from kit import parts
    EXTENSIONS = tuple(p.key for p in parts.ALL_PARTS if p.extension)  # every one this copy holds
    from kit.toml_subset import loads
    with open(f"{dist.KIT}/kit/part_table.py") as f:
        parts_source = f.read()
    try:
        for graded, cut, mpi, want in (
                ("", "handout", None, ([], "openmpi", [], [])),
                ("part12", "handout", None, (["part12_pipeline"], "openmpi", [], ["part12_pipeline"])),
                ("1", "autograder", "mpich", (list(EXTENSIONS), "mpich", ["grader"], list(EXTENSIONS)))):
            monkeypatch.setenv("KIT_EXTENSIONS", graded)  # read once, at the course's first use
            importlib.reload(parts)
            shipped = loads(importlib.reload(dist).shipped_course(cut, mpi))
            assert (shipped["extensions"], shipped["mpi"], shipped["copy"]["holds"],
                    shipped["copy"]["extension_parts"]) == want, graded
            assert shipped["time_budget"] == {"autolab": 55, "gradescope": 540, "prairielearn": 87}
    finally:
        monkeypatch.delenv("KIT_EXTENSIONS")
        importlib.reload(parts)
        importlib.reload(dist)
    # The table's source ships as it is: no cut rewrites Python.
    assert "part_table.py" not in " ".join(dist.MADE) and open(f"{dist.KIT}/kit/part_table.py").read() == parts_source


def test_a_prairielearn_course_s_handout_says_to_upload_the_loose_files_and_what_the_report_shows(tmp_path):
    """make handout's cut (no build: --no-verify) of a PrairieLearn course,
    then the cut's own check: its text is what its course file makes."""
    import subprocess
    import sys
    import tarfile
    from kit import course as courses
    course = tmp_path / "course.toml"
    course.write_text("platform = \"prairielearn\"\n[visibility]\npublic = \"counts\"\nhidden = \"nothing\"\n")
    env = {**os.environ, "KIT_COURSE": str(course)}
    env.pop("KIT_EXTENSIONS", None)
    out = tmp_path / "handout.tar.gz"
    made = subprocess.run([sys.executable, "-m", "staff.dist", "handout", "--no-verify", "--out", str(out)],
                          cwd=dist.KIT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300)
    assert made.returncode == 0, made.stdout
    with tarfile.open(out) as tar:
        tar.extractall(tmp_path)
    readme = (tmp_path / "dtrain-kit" / "README.md").read_text()
    submitting = readme[readme.index("## Submitting"):readme.index("## Integrity")]
    assert "Upload your loose files" in submitting and "not `handin.tar`" in submitting, submitting
    said = handout_text.visibility_sentence(courses.read(str(course), [p.key for p in table.ALL_PARTS],
                                                         [p.key for p in table.ALL_PARTS if p.extension]))
    assert said in submitting and "only how many of its part's public cases failed" in said
    assert "of the hidden cases, nothing, not even how many failed" in said
    env.pop("KIT_COURSE")
    checked = subprocess.run([sys.executable, "-m", "kit", "check-handout"], cwd=tmp_path / "dtrain-kit", env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert checked.returncode == 0 and " 0 failed" in checked.stdout, checked.stdout
