"""`python3 -m kit course`: checks course.toml and prints the course as it
takes effect (parts, points, total, visibility, time budgets, MPI, what the
copy holds). Apart from kit/course.py, which reads the file, because it
prints the parts table (kit/parts.py), which applies the course.

  python3 -m kit course
"""
import os
from typing import List

from kit.course import PLATFORMS, overridden


def main(argv: List[str]) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python3 -m kit course", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.parse_args(argv)
    try:
        from kit import parts as table  # loads and checks the course: a bad file stops it
    except SystemExit as e:
        print(e, flush=True)
        return 2
    c = table.COURSE
    print(f"course file: {os.path.relpath(c.path)}" + (" (KIT_COURSE)" if overridden("KIT_COURSE") else ""))
    for p in table.PARTS:
        changed = f"  (table: {table.TABLE_POINTS[p.key]})" if p.points != table.TABLE_POINTS[p.key] else ""
        print(f"  {p.key:<16} {p.points:>4}  {p.title}{changed}")
    print(f"  {'total':<16} {table.TOTAL_POINTS:>4}")
    off = [k for k in c.held if k not in c.extensions]
    print(f"extension parts graded: {', '.join(c.extensions) or 'none'}"
          + (" (KIT_EXTENSIONS)" if overridden("KIT_EXTENSIONS") else "")
          + (f"; held, not graded: {', '.join(off)}" if off else ""))
    print(f"visibility: public cases {c.public}" + (", full messages after the due date (Gradescope)"
                                                     if c.public_after_due_date else "")
          + f"; hidden cases {c.hidden}; Gradescope's stdout {c.gradescope_stdout}")
    budgets = ", ".join(f"{p} {c.budgets[p]:g} s" for p in PLATFORMS)
    print(f"time budgets: {budgets}" + (f"; KIT_TIME_BUDGET={c.budget_override:g} s overrides them"
                                        if c.budget_override is not None else ""))
    print(f"MPI: {c.mpi}" + (f" (KIT_MPI; the file says {c.file_mpi})" if c.mpi != c.file_mpi else ""))
    print(f"this copy holds: {', '.join(c.holds) or 'no more than the handout'}; extension parts: "
          f"{', '.join(c.held) or 'none'}")
    print(f"course stamp: {table.COURSE_STAMP} (a gradebook row's scale)")
    return 0
