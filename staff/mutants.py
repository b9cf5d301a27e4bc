"""The kit's proof that its tests bite: each mutant is the reference with one
known bug; it must lose points in the parts the bug touches and keep full
points in the other parts of its file (the only parts run: no other part
calls the file's code). The table's "correct: ..." entries are the other
way round: the reference written differently and still right, which must
keep every point (the memory and traffic rules must not fail them).

  python3 -m staff.mutants [--build build] [--file STUDENT_FILE] [NAME ...]

CTest runs one test per student file (mutants/FILE), so that two of them
and the other suites share the cores rather than wait for one long test.

A mutant names the file, a piece of the reference's text and its
replacement; if the text is no longer in the reference, the check fails
loudly rather than testing nothing. Its `says` are regular expressions that
the failure messages must match: the diagnosis a student would read
(a mismatch naming each rank's collective, a hung case's roll-call, ...).
"""
import argparse
import fcntl
import os
import re
import shutil
import sys
import time
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional

from kit import judge, limits

from kit import parts as table
from kit.build import build, server_of
from kit.jobs import CaseOutcome, Driven, run_parts
from kit.suite import judged
from kit.paths import KIT_DIR, KITRUN, REFERENCE_DIR, build_dir, driven_harness
from kit.report import fmt
# The table has a file of its own; the tests and the other staff checks read it from here.
from staff.mutant_table import MUTANTS, WRONG_ANSWERS_FROM, Mutant  # noqa: F401


def messages(outcomes: Dict[str, CaseOutcome]) -> str:
    """Each rank's first failure in each case, whole: what a report shows
    first, so a message a bug must give is one its author reads, not one
    behind "and 1 more failure"; and the runner's own diagnoses."""
    firsts = []
    for o in outcomes.values():
        seen = set()
        for f in o.failures:
            rank = f.get("rank")
            if isinstance(rank, int) and rank in seen:
                continue
            seen.add(rank)
            firsts.append(str(f["message"]).split("\n\n")[0] if isinstance(rank, int) else str(f["message"]))
    return "\n".join(firsts)


def settled(mutant: Mutant, case: str, so_far: Dict[str, CaseOutcome]) -> bool:
    """Whether `case`, put off after its part hung or crashed a job, can go
    unrun: its part must only lose points, has lost a case already (a lost
    case is never won back), and every message the mutant must give has
    been given. A part that must score 0, or keep its points, runs them all.
    Each case skipped so is one more hang the check needn't wait out."""
    part = next((p for p in table.ALL_PARTS if p.owns(case)), None)
    if part is None or part.key not in mutant.loses or part.key in mutant.zero:
        return False
    if all(o.passed for c, o in so_far.items() if part.owns(c)):
        return False
    texts = messages(so_far)
    return all(re.search(pattern, texts) for pattern in mutant.says)


def check(mutant: Mutant, build_dir: str, scratch: str, launcher: Optional[List[str]] = None) -> List[str]:
    impl = os.path.join(scratch, "impl")
    os.makedirs(impl)
    for f in table.built_files():
        shutil.copy(os.path.join(REFERENCE_DIR, f), impl)
    path = os.path.join(impl, mutant.file)
    with open(path) as f:
        text = f.read()
    if mutant.find not in text:
        return [f"the reference's {mutant.file} no longer contains the text this mutant changes: {mutant.find!r}"]
    with open(path, "w") as f:
        f.write(text.replace(mutant.find, mutant.replace, 1))
    binary = os.path.join(scratch, "student", "kit_tests")
    report = build(impl, binary, build_dir, compiler_cache=True, server=server_of(binary))
    if not report["linked"]:
        errors = [r["errors"] for r in report["files"].values() if r["errors"]] + [report["link_errors"] or ""]
        return ["the mutant does not build:\n" + "\n".join(e for e in errors if e)[:2000]]
    launch_args = dict(judged(build_dir), **({"prefix": launcher + [KITRUN]} if launcher else {}))
    if mutant.hangs and not launcher:  # an emulated run's honest cases need their whole limits
        launch_args["time_scale"] = limits.time_scale() * limits.HANG_SHARE
    # The parts of its file, the only ones it can cost: the others call none
    # of the file's code (what a file's code can do beyond its parts, its
    # static objects and symbols, the hostile gallery grades).
    parts = [p for p in table.built_parts() if mutant.file in p.files]
    with_hidden = {}
    if mutant.hidden:  # judged by every recorded value, the hidden cases' salted as the grader salts them
        expected = judge.load_all(sum(judge.files(KIT_DIR), []))
        launch_args["expected"] = expected
        with_hidden = dict(hidden=True, hidden_salt=expected.salt)
    # The driven parts as the grader runs them: the mutant's code in a process of its own.
    ran = run_parts(binary, parts, launch_args=launch_args, settled=lambda case, so_far: settled(mutant, case, so_far),
                    driven=Driven(driven_harness(build_dir), server_of(binary)), **with_hidden)
    outcomes = ran.outcomes
    problems = [ran.labelled_error()] if ran.error else []
    if ran.error:  # the staff's own bug: what the launcher and the ranks printed says why nothing started
        problems += ["    " + line for line in ran.output.strip().splitlines()[-25:]]
    passed = {c: o.passed for c, o in outcomes.items()}
    for part in parts:
        got = part.score(passed)
        if part.key in mutant.zero and got != 0:
            problems.append(f"{part.key} should score 0, got {fmt(got)}")
        elif part.key in mutant.loses and got >= part.points:
            problems.append(f"{part.key} should lose points, got {fmt(got)} / {part.points}")
        elif part.key not in mutant.loses and got != part.points:
            problems.append(f"{part.key} should keep {part.points} points, got {fmt(got)}")
            # What failed there, so a load-dependent failure can be told from a test that bites wrongly.
            problems += [f"    {c}: {line}" for c, o in outcomes.items() if part.owns(c) and not o.passed
                         for line in o.summary(max_lines=4)]
    texts = messages(outcomes)
    for pattern in mutant.says:
        if not re.search(pattern, texts):
            problems.append(f"no failure message matches {pattern!r}; they were:\n" + texts[:3000])
    return problems


@contextmanager
def scratch_for(mutant: Mutant, build_dir: str) -> Iterator[str]:
    """An empty folder for one bug's build, at the same place in every build
    (BUILD/mutants/NAME): its compile command is then the same in every
    clone, so the compiler cache serves it (kit/build.py, compiler_cache). A
    lock keeps two checks of the same bug apart."""
    top = os.path.join(build_dir, "mutants")
    os.makedirs(top, exist_ok=True)
    name = re.sub(r"[^a-z0-9]+", "-", mutant.name.lower()).strip("-")
    with open(os.path.join(top, name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = os.path.join(top, name)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="run only mutants whose name contains one of these words")
    ap.add_argument("--build", help="the CMake build directory (default: $KIT_BUILD or build/)")
    ap.add_argument("--file", help="run only the mutants of this student file (func_impl.cpp, ...)")
    ap.add_argument("--exact", action="store_true", help="the names are whole mutant names, not words of them")
    ap.add_argument("--launcher", help="a command that the jobs' tools/kitrun runs under "
                                       "(staff/arm64/inroot: inside the arm64 root)")
    args = ap.parse_args(argv)
    args.build = build_dir(args.build)
    chosen = [m for m in MUTANTS if not args.names or
              any(n == m.name if args.exact else n in m.name for n in args.names)]
    if args.exact and len(chosen) != len(set(args.names)):
        print(f"mutants: no mutant is named {sorted(set(args.names) - {m.name for m in chosen})}")
        return 2
    if args.file:
        chosen = [m for m in chosen if m.file == args.file]
        if not chosen:  # every student file must have a known bug that its tests catch
            print(f"mutants: no mutant changes {args.file}")
            return 2
    launcher = args.launcher.split() if args.launcher else None
    failed = 0
    for mutant in chosen:
        started = time.monotonic()
        with scratch_for(mutant, args.build) as scratch:
            problems = check(mutant, args.build, scratch, launcher)
        status = "caught" if not problems else "NOT CAUGHT"
        print(f"{status:>10}  {mutant.name}  ({time.monotonic() - started:.1f} s)", flush=True)
        for p in problems:
            print(f"            {p}")
        failed += bool(problems)
    print(f"{len(chosen) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
