"""Re-scoring a gradebook under the course's points and visibility from the
results a batch keeps, running no handin (grader/rescore.py), and the
scale every gradebook row carries.

  python3 -m pytest grader/tests/test_rescore.py -q      (the last test after `make build`)
"""
import csv
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, GRADE, graded_copy
from grader import rescore
from grader.grades import Grade, PartResult
from kit import parts as table


def course(tmp_path, body: str, name: str) -> str:
    path = tmp_path / name
    path.write_text(body)
    return str(path)


def grade_cmd(*args, course_file=None):
    env = {k: v for k, v in os.environ.items() if k not in ("KIT_COURSE", "KIT_EXTENSIONS")}
    if course_file:
        env["KIT_COURSE"] = course_file
    return subprocess.run([sys.executable, GRADE, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env, timeout=900)


def rows(gradebook):
    with open(gradebook, newline="") as f:
        return {r["handin"]: r for r in csv.DictReader(f)}


def kept_result(state_dir, name: str, passed_share: float, failing=()):
    """A batch's kept result of a handin whose parts pass `passed_share` of
    their cases (4 public, 3 hidden each), as grader/batches.py writes it."""
    parts = []
    for p in table.PARTS:
        public, hidden = round(4 * passed_share), round(3 * passed_share)
        failures = [{"case": c, "hidden": False, "lines": ["wrong"]} for c in failing if p.owns(c)]
        points = p.score_counts(public, 4, hidden, 3, bool(p.gate_failed({c: False for c in failing})))
        parts.append(PartResult(p.key, p.title, points, p.points, public + hidden, 7, failures, 3, hidden))
    g = Grade(f"{name}.tar", parts=parts, seconds=12.0)
    state = {"handin": g.handin, "key": "k", "kit": "v", "scores": g.scores(), "total": g.total, "status": g.status,
             "notes": [], "seconds": 12.0, **rescore.kept(g, f"/handins/{name}.tar")}
    (state_dir / f"{name}.json").write_text(json.dumps(state))
    return state


def test_a_points_change_is_re_scored_from_the_kept_results_in_seconds(tmp_path):
    out = tmp_path / "out"
    (out / "gradebook.results").mkdir(parents=True)
    kept_result(out / "gradebook.results", "ann", 1.0)
    kept_result(out / "gradebook.results", "ben", 0.0)
    # A failing gate case costs its whole part, under any points.
    kept_result(out / "gradebook.results", "cat", 1.0, failing=("Part8Forward.KeepsNoFullWeight",))
    gradebook = str(out / "gradebook.csv")
    assert grade_cmd("--rescore", gradebook).returncode == 0
    before = rows(gradebook)
    assert before["ann.tar"]["total"] == before["ann.tar"]["max"] == "150"
    assert before["cat.tar"]["part8_forward"] == "0" and before["cat.tar"]["total"] == "130"
    assert {r["course"] for r in before.values()} == {table.COURSE_STAMP}

    new = course(tmp_path, "[points]\npart2 = 15\n[visibility]\npublic = \"names\"\n", "new.toml")
    proc = grade_cmd("--rescore", gradebook, course_file=new)
    assert proc.returncode == 0, proc.stdout
    assert "re-scored 3 handin(s) out of 145" in proc.stdout and "no handin ran" in proc.stdout
    after = rows(gradebook)
    assert (after["ann.tar"]["part2"], after["ann.tar"]["total"], after["ann.tar"]["max"]) == ("15", "145", "145")
    assert (after["ben.tar"]["total"], after["cat.tar"]["total"]) == ("0", "125")
    assert after["ann.tar"]["course"] != table.COURSE_STAMP and after["ann.tar"]["kit"] == "v"
    # The reports follow the new visibility: names, without the messages.
    report = (out / "cat.report.txt").read_text()
    assert "Part8Forward.KeepsNoFullWeight" in report and "      wrong" not in report
    assert "re-scored under course" in report and "/ 145" in report
    # Back to the course it was graded under: the same gradebook again.
    assert grade_cmd("--rescore", gradebook).returncode == 0 and rows(gradebook) == before


def test_what_cannot_be_re_scored_keeps_its_row_and_names_the_regrade(tmp_path):
    results = tmp_path / "gradebook.results"
    results.mkdir()
    kept_result(results, "ann", 1.0)
    old = {"handin": "dan.tar", "key": "k", "kit": "v", "scores": {}, "total": 90, "status": "graded", "notes": []}
    (results / "dan.json").write_text(json.dumps(old))  # kept by a kit before the counts
    proc = grade_cmd("--rescore", str(tmp_path / "gradebook.csv"),
                     course_file=course(tmp_path, "extensions = [\"part13_ddp\"]\n", "ext.toml"))
    assert proc.returncode == 1, proc.stdout
    assert "ann.tar keeps its row (150 / 150): the course now grades part13_ddp, whose cases never ran" in proc.stdout
    assert "dan.tar keeps its row (90 / ?): kept by an older kit" in proc.stdout
    assert f"grade them again: grader/grade --batch /handins --csv {tmp_path / 'gradebook.csv'} --regrade" \
        in proc.stdout
    assert grade_cmd("--rescore", str(tmp_path / "nothing.csv")).returncode == 2


@pytest.mark.xdist_group("six_graded")
def test_a_batch_names_rows_of_another_scale_and_the_commands_then_re_scores_them(tmp_path, six_graded):
    # The reference, the stubs, a bug, a file missing, one not compiling, no tar: graded once for the session.
    inbox, gradebook = six_graded[0], str(graded_copy(six_graded, tmp_path))
    batch = ("--build", BUILD, "--batch", str(inbox), "--jobs", "2", "--csv", gradebook)
    first = grade_cmd(*batch)
    assert first.returncode == 0 and "another course" not in first.stdout, first.stdout
    graded = rows(gradebook)
    assert (graded["ann.tar"]["total"], graded["ann.tar"]["max"]) == ("150", "150")
    assert (graded["cat.tar"]["part7"], graded["ben.tar"]["total"], graded["fay.tar"]["total"]) == ("0", "0", "0")

    new = course(tmp_path, "[points]\npart2 = 15\npart7 = 20\n", "new.toml")
    again = grade_cmd(*batch, course_file=new)  # nothing to grade; the rows are of the old scale
    assert "6 handin(s) already graded" in again.stdout
    assert f"6 of 6 row(s) of {gradebook} were scored under another course (out of 150)" in again.stdout
    assert f"grader/grade --rescore {gradebook}" in again.stdout and "--regrade" in again.stdout
    proc = grade_cmd("--rescore", gradebook, course_file=new)
    assert proc.returncode == 0 and "no handin ran" in proc.stdout, proc.stdout
    after = rows(gradebook)
    assert (after["ann.tar"]["total"], after["ann.tar"]["max"]) == ("155", "155")
    assert (after["cat.tar"]["total"], after["cat.tar"]["part7"]) == ("135", "0")
    assert (after["dan.tar"]["part1"], after["fay.tar"]["total"], after["fay.tar"]["max"]) == ("0", "0", "155")
    for name, row in graded.items():  # every part scored as the cases scored it, under the new points
        for p in table.PARTS:
            share = float(row[p.key]) / table.TABLE_POINTS[p.key]
            assert float(after[name][p.key]) == pytest.approx(share * {"part2": 15, "part7": 20}.get(p.key, p.points),
                                                              abs=0.01), (name, p.key)
    assert "another course" not in grade_cmd(*batch, course_file=new).stdout


def test_a_rescore_rewrites_canvas_and_the_reports_without_a_dropped_part(tmp_path):
    """Part 13 dropped after grading: the gradebook, every report and Canvas's
    import on the new scale, running nothing."""
    out = tmp_path / "out"
    results = out / "gradebook.results"
    results.mkdir(parents=True)
    for name, share in (("ann", 1.0), ("ben", 0.0)):
        state = kept_result(results, name, share)
        # As a course that graded Part 13 too kept it: its part, its file, its 20 points.
        state["parts"].append({"key": "part13_ddp", "title": "DDP", "points": 20.0 * share, "max_points": 20,
                               "passed": round(7 * share), "cases": 7, "failures": [], "hidden_cases": 3,
                               "hidden_passed": round(3 * share), "unconfirmed": False})
        state["files"] = {f: {"state": "compiled"} for f in table.IMPL_FILES + ("ddp_buckets.cpp",)}
        state["scores"]["part13_ddp"] = 20.0 * share
        state["total"] += 20.0 * share
        state["max"] = 170
        (results / f"{name}.json").write_text(json.dumps(state))
    roster = tmp_path / "export.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n\"Doe, Ann\",101,9001,ann,A\n"
                      "\"Roe, Ben\",102,9002,ben,B\n")
    canvas = out / "canvas.csv"
    canvas.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Distributed training\n"
                      "\"Doe, Ann\",101,9001,ann,A,170\n")  # the old scale's
    proc = grade_cmd("--rescore", str(out / "gradebook.csv"), "--canvas", str(canvas), "--roster", str(roster))
    assert proc.returncode == 0 and "no handin ran" in proc.stdout, proc.stdout
    assert "no handin ran" in proc.stdout and f"Canvas's import {canvas}" in proc.stdout
    with open(canvas, newline="") as f:
        assert list(csv.reader(f)) == [
            ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Distributed training"],
            ["Doe, Ann", "101", "9001", "ann", "A", "150"], ["Roe, Ben", "102", "9002", "ben", "B", "0"]]
    ann = rows(out / "gradebook.csv")["ann.tar"]
    assert ann["max"] == "150" and "part13_ddp" not in ann
    report = (out / "ann.report.txt").read_text()
    assert "ddp_buckets.cpp" not in report and "part13" not in report and "total" in report and "150 / 150" in report
    assert "func_impl.cpp: compiled" in report
    # --roster without --canvas says what it is for, rather than being ignored.
    assert grade_cmd("--rescore", str(out / "gradebook.csv"), "--roster", str(roster)).returncode == 2
