"""The course file (course.toml, kit/course.py): read alike everywhere, every
bad value refused by name, the course printed as it takes effect, the
environment's overrides; and what the handout says of parts and points,
made from the table and the course (kit/handout_text.py).

  python3 -m pytest staff/tests/test_course.py -q
"""
import os
import re
import subprocess
import sys
from dataclasses import replace

import pytest

from kit import course as courses
from kit import handout_text
from kit import parts as table
from kit.paths import KIT_DIR
from kit.toml_subset import TomlError, loads

KEYS = [p.key for p in table.ALL_PARTS]
EXTENSIONS = [p.key for p in table.ALL_PARTS if p.extension]


def course_file(tmp_path, text: str, name: str = "course.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def load(path: str, **env) -> courses.Course:
    return courses.load(KEYS, EXTENSIONS, environ={"KIT_COURSE": path, **env})


def kit_command(*args, env=None):
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=KIT_DIR, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env={**os.environ, **(env or {})}, timeout=60)


def test_the_kit_s_course_file_reads_as_tomllib_reads_it():
    text = open(courses.COURSE_FILE).read()
    data = loads(text)
    assert data["extensions"] == [] and data["points"] == {} and data["time_budget"]["autolab"] == 55
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    assert tomllib.loads(text) == data
    from staff import dist
    for cut in ("handout", "autograder"):
        assert tomllib.loads(dist.shipped_course(cut)) == loads(dist.shipped_course(cut))


@pytest.mark.parametrize("text, says", [
    ("extensions = [\"part14\"]", "extensions: 'part14' is no extension part this copy holds; they are: "
                                  "'part11_ring', 'part12_pipeline', 'part13_ddp'"),
    ("extensions = \"part13_ddp\"", "extensions must be a list of extension parts' keys"),
    ("mpi = \"intel\"", "mpi must be one of 'openmpi', 'mpich', got 'intel'"),
    ("[points]\npart2 = 15.5", "points.part2 must be a whole number of points from 1 to 1000, got 15.5"),
    ("[points]\npart2 = 0", "points.part2 must be a whole number of points from 1 to 1000, got 0"),
    ("[points]\npart8 = 30", "points.part8: part8 has parts of its own; set part8_forward and part8_backward"),
    ("[points]\npart99 = 3", "points.part99 is no key of the course file here; the keys are: part1, part2"),
    ("[visibility]\npublic = \"all\"", "visibility.public must be one of 'messages', 'names', 'counts', 'nothing'"),
    ("[visibility]\nhidden = \"messages\"", "visibility.hidden must be one of 'counts', 'nothing', got 'messages'"),
    ("[visibility]\nhidden_after_due_date = true", "visibility.hidden_after_due_date is no key of the course file"),
    ("[visibility]\npublic_after_due_date = \"yes\"", "visibility.public_after_due_date must be true or false"),
    ("[time_budget]\nautolab = 5", "time_budget.autolab must be a number of seconds from 10 to 3600, got 5"),
    ("[time_budget]\ncanvas = 50", "time_budget.canvas is no key of the course file here; the keys are: autolab, "
                                   "gradescope, prairielearn"),
    ("[copy]\nholds = [\"solutions\"]", "copy.holds must be a list of 'reference', 'grader', 'staff'"),
    ("extensions = [\"part13_ddp\"]\n[copy]\nextension_parts = []", "extensions: 'part13_ddp' is no extension part "
                                                                    "this copy holds; they are: none"),
    ("extension = []", "extension is no key of the course file here; the keys are: extensions, mpi, points"),
    ("[points]\npart2 = {a = 1}", "line 2: inline tables ({...}) are not taken here"),
    ("mpi = openmpi", "line 1: 'openmpi' is no value taken here"),
    ("[points]\n[points]", "line 2: [points] appears twice"),
    ("extensions = [\"part13_ddp\"", "line 1: an array's items are separated by commas"),
])
def test_every_bad_value_is_refused_naming_its_key_and_what_it_may_be(tmp_path, text, says):
    with pytest.raises(courses.CourseError) as e:
        load(course_file(tmp_path, text + "\n"))
    assert says in str(e.value) and str(tmp_path) in str(e.value)


def test_every_problem_of_a_file_is_told_at_once(tmp_path):
    with pytest.raises(courses.CourseError) as e:
        load(course_file(tmp_path, "mpi = \"x\"\n[points]\npart2 = -1\n[time_budget]\ngradescope = 9000\n"))
    assert len(str(e.value).splitlines()) == 3


@pytest.mark.parametrize("env, says", [
    ({"KIT_EXTENSIONS": "part14"}, "KIT_EXTENSIONS must be 1, 0 or a list of extension parts this copy holds"),
    ({"KIT_MPI": "lam"}, "KIT_MPI must be one of openmpi, mpich, got 'lam'"),
    ({"KIT_TIME_BUDGET": "soon"}, "KIT_TIME_BUDGET must be a number of seconds from 10 to 3600, got 'soon'"),
])
def test_a_bad_override_is_refused_by_name(tmp_path, env, says):
    with pytest.raises(courses.CourseError, match=re.escape(says)):
        load(course_file(tmp_path, ""), **env)


def test_the_environment_overrides_a_choice_for_one_command(tmp_path):
    path = course_file(tmp_path, "extensions = [\"part13_ddp\"]\nmpi = \"mpich\"\n[time_budget]\nautolab = 40\n")
    c = load(path)
    assert (c.extensions, c.mpi, c.budget("autolab"), c.budget("gradescope"), c.budget(None)) == \
        (("part13_ddp",), "mpich", 40, 540, None)
    c = load(path, KIT_EXTENSIONS="0", KIT_MPI="openmpi", KIT_TIME_BUDGET="25")
    assert (c.extensions, c.mpi, c.file_mpi, c.budget("autolab"), c.budget(None)) == ((), "openmpi", "mpich", 25, 25)


def test_kit_course_prints_the_course_as_it_takes_effect(tmp_path):
    path = course_file(tmp_path, "extensions = [\"part13_ddp\"]\n[points]\npart2 = 15\n"
                                 "[visibility]\nhidden = \"nothing\"\n")
    out = kit_command("course", env={"KIT_COURSE": path}).stdout
    assert re.search(r"part2 +15 +layer initialization +\(table: 20\)", out), out
    assert re.search(r"part13_ddp +20", out) and re.search(r"total +165\n", out)
    assert "extension parts graded: part13_ddp" in out and "hidden cases nothing" in out
    assert "time budgets: autolab 55 s, gradescope 540 s, prairielearn 27 s" in out and "MPI: openmpi" in out
    bad = kit_command("course", env={"KIT_COURSE": course_file(tmp_path, "mpi = 3\n", "bad.toml")})
    assert bad.returncode == 2 and "mpi must be one of 'openmpi', 'mpich', got 3" in bad.stdout


def test_the_template_is_the_handout_of_the_table_s_own_course():
    """handout/README.md as committed is what the table's points and no
    extension part make; a course's other choices are made by make handout."""
    text = open(os.path.join(KIT_DIR, "handout", "README.md")).read()
    own = [replace(p, points=table.TABLE_POINTS[p.key]) for p in table.ALL_PARTS]
    assert handout_text.render(text, [p for p in own if not p.extension], own) == text


def course_of(graded, points):
    parts = [replace(p, points=points.get(p.key, table.TABLE_POINTS[p.key])) for p in table.ALL_PARTS]
    return [p for p in parts if not p.extension or p.key in graded], parts


def test_the_handout_of_parts_1_to_9_and_13_with_part_2_at_15_points():
    graded, held = course_of(("part13_ddp",), {"part2": 15})
    text = open(os.path.join(KIT_DIR, "handout", "README.md")).read()
    readme = handout_text.render(handout_text.for_the_course(text, graded, KIT_DIR, table.CORE_FILES), graded, held)
    assert "## Part 2 — layer initialization (15 points)" in readme
    assert "## Part 13 — gradient buckets and overlap (20 points)" in readme and "## Part 11" not in readme
    assert "| 2 | part2 | `get_info` | 15 | 8 | `make test-part2` |" in readme
    assert "| 13 | part13_ddp | `plan_buckets`, `GradientBuckets` | 20 | 1, 2 and 4 | `make test-part13` |" in readme
    assert set(re.findall(r"`total: X / (\d+) points`", readme)) == {"165"}
    contents = readme[readme.index("**Contents.**"):].split("\n\n")[0]
    assert "[Part 2](#part-2--layer-initialization-15-points)" in contents
    assert "[Part 13](#part-13--gradient-buckets-and-overlap-20-points)" in contents and "Part 11" not in contents
    assert "[Shapes](#the-shape-legend)" in contents and "[Integrity](#integrity)" in contents
    assert "only if it says so" not in readme and "plus the points" not in readme
    from kit.check_handout import agreement
    assert agreement(readme, graded) == ([], len(graded) + 1)
    assert agreement(readme.replace("| 15 | 8 |", "| 20 | 8 |"), graded)[0]
    feedback = handout_text.render_feedback(
        handout_text.for_the_course(open(os.path.join(KIT_DIR, "feedback.txt")).read(), graded, KIT_DIR, table.CORE_FILES), readme)
    assert "   Part 6:     Part 7:     Part 8:     Part 9:     Part 10:\n   Part 13:\n" in feedback
    assert "<!--" not in feedback and "Part 13, question 4:" in feedback and "Part 11" not in feedback


def test_a_template_the_renderer_cannot_fill_stops_the_cut():
    graded, held = course_of((), {})
    with pytest.raises(handout_text.HandoutError, match="no '\\(N points\\)'"):
        handout_text.render("**Contents.** [x](#setup)\n\n## Part 2 — no points here\n", graded, held)
    with pytest.raises(handout_text.HandoutError, match="links to #gone"):
        handout_text.render("**Contents.** [x](#gone)\n\n## Setup\n" + handout_text.GENERATED_BEGIN + "x -->\n"
                            + handout_text.GENERATED_END + "\n", graded, held)


def documented_variables():
    with open(os.path.join(KIT_DIR, "docs", "course-staff.md")) as f:
        text = f.read()
    section = text[text.index("## Environment variables"):]
    first_cells = re.findall(r"^\| ([^|]+) \|", section, re.M)
    return {name for cell in first_cells for name in re.findall(r"`([A-Za-z][A-Za-z0-9_]*)`", cell)}


def test_every_environment_variable_the_kit_reads_is_listed_in_one_place():
    read = set()
    for top in ("kit", "grader", "staff", "tools"):
        for root, dirs, names in os.walk(os.path.join(KIT_DIR, top)):
            dirs[:] = [d for d in dirs if d not in ("tests", "__pycache__")]
            for name in names:
                try:
                    text = open(os.path.join(root, name), encoding="utf-8").read()
                except (UnicodeDecodeError, OSError):
                    continue
                if name.endswith(".py"):
                    read |= set(re.findall(r"environ(?:\.get)?[\[(]\s*[\"']([A-Z][A-Z0-9_]*)", text))
                elif text.startswith("#!/") and "sh" in text.splitlines()[0]:
                    read |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)[:}-]", text))
    makefile = open(os.path.join(KIT_DIR, "Makefile")).read()
    read |= set(re.findall(r"\$\$\{([A-Z][A-Z0-9_]*)", makefile))
    read |= set(re.findall(r"^([A-Z][A-Z0-9_]*) *\?=", makefile, re.M))
    ignored = {"PATH", "HOME", "TMPDIR", "BASH_SOURCE"}  # the system's own
    missing = sorted(read - ignored - documented_variables())
    assert not missing, f"docs/course-staff.md, Environment variables, should list {missing}"


def test_the_kit_s_and_the_grader_s_modules_read_the_environment_in_one_place():
    """kit/overrides.py reads the one-command overrides once, kit/course.py
    those of the course; no other module of kit/ or grader/ reads one."""
    homes = {os.path.join("kit", "overrides.py"), os.path.join("kit", "course.py")}
    found = []
    for top in ("kit", "grader"):
        for root, dirs, names in os.walk(os.path.join(KIT_DIR, top)):
            dirs[:] = [d for d in dirs if d not in ("tests", "__pycache__", "hidden", "platforms")]
            for name in (n for n in names if n.endswith(".py")):
                path = os.path.relpath(os.path.join(root, name), KIT_DIR)
                text = open(os.path.join(KIT_DIR, path), encoding="utf-8").read()
                # A write for the commands it starts (kit/paths.py's KIT_MPI) is no read.
                reads = re.findall(r"environ\.get\(\s*[\"']((?:KIT|DTRAIN)_[A-Z0-9_]*)", text)
                reads += re.findall(r"environ\[[\"']((?:KIT|DTRAIN)_[A-Z0-9_]*)[\"']\](?!\s*=)", text)
                found += [f"{path} reads {var}" for var in reads if path not in homes]
    assert not found, found


def test_a_platform_s_grading_takes_the_course_s_time_budget(tmp_path, monkeypatch):
    from grader import cli
    (tmp_path / "impl_recipe.json").write_text("{}")
    (tmp_path / "h.tar").write_bytes(b"")
    seen = []
    monkeypatch.setattr(cli, "one_handin", lambda args: seen.append(args.time_budget) or 0)
    base = [str(tmp_path / "h.tar"), "--build", str(tmp_path)]
    for extra in (["--platform", "autolab"], ["--platform", "prairielearn"], [], ["--platform", "gradescope",
                                                                                  "--time-budget", "99"]):
        assert cli.main(base + extra) == 0
    assert seen == [table.COURSE.budget("autolab"), table.COURSE.budget("prairielearn"), table.COURSE.budget(None), 99]
    assert seen[:3] == [55, 27, None] or os.environ.get("KIT_TIME_BUDGET")
