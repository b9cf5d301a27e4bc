"""What a student reads of a failing case: bounded, the first difference on
each rank, a hang's time limit, a compile error in the student's own file
names, a file's problem said once, and a stopped --regrade resumed by the
command it names.

  python3 -m pytest grader/tests/test_case_reports.py -q      (after `make build`)
"""
import argparse
import os
import re
import signal

import pytest

from conftest import BUILD, grade, handin
from grader import batches, grades, grading
from kit import limits
from kit import parts as table
from kit.diagnosis import roll_call
from kit.outcomes import CaseOutcome
from staff.mutants import MUTANTS

ADAM = next(m for m in MUTANTS if m.name == "Adam without bias correction")


def test_the_adam_bias_correction_bug_gets_a_short_report(tmp_path):
    g = grade(tmp_path, handin(tmp_path, edits={ADAM.file: (ADAM.find, ADAM.replace)}))
    assert g.scores["part9"] == 0
    lines = g.stdout.splitlines()
    assert len(lines) <= 150, g.stdout
    assert "Google Test trace" not in g.stdout and "expected: (" not in g.stdout
    cases = [i for i, line in enumerate(lines) if re.match(r"  part9: Part9\w+\.\w+   handout", line)]
    assert cases, g.stdout
    for at in cases:  # each failing case: the first difference on each rank that failed
        shown = lines[at + 1:next((i for i in cases if i > at), len(lines))]
        firsts = [line for line in shown if re.match(r"\s+\[ranks? [\d,]+\] .*differs at \(\d+, \d+\): expected "
                                                     r"\S+, got \S+", line)]
        assert firsts, "\n".join(lines[at:at + 8])


def test_a_student_who_prints_a_lot_still_gets_a_bounded_summary():
    flood = "\n\n".join(f"failure {i}\n" + "value row\n" * 50 for i in range(400))
    outcome = CaseOutcome("Part3NaiveForward.X", False, failures=[
        {"rank": r, "message": flood.replace("failure 0", f"failure 0 on {r}") + "x" * 100000} for r in range(8)])
    short = outcome.summary(max_lines=6)
    assert len(short) <= 25 and all(len(line) < 400 for line in short), short
    assert sum("more failures on this rank" in line for line in short) == 8


def test_a_compile_error_names_the_students_file_and_line(tmp_path):
    broken = ("Matrix naive_collect_forward_input(const Matrix& x, Communicator& mp_comm, int mp_size) {",
              "Matrix naive_collect_forward_input(const Matrix& x, Communicator& mp_comm, int mp_size) {\n"
              "  int oops = ;")
    g = grade(tmp_path, handin(tmp_path, edits={"func_impl.cpp": broken}))
    assert re.search(r"^\s+func_impl\.cpp:\d+:\d+: error", g.stdout, re.M), g.stdout
    assert "kit-grade-" not in g.stdout and "/src/func_impl.cpp" not in g.stdout
    assert g.stdout.count("func_impl.cpp does not compile") == 1


@pytest.mark.xdist_group("missing")
def test_a_missing_file_is_said_once(missing_file_graded):
    g = missing_file_graded
    assert g.stdout.count("data_parallel_preprocess.cpp is missing") == 1, g.stdout
    assert "graded with the stub" not in g.stdout
    assert g.scores["part1"] == 0 and g.total == table.TOTAL_POINTS - 10


def test_a_hang_names_its_time_limit_and_each_ranks_doing(tmp_path):
    spins = ("  dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n",
             "  dp_comm.allreduce(grad_b, sum_b, Op::Sum);\n"
             "  if (grad_w.rows() == 4 && dp_comm.rank() == 0) for (volatile int i = 0;; i = i + 1) {}\n")
    g = grade(tmp_path, handin(tmp_path, edits={"func_impl.cpp": spins}), hangs=True)
    limit = limits.limit(table.CASE_SECONDS) * limits.HANG_SHARE
    assert f"the case did not finish within its time limit of {limit:g} s" in g.stdout, g.stdout
    assert re.search(r"rank 0: +still running collect_weight_grad, outside any call of the communicator, after 2 "
                     r"collectives on dp_comm", g.stdout), g.stdout
    assert "in no collective" not in g.stdout and "without a collective" not in g.stdout


def test_a_roll_call_where_every_rank_does_the_same_is_one_sentence():
    answers = {r: {"state": "still running split_data, outside any call of the communicator",
                   "seconds": limits.limit(table.CASE_SECONDS)} for r in range(4)}
    text = roll_call("Part3NaiveForward.Anything", answers)
    assert text == (f"the case did not finish within its time limit of {limits.limit(table.CASE_SECONDS):g} s; "
                    "all 4 ranks: still running split_data, outside any call of the communicator"), text


def test_a_stopped_regrade_resumes_with_the_command_it_names(tmp_path, monkeypatch, capsys):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for name in ("a", "b", "c", "d"):
        (inbox / f"{name}.tar").write_bytes(b"not a tar " + name.encode())
    graded = []

    def fake_grade(handin, build, cancel=None, private=(), **_):
        if cancel.is_set():
            raise grading.Cancelled(handin)
        graded.append(os.path.basename(handin))
        if len(graded) == 2 and stop_after_two[0]:  # Ctrl-C, while the third waits its turn
            os.kill(os.getpid(), signal.SIGINT)
            cancel.wait(5)
            raise grading.Cancelled(handin)
        return grades.Grade(os.path.basename(handin), status="graded", parts=grades.nothing_graded())

    monkeypatch.setattr(grading, "grade_handin", fake_grade)
    monkeypatch.setattr("sys.argv", ["grader/grade", "--batch", str(inbox), "--csv", str(tmp_path / "g.csv"),
                                     "--regrade"])
    args = argparse.Namespace(batch=str(inbox), csv=str(tmp_path / "g.csv"), jobs=1, regrade=False, build=BUILD,
                              show_hidden=False, canvas=None, roster=None, assignment="x")
    stop_after_two = [False]
    assert batches.run_batch(args) == 0 and len(graded) == 4  # graded once
    graded.clear()
    args.regrade, stop_after_two[0] = True, True
    previous = signal.getsignal(signal.SIGINT)
    try:
        assert batches.run_batch(args) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    out = capsys.readouterr().out
    assert "going on with the regrade begun" not in out, out  # a new regrade
    assert f"the same command grades the rest, going on with the regrade: grader/grade --batch {inbox} " in out, out
    assert out.rstrip().endswith("--regrade"), out
    done_first = graded[:1]
    graded.clear()
    stop_after_two[0] = False
    args.regrade = False  # a plain run meanwhile names the command that finishes the regrade
    assert batches.run_batch(args) == 0 and graded == []
    assert "To finish the regrade: grader/grade --batch" in capsys.readouterr().out
    args.regrade = True
    assert batches.run_batch(args) == 0
    out = capsys.readouterr().out
    assert "going on with the regrade begun" in out and "1 handin(s) already graded" in out, out
    assert sorted(graded + done_first) == ["a.tar", "b.tar", "c.tar", "d.tar"], graded
    graded.clear()
    assert batches.run_batch(args) == 0 and len(graded) == 4  # that regrade finished: the next one is new
