"""The grading steps after the compile: run every part's cases, tell the
handin's faults from the grader's, grade each file alone when the files
break only together, and score (grader/grading.py runs the steps in order;
staging.py has the ones before).
"""
import os
from typing import Optional

from grader.grades import score_part
from grader.staging import Grading
from kit import host_limits
from kit import limits
from kit import parts as table
from kit import calibration
from kit.build import ResourceFailure, build, public_twin, server_of
from kit.jobs import Driven, run_cases, run_parts
from kit.launch import JobTally, Launch
from kit.paths import STUBS_DIR

OUTPUT_KEEP = 20000  # characters of the test program's output kept, head and tail


def keep_head_tail(text: str, limit: int = OUTPUT_KEEP) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters dropped] ...\n{text[-half:]}"


def run(g: Grading) -> bool:
    if g.broken:
        return True
    try:
        ran = run_parts(g.binary, g.parts, hidden=True, tally=g.tally, launch_args=g.launch,
                        public_binary=public_twin(g.binary), driven=g.driven)
    except ResourceFailure as e:
        return g.stop("grader error", f"{e}. This is the grading host's limit, not the handin's fault; grade it "
                                      "again once the setting is raised")
    g.outcomes = ran.outcomes
    g.grade.output = keep_head_tail(g.tally.output)
    g.grade.jobs = g.tally.jobs
    if not g.outcomes:
        g.broken = ran.error or "the test program did not start its cases"
    elif ran.error:
        g.grade.notes.append(ran.labelled_error())
    if g.tally.stalled:  # a count: a hidden case's name is not every student's to see
        g.grade.notes.append(f"{len(g.tally.stalled)} case(s) ran twice: the first run stopped with every rank "
                             "inside the same collective call, a stall of the host, not of the code")
    return out_of_time(g)


def out_of_time(g: Grading) -> bool:
    """Cases the platform's time limit left unrun: the handin's loss when
    its own compile or cases spent the time (each hung case runs to its
    limit; a slow one takes over a fifth of it, where correct code takes a
    twentieth; a file's compile past its limit, or more CPU in all than
    honest files take), the grader's error when none did and the machine
    was too slow."""
    missed = len(g.tally.out_of_time)
    if not missed:
        return True
    budget = f"{g.time_budget:.0f} s" if g.time_budget else "its limit"
    # A stall's first run is charged too: the handin's own threads or
    # processes may have held the CPUs its ranks' MPI sides needed, and a
    # budget run out so must never be the machine's excuse.
    spent = [f"{n} case(s) {what}" for n, what in ((g.tally.hangs, "hung, each until its time limit"),
                                                  (len(g.tally.stalled), "stopped inside a collective call at their "
                                                   "time limits and ran again"),
                                                  (g.tally.slow, "took over a fifth of their time limits")) if n]
    if g.tally.lingered:
        spent.append(f"{g.tally.lingered} job(s) ran on for {limits.EXIT_SECONDS:g} s after their last case")
    # The compile is the handin's too: a file past its limit, or files that
    # took more CPU in all than honest code does (its CPU time, unlike its
    # wall time, does not grow on a slow or busy machine).
    files = {n: f for n, f in g.grade.files.items() if f.get("compile_cpu") is not None or f.get("compile_ran_past")}
    past = sum(bool(f.get("compile_ran_past")) for f in files.values())
    cpu = sum(f.get("compile_cpu") or 0 for f in files.values())
    honest = calibration.limits(g.build_dir).honest_compile_cpu(files)
    if past:
        spent.append(f"{past} file(s) compiled past the limit of a file's compile")
    elif cpu > honest:
        spent.append(f"the files' compiles took {cpu:.0f} s of CPU, where honest code takes under {honest:.0f} s "
                     f"on this machine ({calibration.HONEST_MULTIPLE} times the reference's)")
    # A budget too small for an honest grading here is the platform's to
    # raise, whatever the handin did, when it left unrun a case of a part
    # that never hung: charged to the handin, a slow machine would cost it
    # parts the host grades. (A hung part's own cases run last, and were
    # its time to spend.)
    lim = calibration.limits(g.build_dir)
    cpus = host_limits.cpus()
    innocent = [c for c in g.tally.out_of_time
                if not any(p.owns(c) and p.key in g.tally.ended_parts for p in table.PARTS)]
    # Time the handin's code spent after its cases is its own, as a hang's is.
    if g.time_budget and innocent and not lim.fits(g.time_budget, cpus) and not g.tally.lingered:
        return g.stop("grader error", f"the grading's time on this platform ({budget}) ran out before {missed} "
                                      f"case(s) could run; an honest grading takes about "
                                      f"{lim.honest_grading_seconds(cpus):.0f} s on this machine at its {cpus:.2g} "
                                      f"CPU(s) (the reference's, calibrated), and with room for one hung case it "
                                      f"needs {lim.needs(cpus):.0f} s: this platform is too small for this machine, "
                                      f"not the handin's fault: raise it to at least {lim.needs(cpus):.0f} s; "
                                      f"{host_limits.RAISE['time']}")
    if spent:
        g.grade.notes.append(f"{' and '.join(spent)}, and the grading's time on this platform ({budget}) ran out "
                             f"before {missed} other case(s) could run: they score 0 (the parts whose cases hung ran "
                             "last). Make them finish in time and every case runs")
        return True
    return g.stop("grader error", f"the grading's time on this platform ({budget}) ran out before {missed} case(s) "
                                  f"could run, and no case hung or ran slowly and the files compiled in honest time: "
                                  f"this machine is too slow for the "
                                  f"limit, not the handin; {host_limits.RAISE['time']}")


def diagnose(g: Grading) -> bool:
    if g.broken:  # the handin's fault, or the grader's? The kit's stubs must start.
        fault = kit_fault(g)
        if fault:
            g.grade.notes.append("the kit's own stubs did not start their cases either, so the fault is the "
                                 f"grader's setup, not the handin: {fault}")
            return g.stop("grader error", f"the handin's program could not run its cases: {g.broken}")
    if g.tally.unjudged:
        # No name is quoted: a plan can be written by code under test, and the note is the student's to read.
        g.grade.notes.append(f"the judge has no values for {len(g.tally.unjudged)} case(s) the program planned; "
                             "they were not graded (staff: a case changed without make hidden-data? Or the plan "
                             "was written by code under test)")
    for problem in dict.fromkeys(g.tally.integrity):
        g.grade.notes.append(f"integrity: {problem}")
    if g.tally.unfiltered:
        g.grade.notes.append("syscall filter: " + "; ".join(g.tally.unfiltered) + " (the handin's code ran "
                             "without it: it could open files and start processes; see grader/README.md)")
    if g.tally.lingered:
        g.grade.notes.append(f"{g.tally.lingered} test job(s) still ran {limits.EXIT_SECONDS:g} s after their last "
                             "case's result and were stopped: the handin's code ran on after the cases (a static "
                             "object's destructor that does not end?). Their cases' results stand; the time was "
                             "the handin's")
    if g.tally.dropped:
        g.grade.notes.append(f"the test program printed {g.tally.dropped} bytes more than the report keeps")
    return True


def isolate(g: Grading) -> bool:
    """Grades each student file alone when the combined program could not
    run its cases: one file's static initializer that hangs or crashes, or
    a symbol two files both define, must not cost the other files' parts."""
    if not g.broken:
        return True
    g.grade.notes.append(f"the combined program could not run its cases ({g.broken.splitlines()[0]}); each file was "
                         "graded alone, with the other files replaced by their stubs")
    for name in table.IMPL_FILES:
        if g.grade.files.get(name, {}).get("state") != "compiled":
            continue  # already graded as its stub
        parts = [p for p in g.parts if name in p.files]
        binary = os.path.join(g.sandbox.bin_dir, "alone_" + name.replace(".", "_"))
        others = {other: "graded as the stub while this file is graded alone" for other in table.IMPL_FILES if other != name}
        report = build(g.impl, binary, g.build_dir, fallback=STUBS_DIR, runner=g.in_sandbox,
                       obj_dir=g.sandbox.own_dir("alone_" + name.replace(".", "_")), refused=others, pch=g.pch,
                       workers=host_limits.compile_workers(), twin=True, server=server_of(binary),
                       in_process=g.in_process())
        g.sandbox.clean_up()
        why = None
        if not report["linked"]:
            why = "it does not link with the stubs: " + (report["link_errors"] or "")[:1500]
        else:
            for exe in (binary, public_twin(binary), server_of(binary)):
                if os.path.exists(exe):
                    os.chmod(exe, 0o711)
            tally = JobTally()
            ran = run_parts(binary, parts, hidden=True, tally=tally, launch_args=g.launch,
                            public_binary=public_twin(binary),
                            driven=Driven(g.driven.harness, server_of(binary)))
            g.tally.integrity += tally.integrity
            g.tally.lingered += tally.lingered
            if ran.outcomes:
                g.outcomes.update(ran.outcomes)
            else:
                why = ran.error or "its program did not start its cases"
        if why:
            g.grade.files[name]["broke"] = why
            g.grade.notes.append(f"{name} breaks the program even alone, so {', '.join(p.key for p in parts)} "
                                 f"score 0: {why}")
    if not any("broke" in f for f in g.grade.files.values()) and g.link_errors:
        g.grade.notes.append("each file runs alone: the files break only together (a symbol defined twice?); "
                             "each part was scored from its own file's run")
    return True


def score(g: Grading) -> bool:
    g.grade.parts = [score_part(part, g.outcomes, g.grade.files) for part in g.parts]
    for p in g.grade.parts:
        if p.unconfirmed:
            g.grade.notes.append(f"{p.key}: every public case passes and every hidden case fails, so the public "
                                 "cases count for nothing (their answers ship with the handout; the hidden cases "
                                 "use other shapes and rank counts: does the code handle only the public ones?)")
    return True


def kit_fault(g: Grading) -> Optional[str]:
    """Why the kit's stubs, built and run exactly as a handin is, do not start
    their cases; None if they do (one part's public cases)."""
    binary = os.path.join(g.sandbox.bin_dir, "control_tests")
    report = build(STUBS_DIR, binary, g.build_dir, fallback=STUBS_DIR, runner=g.in_sandbox,
                   obj_dir=g.sandbox.own_dir("control"), refused={}, pch=g.pch, workers=host_limits.compile_workers())
    g.sandbox.clean_up()
    if not report["linked"]:
        return "linking them failed: " + (report["link_errors"] or "")[:1000]
    os.chmod(binary, 0o711)
    run_ = table.PARTS[0].public_runs()[0]
    tally = JobTally()
    run_cases(Launch(binary, run_.ranks, timeout=run_.job_seconds, capture=True, **g.launch), run_.filter, tally)
    return tally.error
