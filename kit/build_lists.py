"""What CMake and the Makefile read of the parts table (kit/part_table.py, whose
`python3 -m kit.parts_cli --cmake FILE --cpp FILE --make` writes them): the
build's lists, the test binary's table of runs and limits, and the
Makefile's variables. Made from what they are given, so that this module
knows no part.
"""
import argparse
import sys
from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence

# The staff's make targets, included where the copy holds staff/; a handout holds neither.
STAFF_MAKEFILE = "make/staff.mk"
# What a grading uses of a build, besides the student files it compiles: the
# test program's objects and precompiled header (kit_tests_student), the
# driven harness and the student process's objects (docs/driven-calls.md),
# each rank's MPI side, the exec guard around MPI's launcher and the
# sandbox's mounts (grader/platforms/prepare-image builds these, and nothing more).
GRADING_TARGETS = ("kit_tests_student", "kit_tests_driven", "kit_tests_driven_public", "student_server_objects",
                   "kit_mpi_side", "exec_guard", "sandbox_mounts")


@dataclass(frozen=True)
class Lists:
    built: Sequence            # the parts a build of this copy compiles (kit/part_types.Part), graded or not
    configuration: object      # kit/parts.Configuration
    mpi: str                   # the default MPI
    kit_checks: Dict           # name -> Run: the kit's own checks that are no part
    kit_tests: Sequence[str]   # their sources
    runs: Sequence             # every run of the test binary (kit/part_types.Run)


def cmake_text(lists: Lists, built_files: Sequence[str]) -> str:
    """The build's lists, from the parts table and the configuration."""
    tests: List[str] = []
    for f in [t for p in lists.built for t in p.tests] + list(lists.kit_tests):
        if f not in tests:
            tests.append(f)
    held = [p for p in lists.built if p.extension]
    holds = lists.configuration.holds
    grader = "grader" in holds

    def hidden_of(parts) -> List[str]:
        """Their own hidden cases (grader/hidden/KEY/), where the copy holds the grader."""
        return list(dict.fromkeys(h for p in parts for h in p.adds.hidden)) if grader else []

    driven = [p for p in lists.built if p.driven]

    def cmake_list(name: str, items) -> str:
        return f"set({name} {' '.join(items)})\n"

    def cmake_bool(name: str, on: bool) -> str:
        return f"set({name} {'ON' if on else 'OFF'})\n"

    return ("# Generated from kit/part_table.py when CMake configures; edit the table, not this file.\n" +
            cmake_list("KIT_PART_KEYS", [p.key for p in lists.built]) +
            cmake_list("KIT_IMPL_FILES", built_files) +
            cmake_list("KIT_PART_TEST_SOURCES", tests) +
            cmake_list("KIT_HIDDEN_SOURCES", hidden_of(lists.built)) +
            # The driven harness's (docs/driven-calls.md): the cases of the parts it grades.
            cmake_list("KIT_DRIVEN_PARTS", [p.key for p in driven]) +
            cmake_list("KIT_DRIVEN_TEST_SOURCES", dict.fromkeys(t for p in driven for t in p.tests)) +
            cmake_list("KIT_DRIVEN_HIDDEN_SOURCES", hidden_of(driven)) +
            cmake_list("KIT_EXTENSION_FRAMEWORK", [f for p in lists.built for f in p.adds.framework]) +
            cmake_list("KIT_EXTENSION_PROGRAMS", [f for p in lists.built for f in p.adds.programs]) +
            cmake_list("KIT_EXTENSION_SERVED", [f for p in lists.built for f in p.adds.served]) +
            cmake_list("KIT_EXTENSION_UNIT_TESTS", [f for p in lists.built for f in p.adds.unit_tests]) +
            # The built parts' rules and facts modules, which kit/facts.py writes into its header.
            cmake_list("KIT_PART_FACTS_FILES", dict.fromkeys(
                [f"kit/rules/{n}.py" for p in lists.built for n in p.rules] +
                [p.adds.facts.replace(".", "/") + ".py" for p in lists.built if p.adds.facts])) +
            cmake_list("KIT_SELF_CHECKS", [f"{n}={r.filter}={r.ranks}" for n, r in lists.kit_checks.items()]) +
            # The staff's check of a cut that grades some extension parts and not another.
            f"set(KIT_SOME_EXTENSIONS {','.join(p.key for i, p in enumerate(held) if i != 1 or len(held) < 2)})\n" +
            f"set(KIT_DEFAULT_MPI {lists.mpi})\n" +
            cmake_bool("KIT_HOLDS_REFERENCE", "reference" in holds) +
            cmake_bool("KIT_HOLDS_STAFF", "staff" in holds) +
            cmake_bool("KIT_HOLDS_GRADER", grader))


def make_text(lists: Lists) -> str:
    """The Makefile's variables (it includes them from kit-config.mk in the
    build directory): the default MPI, what this copy holds, and the make
    targets of the parts it builds (make/KEY.mk), and the staff's
    (make/staff.mk) where it holds staff/."""
    return ("# Generated from kit/part_table.py by make; edit the table, not this file.\n"
            f"KIT_DEFAULT_MPI := {lists.mpi}\nKIT_HOLDS := {','.join(lists.configuration.holds)}\n"
            f"KIT_PART_MAKEFILES := {' '.join(p.adds.make for p in lists.built if p.adds.make)}\n"
            f"KIT_STAFF_MAKEFILES := {STAFF_MAKEFILE if 'staff' in lists.configuration.holds else ''}\n")


def cpp_text(lists: Lists, constants: Dict[str, str]) -> str:
    """The test binary's table of runs, and `constants` (C++ declaration ->
    value) beside it."""
    rows = "\n".join(f'    {{"{r.filter}", {r.ranks}, {r.case_seconds!r}}},' for r in lists.runs)
    values = "\n".join(f"inline constexpr {name} = {value};" for name, value in constants.items())
    return f"""// Generated from kit/part_table.py when CMake configures; edit the table, not this file.
#pragma once

namespace harness {{

struct TableRun {{
  const char* filter;  // gtest filter; exactly one run may select a case
  int ranks;
  double case_seconds;
}};

inline constexpr TableRun kTableRuns[] = {{
{rows}
}};

{values}

}}  // namespace harness
"""


def header_main(argv, text: Callable[[], str], what: str) -> int:
    """The command of a module that writes a C++ header from its Python
    definition (CMake runs it: python3 -m kit.MODULE --cpp FILE); without
    --cpp it prints the header."""
    ap = argparse.ArgumentParser(description=f"Write the C++ header of {what}.")
    ap.add_argument("--cpp", metavar="FILE", help=f"write the C++ header of {what}")
    args = ap.parse_args(argv)
    if args.cpp:
        write_if_changed(args.cpp, text())
    else:
        sys.stdout.write(text())
    return 0


def write_if_changed(path: str, text: str) -> None:
    """Unchanged files keep their time stamps, so nothing rebuilds for nothing."""
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(text)
