"""The autograder's engine: one handin in, one report out (grader/grade is
the command). Standard library only.

Steps for one handin, each in a fresh scratch directory:
  1. extract only the whitelisted members (student/x.cpp or bare x.cpp, and
     feedback.txt), refusing absolute paths, '..', links, devices and
     oversized members, each named in the report;
  2. check the files statically (tools/static_checks.py): a file that breaks a
     rule is not compiled;
  3. compile the three files against the kit's prebuilt framework; a file
     that is missing, refused or does not compile is replaced by its stub,
     so it costs only the parts that use it;
  4. run every part's public and hidden cases under MPI (tools/partrun.py):
     outcomes come from the sealed results the test binary writes, never
     from the program's output, and a hang or crash costs only its case;
  5. score by the parts table (tools/parts.py) and write the reports.
Steps 2-4 run in the sandbox (sandbox.py): another user, limits, no access
to the reference or the hidden cases.
"""
import json
import os
import posixpath
import shutil
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

GRADER_DIR = os.path.dirname(os.path.abspath(__file__))
KIT_DIR = os.path.dirname(GRADER_DIR)
STUBS = os.path.join(KIT_DIR, "student")  # what a missing or refused file is graded as
sys.path.insert(0, os.path.join(KIT_DIR, "tools"))
import parts as table  # noqa: E402
from build_impl import IMPL_FILES, _recipe, build  # noqa: E402
from partrun import KITRUN, CaseOutcome, JobLog, Launch, run_cases  # noqa: E402
from run_parts import collect, fmt  # noqa: E402
from sandbox import Sandbox  # noqa: E402
from static_checks import check_file, system_include_dirs  # noqa: E402

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


def extract(handin: str, dest: str, grade: Grade) -> bool:
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


def grade_handin(handin: str, build_dir: str, keep: Optional[str] = None, slot: int = 0) -> Grade:
    """Grades one handin. As root it runs as the sandbox user of `slot`, or
    of the next free slot if another grader holds that one."""
    started = time.monotonic()
    build_dir = os.path.abspath(build_dir)  # the sandbox runs in a directory of its own
    grade = Grade(os.path.basename(handin))
    scratch = tempfile.mkdtemp(prefix="kit-grade-")
    sandbox: Optional[Sandbox] = None
    try:
        received = os.path.join(scratch, "handin")
        os.makedirs(received)
        if not extract(handin, received, grade):
            grade.parts = nothing_graded()
            return grade
        sandbox = Sandbox(KIT_DIR, build_dir, scratch, slot)
        grade.notes += sandbox.notes()
        blocked = sandbox.unreachable([os.path.join(KIT_DIR, "framework", "comm.h"), KITRUN,
                                       os.path.join(KIT_DIR, "student", IMPL_FILES[0])])
        if blocked:
            grade.status = "grader error"
            grade.notes.append(f"the sandbox user (uid {sandbox.uid}) cannot read {', '.join(blocked)}: the kit "
                               "must be readable by other users (chmod o+rx on it and o+x on its parent "
                               "directories), its protected parts excepted; nothing was graded")
            grade.parts = nothing_graded()
            return grade
        impl = os.path.join(sandbox.run_dir, "src")  # the sandbox user compiles from here
        shutil.copytree(received, impl)
        if sandbox.root:
            for path in [impl] + [os.path.join(impl, f) for f in os.listdir(impl)]:
                os.chown(path, sandbox.uid, sandbox.uid)

        def in_sandbox(cmd, timeout):
            proc = sandbox.run(cmd, timeout)
            return proc.returncode, proc.stdout.decode("utf-8", errors="replace")

        refused = static_check(impl, build_dir, in_sandbox, grade)
        bin_dir = os.path.join(scratch, "bin")
        os.makedirs(bin_dir, mode=0o711)
        binary = os.path.join(bin_dir, "kit_tests")
        report = build(impl, binary, build_dir, fallback=STUBS, runner=in_sandbox,
                       obj_dir=sandbox.own_dir("objs"), refused=refused)
        sandbox.clean_up()
        for name, r in report["files"].items():
            if name in refused:
                state = "refused by the static checks"
            elif r["compiled"]:
                state = "compiled"
            elif r["errors"] and r["errors"].endswith("missing"):
                state = "missing"
            else:
                state = "does not compile"
            grade.files.setdefault(name, {}).update(
                state=state, errors="\n".join((r["errors"] or "").splitlines()[:25]))
        if not report["linked"]:
            grade.status = "grader error"
            grade.notes.append("linking the test program failed:\n" + (report["link_errors"] or "")[:3000])
            grade.parts = nothing_graded()
            return grade
        os.chmod(binary, 0o711)  # run, not read: it holds the hidden cases
        log = JobLog()
        launch = dict(prefix=sandbox.prefix() + [KITRUN], env=sandbox.env(), results_dir=sandbox.run_dir,
                      cwd=sandbox.run_dir, after_job=sandbox.clean_up)
        outcomes, errors = collect(binary, table.PARTS, grade.handin, quiet=True, hidden=True, log=log,
                                   launch_args=launch)
        grade.output = keep_head_tail(log.output)
        grade.notes += errors
        if not outcomes:  # the handin's fault, or the grader's? The kit's stubs must start.
            fault = kit_fault(build_dir, sandbox, in_sandbox, launch, bin_dir)
            if fault:
                grade.status = "grader error"
                grade.notes.append("the kit's own stubs did not start their cases either, so the fault is the "
                                   f"grader's setup, not the handin: {fault}")
        if log.forged:
            grade.notes.append(f"integrity: {log.forged} result record(s) without a valid seal were ignored "
                               "(results are written only by the test harness; forged ones never count)")
        if log.dropped:
            grade.notes.append(f"the test program printed {log.dropped} bytes more than the report keeps")
        grade.parts = [score_part(part, outcomes, grade.files) for part in table.PARTS]
        return grade
    finally:
        if sandbox:
            grade.sandbox = {"uid": sandbox.uid, "namespaces": sandbox.isolated_fs, "root": sandbox.root}
            sandbox.release()
        grade.seconds = time.monotonic() - started
        if keep:
            shutil.copytree(scratch, keep, dirs_exist_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)


def kit_fault(build_dir: str, sandbox: Sandbox, in_sandbox, launch: Dict, bin_dir: str) -> Optional[str]:
    """Why the kit's stubs, built and run exactly as a handin is, do not start
    their cases; None if they do (one part's public cases)."""
    binary = os.path.join(bin_dir, "control_tests")
    report = build(STUBS, binary, build_dir, fallback=STUBS, runner=in_sandbox, obj_dir=sandbox.own_dir("control"),
                   refused={})
    sandbox.clean_up()
    if not report["linked"]:
        return "linking them failed: " + (report["link_errors"] or "")[:1000]
    os.chmod(binary, 0o711)
    run = table.PARTS[0].public_runs()[0]
    log = JobLog()
    run_cases(Launch(binary, run.ranks, timeout=run.timeout, capture=True, **launch), run.filter, log)
    return log.error


def static_check(impl: str, build_dir: str, runner, grade: Grade) -> Dict[str, str]:
    """Runs the static rules on each handed-in file; returns the refused
    files (name -> why) and records every finding in the report."""
    recipe = _recipe(build_dir)
    flags = [recipe["compiler"]] + recipe["compile_flags"]
    dirs = system_include_dirs(flags)
    refused: Dict[str, str] = {}
    for name in IMPL_FILES:
        path = os.path.join(impl, name)
        if not os.path.isfile(path):
            continue
        findings = check_file(path, flags, runner=runner, system_dirs=dirs, name=name)
        if findings:
            grade.files.setdefault(name, {})["findings"] = [str(f) for f in findings]
        fails = [str(f) for f in findings if f.severity == "fail"]
        if fails and os.environ.get("KIT_STATIC_CHECKS") == "warn":
            grade.notes.append(f"{name}: static-check failures only warned about (KIT_STATIC_CHECKS=warn)")
        elif fails:
            refused[name] = "refused by the static checks (graded as the stub):\n" + "\n".join(fails)
    return refused


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
