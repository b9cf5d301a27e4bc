"""A compiler or linker the OOM killer ended, an MPI launcher killed from
outside, and a platform's time limit that correct code can't meet, are the
grading host's fault: the grade is a grader error that names what ran out
and the setting to raise, never "does not compile" and never a graded 0.
What the handin can cause is never one: a compiler's messages (it writes
them: `#error virtual memory exhausted`), a compiler killed by the
sandbox's own limits, time its compile or cases spent.

  python3 -m pytest grader/tests/test_resource_failures.py -q      (after `make build`)
"""
import uuid

import pytest

from conftest import BUILD, handin
from grader import grading
from grader.sandbox import Sandbox
from kit import host_limits
from kit.build import Ran, compile_one, resource_failure
from kit import parts as table
from kit.limits import JOB_MEMORY_MIB
from kit.launch import JobTally, Launch, run_job
from kit.recipe import recipe


@pytest.mark.parametrize("status, output", [
    (-9, ""), (137, ""), (153, ""), (-24, ""), (1, "x.cpp:3:1: error: expected ';' before '}' token"), (1, ""),
    (1, "c++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated."),
    (1, "x.cpp:1:2: error: #error virtual memory exhausted"),
    (1, "cc1plus: out of memory allocating 65536 bytes after a total of 1048576 bytes"),
])
def test_no_status_or_message_alone_makes_a_resource_failure(status, output, monkeypatch):
    # The messages are the handin's to write (#error ...), and a signal may be
    # the sandbox's own limit the handin ran into: neither is the platform's.
    monkeypatch.setattr(host_limits, "oom_kills", lambda: 3)
    assert resource_failure(status, oom_before=host_limits.oom_kills()) is None


def test_a_compile_that_writes_the_words_of_a_killed_compiler_does_not_compile(tmp_path):
    source = tmp_path / "func_impl.cpp"
    source.write_text("#error virtual memory exhausted: Cannot allocate memory\n"
                      "// internal compiler error: Killed signal terminated program cc1plus\n")
    errors = compile_one(recipe(BUILD), str(source), str(tmp_path / "x.o"))
    assert errors and "virtual memory exhausted" in errors


def test_a_compiler_killed_during_grading_is_a_grader_error(tmp_path, monkeypatch):
    # A comment no object in the cache has, so the compiler does run; then
    # SIGKILL, as the kernel's OOM killer does, and its count rises.
    marker = f"// {uuid.uuid4()}\n"
    tar = handin(tmp_path, edits={"func_impl.cpp": ("#include", marker + "#include")})
    real = Sandbox.compile
    counts = {"oom": 0}

    def killed_compiler(self, cmd, timeout, stall=None, cpu_limit=None):
        if marker.strip("/ \n") not in open(cmd[cmd.index("-c") + 1]).read():
            return real(self, cmd, timeout)
        counts["oom"] += 1
        return Ran(-9, "", 0.5)

    monkeypatch.setattr(Sandbox, "compile", killed_compiler)
    monkeypatch.setattr(host_limits, "oom_kills", lambda: counts["oom"])
    grade = grading.grade_handin(tar, BUILD)
    assert grade.status == "grader error", grade.notes
    notes = "\n".join(grade.notes)
    assert "was killed; what ran out: memory: the kernel's OOM killer" in notes and "not the handin's fault" in notes
    assert all(f.get("state") != "does not compile" for f in grade.files.values()), grade.files
    assert grade.total == 0


def test_a_compiler_killed_without_the_oom_killer_is_the_handins(tmp_path, monkeypatch):
    marker = f"// {uuid.uuid4()}\n"
    tar = handin(tmp_path, edits={"func_impl.cpp": ("#include", marker + "#include")})
    real = Sandbox.compile

    def killed_compiler(self, cmd, timeout, stall=None, cpu_limit=None):
        if marker.strip("/ \n") not in open(cmd[cmd.index("-c") + 1]).read():
            return real(self, cmd, timeout)
        return Ran(1, "c++: fatal error: Killed signal terminated program cc1plus", 0.5)

    monkeypatch.setattr(Sandbox, "compile", killed_compiler)
    grade = grading.grade_handin(tar, BUILD)
    assert grade.status == "graded", grade.notes
    assert grade.files["func_impl.cpp"]["state"] == "does not compile"
    assert grade.total == 150 - sum(p.points for p in table.PARTS if p.files == ("func_impl.cpp",))


def test_the_oom_killers_count_names_memory_for_certain(monkeypatch):
    counts = iter([5, 6])
    monkeypatch.setattr(host_limits, "oom_kills", lambda: next(counts))
    monkeypatch.setattr(host_limits, "memory_limit", lambda: 768 << 20)
    said = resource_failure(-9, oom_before=host_limits.oom_kills())
    assert "OOM killer" in said and "768 MiB" in said and "raise the memory" in said


def test_a_platform_a_mib_under_the_job_total_is_a_grader_error(tmp_path, monkeypatch):
    # The job's total (8 ranks at their data and stack limits, and the kit's
    # share) is what the preflight asks; a MiB less is named, never graded.
    monkeypatch.setattr(host_limits, "memory_limit", lambda: (JOB_MEMORY_MIB - 1) << 20)
    grade = grading.grade_handin(handin(tmp_path), BUILD)
    assert grade.status == "grader error", grade.notes
    notes = "\n".join(grade.notes)
    assert f"may hold {JOB_MEMORY_MIB - 1} MiB" in notes and f"needs up to {JOB_MEMORY_MIB} MiB" in notes, notes
    assert "the autograder's memory setting" in notes and "nothing was graded" in notes, notes


def test_an_mpi_launcher_killed_from_outside_is_a_resource_failure(tmp_path):
    # The job's own launcher killed by a signal (the platform's limit, an admin):
    # no case is blamed for it. Here the "launcher" kills itself with SIGKILL.
    launch = Launch(binary="/bin/true", ranks=1, timeout=30, prefix=["sh", "-c", "kill -9 $$", "launcher"],
                    capture=True, results_dir=str(tmp_path))
    with pytest.raises(host_limits.ResourceFailure, match="MPI launcher was killed by signal 9"):
        run_job(launch, "Part1DataSplit.*", JobTally())


def test_a_budget_too_small_for_an_honest_grading_is_the_graders_error(tmp_path):
    # A platform time limit the machine can't meet for correct code: nothing
    # is graded, and the note says what an honest grading takes here and
    # names the setting; never a graded 0.
    grade = grading.grade_handin(handin(tmp_path), BUILD, time_budget=2.5)
    assert grade.status == "grader error", grade.notes
    notes = "\n".join(grade.notes)
    assert "ran out before" in notes and "this platform is too small for this machine" in notes and "raise the grading time" in notes, \
        notes
    assert "an honest grading takes about" in notes and "on this machine" in notes


def test_a_part_whose_case_ended_its_job_runs_after_the_others():
    from kit.jobs import split_off_part
    from kit.outcomes import CaseOutcome
    pending = ["Part7WeightGrad.B", "Part8Forward.A", "HiddenPart7WeightGrad.C", "Part9Adam.D"]
    now, later = split_off_part(pending, CaseOutcome("Part7WeightGrad.A", False, ended_job=True))
    assert now == ["Part8Forward.A", "Part9Adam.D"] and later == ["Part7WeightGrad.B", "HiddenPart7WeightGrad.C"]


def test_a_slow_case_spends_the_time_as_a_hang_does(monkeypatch):
    # Out of time, code that ran each case to near its limit is the handin's
    # fault, as a hang is; correct code takes a twentieth of a limit.
    from kit.jobs import is_slow
    from kit.outcomes import CaseOutcome
    monkeypatch.setattr(host_limits, "cpus", lambda: 2.0)
    assert is_slow(CaseOutcome("Part3NaiveForward.X", True, seconds=2.0), 1.0)
    assert not is_slow(CaseOutcome("Part3NaiveForward.X", True, seconds=0.3), 1.0)
    assert not is_slow(CaseOutcome("Part9Training.OneShortEpochLearns", True, seconds=2.0), 1.0)  # 120 s limit
    monkeypatch.setattr(host_limits, "cpus", lambda: 0.25)  # the limit stretched, as the watchdog stretches it
    assert not is_slow(CaseOutcome("Part3NaiveForward.X", True, seconds=2.0), 1.0)
