"""The student's debugging loop has no dead ends: what a student sees when a
case hangs, crashes, throws or multiplies matrices of the wrong shapes, run
through make or by hand.

  python3 -m pytest staff/tests/test_debugging_loop.py -q -p no:cacheprovider

Needs a configured build (make build); each test builds one broken copy of
the reference against it.
"""
import os
import re
import subprocess
import sys

import pytest

from kit.outcomes import CaseOutcome
from kit.paths import KIT_DIR, KITRUN, REFERENCE_DIR
from staff.tests.broken import broken_reference, mutant_binary


def run(cmd, **kw) -> str:
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, **kw)
    return proc.stdout


def test_a_short_summary_cuts_values_before_the_roll_call():
    dump = "x differs at (0, 0): expected 1, got 2\n  expected: (2, 2) [[1, 2],\n      [3, 4]]\n" \
           "  actual:   (2, 2) [[2, 2],\n      [3, 4]]"
    rollcall = "the case did not finish; what each rank was doing after 5.0 s:\n" \
               "  rank 0:      waiting in allreduce #3 on dp_comm (8 elements) in collect_weight_grad\n" \
               "  ranks 1,2,3: finished the case after 2 collectives on dp_comm"
    outcome = CaseOutcome("Part7WeightGrad.X", False, failures=[
        {"rank": r, "message": dump.replace("got 2", f"got {r + 2}")} for r in range(3)] + [
        {"rank": None, "message": rollcall}])
    short = outcome.summary(max_lines=6)
    assert [line for line in short if "waiting in allreduce #3" in line or "finished the case" in line] == \
        rollcall.splitlines()[1:]
    assert sum("differs at" in line for line in short) == 3  # each rank's first line stays
    assert not any("[[" in line for line in short)           # the values go first
    assert short[-1].startswith("... (12 more lines; VERBOSE=1")
    assert len(outcome.summary(max_lines=None)) == 3 * 5 + 3


@pytest.mark.long  # one long scenario: a hang waited out twice, by kitrun and bare
def test_a_hang_run_by_hand_gets_its_roll_call_and_the_remaining_cases_run(tmp_path):
    binary = mutant_binary(tmp_path, "one rank calls an extra allreduce")
    out = run([KITRUN, "-n", "4", binary, "--gtest_filter=Part7*"], cwd=str(tmp_path))
    assert re.search(r"rank 0: +waiting in allreduce #3 on dp_comm \(8 elements\) in collect_weight_grad", out), out
    assert re.search(r"ranks 1,2,3: +finished the case after 2 collectives on dp_comm", out), out
    # The case after the hang ran in a new job, and the totals count every case.
    hung = out.index("the job ended here")
    assert re.search(r"\[       OK \] Part7WeightGrad\.\w+", out[hung:]), out
    assert re.search(r"^3 passed, 1 failed", out, re.M), out
    # KIT_BARE=1 runs the binary itself: it says what ended the job, and how to go on.
    bare = run([KITRUN, "-n", "4", binary, "--gtest_filter=Part7*"], cwd=str(tmp_path),
               env=dict(os.environ, KIT_BARE="1"))
    assert re.search(r"\[rank 0\] Part7WeightGrad\.\w+ did not finish \([\d.]+ s\): waiting in allreduce #3", bare), bare
    assert "runs the remaining cases in a new job" in bare, bare


def test_crashes_and_exceptions_name_the_student_function(tmp_path):
    binary = mutant_binary(tmp_path, "segfaults on one rank")
    out = run([KITRUN, "-n", "4", binary, "--gtest_filter=Part5*"])
    assert "[rank 2] crashed with SIGSEGV (invalid memory access) in naive_collect_backward_output" in out, out
    (tmp_path / "throws").mkdir()
    head = "                                     int rank) {"
    binary = broken_reference(tmp_path / "throws", "data_parallel_preprocess.cpp", head,
                              head + "\n  if (rank >= 0) throw std::out_of_range(\"map::at\");")
    out = run([KITRUN, "-n", "1", binary, "--gtest_filter=Part1DataSplit*"])
    assert re.search(r"exception in split_data \(called with x_train \(\d+, \d+\), y_train \(\d+, 1\)\): map::at", out), out


def test_a_shape_error_names_the_sizes_and_the_students_line(tmp_path):
    find = "gemm(x, true, output_grad, false, grad_w.full);"
    with open(os.path.join(REFERENCE_DIR, "zero_dp_stage3.cpp")) as f:
        line = next(i for i, text in enumerate(f, 1) if find in text)
    # Eigen's product, with x not transposed: the kit's check of the product names both shapes.
    (tmp_path / "eigen").mkdir()
    binary = broken_reference(tmp_path / "eigen", "zero_dp_stage3.cpp", find, "grad_w.full.noalias() = x * output_grad;")
    out = run([KITRUN, "-n", "4", binary, "--gtest_filter=Part8Backward.SeedPaddingCase"])
    assert (f"Eigen check failed in ZeroDPStage3FCLayer::backward (called with output_grad (1, 3)) at "
            f"student/zero_dp_stage3.cpp:{line}: a matrix product A * B whose inner sizes differ: A is (1, 2), "
            f"B is (1, 3); A's columns must equal B's rows\n") in out, out
    # ... and the line itself, on the next line of the message.
    assert re.search(rf"B's rows\n +student/zero_dp_stage3\.cpp:{line}: grad_w\.full\.noalias\(\) = x \* output_grad;",
                     out), out
    # An operand of another kind (here an expression): Eigen's own check, decoded.
    (tmp_path / "expression").mkdir()
    binary = broken_reference(tmp_path / "expression", "zero_dp_stage3.cpp", find,
                              "grad_w.full.noalias() = (2.0 * x) * output_grad;")
    out = run([KITRUN, "-n", "4", binary, "--gtest_filter=Part8Backward.SeedPaddingCase"])
    assert (f"at student/zero_dp_stage3.cpp:{line}: a matrix product A * B whose inner sizes differ "
            f"(A.cols() != B.rows()): A has 2 columns, B has 1 row\n") in out, out
    # The same mistake through gemm(): its own message, with both shapes.
    (tmp_path / "gemm").mkdir()
    binary = broken_reference(tmp_path / "gemm", "zero_dp_stage3.cpp", find, find.replace("x, true", "x, false"))
    out = run([KITRUN, "-n", "4", binary, "--gtest_filter=Part8Backward.SeedPaddingCase"])
    assert ("exception in ZeroDPStage3FCLayer::backward (called with output_grad (1, 3)): gemm: op(a) is (1, 2), "
            "op(b) is (1, 3): op(a)'s columns must equal op(b)'s rows") in out, out


def test_a_refused_file_is_said_before_the_cases_and_the_total_is_the_graders(tmp_path):
    head = "namespace dtrain {"
    binary = broken_reference(tmp_path, "func_impl.cpp", head,
                              head + "\nstatic const char* home = std::getenv(\"HOME\");")
    out = run([sys.executable, "-m", "kit", "test", "part1", "part7", "--binary", binary,
               "--sources", str(tmp_path / "impl")], cwd=KIT_DIR)
    refusal = out.index("!! THE GRADER WOULD REFUSE student/func_impl.cpp")
    assert refusal < out.index("[ RUN      ]"), out
    assert re.search(r"^part7: 0 / 10 points", out, re.M), out
    assert "the grader refuses student/func_impl.cpp and grades it as the stub: 10 by these cases" in out, out
    assert re.search(r"^total: 10 / 20 points", out, re.M), out
