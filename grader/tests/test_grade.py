"""The autograder end to end: scores, partial credit, broken and hostile
handins, reports, batch mode.

  python3 -m pytest grader/tests -q
"""
import csv
import json
import os
import subprocess
import shutil
import sys
import tarfile
import tempfile

import pytest

from conftest import BUILD, GRADE, KIT, SUMMED_MUTANT, grade, handin, left_behind, marked, on_this_machine

from kit import parts as table
from staff.mutants import MUTANTS, WRONG_ANSWERS_FROM

# A copy of the table's points, so that a change to the table shows here too.
FULL = {"part1": 10, "part2": 20, "part3": 15, "part4": 15, "part5": 20, "part6": 10, "part7": 10,
        "part8_forward": 20, "part8_backward": 20, "part9": 10}


def test_the_table_has_the_points_of_the_spec():
    assert {p.key: p.points for p in table.PARTS} == FULL and table.TOTAL_POINTS == 150


@pytest.fixture(scope="module")
def reference_graded(tmp_path_factory):
    """The reference graded once for this file's two tests of it, the build
    named by a relative path (test_a_relative_build_directory): (stdout, report)."""
    top = tmp_path_factory.mktemp("reference-graded")
    proc = subprocess.run([sys.executable, GRADE, "--build", os.path.relpath(BUILD, KIT), "--json",
                           str(top / "report.json"), handin(top)], cwd=KIT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600, env=marked(top))
    assert proc.returncode == 0, proc.stdout
    return proc.stdout, json.loads((top / "report.json").read_text())


@pytest.mark.xdist_group("reference")
def test_reference_scores_full_marks(reference_graded):
    stdout, report = reference_graded
    last = json.loads(stdout.strip().splitlines()[-1])
    assert last == {"scores": {k: float(v) for k, v in FULL.items()}, "scoreboard": [150.0]}
    assert report["total"] == 150 and report["seconds"] < on_this_machine(60)


def test_stubs_score_zero_and_every_part_is_reported(tmp_path):
    g = grade(tmp_path, handin(tmp_path, impl="student"))
    assert set(g.scores) == set(FULL)
    assert g.total == 0
    assert "is not implemented yet" in g.stdout


@pytest.mark.xdist_group("summed")
def test_a_bug_in_one_part_costs_only_that_part(summed_graded):
    g = summed_graded[0]
    assert g.scores["part7"] < FULL["part7"]
    assert all(g.scores[k] == FULL[k] for k in FULL if k != "part7")


def test_a_file_that_does_not_compile_costs_only_its_parts(tmp_path):
    g = grade(tmp_path, handin(tmp_path, edits={"zero_dp_stage3.cpp": ("namespace dtrain {", "namespace dtrain { int x = ;")}))
    for key in ("part8_forward", "part8_backward", "part9"):
        assert g.scores[key] == 0
    for key in ("part1", "part2", "part3", "part4", "part5", "part6", "part7"):
        assert g.scores[key] == FULL[key]
    assert "does not compile" in g.stdout
    assert "error" in g.stdout  # the compiler's first messages are shown


@pytest.mark.xdist_group("missing")
def test_a_missing_file_counts_as_its_stub(missing_file_graded):
    g = missing_file_graded
    assert g.scores["part1"] == 0
    assert g.scores["part2"] == FULL["part2"]
    assert "data_parallel_preprocess.cpp is missing" in g.stdout


def test_an_mpi_that_cannot_start_is_a_grader_error_not_zeros(tmp_path):
    fake = tempfile.mkdtemp(prefix="kit-fake-mpirun-")  # not under tmp_path: the sandbox user must reach it
    try:
        os.chmod(fake, 0o755)
        for launcher in ("mpirun", "mpirun.openmpi", "mpiexec", "mpiexec.mpich"):  # whichever kitrun picks
            with open(os.path.join(fake, launcher), "w") as f:
                f.write(f"#!/bin/sh\necho '{launcher}: broken on purpose' >&2\nexit 1\n")
            os.chmod(os.path.join(fake, launcher), 0o755)
        g = grade(tmp_path, handin(tmp_path), path_first=fake)
    finally:
        shutil.rmtree(fake)
    assert g.report["status"] == "grader error", g.stdout
    assert "the kit's own stubs did not start their cases either" in g.stdout


@pytest.mark.xdist_group("reference")
def test_a_relative_build_directory(reference_graded):
    stdout, _ = reference_graded
    assert json.loads(stdout.strip().splitlines()[-1])["scoreboard"] == [150.0], stdout


def test_a_deadlock_costs_one_case_and_leaves_no_process(tmp_path):
    g = grade(tmp_path, handin(tmp_path, edits={"func_impl.cpp": (
        "  dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n",
        "  dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n"
        "  if (grad_w.rows() == 4 && dp_comm.rank() == 0) dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n")}))
    part7 = next(p for p in g.report["parts"] if p["key"] == "part7")
    assert part7["cases"] - part7["passed"] == 1
    # The roll-call: the stuck rank's collective, and what the others did.
    assert "rank 0:      waiting in allreduce #3 on dp_comm (8 elements) in collect_weight_grad" in g.stdout
    assert "ranks 1,2,3: finished the case after 2 collectives on dp_comm" in g.stdout
    assert left_behind(tmp_path) == []


def test_a_crash_costs_one_case(tmp_path):
    g = grade(tmp_path, handin(tmp_path, edits={"func_impl.cpp": (
        "Matrix naive_collect_backward_output(const Matrix& output_grad, int mp_group_idx, int mp_size) {",
        "Matrix naive_collect_backward_output(const Matrix& output_grad, int mp_group_idx, int mp_size) {\n"
        "  if (mp_group_idx == 2 && output_grad.rows() == 2) { volatile int* p = nullptr; *p = 1; }")}))
    part5 = next(p for p in g.report["parts"] if p["key"] == "part5")
    assert part5["cases"] - part5["passed"] == 1
    assert "SIGSEGV" in g.stdout
    assert g.scores["part6"] == FULL["part6"]


def test_forged_score_lines_change_nothing(tmp_path):
    forged = ('#include <cstdio>\nnamespace { struct Forge { Forge() { std::printf("{\\"scores\\": {\\"part1\\": 10}, '
              '\\"scoreboard\\": [150]}\\n[       OK ] Part3NaiveForward.InputOneRow\\n"); } } forge; }\n')
    g = grade(tmp_path, handin(tmp_path, impl="student", edits={"func_impl.cpp": ("namespace dtrain {", forged + "namespace dtrain {")}))
    assert g.total == 0


def test_unsafe_members_are_refused_and_named(tmp_path):
    def symlink(info):
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        info.size = 0

    extra = [("../escape.cpp", b"int x;\n"), ("/tmp/absolute.cpp", b"int y;\n"), ("student/link.cpp", b"", symlink)]
    g = grade(tmp_path, handin(tmp_path, extra=extra))
    for name in ("../escape.cpp", "/tmp/absolute.cpp", "student/link.cpp"):
        assert name in g.stdout
    assert g.total == 150  # the honest members still count
    assert not os.path.exists(tmp_path.parent / "escape.cpp")


def test_a_file_that_is_not_a_tarball(tmp_path):
    bogus = tmp_path / "handin.tar"
    bogus.write_bytes(b"this is not a tar archive\n" * 40)
    g = grade(tmp_path, str(bogus))
    assert g.total == 0
    assert g.report["status"] == "not a readable handin"


@pytest.mark.xdist_group("summed")
def test_gradescope_results_schema(summed_graded):
    results = summed_graded[1]
    data = json.loads(results.read_text())
    assert isinstance(data["score"], (int, float)) and data["score"] < 150
    assert data["tests"] and all({"name", "score", "max_score", "output", "visibility"} <= set(t) for t in data["tests"])
    assert sum(t["max_score"] for t in data["tests"]) == 150
    part7 = next(t for t in data["tests"] if t["name"].startswith("part7"))
    assert part7["score"] < part7["max_score"] and "part7: Part7WeightGrad.SeedCaseTwoRows" in part7["output"]


@pytest.mark.xdist_group("six_graded")
def test_batch_mode_writes_a_gradebook_and_reports(six_graded):
    out = six_graded[1]  # ann: the reference, ben: the stubs, fay: no tarball, among others
    rows = {r["handin"]: r for r in csv.DictReader((out / "gradebook.csv").open())}
    assert rows["ann.tar"]["total"] == "150"
    assert rows["ben.tar"]["total"] == "0"
    assert rows["fay.tar"]["status"] == "not a readable handin"
    for stem in ("ann", "ben", "cat", "dan", "eve", "fay"):
        assert (out / f"{stem}.report.txt").exists()
    assert left_behind(out.parent) == []


def wrong_answer_mutants():
    """The assignment's known wrong answers: the extension parts' are not
    graded here (their switches are off), and staff/mutants.py checks them."""
    names = [m.name for m in MUTANTS]
    extension_files = {f for p in table.ALL_PARTS if p.extension for f in p.files}
    return [m for m in MUTANTS[names.index(WRONG_ANSWERS_FROM):] if m.file not in extension_files]


# make check grades through the grader one known bug of each student file,
# the one whose verdict the side's memory account decides among them; the
# other known bugs' and the "correct: ..." variants' hidden-case gradings
# run in make check-long. make check's CTest still runs every known bug and
# every correct variant against the public cases (mutants/*), whose
# memory and traffic rules are the hidden cases' too.
IN_MAKE_CHECK = {"data split by rank instead of by data-parallel group", SUMMED_MUTANT.name,
                 "full weight cached in a static between calls"}


def tier_of(m):
    """The known bug as a parameter: SUMMED's grading is the session's
    (summed_graded); a bug not in IN_MAKE_CHECK is a long check."""
    if m == SUMMED_MUTANT:
        return pytest.param(m, marks=pytest.mark.xdist_group("summed"))
    if m.name in IN_MAKE_CHECK:
        return m
    return pytest.param(m, marks=pytest.mark.long)


@pytest.mark.parametrize("mutant", [tier_of(m) for m in wrong_answer_mutants()], ids=lambda m: m.name)
def test_each_known_bug_loses_points_in_its_parts_only(tmp_path, mutant, request):
    g = request.getfixturevalue("summed_graded")[0] if mutant == SUMMED_MUTANT else \
        grade(tmp_path, handin(tmp_path, edits={mutant.file: (mutant.find, mutant.replace)}))
    for key, full in FULL.items():
        if key in mutant.zero:
            assert g.scores[key] == 0, key
        elif key in mutant.loses:
            assert g.scores[key] < full, key
        else:
            assert g.scores[key] == full, key
