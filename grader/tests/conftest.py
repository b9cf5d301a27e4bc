"""Fixtures of the grader's own tests: handins built on the fly from the
reference, the stubs and small edits of them, and the hostile gallery's
check that its handins leave the kit untouched.

  python3 -m pytest grader/tests        (after `make build`; `make check` runs it)
"""
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from typing import Dict, List, NamedTuple, Optional, Tuple

import pytest

from grader.slots import SLOTS, uid_base
from kit import calibration
from kit import parts as table
from kit.limits import HANG_SHARE, limit, time_scale
from kit.paths import KIT_DIR as KIT, build_dir
from kit.recipe import recipe
from staff.mutants import MUTANTS

# A handin with one known bug in part 7 (gradients summed, not averaged):
# the edit is the mutant's, so it follows the reference wherever it changes.
SUMMED_MUTANT = next(m for m in MUTANTS if m.name == "gradients summed instead of averaged")
SUMMED = {SUMMED_MUTANT.file: (SUMMED_MUTANT.find, SUMMED_MUTANT.replace)}

BUILD = build_dir()


def on_this_machine(seconds: float) -> float:
    """A time bound the self-test set on the machine the reference's
    figures were recorded on, at this machine's pace (kit/calibration.py):
    no check may depend on the host's speed, only on how much slower than
    honest work a hostile handin makes a grading."""
    return seconds * max(1.0, calibration.limits(BUILD).ratio)
GRADE = os.path.join(KIT, "grader", "grade")
# The course's student files, as the suites run under it.
IMPL_FILES = table.IMPL_FILES


def source(impl: str, name: str) -> bytes:
    with open(os.path.join(KIT, impl, name), "rb") as f:
        return f.read()


def make_tar(path: str, members):
    """members: list of (name, bytes) for regular files, or TarInfo-ready tuples
    (name, bytes, tweak) where tweak(info) may turn it into a link, device, ..."""
    with tarfile.open(path, "w") as tar:
        for entry in members:
            name, data = entry[0], entry[1]
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            if len(entry) > 2:
                entry[2](info)
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def handin(tmp_path, name="handin.tar", impl="reference", edits=None, drop=(), extra=()):
    """A handin of `impl`'s three files with text edits {file: (old, new)}."""
    members = []
    for f in IMPL_FILES:
        if f in drop:
            continue
        text = source(impl, f).decode()
        if edits and f in edits:
            old, new = edits[f]
            assert old in text, f"the edit's text is not in {impl}/{f}: {old!r}"
            text = text.replace(old, new, 1)
        members.append((f"student/{f}", text.encode()))
    members.append(("feedback.txt", b"fine\n"))
    return make_tar(str(tmp_path / name), members + list(extra))


class Graded:
    def __init__(self, proc, report):
        self.proc = proc
        self.stdout = proc.stdout
        self.report = report
        self.scores = json.loads(proc.stdout.strip().splitlines()[-1])["scores"]
        self.total = sum(self.scores.values())


def marked(tmp_path) -> dict:
    """The environment for a grader run whose processes `left_behind` can
    find later: the grader passes KIT_* variables on to the jobs it starts."""
    return dict(os.environ, KIT_TEST_MARK=str(tmp_path))


def hanging(env: dict) -> dict:
    """`env` with the limits a handin that hangs again and again is graded at
    (kit.limits.HANG_SHARE of KIT_TIME_SCALE's); hang_limit is one of them."""
    return dict(env, KIT_TIME_SCALE=repr(time_scale() * HANG_SHARE))


def hang_limit(seconds: float) -> float:
    """A limit as a grader started with hanging()'s environment applies it."""
    return limit(seconds) * HANG_SHARE


class Live(NamedTuple):
    pid: int
    uid: int
    marks: List[str]  # its KIT_TEST_MARK=... entries
    command: str


def live_processes() -> List[Live]:
    """Every process that is not a zombie (a zombie holds nothing and runs
    nothing), read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
            if status["State"].split()[0] == "Z":
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                marks = [v for v in f.read().decode(errors="replace").split("\0") if v.startswith("KIT_TEST_MARK=")]
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace")
            found.append(Live(int(entry), int(status["Uid"].split()[0]), marks, command))
        except (OSError, KeyError, ValueError, IndexError):
            continue  # gone while we looked
    return found


def left_behind(tmp_path, uid: Optional[int] = None) -> List[str]:
    """Live processes of this test's grader runs, not of the tests running
    beside it: those that carry this test's mark, and, given `uid`, every
    process of that sandbox user that carries no other test's mark (a
    handin may have cleared its environment)."""
    mine = f"KIT_TEST_MARK={tmp_path}"
    return [f"{p.pid}: {p.command}" for p in live_processes()
            if mine in p.marks or (uid is not None and p.uid == uid and not p.marks)]


def grade(tmp_path, tarball, *extra_args, path_first: Optional[str] = None, hangs: bool = False,
          static: str = "enforce") -> Graded:
    """grader/grade on `tarball`; `path_first` goes before $PATH (a fake tool);
    `hangs`: the handin hangs again and again (see hanging); `static`:
    KIT_STATIC_CHECKS ("warn" tests the run-time defences behind the checks)."""
    report_path = str(tmp_path / "report.json")
    env = dict(hanging(marked(tmp_path)) if hangs else marked(tmp_path), KIT_STATIC_CHECKS=static)
    if path_first:
        env["PATH"] = path_first + os.pathsep + env.get("PATH", "")
    proc = subprocess.run([sys.executable, GRADE, "--build", BUILD, "--json", report_path, tarball, *extra_args],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout
    with open(report_path) as f:
        return Graded(proc, json.load(f))


def batch_cmd(inbox, gradebook, *extra):
    return [sys.executable, GRADE, "--build", BUILD, "--batch", str(inbox), "--jobs", "2", "--csv", str(gradebook),
            *extra]


def batch_env(tmp_path) -> dict:
    """marked()'s environment for a batch, graded under the kit's own course
    (the table's points): batches that share six_graded's results must agree."""
    return {k: v for k, v in marked(tmp_path).items() if k not in ("KIT_COURSE", "KIT_EXTENSIONS")}


def six_handins(tmp_path):
    """The reference, the stubs, a bug, a file missing, one not compiling, no tarball."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    handin(inbox, name="ann.tar")
    handin(inbox, name="ben.tar", impl="student")
    handin(inbox, name="cat.tar", edits=SUMMED)
    handin(inbox, name="dan.tar", drop=("data_parallel_preprocess.cpp",))
    handin(inbox, name="eve.tar", edits={"zero_dp_stage3.cpp": ("namespace dtrain {", "namespace dtrain { int x = ;")})
    (inbox / "fay.tar").write_bytes(b"not a tarball")
    return inbox


@pytest.fixture(scope="session")
def six_graded(tmp_path_factory):
    """six_handins graded once, uninterrupted, as one batch: (inbox, its
    out/ folder). The tests that need a graded batch (a resumed batch held
    against it, a re-scoring, a Canvas import) copy the folder (graded_copy)
    rather than grade the six again; they share an xdist group, so one
    worker grades it."""
    top = tmp_path_factory.mktemp("six-graded")
    inbox = six_handins(top)
    proc = subprocess.run(batch_cmd(inbox, top / "out" / "gradebook.csv"), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900, env=batch_env(top))
    assert proc.returncode == 0, proc.stdout
    return inbox, top / "out"


@pytest.fixture(scope="session")
def summed_graded(tmp_path_factory):
    """The handin with SUMMED's bug graded once, with --gradescope: (Graded,
    the results file). The tests that only read that grading share it (xdist
    group "summed", so one worker grades it)."""
    top = tmp_path_factory.mktemp("summed-graded")
    results = top / "results.json"
    return grade(top, handin(top, edits=SUMMED), "--gradescope", str(results)), results


@pytest.fixture(scope="session")
def missing_file_graded(tmp_path_factory):
    """The reference without data_parallel_preprocess.cpp, graded once for
    the tests that read that grading (xdist group "missing")."""
    top = tmp_path_factory.mktemp("missing-file-graded")
    return grade(top, handin(top, drop=("data_parallel_preprocess.cpp",)))


def graded_copy(six_graded, tmp_path):
    """A copy of six_graded's out/ folder in `tmp_path`: its gradebook's path."""
    shutil.copytree(six_graded[1], tmp_path / "out")
    return tmp_path / "out" / "gradebook.csv"


@pytest.fixture(scope="session", autouse=True)
def kit_is_built():
    if not os.path.isfile(os.path.join(BUILD, "impl_recipe.json")):
        pytest.fail(f"{BUILD} holds no kit build: run `make build` first")


SANDBOX_BASE = uid_base()
SANDBOX_UIDS = range(SANDBOX_BASE, SANDBOX_BASE + SLOTS)


def sandbox_processes(uids=SANDBOX_UIDS) -> List[str]:
    return [f"{p.pid}: {p.command}" for p in live_processes() if p.uid in uids]


# What CTest writes in the build while the gallery runs beside it (make
# check runs the two side by side): its own records, the explorer's output
# (reference/explore), the handout it cuts (staff/handout_with_extensions),
# the known bugs' builds (staff/mutants.py) and `kit test`'s findings caches
# (the student loop's: no grading reads them); and what the link check's
# tests beside it compile from (link_check/, test_link_check.py). No
# grader input lies there (ctest_writes checks it), so a handin that
# changed one still shows.
CTEST_WRITES = ("Testing", "explore-check", "handout-with-extensions.tar.gz",
                "handout-with-extensions.tar.gz.unchecked", "mutants", "static_checks_cache.json",
                "link_check_cache.json", "link_check")


def grader_inputs(build: str) -> List[str]:
    """What a grading reads from the build: the recipe, the compile flags'
    files and folders, and the link's inputs."""
    how = recipe(build)
    named = [f[2:] if f.startswith("-I") else f for f in how["compile_flags"] + how.get("pch_flags", [])]
    return [os.path.join(build, "impl_recipe.json"), os.path.join(build, "compile_commands.json")] + \
        [p for p in named + list(how["link_inputs"]) if os.path.isabs(p)]


def ctest_writes(build: str) -> List[str]:
    """CTEST_WRITES as paths of the kit; fails if a grader input is among them."""
    paths = [os.path.join(build, name) for name in CTEST_WRITES]
    inside = [i for i in grader_inputs(build) for p in paths
              if os.path.realpath(i) == os.path.realpath(p) or os.path.realpath(i).startswith(os.path.realpath(p) + "/")]
    assert not inside, f"the gallery would not see these grader inputs change: {inside}"
    return [os.path.relpath(p, KIT) for p in paths]


def kit_snapshot() -> Dict[str, Tuple[int, int, int]]:
    """Every file of the kit, (size, mtime, mode), except what the grader and
    the other tests write themselves: the grader's object cache, dist/ (the
    bundle tests), Python's byte code, and what CTest writes beside them."""
    snap = {}
    skipped = {os.path.join(os.path.relpath(BUILD, KIT), "impl_cache"), "dist", *ctest_writes(BUILD)}
    for root, dirs, files in os.walk(KIT):
        rel = os.path.relpath(root, KIT)
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__") and
                   os.path.normpath(os.path.join(rel, d)) not in skipped]
        for name in files:
            path = os.path.join(root, name)
            if os.path.normpath(os.path.relpath(path, KIT)) in skipped:
                continue
            st = os.lstat(path)
            snap[os.path.relpath(path, KIT)] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return snap


# The hostile gallery (test_hostile_gallery_*.py) is one batch: the kit is
# looked at once before its first case and once after the session, whichever
# of its files ran.
@pytest.fixture(scope="session")
def untouched_kit():
    if os.geteuid() != 0:
        message = "the hostile gallery needs root (the grader's sandbox user and namespaces)"
        if os.environ.get("KIT_REQUIRE_SANDBOX"):
            pytest.fail(message)
        pytest.skip(message)
    before = kit_snapshot()
    yield
    after = kit_snapshot()
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    assert not changed, f"the gallery changed files outside the scratch directories: {changed[:20]}"
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # other workers' graders may still be running
        assert not sandbox_processes(), f"processes of the sandbox users outlived the gallery: {sandbox_processes()}"
