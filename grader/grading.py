"""The autograder's engine: one handin in, one report out (grader/grade is
the command). Standard library only.

grade_handin runs these steps (staging.py has extract to compile, running.py
run to score) on one handin, in a fresh scratch directory; a step that
can't go on ends grading with every part it did not reach at 0:
  extract   only the whitelisted members (student/x.cpp or bare x.cpp, and
            feedback.txt), read by a limited child process
            (kit/handin_reader.py), refusing absolute paths, '..', links,
            devices and oversized members, each named in the report; an
            archive it can't read is "not a readable handin";
  stage     claim a sandbox (sandbox.py) and hand it the files;
  check     the static rules (kit/static_checks.py): a file that breaks one
            is not compiled (an early, friendly word; the link check decides);
  compile   each file against the kit's prebuilt framework, then the link
            check of its object (kit/link_check.py: what it calls, defines,
            initializes before main and keeps in static storage); a file that
            is missing, refused or does not compile is replaced by its stub,
            so it costs only the parts that use it;
  run       every part's public and hidden cases under MPI (kit/jobs.py):
            the ranks hand over what student functions returned, and the
            judge (kit/judge.py), here, outside the sandbox, compares it
            with the values recorded from the reference: the program's
            output and records are evidence, never a verdict; a hang or
            crash costs only its case;
  diagnose  whose fault it is when no case ran, and what the records say of
            the run's integrity;
  isolate   when the combined program did not link, or died or hung before
            its first case (and the kit's own stubs run fine), grade each
            student file alone, with the other files replaced by the stubs:
            each part is scored from the run that holds its file;
  score     by the parts table (kit/part_table.py).
reports.py writes the grade out (table, Autolab line, results.json, JSON).
Whatever fails inside the grader is caught: the grade then says "grader
error" and why, and every output is still written.
check, compile and run happen in the sandbox: another user, limits, no
access to the reference or the hidden cases.
"""
import os
import shutil
import tempfile
import threading
import time
import traceback
from typing import Callable, List, Optional, Tuple

from grader import staging
from grader.grades import Grade, nothing_graded
from grader.running import diagnose, isolate, run, score
from grader.sandbox import LIMITS
from grader.staging import Grading, check, compile_files, extract, stage
from kit import host_limits
from kit import parts as table
from kit.safe_read import copy_sandbox_tree


class Cancelled(Exception):
    """The batch was stopped (Ctrl-C) while this handin was being graded."""


STEPS: List[Callable[[Grading], bool]] = [extract, stage, check, compile_files, run, diagnose, isolate, score]


# Of a grading's time budget, what the reports and the platform's own
# start and finish take: the test jobs end this long before it.
REPORT_SECONDS = 2.0


def grade_handin(handin: str, build_dir: str, keep: Optional[str] = None, slot: int = 0,
                 cancel: Optional[threading.Event] = None, private: Tuple[str, ...] = (),
                 time_budget: Optional[float] = None, hidden_values: Optional[str] = None,
                 kit_stamp: Optional[str] = None, only_parts: Optional[List[str]] = None) -> Grade:
    """Grades one handin. As root it runs as the sandbox user of `slot`, or
    of the next free slot if another grader holds that one. Setting `cancel`
    abandons it: it raises Cancelled. `private`: folders the handin's code
    must not see (other handins, the gradebook), covered in its namespace.
    `time_budget`: the seconds the platform allows a grading (PrairieLearn's
    timeout, say): the test jobs stop in time for the reports. `only_parts`:
    the keys of the parts whose cases run (a batch's regrade of the parts
    whose cases changed); every part's otherwise."""
    started = time.monotonic()
    g = Grading(handin, os.path.abspath(build_dir), tempfile.mkdtemp(prefix="kit-grade-"),
                Grade(os.path.basename(handin), limits=host_limits.describe()), slot, cancel,
                private=tuple(private) + (os.path.dirname(os.path.abspath(handin)),), time_budget=time_budget,
                deadline=started + time_budget - REPORT_SECONDS if time_budget else None, hidden_values=hidden_values,
                kit_stamp=kit_stamp,
                parts=[p for p in table.PARTS if only_parts is None or p.key in only_parts])
    try:
        for step in STEPS:
            if cancel is not None and cancel.is_set():
                raise Cancelled(handin)
            try:
                begun = time.monotonic()
                going_on = step(g)
                g.grade.steps[step.__name__] = round(time.monotonic() - begun, 2)
                if not going_on:
                    break
            except Exception as e:  # a grader bug must cost no handin its report
                g.grade.status = "grader error"
                g.grade.notes.append(f"the grader failed in its '{step.__name__}' step ({type(e).__name__}: {e}); "
                                     "this is not the handin's fault: fix the grader or its setup and grade again")
                g.grade.traceback = traceback.format_exc()
                g.grade.parts = []
                break
        if not g.grade.parts:
            g.grade.parts = nothing_graded()
        return g.grade
    finally:
        if keep:  # before the run tmpfs goes; what the job wrote is read safely
            copy_sandbox_tree(g.scratch, keep, max_bytes=LIMITS["fsize"])
        if g.sandbox:
            g.grade.sandbox = {"uid": g.sandbox.uid, "namespaces": g.sandbox.isolated_fs, "root": g.sandbox.root,
                               "precompiled_header": g.pch}
            g.sandbox.release()
            staging.forget(g.sandbox)
        g.grade.seconds = time.monotonic() - started
        shutil.rmtree(g.scratch, ignore_errors=True)
