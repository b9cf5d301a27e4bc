"""The grading steps that bring a handin to its test program: extract its
members, stage them in a sandbox, check their text and compile them
(grader/grading.py runs the steps in order; running.py has the rest).
Also the state a handin carries through every step (Grading), and the
sandboxes in use, so that a stopped batch can end their processes.
"""
import os
import threading
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from grader.grades import NOT_A_HANDIN, Grade, not_readable_sentence
from grader.sandbox import Sandbox
from kit import calibration, exec_guard, host_limits, judge
from kit.build import ResourceFailure, build, place_driven_harness, public_twin, server_of
from kit.handin_reader import read_handin
from kit.jobs import Driven
from kit import parts as table
from kit.launch import JobTally
from kit.outcomes import CaseOutcome
from kit.paths import KIT_DIR, KITRUN, PUBLIC_HEADERS_DIR, STUBS_DIR, build_mpi
from kit.recipe import public_headers_copy, recipe
from kit.static_checks import check_files
from kit import overrides

# The sandboxes in use by graders of this process, so that a stopped batch
# can end every process they started.
_ACTIVE: set = set()
_ACTIVE_LOCK = threading.Lock()


def end_all_sandboxes() -> None:
    with _ACTIVE_LOCK:
        active = list(_ACTIVE)
    for sandbox in active:
        sandbox.clean_up()


def forget(sandbox: Sandbox) -> None:
    """The sandbox is released: a stopped batch has nothing more to end there."""
    with _ACTIVE_LOCK:
        _ACTIVE.discard(sandbox)


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
    driven: Optional[Driven] = None        # the driven parts' programs (kit/jobs.py), beside `binary`
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
    parts: List = field(default_factory=lambda: list(table.PARTS))  # the parts whose cases run

    def in_process(self) -> bool:
        """Whether a part graded runs in the usual mode, its harness in the
        handin's test program (kit/jobs.py): only then is one linked."""
        return any(not p.driven for p in self.parts)

    def in_sandbox(self, cmd, timeout, stall=None, cpu_limit=None):  # noqa: ARG002 (the wall limit alone, here)
        proc = self.sandbox.run(cmd, timeout)
        return proc.returncode, proc.stdout.decode("utf-8", errors="replace")

    def stop(self, status: str, note: str) -> bool:
        self.grade.status = status
        self.grade.notes.append(note)
        return False


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
    # The limits a handin can exceed, calibrated on this machine: the report keeps them.
    g.grade.limits["calibrated"] = calibration.limits(g.build_dir).describe()
    g.sandbox = Sandbox(KIT_DIR, g.build_dir, g.scratch, g.slot, private=g.private, cancel=g.cancel)
    with _ACTIVE_LOCK:
        _ACTIVE.add(g.sandbox)
    g.grade.notes += g.sandbox.notes()
    blocked = g.sandbox.unreachable([os.path.join(PUBLIC_HEADERS_DIR, "comm.h"), KITRUN,
                                     os.path.join(STUBS_DIR, table.IMPL_FILES[0])])
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
    paths = [os.path.join(g.impl, name) for name in table.IMPL_FILES if os.path.isfile(os.path.join(g.impl, name))]
    for path, findings in check_files(paths, g.build_dir, runner=g.in_sandbox, pch=g.pch,
                                      workers=host_limits.compile_workers()).items():
        name = os.path.basename(path)
        if findings:
            g.grade.files.setdefault(name, {})["findings"] = [str(f) for f in findings]
        fails = [str(f) for f in findings if f.severity == "fail"]
        if fails and overrides.STATIC_CHECKS_WARN:
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
                       workers=host_limits.compile_workers(), headers=headers, twin=True, server=server_of(g.binary),
                       in_process=g.in_process())
    except ResourceFailure as e:
        g.sandbox.clean_up()
        return g.stop("grader error", f"{e}. This is the grading host's limit, not the handin's fault; nothing was "
                                      "graded: grade it again once the setting is raised")
    g.sandbox.clean_up()
    g.sandbox.empty_run_dir()  # the objects are linked (and cached outside): the job's memory is its own
    for name, r in report["files"].items():
        if name not in table.IMPL_FILES:
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
    # The jobs' launcher can't read the build tree from the sandbox: it is told the build's MPI.
    env["KIT_MPI"] = build_mpi(g.build_dir) or "openmpi"
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
                    judges_cases=True, syscall_filter=overrides.SYSCALL_FILTER != "off",
                    deadline=g.deadline, limits=calibration.limits(g.build_dir))
    # The driven parts' harness (docs/driven-calls.md) is the kit's, the same for every handin; set
    # before the link's verdict, so that a handin graded file by file (running.py) is driven too.
    g.driven = Driven(place_driven_harness(g.build_dir, g.binary), server_of(g.binary))
    if not report["linked"]:
        g.link_errors = (report["link_errors"] or "")[:3000]
        lines = g.link_errors.splitlines()
        first = next((l for l in lines if "multiple definition" in l or "undefined reference" in l),
                     lines[0] if lines else "the linker gave no message")
        g.broken = "the files did not link together: " + first.split(": ", 1)[-1] if ": " in first else first
        return True
    for exe in (g.binary, public_twin(g.binary), server_of(g.binary)):
        if os.path.exists(exe):  # the first two where a part graded runs in the usual mode
            os.chmod(exe, 0o711)  # run, not read: the first holds the hidden cases
    return True


def kit_stamp() -> str:
    """This kit's stamp (kit-stamp.txt, written by `make autograder`), or ""."""
    try:
        with open(os.path.join(KIT_DIR, "kit-stamp.txt")) as f:
            return f.read().strip()
    except OSError:
        return ""


_EXPECTED: Dict[str, judge.Expected] = {}


def expected_values(hidden: Optional[str] = None) -> judge.Expected:
    """The judge's values, recorded from the reference (each part's, kit/judge.py,
    or `hidden`'s). Without them no hidden case could fail: that is the grader's
    fault, and it stops."""
    public, secret = judge.files(KIT_DIR, hidden)
    if not public or not secret:
        raise RuntimeError(f"{'the public values' if not public else hidden or 'the hidden values'} missing: the "
                           "judge has no expected values (staff: make hidden-data)")
    paths = public + secret
    key = ":".join(f"{p}:{os.stat(p).st_mtime_ns}" for p in paths)
    if key not in _EXPECTED:
        _EXPECTED[key] = judge.load_all(paths)
    return _EXPECTED[key]
