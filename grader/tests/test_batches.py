"""Grading a whole course without losing anything: resumable batches that
survive kill -9 and Ctrl-C, the visibility policy, partial credit when one
file breaks the run, grader faults reported as such, and Canvas's import.

  python3 -m pytest grader/tests/test_batches.py -q      (as root, after `make build`)
"""
import csv
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import (BUILD, GRADE, SUMMED, batch_cmd, batch_env, grade, graded_copy, handin, left_behind,
                      live_processes, marked, six_handins)
from grader.batches import STOP_SECONDS
from grader.namespaces import SHARED_TMP
from grader.slots import SLOTS, uid_base

SANDBOX_BASE = uid_base()
SANDBOX_UIDS = set(range(SANDBOX_BASE, SANDBOX_BASE + SLOTS))


def sandbox_processes(tmp_path):
    """This test's grader processes, and any process of a sandbox user that
    carries no other test's mark."""
    return left_behind(tmp_path) + [f"{p.pid}: {p.command}" for p in live_processes()
                                    if p.uid in SANDBOX_UIDS and not p.marks]


def rows(gradebook):
    with open(gradebook, newline="") as f:
        return list(csv.reader(f))


@pytest.mark.xdist_group("six_graded")
@pytest.mark.long
@pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("KIT_REQUIRE_SANDBOX"), reason="needs root")
def test_a_batch_killed_twice_resumes_to_the_same_gradebook(tmp_path, six_graded):
    inbox = six_handins(tmp_path)
    env = batch_env(tmp_path)
    gradebook = tmp_path / "resumed" / "gradebook.csv"
    rng = random.Random(15442)
    for kill in range(2):
        job = subprocess.Popen(batch_cmd(inbox, gradebook), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                               env=env, start_new_session=True)
        time.sleep(rng.uniform(2.0, 6.0) if kill == 0 else rng.uniform(1.0, 4.0))
        os.kill(job.pid, signal.SIGKILL)  # the grader only: its jobs must die with it
        job.wait()
        deadline = time.monotonic() + 10
        while sandbox_processes(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sandbox_processes(tmp_path) == [], f"after kill {kill + 1}"
        if gradebook.exists():  # whatever is there is whole: a header and complete rows
            assert all(len(r) == len(rows(gradebook)[0]) for r in rows(gradebook))
    proc = subprocess.run(batch_cmd(inbox, gradebook), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout
    resumed = rows(gradebook)
    ann = dict(zip(resumed[0], resumed[1]))
    assert len(resumed) == 7 and (ann["handin"], ann["total"], ann["max"], ann["status"]) == \
        ("ann.tar", "150", "150", "graded")
    log = [json.loads(line) for line in (tmp_path / "resumed" / "gradebook.results" / "graded.jsonl").open()]
    graded = [(entry["handin"], entry["key"]) for entry in log]
    assert sorted(graded) == sorted(set(graded)) and len(graded) == 6, graded  # each content graded once

    again = subprocess.run(batch_cmd(inbox, gradebook), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=900, env=env)
    assert "6 handin(s) already graded" in again.stdout and rows(gradebook) == resumed
    # The gradebook the kills and the resumption made must be the one the
    # same handins graded in one go make (--regrade's own rules:
    # test_case_reports.py, test_a_stopped_regrade_resumes_with_the_command_it_names).
    assert rows(six_graded[1] / "gradebook.csv") == resumed
    assert sandbox_processes(tmp_path) == []


@pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("KIT_REQUIRE_SANDBOX"), reason="needs root")
def test_ctrl_c_stops_a_batch_cleanly(tmp_path):
    inbox = six_handins(tmp_path)
    gradebook = tmp_path / "out" / "gradebook.csv"
    job = subprocess.Popen(batch_cmd(inbox, gradebook), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=marked(tmp_path))
    time.sleep(4)
    job.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    out, _ = job.communicate(timeout=120)
    # Nothing a job does may hold the batch past its STOP_SECONDS (and the summary).
    assert time.monotonic() - stopped <= STOP_SECONDS + 10, out
    assert job.returncode == 130, out
    assert "grade: stopped. Graded now:" in out and "the same command grades the rest" in out
    assert sandbox_processes(tmp_path) == []
    done = [r[0] for r in rows(gradebook)[1:]] if gradebook.exists() else []
    assert len(done) < 6
    uids = range(SANDBOX_BASE, SANDBOX_BASE + SLOTS)
    left = [p for top in SHARED_TMP for p in glob.glob(os.path.join(top, "*")) if os.lstat(p).st_uid in uids]
    assert not left, f"the sandbox users' files outlived the batch: {left}"


@pytest.mark.xdist_group("summed")
def test_hidden_failures_follow_the_visibility_policy(tmp_path, summed_graded):
    g, results = summed_graded
    assert g.scores["part7"] == 0
    # Human report and Autolab output (all of stdout): hidden cases as counts only.
    assert "HiddenPart7" not in g.stdout and "hidden cases failed" in g.stdout
    assert "Part7WeightGrad.SeedCaseTwoRows" in g.stdout  # public ones with their messages
    data = json.loads(results.read_text())
    visible = "\n".join(t["output"] for t in data["tests"] if t["visibility"] == "visible")
    # Never after the due date either: a hidden case's messages hold its values.
    assert all(t["visibility"] == "visible" for t in data["tests"])
    assert "HiddenPart7" not in json.dumps(data) and "hidden cases failed" in visible
    assert data["stdout_visibility"] == "visible"
    staff = grade(tmp_path, handin(tmp_path, name="again.tar", edits=SUMMED), "--show-hidden")
    assert "HiddenPart7WeightGrad" in staff.stdout and "differs at" in staff.stdout


@pytest.mark.long  # another mode (the link check only warning), and 8 ranks waiting until each start-up limit
def test_a_static_initializer_that_never_returns_costs_only_its_files_parts(tmp_path):
    """The link check refuses the initializer (next test); with it only
    warning, this tests what stands behind it: grading each file alone.
    A file that breaks the link alone (test_a_symbol_defined_in_two_files...)
    takes the same path in make check."""
    g = grade(tmp_path, handin(tmp_path, edits={"zero_dp_stage3.cpp": ("namespace dtrain {", NEVER_RETURNS_BEFORE_MAIN)}),
              hangs=True, static="warn")
    for key in ("part1", "part2", "part3", "part4", "part5", "part6", "part7"):
        assert g.scores[key] > 0 and g.scores[key] == g.report["parts"][[p["key"] for p in g.report["parts"]].index(key)]["max_points"], \
            (key, g.stdout, g.report["jobs"])
    assert g.scores["part8_forward"] == g.scores["part8_backward"] == g.scores["part9"] == 0
    assert g.report["status"] == "graded"
    assert "zero_dp_stage3.cpp breaks the program even alone" in g.stdout
    assert left_behind(tmp_path) == []


# It waits rather than spins: the path is the same (every job that holds
# the file meets its start-up limit), and 8 spinning ranks made the test's
# time, and its neighbours', depend on what else the host ran (33 to 65 s).
NEVER_RETURNS_BEFORE_MAIN = "#include <unistd.h>\nnamespace dtrain {\nnamespace { volatile int wait = [] { " \
                            "for (;;) ::pause(); return 0; }(); }"


def test_a_static_initializer_is_refused_by_the_link_check(tmp_path):
    g = grade(tmp_path, handin(tmp_path, edits={"zero_dp_stage3.cpp": ("namespace dtrain {", NEVER_RETURNS_BEFORE_MAIN)}))
    assert g.scores["part8_forward"] == g.scores["part8_backward"] == g.scores["part9"] == 0
    assert g.total == 100 and g.report["status"] == "graded"
    assert g.report["files"]["zero_dp_stage3.cpp"]["state"] == "refused by the link check"
    assert "zero_dp_stage3.cpp:0: fail: has a static initializer" in g.stdout


@pytest.mark.long  # one long scenario: the files linked together, then each file alone with the others' stubs
def test_a_symbol_defined_in_two_files_keeps_both_files_parts(tmp_path):
    helper = ("namespace dtrain {", "namespace dtrain {\nint course_helper() { return 1; }")
    tarball = handin(tmp_path, edits={"func_impl.cpp": helper, "zero_dp_stage3.cpp": helper})
    g = grade(tmp_path, tarball)
    assert g.total == 150, g.stdout
    assert "the files did not link together" in g.stdout and "multiple definition" in g.stdout
    assert "the files break only together" in g.stdout


def test_a_grader_crash_still_writes_results_and_the_autolab_line(tmp_path):
    broken = tmp_path / "broken-build"
    broken.mkdir()
    shutil.copy(os.path.join(BUILD, "compile_commands.json"), broken)
    (broken / "impl_recipe.json").write_text("{ this is not json")
    results = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, GRADE, "--build", str(broken), handin(tmp_path), "--gradescope",
                           str(results)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                          env=marked(tmp_path))
    assert proc.returncode == 0, proc.stdout
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["scoreboard"] == [0.0] and set(last["scores"]) >= {"part1", "part9"}
    data = json.loads(results.read_text())
    assert data["score"] == 0 and "status: grader error" in data["output"] and "not the handin's fault" in data["output"]
    assert "grader error" in proc.stdout


def test_grader_errors_of_a_batch_are_listed_by_one_command(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    handin(inbox, name="ann.tar")
    broken = tmp_path / "broken-build"
    broken.mkdir()
    shutil.copy(os.path.join(BUILD, "compile_commands.json"), broken)
    (broken / "impl_recipe.json").write_text("{ this is not json")
    gradebook = tmp_path / "out" / "gradebook.csv"
    proc = subprocess.run([sys.executable, GRADE, "--build", str(broken), "--batch", str(inbox), "--csv",
                           str(gradebook)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                          env=marked(tmp_path))
    assert "1 grader error(s): ann.tar" in proc.stdout, proc.stdout
    listed = subprocess.run([sys.executable, GRADE, "--errors", str(gradebook)], stdout=subprocess.PIPE, text=True)
    assert listed.stdout.startswith("ann.tar\n") and "the grader failed in its" in listed.stdout


@pytest.mark.xdist_group("six_graded")
def test_a_canvas_import_maps_handins_to_students_and_lists_the_rest(tmp_path, six_graded):
    gradebook = graded_copy(six_graded, tmp_path)  # graded already: the run only writes the import
    roster = tmp_path / "export.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Distributed training (77)\n"
                      "    Points Possible,,,,,150\n"
                      "\"Doe, Ann\",101,9001,ann,Sec A,\n"
                      "\"Roe, Cat\",102,9002,CAT,Sec B,\n"
                      "\"Poe, Carl\",103,9003,carl3,Sec A,\n", encoding="utf-8")
    canvas = tmp_path / "out" / "canvas.csv"
    proc = subprocess.run(batch_cmd(six_graded[0], gradebook, "--canvas", str(canvas), "--roster", str(roster),
                                    "--assignment", "Distributed training (77)"),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900, env=batch_env(tmp_path))
    assert proc.returncode == 0 and "6 handin(s) already graded" in proc.stdout, proc.stdout
    got = rows(canvas)
    assert got[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Distributed training (77)"]
    assert got[1] == ["Doe, Ann", "101", "9001", "ann", "Sec A", "150"]
    assert got[2][:5] == ["Roe, Cat", "102", "9002", "CAT", "Sec B"] and float(got[2][5]) < 150
    assert len(got) == 3
    unmatched = (tmp_path / "out" / "canvas.csv.unmatched.txt").read_text().splitlines()
    assert [line.split(",")[0] for line in unmatched] == ["ben.tar", "dan.tar", "eve.tar", "fay.tar"], unmatched
    assert "ben.tar,0" in unmatched and "ben.tar" in proc.stdout
    assert "1 on the roster without a handin" in proc.stdout


@pytest.mark.xdist_group("six_graded")
def test_one_student_regraded_by_name_changes_only_that_row(tmp_path, six_graded):
    """The TA's command for one student: its handin alone, every other row kept
    (test_regrades.py has the rest of the term, with gradings faked)."""
    gradebook = graded_copy(six_graded, tmp_path)
    before = rows(gradebook)
    log = tmp_path / "out" / "gradebook.results" / "graded.jsonl"
    logged = log.read_text().splitlines()
    proc = subprocess.run(batch_cmd(six_graded[0] / "cat.tar", gradebook, "--regrade"), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900, env=batch_env(tmp_path))
    assert proc.returncode == 0 and "grade: 1 handins graded now, 0 before" in proc.stdout, proc.stdout
    assert rows(gradebook) == before and len(before) == 7
    graded = log.read_text().splitlines()
    assert graded[:len(logged)] == logged and [json.loads(line)["handin"] for line in graded[len(logged):]] == \
        ["cat.tar"]
