"""The parts table's command and what the build reads of it: `python3 -m
kit parts` prints the table and the configuration; CMake runs `python3 -m
kit.parts_cli --cmake FILE --cpp FILE` when it configures, and the Makefile
reads `python3 -m kit.parts_cli --make` (kit/build_lists.py writes each;
kit/part_table.py holds the table).

  python3 -m kit parts
"""
import argparse
import sys
from typing import List

from kit import build_lists
from kit import parts as table
from kit.limits import DRIVEN_HARNESS_DATA_MIB, DRIVEN_HARNESS_STACK_MIB, FAILED_GRACE_SECONDS, RANK_DATA_LIMIT_MIB, RANK_HEAP_BUDGET_MIB, RANK_STACK_LIMIT_MIB, SIDE_DATA_LIMIT_MIB, STUDENT_PROCESS_DATA_MIB, THREAD_STACK_KIB
from kit.parts import KIT_CHECKS, KIT_TESTS


def build_lists_of_this_copy() -> build_lists.Lists:
    return build_lists.Lists(table.built_parts(), table.CONFIGURATION, table.MPI, KIT_CHECKS, KIT_TESTS, table.all_runs())


def cmake_text() -> str:
    return build_lists.cmake_text(build_lists_of_this_copy(), table.built_files())


def make_text() -> str:
    return build_lists.make_text(build_lists_of_this_copy())


def cpp_text() -> str:
    return build_lists.cpp_text(build_lists_of_this_copy(), {
        "double kFailedGraceSeconds": repr(FAILED_GRACE_SECONDS),
        "long long kRankHeapBudgetBytes": f"{RANK_HEAP_BUDGET_MIB}LL << 20",
        "long long kRankDataLimitBytes": f"{RANK_DATA_LIMIT_MIB}LL << 20",
        "long long kRankStackLimitBytes": f"{RANK_STACK_LIMIT_MIB}LL << 20",
        "long long kSideDataLimitBytes": f"{SIDE_DATA_LIMIT_MIB}LL << 20",
        "long long kThreadStackBytes": f"{THREAD_STACK_KIB}LL << 10",
        "long long kDrivenHarnessDataLimitBytes": f"{DRIVEN_HARNESS_DATA_MIB}LL << 20",
        "long long kDrivenHarnessStackLimitBytes": f"{DRIVEN_HARNESS_STACK_MIB}LL << 20",
        "long long kStudentProcessDataLimitBytes": f"{STUDENT_PROCESS_DATA_MIB}LL << 20"})


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cmake", metavar="FILE", help="write the CMake variables")
    ap.add_argument("--cpp", metavar="FILE", help="write the test binary's table of runs")
    ap.add_argument("--make", action="store_true", help="print the Makefile's variables (a makefile)")
    args = ap.parse_args(argv)
    if args.cmake:
        build_lists.write_if_changed(args.cmake, cmake_text())
    if args.cpp:
        build_lists.write_if_changed(args.cpp, cpp_text())
    if args.make:
        sys.stdout.write(make_text())
    if not (args.cmake or args.cpp or args.make):
        # The runs of each part; `python3 -m kit course` prints the course.
        for p in table.PARTS:
            runs = ", ".join(f"{r.filter} on {r.ranks}" + (" (hidden)" if r.hidden else "") for r in p.runs)
            print(f"{p.key:<15} {p.points:>3}  {p.title:<22} {'/'.join(p.files):<30} {runs}")
        print(f"{'total':<15} {table.TOTAL_POINTS:>3}")
        c = table.CONFIGURATION
        off = [k for k in c.held if k not in c.graded]
        print(f"extension parts graded: {', '.join(c.graded) or 'none'}" +
              (f"; held, not graded: {', '.join(off)}" if off else "") +
              f"; MPI {c.mpi}; this copy holds {', '.join(c.holds) or 'no more than the handout'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
