"""What a handin's compile may cost the grader: its time (a limit per file,
and out of a platform's time it is the handin's, never the machine's), the
object cache's disk (capped, oldest first out), and what its messages show
(the course's files only).

  python3 -m pytest grader/tests/test_compile_limits.py -q      (after `make build`)
"""
import os

import pytest

from conftest import BUILD, KIT
from grader import grades, running, staging
from kit import build as kit_build
from kit import calibration, host_limits, object_cache, static_checks
from kit import limits
from kit.build import compile_one
from kit.object_cache import prune_cache
from kit.recipe import public_headers_copy, recipe
from kit.launch import JobTally


def test_a_compile_past_its_cpu_limit_fails_as_the_handins(tmp_path):
    source = tmp_path / "func_impl.cpp"
    source.write_text("constexpr unsigned long spin(unsigned long n) {\n  unsigned long x = 0;\n"
                      "  for (unsigned long i = 0; i < n; ++i)\n    for (unsigned long j = 0; j < n; ++j) x += i ^ j;\n"
                      "  return x;\n}\n" + "".join(f"static_assert(spin({2048 + k}) != 1);\n" for k in range(4)))
    spent = {}
    # The wall-clock limit far off: on a host busy with other checks the
    # compile would meet it first, and this test is the CPU limit's.
    errors = compile_one(recipe(BUILD), str(source), str(tmp_path / "x.o"), timeout=600, spent=spent, cpu_limit=1,
                         basis="4 times the reference's 0.25 s on this machine")
    assert errors and "its compile ran past 1 s of CPU, the time a file's compile may take here (4 times the " \
        "reference's 0.25 s on this machine)" in errors, errors
    assert spent["ran_past"] and spent["cpu"] >= 0.5


def test_an_honest_compile_says_what_it_took(tmp_path):
    source = tmp_path / "func_impl.cpp"
    source.write_text(open(os.path.join(KIT, "reference", "func_impl.cpp")).read() + f"// {tmp_path}\n")
    spent = {}
    assert compile_one(recipe(BUILD), str(source), str(tmp_path / "x.o"), spent=spent) is None
    assert 0 < spent["cpu"] < calibration.COMPILE_CPU_FLOOR and not spent["ran_past"]


def test_the_cache_keeps_its_cap_and_drops_the_oldest_first(tmp_path):
    for i in range(10):
        path = tmp_path / f"{i}.o"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1000 + i, 1000 + i))
    (tmp_path / "defined_elsewhere.json").write_bytes(b"{}" * 5000)  # not an object: never pruned
    assert prune_cache(str(tmp_path), limit=10_000) == 0
    assert prune_cache(str(tmp_path), limit=8_000) == 4000  # down to three quarters of the cap
    assert sorted(os.listdir(tmp_path)) == ["4.o", "5.o", "6.o", "7.o", "8.o", "9.o", "defined_elsewhere.json"]


def test_an_object_over_the_cached_size_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(object_cache, "CACHED_OBJECT_BYTES", 1000)
    how = dict(recipe(BUILD), cache_dir=str(tmp_path / "cache"))
    source = tmp_path / "func_impl.cpp"
    source.write_text(f"int answer() {{ return 42; }}  // {tmp_path}\n")
    assert compile_one(how, str(source), str(tmp_path / "x.o")) is None
    assert os.path.getsize(tmp_path / "x.o") > 1000
    assert not os.path.isdir(how["cache_dir"]) or not os.listdir(how["cache_dir"])


def test_relative_paths_out_of_the_headers_copy_find_nothing(tmp_path):
    headers = public_headers_copy(BUILD, str(tmp_path / "include"))
    assert os.path.isfile(os.path.join(headers, "comm.h"))
    how = recipe(BUILD)
    how["run_flags"] = [f for f in how["compile_flags"] if not f.startswith("-I")] + [f"-I{headers}"]
    source = tmp_path / "src" / "zero_dp_stage3.cpp"
    source.parent.mkdir()
    source.write_text('#include "comm.h"\n#include "../../tests/part1/expected_values.txt"\n')
    errors = compile_one(how, str(source), str(tmp_path / "x.o"))
    assert "expected_values.txt: No such file or directory" in errors and "split_data" not in errors


def grading_out_of_time(files, budget=600, hangs=0) -> staging.Grading:
    # 600 s: an honest grading fits it on any machine the self-test runs on.
    g = staging.Grading("h.tar", BUILD, "/nonexistent", grades.Grade("h.tar"), time_budget=budget)
    g.tally = JobTally(out_of_time=["Part9Adam.X", "Part9Adam.Y"], hangs=hangs)
    g.grade.files = files
    return g


@pytest.mark.parametrize("files, says", [
    ({"zero_dp_stage3.cpp": {"compile_cpu": None, "compile_ran_past": True}},
     "1 file(s) compiled past the limit"),
    ({f: {"compile_cpu": 50.0, "compile_ran_past": False} for f in ("a.cpp", "b.cpp", "c.cpp")},
     "the files' compiles took 150 s of CPU"),
])
def test_out_of_time_after_the_handins_compile_is_the_handins(files, says):
    g = grading_out_of_time(files)
    assert running.out_of_time(g) and g.grade.status == "graded"
    assert says in g.grade.notes[-1] and "score 0" in g.grade.notes[-1], g.grade.notes


def test_out_of_time_where_no_honest_grading_fits_is_never_the_handins():
    # A slow machine under a platform's fixed budget: a handin that hangs
    # would otherwise lose the parts it got right, where the host grades them.
    lim = calibration.limits(BUILD)
    budget = lim.honest_grading_seconds(host_limits.cpus())  # under GRADING_MARGIN times it: too small
    g = grading_out_of_time({"a.cpp": {"compile_cpu": 1.0, "compile_ran_past": False}}, budget=budget, hangs=3)
    g.tally.ended_parts = {"part1"}  # Part 9's cases were left unrun: not the hung part's
    assert not running.out_of_time(g) and g.grade.status == "grader error"
    assert "this platform is too small for this machine" in g.grade.notes[-1] and "raise it to at least" in g.grade.notes[-1]
    # Only the hung part's own cases unrun (they run last): its hangs spent the time, as on any machine.
    g = grading_out_of_time({"a.cpp": {"compile_cpu": 1.0, "compile_ran_past": False}}, budget=budget, hangs=3)
    g.tally.ended_parts = {"part9"}
    assert running.out_of_time(g) and g.grade.status == "graded" and "score 0" in g.grade.notes[-1]


def test_out_of_time_after_honest_compiles_and_cases_is_the_machines():
    g = grading_out_of_time({f: {"compile_cpu": 1.5, "compile_ran_past": False} for f in ("a.cpp", "b.cpp")})
    assert not running.out_of_time(g) and g.grade.status == "grader error"
    assert "this machine is too slow" in g.grade.notes[-1]


def test_out_of_time_after_a_stall_that_ran_again_is_never_the_machines():
    # A case stopped inside a collective runs again (kit/jobs.py): a handin
    # whose own threads starve its ranks' MPI sides must not spend a
    # platform's time that way and be called the machine's fault.
    g = grading_out_of_time({f: {"compile_cpu": 1.5, "compile_ran_past": False} for f in ("a.cpp", "b.cpp")})
    g.tally.stalled = ["Part8Forward.KeepsNoFullWeightBetweenCalls"]
    assert running.out_of_time(g) and g.grade.status == "graded"
    assert "1 case(s) stopped inside a collective call" in g.grade.notes[-1] and "score 0" in g.grade.notes[-1]


def test_a_compile_that_waits_is_stopped_by_its_stall_not_the_clock(tmp_path, monkeypatch):
    # A compile that takes no CPU waits for something (here a FIFO nobody
    # writes): the clock can't tell it from a starved compile on a busy
    # host, its CPU can.
    monkeypatch.setattr(kit_build, "STALL_SECONDS", 2.0)
    fifo = tmp_path / "pipe.h"
    os.mkfifo(fifo)
    source = tmp_path / "func_impl.cpp"
    source.write_text(f'#include "{fifo}"\n')
    spent = {}
    errors = compile_one(recipe(BUILD), str(source), str(tmp_path / "x.o"), timeout=600, spent=spent)
    assert errors and "its compile took no CPU for 2 s" in errors, errors
    assert spent["ran_past"]


def test_the_wall_clock_limit_is_far_behind_the_cpu_limit():
    # A busy host stretches a compile's wall time: only a compile that
    # waits meets the clock (it met 40 s under make check's load on a slow host).
    assert kit_build.compile_wall_seconds(10) >= 200


def test_an_include_of_a_device_is_refused_before_the_preprocessor_opens_it(tmp_path):
    # `#include "/dev/zero"` read until a container's OOM killer ended the
    # compiler: a grader error at Gradescope's 768 MiB (red team).
    source = tmp_path / "func_impl.cpp"
    source.write_text('#include <vector>\n%:include "/dev/zero"\n')
    found = static_checks.check_file(str(source), recipe(BUILD)["compile_flags"])
    assert [(f.line, f.severity) for f in found] == [(2, "fail")], found
    assert "includes '/dev/zero'" in found[0].message


def test_a_compile_that_reads_a_device_meets_its_memory_limit_as_the_handins(tmp_path):
    # Behind the static checks (KIT_STATIC_CHECKS=warn lets such a file through),
    # the compile's own memory limit, below the smallest platform's memory.
    source = tmp_path / "func_impl.cpp"
    source.write_text('#include "/dev/zero"\n')
    spent = {}
    errors = compile_one(recipe(BUILD), str(source), str(tmp_path / "x.o"), spent=spent)
    assert errors and f"ran out of the {limits.COMPILE_DATA_MIB} MiB a file's compile may hold" in errors, errors
    assert "out of memory allocating" in errors  # the compiler's own words first
    assert limits.COMPILE_DATA_MIB + limits.KIT_SHARE_MIB <= limits.SMALLEST_PLATFORM_MIB
