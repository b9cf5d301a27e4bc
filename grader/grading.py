"""The autograder's engine: one handin in, one report out (grader/grade is
the command). Standard library only.

grade_handin runs these steps on one handin, in a fresh scratch directory;
a step that can't go on ends grading with every part it did not reach at 0:
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
  score     by the parts table (kit/parts.py).
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
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from grader.sandbox import LIMITS, Sandbox
from kit import exec_guard, host_limits, judge
from kit import parts as table
from kit.build import HONEST_COMPILE_CPU_SECONDS, ResourceFailure, build, public_headers_copy, recipe
from kit.handin_reader import read_handin
from kit.jobs import CaseOutcome, JobTally, Launch, run_cases, run_parts
from kit.parts import IMPL_FILES
from kit.safe_read import copy_sandbox_tree
from kit.paths import KIT_DIR, KITRUN, PUBLIC_HEADERS_DIR, STUBS_DIR
from kit.static_checks import check_files

OUTPUT_KEEP = 20000  # characters of the test program's output kept, head and tail


@dataclass
class PartResult:
    key: str
    title: str
    points: float
    max_points: int
    passed: int
    cases: int
    failures: List[Dict] = field(default_factory=list)  # case, hidden, lines
    hidden_cases: int = 0
    hidden_passed: int = 0
    # Every public case passes, every hidden one fails (kit/parts.py,
    # unconfirmed): staff see the flag; the public cases earned nothing.
    unconfirmed: bool = False


@dataclass
class Grade:
    handin: str
    status: str = "graded"  # graded | not a readable handin | grader error
    parts: List[PartResult] = field(default_factory=list)
    files: Dict[str, Dict] = field(default_factory=dict)  # name -> {state, errors}
    rejected: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    seconds: float = 0.0
    output: str = ""
    sandbox: Dict = field(default_factory=dict)  # uid, namespaces, root, precompiled header
    traceback: str = ""  # of a grader error
    limits: Dict = field(default_factory=dict)   # the machine's (kit/host_limits.py: CPUs, memory, ...)
    steps: Dict[str, float] = field(default_factory=dict)  # seconds each step took
    jobs: List[Dict] = field(default_factory=list)         # each test job's seconds and cases (kit/jobs.py)

    @property
    def total(self) -> float:
        return sum(p.points for p in self.parts)

    def scores(self) -> Dict[str, float]:
        got = {p.key: round(p.points, 2) for p in self.parts}
        return {p.key: got.get(p.key, 0.0) for p in table.PARTS}


NOT_A_HANDIN = "not a readable handin"


def not_readable_sentence(handin: str, why: str) -> str:
    """The one sentence a student reads about an upload that is no handin."""
    return (f"{os.path.basename(handin)} is not a readable tar archive ({why}): upload the handin.tar that "
            "`make handin` writes in your copy of the kit.")


def extract_members(handin: str, dest: str, grade: Grade) -> bool:
    """Writes the accepted members into dest/ (flat), read by a limited child
    process (kit/handin_reader.py); returns False if the handin can't be
    read as a tar archive at all, whatever the reason."""
    read = read_handin(handin)
    if read.grader_fault:
        raise RuntimeError(read.grader_fault)
    if not read.readable:
        grade.status = NOT_A_HANDIN
        grade.notes.append(not_readable_sentence(handin, read.why))
        return False
    grade.rejected += read.rejected
    grade.notes += read.notes
    for base, data in read.files.items():
        # Root's own file, for root alone: another handin's sandbox user must never read it.
        with os.fdopen(os.open(os.path.join(dest, base), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                               0o600), "wb") as f:
            f.write(data)
    return True  # a file it lacks is named once, by the compile step (state "missing")


def keep_head_tail(text: str, limit: int = OUTPUT_KEEP) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters dropped] ...\n{text[-half:]}"


def nothing_graded() -> List[PartResult]:
    """Every part at 0 with no case run: the handin never reached the tests."""
    return [PartResult(p.key, p.title, 0.0, p.points, 0, 0) for p in table.PARTS]


class Cancelled(Exception):
    """The batch was stopped (Ctrl-C) while this handin was being graded."""


# The sandboxes in use by graders of this process, so that a stopped batch
# can end every process they started.
_ACTIVE: set = set()
_ACTIVE_LOCK = threading.Lock()


def end_all_sandboxes() -> None:
    with _ACTIVE_LOCK:
        active = list(_ACTIVE)
    for sandbox in active:
        sandbox.clean_up()


@dataclass
class Grading:
    """One handin on its way through the steps."""
    handin: str
    build_dir: str
    scratch: str
    grade: Grade
    slot: int = 0
    cancel: Optional[threading.Event] = None
    private: Tuple[str, ...] = ()          # places of the host the sandbox must not see (the batch's)
    sandbox: Optional[Sandbox] = None
    received: str = ""                     # the extracted files, as the grader's user
    impl: str = ""                         # the same files, where the sandbox user compiles them
    refused: Dict[str, str] = field(default_factory=dict)  # file -> why the static checks refused it
    binary: str = ""
    broken: str = ""                       # why the combined program could not run its cases
    link_errors: str = ""
    launch: Dict = field(default_factory=dict)
    outcomes: Dict[str, CaseOutcome] = field(default_factory=dict)
    tally: JobTally = field(default_factory=JobTally)
    time_budget: Optional[float] = None    # seconds the platform gives a grading (--time-budget), or None
    deadline: Optional[float] = None       # time.monotonic() by which the last test job must end
    pch: bool = False                      # the sandbox user can read the build's precompiled header
    hidden_values: Optional[str] = None    # the judge's hidden values from elsewhere than the kit (--hidden-values)
    kit_stamp: Optional[str] = None        # the stamp the platform's bundle expects of this kit (--kit-stamp)

    def in_sandbox(self, cmd, timeout):
        proc = self.sandbox.run(cmd, timeout)
        return proc.returncode, proc.stdout.decode("utf-8", errors="replace")

    def stop(self, status: str, note: str) -> bool:
        self.grade.status = status
        self.grade.notes.append(note)
        return False


def extract(g: Grading) -> bool:
    g.received = os.path.join(g.scratch, "handin")
    os.mkdir(g.received, 0o700)
    return extract_members(g.handin, g.received, g.grade)


def stage(g: Grading) -> bool:
    if g.kit_stamp is not None:
        mine = kit_stamp()
        if mine != g.kit_stamp.strip():
            return g.stop("grader error", f"this grader's kit ({mine or 'no kit-stamp.txt'}) is not the one the "
                                          f"assignment's bundle was made from ({g.kit_stamp.strip()}): rebuild the "
                                          "platform's image from the same `make autograder` as its bundle, and grade "
                                          "again; nothing was graded")
    # A container too small for a job would fail cases that are right, and
    # differently on each platform: the platform's setting, named, not a grade.
    short = host_limits.requirements(root=os.geteuid() == 0)
    if short:
        return g.stop("grader error", "this machine can't hold a grading job, so nothing was graded (not the "
                                      "handin's fault): " + "; ".join(f"{s.what}: {s.message}" for s in short))
    g.sandbox = Sandbox(KIT_DIR, g.build_dir, g.scratch, g.slot, private=g.private, cancel=g.cancel)
    with _ACTIVE_LOCK:
        _ACTIVE.add(g.sandbox)
    g.grade.notes += g.sandbox.notes()
    blocked = g.sandbox.unreachable([os.path.join(PUBLIC_HEADERS_DIR, "comm.h"), KITRUN,
                                     os.path.join(STUBS_DIR, IMPL_FILES[0])])
    if blocked:
        return g.stop("grader error", f"the sandbox user (uid {g.sandbox.uid}) cannot read {', '.join(blocked)}: "
                                      "the kit must be readable by other users (chmod o+rx on it and o+x on its "
                                      "parent directories), its protected parts excepted; nothing was graded")
    # The sandbox user compiles from here and can't change it: root reads
    # these files again (isolate) after handin code has run.
    g.impl = g.sandbox.hand_over(g.received)
    header = recipe(g.build_dir).get("pch_flags", [])[-1:]
    g.pch = bool(header) and not g.sandbox.unreachable([header[0], header[0] + ".gch"])
    return True


def check(g: Grading) -> bool:
    """Runs the static rules on each handed-in file, records every finding,
    and refuses the files that break a rule."""
    paths = [os.path.join(g.impl, name) for name in IMPL_FILES if os.path.isfile(os.path.join(g.impl, name))]
    for path, findings in check_files(paths, g.build_dir, runner=g.in_sandbox, pch=g.pch,
                                      workers=host_limits.compile_workers()).items():
        name = os.path.basename(path)
        if findings:
            g.grade.files.setdefault(name, {})["findings"] = [str(f) for f in findings]
        fails = [str(f) for f in findings if f.severity == "fail"]
        if fails and os.environ.get("KIT_STATIC_CHECKS") == "warn":
            g.grade.notes.append(f"{name}: static-check failures only warned about (KIT_STATIC_CHECKS=warn)")
        elif fails:
            g.refused[name] = "refused by the static checks (graded as the stub):\n" + "\n".join(fails)
    return True


def compile_files(g: Grading) -> bool:
    """Compiles the files in the sandbox, where the compiler sees of the kit
    only the public headers (a copy of root's in the scratch directory) and
    the precompiled header: a compile's messages can quote nothing else. Its
    time is the handin's: a file past the limit is graded as its stub."""
    g.binary = os.path.join(g.sandbox.bin_dir, "kit_tests")
    headers = public_headers_copy(g.build_dir, os.path.join(g.scratch, "include"))
    try:
        report = build(g.impl, g.binary, g.build_dir, fallback=STUBS_DIR, runner=g.sandbox.compile,
                       obj_dir=g.sandbox.own_dir("objs"), refused=g.refused, pch=g.pch,
                       workers=host_limits.compile_workers(), headers=headers)
    except ResourceFailure as e:
        g.sandbox.clean_up()
        return g.stop("grader error", f"{e}. This is the grading host's limit, not the handin's fault; nothing was "
                                      "graded: grade it again once the setting is raised")
    g.sandbox.clean_up()
    g.sandbox.empty_run_dir()  # the objects are linked (and cached outside): the job's memory is its own
    for name, r in report["files"].items():
        if name not in IMPL_FILES:
            continue  # an ungraded part's file (the extensions, off): its stub fills in, unsaid
        if r.get("link_findings"):
            g.grade.files.setdefault(name, {}).setdefault("findings", []).extend(r["link_findings"])
        if name in g.refused:
            state = "refused by the static checks"
        elif r.get("link_refused"):
            state = "refused by the link check"
        elif r["compiled"]:
            state = "compiled"
        elif r["errors"] and r["errors"].endswith("missing"):
            state = "missing"
        else:
            state = "does not compile"
        g.grade.files.setdefault(name, {}).update(state=state, errors="\n".join((r["errors"] or "").splitlines()[:25]),
                                                  compile_cpu=r["cpu"], compile_ran_past=r["ran_past"])
        if r.get("link_findings") and not r.get("link_refused"):
            g.grade.notes.append(f"{name}: link-check failures only warned about (KIT_STATIC_CHECKS=warn)")
    # MPI's launcher runs under the exec guard, where this machine allows it:
    # once the ranks have started, no program starts (MPI_Comm_spawn).
    env = g.sandbox.env()
    guard = os.path.join(g.sandbox.bin_dir, exec_guard.NAME)
    why_not = exec_guard.install(g.build_dir, guard, lambda cmd: g.sandbox.run(cmd, 30),
                                 context=(g.sandbox.root, g.sandbox.isolated_fs))
    if why_not:
        g.grade.notes.append(f"exec guard: off ({why_not}): MPI's launcher could start a program a rank asks for "
                             "(MPI_Comm_spawn); see grader/README.md, Threat model")
    else:
        env["KIT_EXEC_GUARD"] = guard
    # The results file lives where the job can write it but not replace it
    # (by a FIFO that would hang the reader, or a symlink): root owns the directory.
    g.launch = dict(prefix=g.sandbox.prefix(job=True) + [KITRUN], env=env, results_dir=g.sandbox.results_dir,
                    cwd=g.sandbox.run_dir, after_job=g.sandbox.clean_up, cancel=g.cancel, expected=expected_values(g.hidden_values),
                    judges_cases=True, syscall_filter=os.environ.get("KIT_SYSCALL_FILTER") != "off",
                    deadline=g.deadline)
    if not report["linked"]:
        g.link_errors = (report["link_errors"] or "")[:3000]
        lines = g.link_errors.splitlines()
        first = next((l for l in lines if "multiple definition" in l or "undefined reference" in l),
                     lines[0] if lines else "the linker gave no message")
        g.broken = "the files did not link together: " + first.split(": ", 1)[-1] if ": " in first else first
        return True
    os.chmod(g.binary, 0o711)  # run, not read: it holds the hidden cases
    return True


def run(g: Grading) -> bool:
    if g.broken:
        return True
    try:
        ran = run_parts(g.binary, table.PARTS, hidden=True, tally=g.tally, launch_args=g.launch)
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
    spent = [f"{n} case(s) {what}" for n, what in ((g.tally.hangs, "hung, each until its time limit"),
                                                  (g.tally.slow, "took over a fifth of their time limits")) if n]
    # The compile is the handin's too: a file past its limit, or files that
    # took more CPU in all than honest code does (its CPU time, unlike its
    # wall time, does not grow on a slow or busy machine).
    files = [f for f in g.grade.files.values() if f.get("compile_cpu") is not None or f.get("compile_ran_past")]
    past = sum(bool(f.get("compile_ran_past")) for f in files)
    cpu = sum(f.get("compile_cpu") or 0 for f in files)
    if past:
        spent.append(f"{past} file(s) compiled past the limit of a file's compile")
    elif cpu > HONEST_COMPILE_CPU_SECONDS:
        spent.append(f"the files' compiles took {cpu:.0f} s of CPU, where honest code takes under "
                     f"{HONEST_COMPILE_CPU_SECONDS} s")
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
        g.grade.notes.append(f"the judge has no values for {len(g.tally.unjudged)} case(s) the program planned, "
                             f"such as {g.tally.unjudged[0]}; they were not graded (staff: a case changed without "
                             "make hidden-data? Or the plan was written by code under test)")
    for problem in dict.fromkeys(g.tally.integrity):
        g.grade.notes.append(f"integrity: {problem}")
    if g.tally.unfiltered:
        g.grade.notes.append("syscall filter: " + "; ".join(g.tally.unfiltered) + " (the handin's code ran "
                             "without it: it could open files and start processes; see grader/README.md)")
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
    for name in IMPL_FILES:
        if g.grade.files.get(name, {}).get("state") != "compiled":
            continue  # already graded as its stub
        parts = [p for p in table.PARTS if name in p.files]
        binary = os.path.join(g.sandbox.bin_dir, "alone_" + name.replace(".", "_"))
        others = {other: "graded as the stub while this file is graded alone" for other in IMPL_FILES if other != name}
        report = build(g.impl, binary, g.build_dir, fallback=STUBS_DIR, runner=g.in_sandbox,
                       obj_dir=g.sandbox.own_dir("alone_" + name.replace(".", "_")), refused=others, pch=g.pch,
                       workers=host_limits.compile_workers())
        g.sandbox.clean_up()
        why = None
        if not report["linked"]:
            why = "it does not link with the stubs: " + (report["link_errors"] or "")[:1500]
        else:
            os.chmod(binary, 0o711)
            tally = JobTally()
            ran = run_parts(binary, parts, hidden=True, tally=tally, launch_args=g.launch)
            g.tally.integrity += tally.integrity
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
    g.grade.parts = [score_part(part, g.outcomes, g.grade.files) for part in table.PARTS]
    for p in g.grade.parts:
        if p.unconfirmed:
            g.grade.notes.append(f"{p.key}: every public case passes and every hidden case fails, so the public "
                                 "cases count for nothing (their answers ship with the handout; the hidden cases "
                                 "use other shapes and rank counts: does the code handle only the public ones?)")
    return True


STEPS: List[Callable[[Grading], bool]] = [extract, stage, check, compile_files, run, diagnose, isolate, score]


# Of a grading's time budget, what the reports and the platform's own
# start and finish take: the test jobs end this long before it.
REPORT_SECONDS = 2.0


def grade_handin(handin: str, build_dir: str, keep: Optional[str] = None, slot: int = 0,
                 cancel: Optional[threading.Event] = None, private: Tuple[str, ...] = (),
                 time_budget: Optional[float] = None, hidden_values: Optional[str] = None,
                 kit_stamp: Optional[str] = None) -> Grade:
    """Grades one handin. As root it runs as the sandbox user of `slot`, or
    of the next free slot if another grader holds that one. Setting `cancel`
    abandons it: it raises Cancelled. `private`: folders the handin's code
    must not see (other handins, the gradebook), covered in its namespace.
    `time_budget`: the seconds the platform allows a grading (PrairieLearn's
    timeout, say): the test jobs stop in time for the reports."""
    started = time.monotonic()
    g = Grading(handin, os.path.abspath(build_dir), tempfile.mkdtemp(prefix="kit-grade-"),
                Grade(os.path.basename(handin), limits=host_limits.describe()), slot, cancel,
                private=tuple(private) + (os.path.dirname(os.path.abspath(handin)),), time_budget=time_budget,
                deadline=started + time_budget - REPORT_SECONDS if time_budget else None, hidden_values=hidden_values,
                kit_stamp=kit_stamp)
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
            with _ACTIVE_LOCK:
                _ACTIVE.discard(g.sandbox)
        g.grade.seconds = time.monotonic() - started
        shutil.rmtree(g.scratch, ignore_errors=True)


def kit_stamp() -> str:
    """This kit's stamp (kit-stamp.txt, written by `make autograder`), or ""."""
    try:
        with open(os.path.join(KIT_DIR, "kit-stamp.txt")) as f:
            return f.read().strip()
    except OSError:
        return ""


_EXPECTED: Dict[str, judge.Expected] = {}


def expected_values(hidden: Optional[str] = None) -> judge.Expected:
    """The judge's values, recorded from the reference (grader/hidden/expected.txt,
    or `hidden`). Without them no hidden case could fail: that is the grader's
    fault, and it stops."""
    paths = judge.files(KIT_DIR, hidden)
    if len(paths) != 2:
        raise RuntimeError(f"{judge.PUBLIC} or {hidden or judge.HIDDEN} is missing: the judge has no expected values "
                           "(staff: make hidden-data)")
    key = ":".join(f"{p}:{os.stat(p).st_mtime_ns}" for p in paths)
    if key not in _EXPECTED:
        _EXPECTED[key] = judge.load_all(paths)
    return _EXPECTED[key]


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


def score_part(part: table.Part, outcomes: Dict[str, CaseOutcome], files: Dict[str, Dict]) -> PartResult:
    mine = {c: o for c, o in outcomes.items() if part.owns(c)}
    result = PartResult(part.key, part.title, part.score({c: o.passed for c, o in mine.items()}), part.points,
                        sum(o.passed for o in mine.values()), len(mine),
                        hidden_cases=sum(c.startswith("Hidden") for c in mine),
                        hidden_passed=sum(o.passed for c, o in mine.items() if c.startswith("Hidden")),
                        unconfirmed=part.unconfirmed({c: o.passed for c, o in mine.items()}))
    broken = [f for f in part.files if files.get(f, {}).get("state") != "compiled"]
    for case, outcome in mine.items():
        if outcome.passed:
            continue
        hidden = case.startswith("Hidden")
        lines = outcome.summary(max_lines=6)
        if broken:
            lines = [f"{', '.join(broken)} {files[broken[0]]['state']}: graded with the stub"] + lines[:1]
        result.failures.append({"case": case, "hidden": hidden, "lines": lines})
    for gate in part.gate_failed({c: o.passed for c, o in mine.items()}):
        result.failures.append({"case": gate, "hidden": gate.startswith("Hidden"),
                                "lines": [f"this case gates {part.key}: the part scores 0"]})
    return result
