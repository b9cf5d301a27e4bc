"""The parts table's own rules, and the copies of its facts that live
elsewhere (each copy is checked here, so none can drift).

  python3 -m pytest staff/tests -q
"""
import os
import re
import subprocess
import sys

import pytest

from kit import limits

from kit import parts as table
from kit import parts_cli
from kit.paths import KIT_DIR


def test_every_run_selects_whole_suites_and_no_two_runs_overlap():
    # "Part1*" would also select Part11...; a run names its suites exactly.
    filters = [run.filter for run in table.all_runs()]
    assert all(re.fullmatch(r"[A-Za-z0-9]+\.\*", f) for f in filters), filters
    assert len(set(filters)) == len(filters)


def test_points_add_up_and_files_exist():
    assert table.TOTAL_POINTS == sum(p.points for p in table.PARTS)
    for part in table.PARTS:
        assert set(part.files) <= set(table.IMPL_FILES), part.key
        for test in part.tests:
            assert os.path.isfile(os.path.join(KIT_DIR, test)), test
        for name in table.IMPL_FILES:
            assert os.path.isfile(os.path.join(KIT_DIR, "student", name))


def test_the_generated_files_hold_the_table(tmp_path):
    assert parts_cli.main(["--cmake", str(tmp_path / "p.cmake"), "--cpp", str(tmp_path / "p.h")]) == 0
    cmake = (tmp_path / "p.cmake").read_text()
    # A build compiles every part of the tree, the ungraded extension parts too.
    assert f"set(KIT_PART_KEYS {' '.join(p.key for p in table.built_parts())})" in cmake
    assert f"set(KIT_IMPL_FILES {' '.join(table.built_files())})" in cmake
    header = (tmp_path / "p.h").read_text()
    for run in table.all_runs():
        assert f'{{"{run.filter}", {run.ranks}, {run.case_seconds!r}}},' in header


def test_make_accepts_every_key_and_group():
    assert "part8" in table.make_keys() and "part8_forward" in table.make_keys()
    assert table.find(["part8"]) == [p for p in table.PARTS if p.key.startswith("part8")]


def test_the_time_scale_only_shortens_limits(monkeypatch):
    from kit import overrides  # KIT_TIME_SCALE, read once when the kit loads
    monkeypatch.setattr(overrides, "TIME_SCALE", "0.4")
    assert limits.limit(table.CASE_SECONDS) == table.CASE_SECONDS * 0.4
    for bad in ("0", "1.5", "-1", "fast"):
        monkeypatch.setattr(overrides, "TIME_SCALE", bad)
        try:
            limits.time_scale()
        except SystemExit as e:
            assert "KIT_TIME_SCALE must be a number in (0, 1]" in str(e)
        else:
            raise AssertionError(f"KIT_TIME_SCALE={bad} was taken")
    monkeypatch.setattr(overrides, "TIME_SCALE", None)
    assert limits.limit(limits.STARTUP_SECONDS) == limits.STARTUP_SECONDS


def test_each_extension_part_has_its_own_switch(monkeypatch):
    import importlib
    try:
        for value, points, keys, files in (("0", 150, 10, 3), ("1", 280, 16, 9), ("part13", 170, 11, 4),
                                           ("part11_ring,part13_ddp", 190, 12, 5)):
            monkeypatch.setenv("KIT_EXTENSIONS", value)
            t = importlib.reload(table)
            assert (t.TOTAL_POINTS, len(t.PARTS), len(t.IMPL_FILES)) == (points, keys, files), value
            # The staff's copy holds (and builds) every extension part, graded or not.
            assert {p.key for p in t.ALL_PARTS if p.extension} <= {p.key for p in t.built_parts()}
        for bad in ("yes", "part99", "part11_ring,ring"):
            monkeypatch.setenv("KIT_EXTENSIONS", bad)
            t = importlib.reload(table)  # importing reads no course: the first use does, and stops there
            with pytest.raises(table.InvalidCourse, match="KIT_EXTENSIONS must be 1, 0 or a list of extension parts"):
                t.current()
    finally:
        monkeypatch.delenv("KIT_EXTENSIONS")
        importlib.reload(table)


def test_every_file_of_an_extension_part_is_its_own_and_exists():
    seen = {}
    for part in (p for p in table.ALL_PARTS if p.extension):
        for path in part.own_paths():
            assert os.path.isfile(os.path.join(KIT_DIR, path)), (part.key, path)
            assert seen.setdefault(path, part.key) == part.key, f"{path} belongs to {seen[path]} and {part.key}"


def test_cmake_and_make_get_a_cut_s_configuration(tmp_path, monkeypatch):
    """A cut's own course file (staff/dist.py writes it; no Python source is
    rewritten) gives its copy the cut's parts, holdings and MPI."""
    import importlib
    from staff import dist
    monkeypatch.setenv("KIT_EXTENSIONS", "part13_ddp")  # read once, at the course's first use
    importlib.reload(table)
    dist = importlib.reload(dist)
    for name, text in (("handout", dist.shipped_course("handout")),
                       ("bundle", dist.shipped_course("autograder", "mpich"))):
        (tmp_path / f"{name}.toml").write_text(text)
    monkeypatch.delenv("KIT_EXTENSIONS")  # a copy runs under its own course
    copies = {}
    try:
        for name in ("handout", "bundle"):
            monkeypatch.setenv("KIT_COURSE", str(tmp_path / f"{name}.toml"))
            copy = importlib.reload(table)
            assert copy.CONFIGURATION.held == copy.CONFIGURATION.graded == ("part13_ddp",)
            assert copy.TOTAL_POINTS == 170
            cli = importlib.reload(parts_cli)  # the table's names, as this copy's course gives them
            cmake = cli.cmake_text()
            assert "framework/model/ddp_model.cpp" in cmake and "pipeline" not in cmake and "ring" not in cmake
            assert "set(KIT_HOLDS_REFERENCE OFF)" in cmake and "set(KIT_HOLDS_STAFF OFF)" in cmake
            copies[name] = (cmake, cli.make_text())
    finally:
        monkeypatch.delenv("KIT_COURSE")
        importlib.reload(table)
        importlib.reload(parts_cli)
        importlib.reload(dist)
    assert "set(KIT_HIDDEN_SOURCES )" in copies["handout"][0]
    own = [f"grader/hidden/{key}/hidden_{key}.cpp" for key in
           ("part1", "part2", "part3", "part4", "part5", "part6", "part7", "part8", "part9")]
    assert f"set(KIT_HIDDEN_SOURCES {' '.join(own)} grader/hidden/part13_ddp/hidden_ddp.cpp)" in copies["bundle"][0]
    # The driven harness's: the parts it grades, and their hidden cases where the copy holds the grader.
    assert (f"set(KIT_DRIVEN_HIDDEN_SOURCES {' '.join(own)} grader/hidden/part13_ddp/hidden_ddp.cpp)"
            in copies["bundle"][0])
    assert "set(KIT_DRIVEN_HIDDEN_SOURCES )" in copies["handout"][0]
    assert ("set(KIT_DRIVEN_PARTS part1 part2 part3 part4 part5 part6 part7 part8_forward part8_backward part9 "
            "part13_ddp)" in copies["bundle"][0])
    assert "KIT_DEFAULT_MPI := openmpi\nKIT_HOLDS := \n" in copies["handout"][1]
    assert "KIT_DEFAULT_MPI := mpich\nKIT_HOLDS := grader\n" in copies["bundle"][1]
    assert "set(KIT_DEFAULT_MPI mpich)" in copies["bundle"][0]


def test_nothing_looks_for_files_to_learn_the_configuration():
    with open(os.path.join(KIT_DIR, "CMakeLists.txt")) as f:
        assert "EXISTS" not in f.read()
    with open(os.path.join(KIT_DIR, "Makefile")) as f:
        text = f.read()
    assert "test -d" not in text and "kit_mpi.txt" not in text


def test_a_score_from_counts_is_the_score_from_cases():
    """A re-score (grader/rescore.py) has only each part's counts: they must
    give what the cases gave, gate included."""
    import itertools
    part = next(p for p in table.PARTS if p.key == "part8_forward")
    cases = ["Part8Partition.A", "Part8Forward.KeepsNoFullWeightA", "Part8Forward.B", "HiddenPart8Forward.C",
             "HiddenPart8Forward.D"]
    for outcome in itertools.product((True, False), repeat=len(cases)):
        results = dict(zip(cases, outcome))
        public = [ok for c, ok in results.items() if not table.is_hidden(c)]
        hidden = [ok for c, ok in results.items() if table.is_hidden(c)]
        gated = any(not ok and c.startswith("Part8Forward.KeepsNoFullWeight") for c, ok in results.items())
        assert part.score_counts(sum(public), len(public), sum(hidden), len(hidden), gated) == \
            pytest.approx(part.score(results)), results


def test_public_cases_count_only_as_far_as_the_hidden_cases_confirm_them():
    """In grading, a part's public answers (which ship with the handout) earn
    at most the share of its hidden cases that pass; correct code loses
    nothing, and without hidden cases (make test) the split is even."""
    part = next(p for p in table.PARTS if p.key == "part7")
    public = [f"Part7WeightGrad.Case{i}" for i in range(4)]
    hidden = [f"HiddenPart7WeightGrad.Case{i}" for i in range(3)]
    every = {c: True for c in public + hidden}
    assert part.score(every) == part.points and not part.unconfirmed(every)
    forged = {**{c: True for c in public}, **{c: False for c in hidden}}
    assert part.score(forged) == 0 and part.unconfirmed(forged)
    one_third = {**{c: True for c in public}, hidden[0]: True, hidden[1]: False, hidden[2]: False}
    assert part.score(one_third) == pytest.approx(part.points * (4 / 3 + 1) / 7) and not part.unconfirmed(one_third)
    # The public cases' own failures still count as before.
    half_public = {**{c: i < 2 for i, c in enumerate(public)}, **{c: True for c in hidden}}
    assert part.score(half_public) == pytest.approx(part.points * 5 / 7)
    assert part.score({c: True for c in public[:3]} | {public[3]: False}) == pytest.approx(part.points * 3 / 4)


def test_a_parts_command_is_found_by_its_row(tmp_path):
    """`python3 -m kit ring` is Part 11's, registered in its row
    (Adds.commands); a copy that does not hold the part says so."""
    import importlib as imports
    for p in table.ALL_PARTS:
        for name, module, _what in p.adds.commands:
            assert module.replace(".", "/") + ".py" in p.own_paths(), f"{name}: its module ships with its part"
            assert callable(imports.import_module(module).main), name
    run = lambda *args, **env: subprocess.run([sys.executable, "-m", "kit", *args], cwd=KIT_DIR, text=True,  # noqa: E731
                                               capture_output=True, env={**os.environ, **env})
    helped = run("--help")
    assert helped.returncode == 0 and "ring " in helped.stdout
    assert run("ring", "--help").returncode == 0
    # A course whose copy holds no extension part: the row is still there, its files are not.
    course = tmp_path / "course.toml"
    course.write_text(re.sub(r"^extension_parts = \[.*\]$", "extension_parts = []",
                             open(os.path.join(KIT_DIR, "course.toml")).read(), count=1, flags=re.M))
    assert "extension_parts = []" in course.read_text(), "course.toml no longer lists the held parts so"
    without = run("ring", KIT_COURSE=str(course), KIT_EXTENSIONS="0")
    assert without.returncode == 2 and "does not hold the extension part" in without.stdout
    assert "ring " not in run("--help", KIT_COURSE=str(course), KIT_EXTENSIONS="0").stdout


def test_importing_the_kit_reads_no_course_file(tmp_path):
    """Every module of kit/, grader/ and staff/ imports with a course file
    that can't be read: the course is loaded at its first use, as an object."""
    import subprocess
    import sys
    modules = sorted({os.path.relpath(os.path.join(d, f), KIT_DIR)[:-3].replace(os.sep, ".")
                      for top in ("kit", "grader", "staff") for d, _, files in os.walk(os.path.join(KIT_DIR, top))
                      if "tests" not in d.split(os.sep) and "__pycache__" not in d for f in files
                      if f.endswith(".py") and f != "__main__.py"})
    code = ("import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
            "from kit import parts\ntry:\n    parts.current()\nexcept parts.InvalidCourse as e:\n"
            "    print('first use:', str(e).splitlines()[-1])\n")
    env = dict(os.environ, KIT_COURSE=str(tmp_path / "missing.toml"))
    proc = subprocess.run([sys.executable, "-c", code, *modules], cwd=KIT_DIR, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert proc.returncode == 0 and "first use:" in proc.stdout and "missing.toml" in proc.stdout, proc.stdout
    assert len(modules) > 80, modules
