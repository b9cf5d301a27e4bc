"""A compiler, linker or MPI launcher killed by a signal or out of memory,
and a platform's time limit that correct code can't meet, are the grading
host's fault: the grade is a grader error that names what ran out and the
setting to raise, never "does not compile" and never a graded 0.

  python3 -m pytest grader/tests/test_resource_failures.py -q      (after `make build`)
"""
import uuid

import pytest

from conftest import BUILD, handin
from grader import grading
from kit import host_limits
from kit.build import resource_failure
from kit.jobs import JobTally, Launch, run_job


@pytest.mark.parametrize("status, output, says", [
    (-9, "", "memory"), (137, "", "memory"), (153, "", "file size"), (-24, "", "CPU time"),
    (1, "c++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.", "signal terminated"),
    (1, "c++: internal compiler error: File size limit exceeded signal terminated program cc1plus", "File size"),
    (1, "cc1plus: out of memory allocating 65536 bytes after a total of 1048576 bytes", "out of memory"),
])
def test_a_killed_tool_is_told_from_a_refusal(status, output, says):
    assert says in resource_failure(status, output)


@pytest.mark.parametrize("status, output", [
    (1, "x.cpp:3:1: error: expected ';' before '}' token"), (1, ""), (0, ""),
    (1, "x.cpp:3: error: 'signal' was not declared in this scope"),
])
def test_a_compile_error_is_no_resource_failure(status, output):
    assert resource_failure(status, output) is None


def test_a_compiler_killed_during_grading_is_a_grader_error(tmp_path, monkeypatch):
    # A comment no object in the cache has, so the compiler does run; then SIGKILL, as the kernel's OOM killer does.
    marker = f"// {uuid.uuid4()}\n"
    tar = handin(tmp_path, edits={"func_impl.cpp": ("#include", marker + "#include")})
    real = grading.Grading.in_sandbox

    def killed_compiler(self, cmd, timeout):
        if "-c" in cmd:
            return -9, ""
        return real(self, cmd, timeout)

    monkeypatch.setattr(grading.Grading, "in_sandbox", killed_compiler)
    grade = grading.grade_handin(tar, BUILD)
    assert grade.status == "grader error", grade.notes
    notes = "\n".join(grade.notes)
    assert "was killed; what ran out: memory" in notes and "not the handin's fault" in notes, notes
    assert all(f.get("state") != "does not compile" for f in grade.files.values()), grade.files
    assert grade.total == 0


def test_the_oom_killers_count_names_memory_for_certain(monkeypatch):
    counts = iter([5, 6])
    monkeypatch.setattr(host_limits, "oom_kills", lambda: next(counts))
    monkeypatch.setattr(host_limits, "memory_limit", lambda: 768 << 20)
    said = resource_failure(-9, "", oom_before=host_limits.oom_kills())
    assert "OOM killer" in said and "768 MiB" in said and "raise the memory" in said


def test_an_mpi_launcher_killed_from_outside_is_a_resource_failure(tmp_path):
    # The job's own launcher killed by a signal (the platform's limit, an admin):
    # no case is blamed for it. Here the "launcher" kills itself with SIGKILL.
    launch = Launch(binary="/bin/true", ranks=1, timeout=30, prefix=["sh", "-c", "kill -9 $$", "launcher"],
                    capture=True, results_dir=str(tmp_path))
    with pytest.raises(host_limits.ResourceFailure, match="MPI launcher was killed by signal 9"):
        run_job(launch, "Part1DataSplit.*", JobTally())


def test_out_of_time_with_no_case_hung_is_the_graders_error(tmp_path):
    # A platform time limit the machine can't meet for correct code: nothing
    # is graded, and the note names the setting; never a graded 0.
    grade = grading.grade_handin(handin(tmp_path), BUILD, time_budget=2.5)
    assert grade.status == "grader error", grade.notes
    notes = "\n".join(grade.notes)
    assert "ran out before" in notes and "no case hung" in notes and "raise the grading time" in notes, notes


def test_a_part_whose_case_ended_its_job_runs_after_the_others():
    from kit.jobs import CaseOutcome, split_off_part
    pending = ["Part7WeightGrad.B", "Part8Forward.A", "HiddenPart7WeightGrad.C", "Part9Adam.D"]
    now, later = split_off_part(pending, CaseOutcome("Part7WeightGrad.A", False, ended_job=True))
    assert now == ["Part8Forward.A", "Part9Adam.D"] and later == ["Part7WeightGrad.B", "HiddenPart7WeightGrad.C"]


def test_a_slow_case_spends_the_time_as_a_hang_does(monkeypatch):
    # Out of time, code that ran each case to near its limit is the handin's
    # fault, as a hang is; correct code takes a twentieth of a limit.
    from kit.jobs import CaseOutcome, is_slow
    monkeypatch.setattr(host_limits, "cpus", lambda: 2.0)
    assert is_slow(CaseOutcome("Part3NaiveForward.X", True, seconds=2.0), 1.0)
    assert not is_slow(CaseOutcome("Part3NaiveForward.X", True, seconds=0.3), 1.0)
    assert not is_slow(CaseOutcome("Part9Training.OneShortEpochLearns", True, seconds=2.0), 1.0)  # 120 s limit
    monkeypatch.setattr(host_limits, "cpus", lambda: 0.25)  # the limit stretched, as the watchdog stretches it
    assert not is_slow(CaseOutcome("Part3NaiveForward.X", True, seconds=2.0), 1.0)
