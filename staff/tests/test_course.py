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
from kit import course_cli, course_schema as schema
from kit import handout_text
from kit import parts as table
from kit.paths import KIT_DIR
from kit.toml_subset import loads

KEYS = [p.key for p in table.ALL_PARTS]
EXTENSIONS = [p.key for p in table.ALL_PARTS if p.extension]


def course_file(tmp_path, text: str, name: str = "course.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def load(path: str, **env) -> courses.Course:
    return courses.load(KEYS, EXTENSIONS, environ={"KIT_COURSE": path, **env})


def kit_command(*args, env=None):
    # The course's own overrides only as the test gives them, whatever the
    # environment the suite runs in says.
    base = {k: v for k, v in os.environ.items() if k not in ("KIT_COURSE", "KIT_EXTENSIONS", "KIT_MPI",
                                                             "KIT_TIME_BUDGET")}
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=KIT_DIR, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env={**base, **(env or {})}, timeout=60)


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
    ("extension = []", "extension is no key of the course file here; the keys are: extensions, mpi, "
                           "platform, points"),
    ("platform = \"moodle\"", "platform must be one of 'autolab', 'gradescope', 'prairielearn', 'none', got "
                              "'moodle'"),
    ("[time_limit]\npart9 = 0", "time_limit.part9 must be a number of seconds from 1 to 600, got 0"),
    ("[time_limit]\npart9 = 601", "time_limit.part9 must be a number of seconds from 1 to 600, got 601"),
    ("[time_limit]\npart8 = 30", "time_limit.part8: part8 has parts of its own; set part8_forward and "
                                  "part8_backward"),
    ("[time_limit]\nslow = 30", "time_limit.slow is no key of the course file here; the keys are: part1, part2"),
    ("[handout]\nsubmit = 3", "handout.submit must be a string in double quotes, at most 400 characters, got 3"),
    ("[handout]\nwhere = \"x\"", "handout.where is no key of the course file here; the keys are: submit"),
    ("[copy]\nextension_parts = [\"part14\"]", "copy.extension_parts: 'part14' is no extension part of the parts "
                                              "table; they are: 'part11_ring', 'part12_pipeline', 'part13_ddp'"),
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
    ({"KIT_EXTENSIONS": "part99"}, "KIT_EXTENSIONS must be 1, 0 or a list of extension parts this copy holds"),
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
    assert re.search(r"part2 +15 +layer initialization +cases 5 s +\(table: 20\)", out), out
    assert re.search(r"part13_ddp +20", out) and re.search(r"total +165\n", out)
    assert re.search(r"\n  extensions +part13_ddp\n", out) and re.search(r"\n  visibility.hidden +nothing\n", out)
    assert re.search(r"time_budget.autolab +55 s\n  time_budget.gradescope +540 s\n"
                     r"  time_budget.prairielearn +87 s", out)
    assert re.search(r"\n  mpi +openmpi\n", out)
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
    assert seen[:3] == [55, 87, None] or os.environ.get("KIT_TIME_BUDGET")


# ---- the schema, declared once (kit/course_schema.py) ----

def the_file_s_course(path: str = courses.COURSE_FILE) -> courses.Course:
    return courses.read(path, KEYS, EXTENSIONS)


def test_course_toml_is_the_schema_s_template_with_its_values():
    with open(courses.COURSE_FILE) as f:
        assert f.read() == courses.template(courses.file_values(the_file_s_course())), \
            "course.toml's comments are not the schema's: python3 -m kit course --write-template"


def test_the_docs_table_of_keys_is_the_schema_s():
    with open(course_cli.DOCS) as f:
        text = f.read()
    assert course_cli.DOCS_BEGIN in text and course_cli.docs_with_table(text) == text, \
        "docs/course-staff.md's table of keys is not the schema's: python3 -m kit course --write-docs"


def test_every_key_of_the_schema_reaches_every_output():
    """A key declared in the table alone is in course.toml, the docs' table,
    the printout, a cut's course file and the Course; its default is valid."""
    template = courses.template(courses.file_values(the_file_s_course()))
    cut = courses.text(table.COURSE, {}, (), (), "openmpi")
    docs, printed = course_cli.docs_table(), kit_command("course").stdout
    fields = set()
    for key in schema.KEYS:
        line = f"\n[{key.section}]\n" if key.name == schema.PER_PART else f"\n{key.name} = "
        assert line in template and line in cut, key.where
        assert key.doc.split()[-1] in template and key.doc in docs, key.where
        shown = f"{key.section}.PART" if key.name == schema.PER_PART else key.where
        assert re.search(rf"\n  {re.escape(shown)} +\S", printed), key.where
        fields.add(key.field.partition(":")[0])
    assert set(courses.Course.__dataclass_fields__) - fields == {"file_mpi", "budget_override", "path"}
    assert fields <= set(courses.Course.__dataclass_fields__)
    assert set(schema.SECTIONS) == {k.section for k in schema.KEYS}
    values, problems = schema.check({}, KEYS, EXTENSIONS)
    assert not problems and values == courses.file_values(the_file_s_course())


def test_a_key_added_to_the_schema_alone_fails_the_kit_s_checks(monkeypatch):
    with open(courses.COURSE_FILE) as f:
        course_toml = f.read()
    with open(course_cli.DOCS) as f:
        docs = f.read()
    extra = schema.Key("visibility", "show_inputs", "bool", False, (), "public_after_due_date", "a key added alone")
    monkeypatch.setattr(schema, "KEYS", schema.KEYS + (extra,))
    assert courses.template(courses.file_values(the_file_s_course())) != course_toml
    assert course_cli.docs_with_table(docs) != docs


def test_a_cut_s_course_file_reads_back_as_the_course(tmp_path):
    path = course_file(tmp_path, "platform = \"prairielearn\"\nextensions = [\"part13_ddp\"]\n[points]\npart2 = 15\n"
                                 "[time_limit]\npart9 = 200\npart12_pipeline = 40\n[handout]\nsubmit = \"By mail.\"\n")
    c = load(path)
    cut = courses.text(c, {"part2": 15}, ("grader",), ("part13_ddp",), "mpich")
    back = load(course_file(tmp_path, cut, "cut.toml"))
    assert (back.platform, back.points, back.time_limits, back.submit, back.holds, back.held, back.mpi) == \
        ("prairielearn", {"part2": 15}, {"part9": 200}, "By mail.", ("grader",), ("part13_ddp",), "mpich")
    assert back.submit_text() == "By mail." and replace(back, submit="").submit_text() == \
        schema.SUBMIT_TEXTS["prairielearn"]


def test_importing_the_course_neither_exits_nor_writes_the_environment(tmp_path):
    code = ("import os; before = dict(os.environ); import kit.course, kit.course_schema, kit.course_cli; "
            "assert dict(os.environ) == before; print('ok')")
    bad = course_file(tmp_path, "mpi = 3\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=KIT_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, env={**os.environ, "KIT_COURSE": bad, "KIT_MPI": "lam"}, timeout=60)
    assert out.returncode == 0 and out.stdout == "ok\n", out.stdout


def test_a_part_s_time_limit_is_the_course_s_a_floor_calibration_may_raise(tmp_path):
    from kit import calibration
    path = course_file(tmp_path, "[time_limit]\npart2 = 30\npart9 = 200\n")
    out = kit_command("course", env={"KIT_COURSE": path}).stdout
    assert re.search(r"part2 +20 +layer initialization +cases 30 s\n", out), out
    assert re.search(r"part9 +10 +ZeRO-3 sharded Adam +cases 200 s\n", out), out
    part9 = next(p for p in table.ALL_PARTS if p.key == "part9")
    timed = table.timed(part9, 200)
    assert [r.case_seconds for r in timed.runs] == [200.0] * len(part9.runs)
    assert all(t.job_seconds >= r.job_seconds * 200 / r.case_seconds for t, r in zip(timed.runs, part9.runs))
    assert table.timed(part9, None) == part9
    figures = calibration.Figures.load()
    for run in timed.runs:  # a floor: a slow machine's limit may only be more
        assert calibration.Limits(1.0, figures).case_seconds(run) >= 200
        assert calibration.Limits(1e6, figures).case_seconds(run) > 200 or not figures.cases.get(run.filter)


def test_the_handout_of_a_prairielearn_course_says_to_upload_the_loose_files(tmp_path):
    c = load(course_file(tmp_path, "platform = \"prairielearn\"\n[visibility]\npublic = \"names\"\n"))
    graded, held = course_of((), {})
    text = open(os.path.join(KIT_DIR, "handout", "README.md")).read()
    filled = handout_text.for_the_course(text, graded, KIT_DIR, table.CORE_FILES)
    readme = handout_text.render(filled, graded, held, c)
    submitting = readme[readme.index("## Submitting"):readme.index("## Integrity")]
    assert "Upload your loose files" in submitting and "not `handin.tar`" in submitting
    assert "`student/*.cpp` files" in submitting and "`feedback.txt`" in submitting
    assert handout_text.visibility_sentence(c) in submitting
    assert "Of a public case you fail, the grader's report shows its name, not its messages; of the hidden " \
           "cases, only how many of each part's failed, never their names or values." in submitting
    hidden = load(course_file(tmp_path, "[visibility]\nhidden = \"nothing\"\npublic = \"counts\"\n", "h.toml"))
    assert "of the hidden cases, nothing, not even how many failed" in handout_text.visibility_sentence(hidden)
