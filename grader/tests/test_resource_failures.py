"""A compiler or linker killed by a signal, or out of memory, is the grading
host's fault: the grade is a grader error that names what ran out, never
"does not compile" and never a graded 0.

  python3 -m pytest grader/tests/test_resource_failures.py -q      (after `make build`)
"""
import uuid

import pytest

from conftest import BUILD, handin
from grader import grading
from kit.build import resource_failure


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
