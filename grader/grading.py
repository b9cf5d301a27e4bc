"""The autograder's engine: one handin in, one report out (grader/grade is
the command). Standard library only.

grade_handin runs these steps on one handin, in a fresh scratch directory;
a step that can't go on ends grading with every part it did not reach at 0:
  extract   only the whitelisted members (student/x.cpp or bare x.cpp, and
            feedback.txt), refusing absolute paths, '..', links, devices and
            oversized members, each named in the report;
  stage     claim a sandbox (sandbox.py) and hand it the files;
  check     the static rules (kit/static_checks.py): a file that breaks one
            is not compiled;
  compile   each file against the kit's prebuilt framework; a file that is
            missing, refused or does not compile is replaced by its stub, so
            it costs only the parts that use it;
  run       every part's public and hidden cases under MPI (kit/jobs.py):
            outcomes come from sealed records, never from the program's
            output, and a hang or crash costs only its case;
  diagnose  whose fault it is when no case ran, and what the records say of
            the run's integrity;
  score     by the parts table (kit/parts.py).
check, compile and run happen in the sandbox: another user, limits, no
access to the reference or the hidden cases.
"""
import json
import os
import posixpath
import shutil
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from grader.sandbox import Sandbox
from kit import parts as table
from kit.build import build
from kit.jobs import CaseOutcome, JobTally, Launch, run_cases
from kit.parts import IMPL_FILES
from kit.paths import KIT_DIR, KITRUN, STUBS_DIR
from kit.report import fmt
from kit.static_checks import check_files
from kit.suite import collect

ACCEPTED = set(IMPL_FILES) | {"feedback.txt"}
MAX_MEMBER_BYTES = 1 << 20
MAX_MEMBERS = 200
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


@dataclass
class Grade:
    handin: str
    status: str = "graded"  # graded | not a tar archive | grader error
    parts: List[PartResult] = field(default_factory=list)
    files: Dict[str, Dict] = field(default_factory=dict)  # name -> {state, errors}
    rejected: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    seconds: float = 0.0
    output: str = ""
    sandbox: Dict = field(default_factory=dict)  # uid, namespaces, root

    @property
    def total(self) -> float:
        return sum(p.points for p in self.parts)

    def scores(self) -> Dict[str, float]:
        got = {p.key: round(p.points, 2) for p in self.parts}
        return {p.key: got.get(p.key, 0.0) for p in table.PARTS}


def extract_members(handin: str, dest: str, grade: Grade) -> bool:
    """Writes the accepted members into dest/ (flat); returns False if the
    handin is not a tar archive at all."""
    try:
        tar = tarfile.open(handin, "r:*")
    except (tarfile.TarError, OSError) as e:
        grade.status = "not a tar archive"
        grade.notes.append(f"{os.path.basename(handin)} is not a readable tar archive ({e}); every part scores 0")
        return False
    seen = set()
    with tar:
        for count, member in enumerate(tar):
            if count >= MAX_MEMBERS:
                grade.rejected.append(f"more than {MAX_MEMBERS} members: the rest are ignored")
                break
            name = member.name
            parts = name.replace("\\", "/").split("/")
            why = None
            if name.startswith("/"):
                why = "absolute path"
            elif ".." in parts:
                why = "path with '..'"
            elif member.issym() or member.islnk():
                why = "link"
            elif member.ischr() or member.isblk() or member.isfifo():
                why = "device or pipe"
            elif member.isdir():
                continue
            elif not member.isfile():
                why = "not a regular file"
            if why:
                grade.rejected.append(f"{name}: {why}, not extracted")
                continue
            clean = posixpath.normpath(name.replace("\\", "/"))
            base = posixpath.basename(clean)
            if base not in ACCEPTED or clean not in (base, f"student/{base}"):
                grade.notes.append(f"{name}: not one of the handed-in files, ignored")
                continue
            if member.size > MAX_MEMBER_BYTES:
                grade.rejected.append(f"{name}: {member.size} bytes, over the {MAX_MEMBER_BYTES} byte limit")
                continue
            data = tar.extractfile(member).read(MAX_MEMBER_BYTES + 1)
            if base in seen:
                grade.notes.append(f"{name}: {base} appears twice; the last copy is used")
            seen.add(base)
            with open(os.path.join(dest, base), "wb") as f:
                f.write(data)
    for name in IMPL_FILES:
        if name not in seen:
            grade.notes.append(f"{name} is missing: graded as the unimplemented stub")
    return True


def keep_head_tail(text: str, limit: int = OUTPUT_KEEP) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters dropped] ...\n{text[-half:]}"


def nothing_graded() -> List[PartResult]:
    """Every part at 0 with no case run: the handin never reached the tests."""
    return [PartResult(p.key, p.title, 0.0, p.points, 0, 0) for p in table.PARTS]


@dataclass
class Grading:
    """One handin on its way through the steps."""
    handin: str
    build_dir: str
    scratch: str
    grade: Grade
    slot: int = 0
    sandbox: Optional[Sandbox] = None
    received: str = ""                     # the extracted files, as the grader's user
    impl: str = ""                         # the same files, where the sandbox user compiles them
    refused: Dict[str, str] = field(default_factory=dict)  # file -> why the static checks refused it
    binary: str = ""
    launch: Dict = field(default_factory=dict)
    outcomes: Dict[str, CaseOutcome] = field(default_factory=dict)
    tally: JobTally = field(default_factory=JobTally)

    def in_sandbox(self, cmd, timeout):
        proc = self.sandbox.run(cmd, timeout)
        return proc.returncode, proc.stdout.decode("utf-8", errors="replace")

    def stop(self, status: str, note: str) -> bool:
        self.grade.status = status
        self.grade.notes.append(note)
        return False


def extract(g: Grading) -> bool:
    g.received = os.path.join(g.scratch, "handin")
    os.makedirs(g.received)
    return extract_members(g.handin, g.received, g.grade)


def stage(g: Grading) -> bool:
    g.sandbox = Sandbox(KIT_DIR, g.build_dir, g.scratch, g.slot)
    g.grade.notes += g.sandbox.notes()
    blocked = g.sandbox.unreachable([os.path.join(KIT_DIR, "framework", "comm.h"), KITRUN,
                                     os.path.join(STUBS_DIR, IMPL_FILES[0])])
    if blocked:
        return g.stop("grader error", f"the sandbox user (uid {g.sandbox.uid}) cannot read {', '.join(blocked)}: "
                                      "the kit must be readable by other users (chmod o+rx on it and o+x on its "
                                      "parent directories), its protected parts excepted; nothing was graded")
    g.impl = os.path.join(g.sandbox.run_dir, "src")  # the sandbox user compiles from here
    shutil.copytree(g.received, g.impl)
    if g.sandbox.root:
        for path in [g.impl] + [os.path.join(g.impl, f) for f in os.listdir(g.impl)]:
            os.chown(path, g.sandbox.uid, g.sandbox.uid)
    return True


def check(g: Grading) -> bool:
    """Runs the static rules on each handed-in file, records every finding,
    and refuses the files that break a rule."""
    paths = [os.path.join(g.impl, name) for name in IMPL_FILES if os.path.isfile(os.path.join(g.impl, name))]
    for path, findings in check_files(paths, g.build_dir, runner=g.in_sandbox).items():
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
    bin_dir = os.path.join(g.scratch, "bin")
    os.makedirs(bin_dir, mode=0o711)
    g.binary = os.path.join(bin_dir, "kit_tests")
    report = build(g.impl, g.binary, g.build_dir, fallback=STUBS_DIR, runner=g.in_sandbox,
                   obj_dir=g.sandbox.own_dir("objs"), refused=g.refused)
    g.sandbox.clean_up()
    for name, r in report["files"].items():
        if name in g.refused:
            state = "refused by the static checks"
        elif r["compiled"]:
            state = "compiled"
        elif r["errors"] and r["errors"].endswith("missing"):
            state = "missing"
        else:
            state = "does not compile"
        g.grade.files.setdefault(name, {}).update(state=state, errors="\n".join((r["errors"] or "").splitlines()[:25]))
    if not report["linked"]:
        return g.stop("grader error", "linking the test program failed:\n" + (report["link_errors"] or "")[:3000])
    os.chmod(g.binary, 0o711)  # run, not read: it holds the hidden cases
    return True


def run(g: Grading) -> bool:
    g.launch = dict(prefix=g.sandbox.prefix() + [KITRUN], env=g.sandbox.env(), results_dir=g.sandbox.run_dir,
                    cwd=g.sandbox.run_dir, after_job=g.sandbox.clean_up)
    g.outcomes, errors = collect(g.binary, table.PARTS, g.grade.handin, quiet=True, hidden=True, tally=g.tally,
                                 launch_args=g.launch)
    g.grade.output = keep_head_tail(g.tally.output)
    g.grade.notes += errors
    return True


def diagnose(g: Grading) -> bool:
    if not g.outcomes:  # the handin's fault, or the grader's? The kit's stubs must start.
        fault = kit_fault(g)
        if fault:
            g.grade.status = "grader error"
            g.grade.notes.append("the kit's own stubs did not start their cases either, so the fault is the "
                                 f"grader's setup, not the handin: {fault}")
    if g.tally.forged:
        g.grade.notes.append(f"integrity: {g.tally.forged} result record(s) without a valid seal were ignored "
                             "(results are written only by the test harness; forged ones never count)")
    if g.tally.dropped:
        g.grade.notes.append(f"the test program printed {g.tally.dropped} bytes more than the report keeps")
    return True


def score(g: Grading) -> bool:
    g.grade.parts = [score_part(part, g.outcomes, g.grade.files) for part in table.PARTS]
    return True


STEPS: List[Callable[[Grading], bool]] = [extract, stage, check, compile_files, run, diagnose, score]


def grade_handin(handin: str, build_dir: str, keep: Optional[str] = None, slot: int = 0) -> Grade:
    """Grades one handin. As root it runs as the sandbox user of `slot`, or
    of the next free slot if another grader holds that one."""
    started = time.monotonic()
    g = Grading(handin, os.path.abspath(build_dir), tempfile.mkdtemp(prefix="kit-grade-"),
                Grade(os.path.basename(handin)), slot)
    try:
        for step in STEPS:
            if not step(g):
                break
        if not g.grade.parts:
            g.grade.parts = nothing_graded()
        return g.grade
    finally:
        if g.sandbox:
            g.grade.sandbox = {"uid": g.sandbox.uid, "namespaces": g.sandbox.isolated_fs, "root": g.sandbox.root}
            g.sandbox.release()
        g.grade.seconds = time.monotonic() - started
        if keep:
            shutil.copytree(g.scratch, keep, dirs_exist_ok=True)
        shutil.rmtree(g.scratch, ignore_errors=True)


def kit_fault(g: Grading) -> Optional[str]:
    """Why the kit's stubs, built and run exactly as a handin is, do not start
    their cases; None if they do (one part's public cases)."""
    binary = os.path.join(os.path.dirname(g.binary), "control_tests")
    report = build(STUBS_DIR, binary, g.build_dir, fallback=STUBS_DIR, runner=g.in_sandbox,
                   obj_dir=g.sandbox.own_dir("control"), refused={})
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
                        sum(o.passed for o in mine.values()), len(mine))
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


def human_report(grade: Grade) -> str:
    out = [f"handin: {grade.handin}   ({grade.status}, graded in {grade.seconds:.1f} s)"]
    for name, f in grade.files.items():
        out.append(f"  {name}: {f['state']}")
        if f.get("findings"):
            out += ["      " + line for line in f["findings"][:12]]
        elif f["state"] == "does not compile" and f["errors"]:
            out += ["      " + line for line in f["errors"].splitlines()[:12]]
    out += [f"  rejected: {r}" for r in grade.rejected]
    out += [f"  note: {n}" for n in grade.notes]
    out.append("")
    out.append(f"{'part':<16} {'points':>13}  {'cases':>7}  title")
    for p in grade.parts:
        out.append(f"{p.key:<16} {fmt(p.points):>6} / {p.max_points:<4}  {p.passed:>3}/{p.cases:<3}  {p.title}")
    out.append(f"{'total':<16} {fmt(grade.total):>6} / {table.TOTAL_POINTS}")
    failing = [(p, f) for p in grade.parts for f in p.failures]
    if failing:
        out.append("")
        out.append("failing cases:")
        for part, f in failing:
            section = next(x.handout for x in table.PARTS if x.key == part.key)
            out.append(f"  {part.key}: {f['case']}{' (hidden)' if f['hidden'] else ''}   handout: {section}")
            out += [f"      {line}" for line in f["lines"]]
    return "\n".join(out)


def autolab_line(grade: Grade) -> str:
    return json.dumps({"scores": grade.scores(), "scoreboard": [round(grade.total, 2)]})


def gradescope_results(grade: Grade) -> Dict:
    tests = []
    for p in grade.parts:
        shown = [f for f in p.failures if not f["hidden"]]
        hidden = [f for f in p.failures if f["hidden"]]
        text = [f"{p.passed}/{p.cases} cases passed"]
        for f in shown:
            text += [f"FAIL {f['case']}"] + [f"    {line}" for line in f["lines"]]
        if hidden:
            text.append(f"{len(hidden)} hidden case(s) failed; details after the due date")
        tests.append({"name": f"{p.key}: {p.title}", "score": round(p.points, 2), "max_score": p.max_points,
                      "output": "\n".join(text), "visibility": "visible"})
        if hidden:
            tests.append({"name": f"{p.key}: hidden cases", "score": 0, "max_score": 0,
                          "output": "\n".join(f"FAIL {f['case']}\n" + "\n".join(f"    {l}" for l in f["lines"])
                                              for f in hidden),
                          "visibility": "after_due_date"})
    return {"score": round(grade.total, 2), "output": "\n".join(grade.notes + grade.rejected),
            "execution_time": round(grade.seconds, 1), "tests": tests}


def full_json(grade: Grade) -> Dict:
    return {"handin": grade.handin, "status": grade.status, "total": round(grade.total, 2),
            "max_total": table.TOTAL_POINTS, "seconds": round(grade.seconds, 2), "files": grade.files,
            "rejected": grade.rejected, "notes": grade.notes,
            "parts": [p.__dict__ for p in grade.parts], "sandbox": grade.sandbox, "output": grade.output}
