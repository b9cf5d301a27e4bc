"""The hostile gallery's shared parts: a hostile handin (Hostile), the
files it is made of, and how one is graded and checked. Each handin
attacks the grader in one known way and must get exactly its expected
score, with the report naming what happened, within its time budget and
leaving nothing behind. The cases are in test_hostile_gallery_*.py, by
class of attack:

  python3 -m pytest grader/tests/test_hostile_gallery_*.py     (as root: the sandbox needs it)

Most handins hand in the reference's part-1 file, so their honest part still
scores its 10 points, and put the attack in another file. Some attacks would
be refused by the static checks or the link check before they ever ran; those run with
KIT_STATIC_CHECKS=warn (a staff switch for exactly this), so that the
runtime defences behind the static ones are tested too.
"""
import glob
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from conftest import BUILD, GRADE, IMPL_FILES, hanging, left_behind, make_tar, marked, on_this_machine, source
from grader.leftovers import remove_mqueues, sysv_objects
from grader.namespaces import SHARED_TMP

PROLOGUE = """#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>
"""


def stub_with(name: str, bodies: Dict[str, str], prologue: str = PROLOGUE, epilogue: str = "") -> bytes:
    """The stub of `name` with the throw of each named function replaced by a body."""
    text = source("student", name).decode()
    for function, body in bodies.items():
        marker = f'throw NotImplemented("{function}"'
        assert marker in text, f"no {marker} in student/{name}"
        start = text.index(marker)
        end = text.index(";", start) + 1
        text = text[:start] + body + "\n  " + text[start:end] + text[end:]
    return (prologue + text + epilogue).encode()


def reference_with(name: str, epilogue: str) -> bytes:
    return source("reference", name) + epilogue.encode()


def reference_calling(call: str, attack: str) -> List:
    """The reference's three files, its get_info first running `call` (an
    attack defined in `attack`): when every defence holds, the attack finds
    nothing and the handin scores the reference's 150 (its control score);
    an attack that gets through throws, and names what it got."""
    text = source("reference", "func_impl.cpp").decode()
    at = text.index("ParallelInfo get_info(Communicator& comm")
    brace = text.index("{", at) + 1
    func = (PROLOGUE + "#include <fcntl.h>\n#include <glob.h>\n#include <sys/stat.h>\n" + attack
            + text[:brace] + "\n  " + call + text[brace:]).encode()
    return [("student/func_impl.cpp", func)] + [("student/" + f, source("reference", f))
                                                for f in IMPL_FILES if f != "func_impl.cpp"] + [FEEDBACK]


HONEST_PART1 = ("student/data_parallel_preprocess.cpp", source("reference", "data_parallel_preprocess.cpp"))

FEEDBACK = ("feedback.txt", b"fine\n")


def zero_file(bodies: Dict[str, str], epilogue: str = "", prologue: str = PROLOGUE):
    return ("student/zero_dp_stage3.cpp", stub_with("zero_dp_stage3.cpp", bodies, prologue, epilogue))


def func_file(bodies: Dict[str, str], prologue: str = PROLOGUE):
    return ("student/func_impl.cpp", stub_with("func_impl.cpp", bodies, prologue))


ZERO_FUNCS = ["ZeroDPStage3FCLayer::partition_flat_tensor", "ZeroDPStage3FCLayer::forward",
              "ZeroDPStage3FCLayer::backward", "ZeroDPAdam::step"]

# POSIX message queues outlive their processes (the red team left 8 on a
# host without namespaces). The filter refuses mq_open; behind it (filter
# off), the namespace or the grader's clean-up removes them.
MQUEUES = r"""
#include <fcntl.h>
#include <mqueue.h>
namespace {
void leave_queues(int rank) {
  const std::string name = "/kit-gallery-queue-" + std::to_string(rank);
  mq_open(name.c_str(), O_CREAT | O_RDWR, 0600, nullptr);
}
}  // namespace
"""


def in_shared_tmp(pattern: str) -> List[str]:
    return [p for top in SHARED_TMP for p in glob.glob(os.path.join(top, pattern))]


@dataclass
class Hostile:
    name: str
    members: Callable[[str], List]     # tmp dir -> tar members (or a path to a prepared file, see build)
    total: float
    says: Tuple[str, ...] = ()         # the report must contain each
    never: Tuple[str, ...] = ()        # ... and none of these
    unseen: Tuple[str, ...] = ()       # none of these in what students see (the human report; the JSON is staff's)
    static: str = "enforce"            # KIT_STATIC_CHECKS
    budget: float = 90.0               # seconds, the whole grading
    scores: Dict[str, float] = field(default_factory=dict)  # parts that must score exactly this
    raw: Optional[Callable[[str], str]] = None  # builds the handin file itself
    gone: Tuple[str, ...] = ()         # paths that must not exist after grading
    hangs: bool = False                # hangs in case after case: graded at hanging()'s limits
    # False: graded with KIT_SYSCALL_FILTER=off (staff only), so the defence behind
    # the filter (the sandbox, the reader) is what the attack meets
    filtered: bool = True
    setup: Optional[Callable[[str], None]] = None        # tmp dir -> plants what the attack looks for
    after: Optional[Callable[[str], List[str]]] = None   # tmp dir -> what is wrong after grading (and tidies)
    status: str = "graded"             # the report's status: never "grader error" for what a handin does
    namespaces: bool = True            # False: KIT_SANDBOX_NAMESPACES=off, as in a container that forbids them
    extensions: str = ""               # KIT_EXTENSIONS for the grading: the extension parts it grades


def run_hostile(case: Hostile, tmp_path) -> None:
    tarball = case.raw(str(tmp_path)) if case.raw else make_tar(str(tmp_path / f"{case.name}.tar"),
                                                                case.members(str(tmp_path)))
    report_path = str(tmp_path / "report.json")
    env = dict(hanging(marked(tmp_path)) if case.hangs else marked(tmp_path), KIT_STATIC_CHECKS=case.static,
               KIT_SYSCALL_FILTER="on" if case.filtered else "off")
    if not case.namespaces:
        env["KIT_SANDBOX_NAMESPACES"] = "off"
    if case.extensions:
        env["KIT_EXTENSIONS"] = case.extensions
    started = time.monotonic()
    proc = subprocess.run([sys.executable, GRADE, "--build", BUILD, "--json", report_path, tarball],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                          timeout=case.budget + 120)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout
    with open(report_path) as f:
        report = json.load(f)
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["status"] == case.status, f"{case.name}: status {report['status']}: {report['notes']}"
    assert last["scoreboard"] == [case.total], f"{case.name}: scored {last['scoreboard']}\n{proc.stdout}"
    for key, points in case.scores.items():
        assert last["scores"][key] == points, f"{case.name}: {key} scored {last['scores'][key]}"
    everything = proc.stdout + json.dumps(report)
    for text in case.says:
        assert text in everything, f"{case.name}: the report does not say {text!r}\n{proc.stdout[-3000:]}"
    for text in case.never:
        assert text not in everything, f"{case.name}: the report leaks {text!r}"
    for text in case.unseen:
        assert text not in proc.stdout, f"{case.name}: the human report shows {text!r}"
    budget = on_this_machine(case.budget)
    assert seconds <= budget, f"{case.name}: graded in {seconds:.0f} s, over its {budget:.0f} s budget"
    uid = report["sandbox"]["uid"] if report.get("sandbox") else None
    assert not left_behind(tmp_path, uid), f"{case.name}: processes left behind: {left_behind(tmp_path, uid)}"
    if uid is not None:
        assert not sysv_objects(uid), f"{case.name}: System V IPC objects left behind: {sysv_objects(uid)}"
        queues = remove_mqueues(uid)
        assert not queues, f"{case.name}: POSIX message queues left behind: {queues}"
    for escape in case.gone:
        assert not os.path.exists(escape), f"{case.name}: {escape} is there after grading"
    if uid is not None:
        owned = [p for top in SHARED_TMP for p in glob.glob(os.path.join(top, "*")) if owner(p) == uid]
        assert not owned, f"{case.name}: the sandbox user's files are left in the shared temporary places: {owned}"


def owner(path: str) -> Optional[int]:
    """The uid that owns a path; None if it is gone (another worker's grading removed it meanwhile)."""
    try:
        return os.lstat(path).st_uid
    except FileNotFoundError:
        return None


def cases(gallery: List["Hostile"]) -> list:
    """The gallery as pytest's parameters. An entry graded in another mode
    is marked long: make check-long and CI run it. The modes are the
    sandbox without namespaces (as in the platforms' containers; make check
    runs those entries with them), the staff's KIT_SYSCALL_FILTER=off,
    which lets an attack past the filter to meet the defences behind it
    (make check runs the filter's own entries: raw system calls, message
    queues refused, a shell through the launcher), and a course that
    grades extension parts (KIT_EXTENSIONS; make check's CTest runs each
    extension file's known bugs)."""
    return [pytest.param(h, id=h.name, marks=pytest.mark.long if another_mode(h) else ()) for h in gallery]


def another_mode(h: "Hostile") -> bool:
    return not h.namespaces or not h.filtered or bool(h.extensions)


def grade_hostile(case: Hostile, tmp_path) -> None:
    if case.setup:
        case.setup(str(tmp_path))
    try:
        run_hostile(case, tmp_path)
    finally:
        problems = case.after(str(tmp_path)) if case.after else []
    assert not problems, f"{case.name}: after grading: {problems}"
