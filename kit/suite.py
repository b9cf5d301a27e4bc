"""`make test-partN` and `make test`: runs parts of the public test suite and
prints each case and the points.

  python3 -m kit test part3                 one part (what `make test-part3` runs)
  python3 -m kit test --all                 every part, then the score table (`make test`)
  python3 -m kit test --impl reference ...  the staff solution instead of student/
  --require full     exit 1 unless every chosen part has full points (CTest, CI)
  --require stubs    exit 1 unless every case fails with a not-implemented message

All chosen cases share one MPI job with as many ranks as the largest case
needs (a case of n ranks runs on the job's first n), so a run starts one
mpirun, plus one more after each case that ends its job.
"""
import argparse
import os
import sys
import time
from typing import Dict, List, Optional

from kit import calibration, judge
from kit import limits
from kit import parts as table
from kit import timeline, trace_file
from kit.build import public_twin
from kit.jobs import Driven, PartsRun, run_cases, run_parts
from kit.launch import JobTally, Launch
from kit.outcomes import CaseOutcome
from kit.paths import KIT_DIR, build_dir, impl_dir, test_binary
from kit.link_check import object_findings
from kit.static_checks import refusal_warning, static_findings
from kit.report import fmt

NOT_IMPLEMENTED = "is not implemented yet"


def show_job_death(outcome: CaseOutcome, max_lines: Optional[int] = 12) -> None:
    """The binary prints the cases it finishes; the one a job died in is ours to show."""
    if outcome.ended_job:
        for line in outcome.summary(max_lines):
            print(f"    {line}")
        print(f"[  FAILED  ] {outcome.case} (the job ended here; the remaining cases run in a new job)", flush=True)


def run_shown(binary: str, chosen: List[table.Part], label: str, launch_args: Optional[Dict] = None,
              verbose: bool = False, driven: Optional[Driven] = None) -> PartsRun:
    """run_parts, saying what runs and showing each case as it ends."""
    counts = sorted({run.ranks for part in chosen for run in part.public_runs()})
    ranks = counts[-1]
    shown = " and ".join(map(str, counts)) if len(counts) < 4 else f"1 to {ranks}"
    print(f"== {', '.join(p.key for p in chosen)}: cases on {shown} rank{'s' if ranks > 1 else ''} ({label})",
          flush=True)
    tally = JobTally()
    ran = run_parts(binary, chosen, launch_args=dict(launch_args or {}, capture=False), tally=tally,
                    on_outcome=lambda o: show_job_death(o, None if verbose else 12), driven=driven)
    if ran.error:
        print(f"!! {ran.error}", flush=True)
    if tally.stalled:
        print(f"!! ran twice, its first run stopped with every rank inside the same collective call (the machine "
              f"stalled, not the code): {', '.join(tally.stalled)}", flush=True)
    if tally.lingered:
        print(f"!! {tally.lingered} test job(s) still ran {limits.EXIT_SECONDS:g} s after their last case and were "
              "stopped: code that runs after the cases (a static object's destructor?) must end; the grader "
              "stops it too, and the time is yours", flush=True)
    return ran


def show_traces(trace_dir: str, failed: List[str]) -> None:
    """Draws the trace of each failing case that wrote one. A case the
    watchdog stopped left one part per rank, ending with the call it waited
    in: they are merged first."""
    for case in failed:
        path = os.path.join(trace_dir, case + ".json")
        trace_file.merge_parts(path)
        if not os.path.isfile(path):
            continue
        events, other = trace_file.load(path)
        problem = (timeline.draw(events, os.path.splitext(path)[0] + ".png", other["messages"]) if events
                   else "no collective ran, nothing to draw")
        print(f"  trace of {case}: {path}" + (f" ({problem})" if problem else f", drawn in {path[:-5]}.png"))


def stub_problems(outcomes: Dict[str, CaseOutcome], cases: List[str]) -> List[str]:
    """Why these cases don't look like the kit's stubs: each must fail saying so."""
    problems = []
    for c in cases:
        text = "\n".join(outcomes[c].summary(max_lines=100))
        if outcomes[c].passed or NOT_IMPLEMENTED not in text:
            got = "a pass" if outcomes[c].passed else text.splitlines()[0] if text else "nothing"
            problems.append(f"stub check: {c} should fail with '{NOT_IMPLEMENTED}', got: {got}")
    return problems


def judged(build: str) -> Dict:
    """Launch settings that judge the public cases as the grader does: by the
    values the reference's functions returned (tests/KEY/expected_values.txt),
    within the limits calibrated for this build on this machine."""
    settings: Dict = {"limits": calibration.limits(build, strict=False)}
    if settings["limits"].measured.startswith("the table's limits"):
        print(f"kit test: {settings['limits'].measured}", file=sys.stderr)
    public, _ = judge.files(KIT_DIR)
    if public:
        settings["expected"] = judge.load_all(public)
    return settings


def by_hand(args, binary: str, driven: Optional[Driven] = None) -> int:
    """Cases a gtest filter selects, run the way `make test-partN` runs them
    (tools/kitrun sends a test binary started by hand here): the same
    diagnosis, and after a hang or a crash the remaining cases go on in a
    new job. Points are only for whole parts, so none are printed. With
    `driven`, the cases are the driven harness's."""
    started = time.monotonic()
    launch_args = judged(build_dir(args.build))
    if driven:
        binary = public_twin(driven.harness)
        launch_args["env"] = dict(os.environ, KIT_STUDENT_PROGRAM=driven.student_program)
    if args.trace_dir:
        os.makedirs(args.trace_dir, exist_ok=True)
        launch_args["trace_dir"] = os.path.abspath(args.trace_dir)
    ranks = args.ranks or max(run.ranks for run in table.all_runs())
    tally = JobTally()
    launch = Launch(binary, ranks, timeout=table.JOB_SECONDS * len(table.PARTS), **launch_args)
    outcomes = run_cases(launch, args.filter, tally,
                         on_outcome=lambda o: show_job_death(o, None if args.verbose else 12))
    if tally.error:
        print(f"!! {tally.error}", flush=True)
        return 2
    print()
    show_failures(outcomes, list(outcomes), None if args.verbose else 8)
    if args.trace_dir:
        show_traces(args.trace_dir, [c for c, o in outcomes.items() if not o.passed])
    print(f"{sum(o.passed for o in outcomes.values())} passed, "
          f"{sum(not o.passed for o in outcomes.values())} failed   ({time.monotonic() - started:.1f} s)")
    return 0 if all(o.passed for o in outcomes.values()) else 1


def show_failures(outcomes: Dict[str, CaseOutcome], cases: List[str], max_lines: Optional[int]) -> None:
    for c in cases:
        if not outcomes[c].passed:
            lines = outcomes[c].summary(max_lines=max_lines)
            print(f"  FAIL {c}: {lines[0] if lines else 'no message'}")
            for line in lines[1:]:
                print(f"       {line}")


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m kit test", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parts", nargs="*", help="part keys, e.g. part3 or part8")
    ap.add_argument("--all", action="store_true", help="every part, then the score table")
    ap.add_argument("--impl", choices=["student", "reference"], default="student")
    ap.add_argument("--build", help="the CMake build directory (default: $KIT_BUILD or build/)")
    ap.add_argument("--require", choices=["none", "full", "stubs"], default="none")
    ap.add_argument("--trace-dir", metavar="DIR", help="write and draw the trace of each failing case here")
    ap.add_argument("--verbose", action="store_true", help="print every line of every failure (make ... VERBOSE=1)")
    ap.add_argument("--filter", metavar="GTEST_FILTER",
                    help="the cases a gtest filter selects, instead of parts (tools/kitrun on a test binary)")
    ap.add_argument("--ranks", type=int, help="with --filter: ranks of the job (default: the most any case needs)")
    ap.add_argument("--binary", help="staff: a test binary built elsewhere (kit/build.py) instead of the build's")
    ap.add_argument("--driven", action="store_true",
                    help="staff: the parts the grader drives from outside (a row's `driven`; docs/driven-calls.md) "
                         "as it does: the driven harness, and the implementation's code in a process of its own")
    ap.add_argument("--student-program", metavar="PATH",
                    help="with --driven: the student process's program instead of the build's (a known bug's)")
    ap.add_argument("--sources", metavar="DIR", help="with --binary: the student files it was built from, "
                                                     "for the grader's static checks")
    args = ap.parse_args(argv)
    if not args.all and not args.parts and not args.filter:
        ap.error("name at least one part (e.g. part3), or pass --all")
    try:
        chosen = table.PARTS if args.all else table.find(args.parts) if args.parts else []
    except KeyError as e:
        ap.error(str(e.args[0]))
    binary = args.binary or test_binary(build_dir(args.build), args.impl)
    driven = None
    if args.driven:  # the harness alone, and the implementation's code in each rank's student process
        driven = Driven.of_build(build_dir(args.build), args.impl)
        if args.student_program:
            driven = Driven(driven.harness, args.student_program)
    for program in [binary] + (driven.missing() if driven else []):
        if not os.access(program, os.X_OK):
            print(f"kit test: {program} is not built; run `make build` first", file=sys.stderr)
            return 2
    if args.filter:
        return by_hand(args, binary, driven)

    started = time.monotonic()
    # The grader checks every file before it compiles anything, and grades a
    # file it refuses as the stub: say so first, whatever the part (the
    # findings are cached by content, so an unchanged file costs nothing).
    found: Dict[str, List[str]] = {}
    sources = args.sources or (impl_dir(args.impl) if args.impl == "student" and not args.binary else None)
    if sources:
        cache = None if not args.sources else os.path.join(args.sources, ".static_checks_cache.json")
        found = static_findings(sources, table.PARTS, build_dir(args.build), cache)
        if not args.sources:  # the objects CMake just built for kit_tests_student
            files = sorted({f for p in table.PARTS for f in p.files})
            for name, lines in object_findings(sources, build_dir(args.build), files).items():
                found[name] = found.get(name, []) + lines
    warning = refusal_warning(found)
    if warning:
        print("\n".join(warning), flush=True)
    for findings in found.values():
        for f in findings:
            if ": warn: " in f:
                print(f"note: {f}")
    refused = {name for name, findings in found.items() if any(": fail: " in f for f in findings)}
    launch_args = judged(build_dir(args.build))
    if args.trace_dir:
        os.makedirs(args.trace_dir, exist_ok=True)
        launch_args["trace_dir"] = os.path.abspath(args.trace_dir)
    ran = run_shown(binary, chosen, args.impl, launch_args=launch_args, verbose=args.verbose, driven=driven)
    outcomes = ran.outcomes
    errors = [ran.error] if ran.error else []
    print()
    exit_code = 0
    total = 0.0
    passed_by_case = {c: o.passed for c, o in outcomes.items()}
    for part in chosen:
        cases = [c for c in outcomes if part.owns(c)]
        got = part.score(passed_by_case)
        passed = sum(outcomes[c].passed for c in cases)
        show_failures(outcomes, cases, None if args.verbose else 4)
        for gate in part.gate_failed(passed_by_case):
            print(f"  {gate} failed: this case gates the part, so {part.key} scores 0")
        files_refused = sorted(refused & set(part.files))
        if files_refused and got:
            print(f"  the grader refuses {', '.join('student/' + f for f in files_refused)} and grades it as the "
                  f"stub: {fmt(got)} by these cases, 0 from the grader")
            got = 0.0
        total += got
        print(f"{part.key}: {fmt(got)} / {part.points} points   ({passed}/{len(cases)} cases, {part.title})")
        if not cases:
            errors.append(f"{part.key}: no case ran")
        if args.require == "full" and (not cases or passed != len(cases)):
            exit_code = 1
        if args.require == "stubs":
            for problem in stub_problems(outcomes, cases):
                print(f"  {problem}")
                exit_code = 1
            if got != 0 or not cases:
                exit_code = 1
    if args.trace_dir:
        show_traces(args.trace_dir, [c for c, o in outcomes.items() if not o.passed])
    if len(chosen) > 1:
        print(f"total: {fmt(total)} / {sum(p.points for p in chosen)} points"
              + ("   (what the grader would give for these cases: refused files count as their stubs)"
                 if refused else ""))
    if warning:
        print("\n".join(warning))
    print(f"{sum(o.passed for o in outcomes.values())} passed, "
          f"{sum(not o.passed for o in outcomes.values())} failed   ({time.monotonic() - started:.1f} s)")
    if errors:
        exit_code = exit_code or 1
    return exit_code
