"""Cuts the kit's distributions (course staff).

  python3 -m staff.dist handout      dist/handout.tar.gz: what students get, then verified
  (the autograder bundles: staff/bundles.py)

What ships is decided by folder. Students get the kit's build, framework,
stubs, public tests, programs, its Python package (kit/) and the shell
helpers (tools/), with handout/README.md as their README, and no staff
target: those are make/staff.mk's, which no copy ships. A part's files are selected by its row of
the table (kit/part_table.py, found by its key): none of a part the course
does not grade ships, and no file is rewritten to leave one out. The autograder bundles add grader/ (without
its own tests). Nothing under reference/,
staff/ or .ci/ ever ships, and a bundle that would hold one is refused.
Each copy gets a course file of its own (shipped_course): the course as it
is for this command. What the handout says of parts and points is made
for the course (kit/handout_text.py); a handout that fails its check is
removed, so dist/ never holds one.
"""
import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from typing import List, Optional

from kit import course as courses
from kit.check_handout import SHIPPED, STAFF_MAKEFILE, files_under, staff_targets
from kit.handout_text import HandoutError, for_the_course, render, render_feedback
from kit import parts as table
from kit.parts import CORE_FILES, TABLE_POINTS
from kit.paths import KIT_DIR as KIT

DIST = os.path.join(KIT, "dist")

# Folders ship whole; these files of the top level ship too (kit/check_handout.py
# checks that what they point to ships with them).
COMMON = SHIPPED
GRADER = ["grader"]
LEFT_OUT = ("grader/tests/",)  # the grader's own test suite needs the reference
NEVER = ("reference/", "staff/", ".ci/")


def files_of(paths: List[str]) -> List[str]:
    def missing(p: str) -> None:
        raise SystemExit(f"dist: {p} is listed but missing")

    out = [f for f in files_under(KIT, paths, missing) if not f.startswith(LEFT_OUT) and f != STAFF_MAKEFILE]
    for f in out:
        if f.startswith(NEVER):
            raise SystemExit(f"dist: refusing to ship {f}")
    return out


def add_tree(tar: tarfile.TarFile, files: List[str], prefix: str) -> None:
    for f in files:
        tar.add(os.path.join(KIT, f), arcname=f"{prefix}/{f}", recursive=False)


def add_text(tar: tarfile.TarFile, name: str, text: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(text), mode, int(time.time())
    tar.addfile(info, io.BytesIO(text))


def run(cmd, cwd, timeout=900, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                          env=env)


# The cut copy is checked under its own switch, without the KIT_EXTENSIONS
# that may have made it.
OWN_SWITCH = {k: v for k, v in os.environ.items() if k != "KIT_EXTENSIONS"}


def shipped_course(cut: str, mpi: Optional[str] = None) -> str:
    """The course file of a cut: the extension parts the course grades now
    (the course file's, or KIT_EXTENSIONS's), held and graded, and no
    other; its points, visibility and time budgets; the MPI `mpi` (default:
    the course file's); and what the cut holds beyond the handout
    ("handout": nothing; "autograder": the grader). So the copy's make
    handin, make test and grader agree with the cut, whatever override made it."""
    holds = {"handout": (), "autograder": ("grader",)}[cut]
    points = {k: n for k, n in table.COURSE.points.items() if k in {p.key for p in table.PARTS}}
    return courses.text(table.COURSE, points, holds, table.CONFIGURATION.graded, mpi or table.MPI)


# Files whose shipped text is made for the cut, not copied.
MADE = ("handout/README.md", "feedback.txt", "course.toml")


def handout(verify: bool, out: str = os.path.join(DIST, "handout.tar.gz")) -> int:
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    graded = table.CONFIGURATION.graded
    # Nothing of an extension part the course does not grade.
    left_out = set(table.extension_paths([k for k in table.CONFIGURATION.held if k not in graded]))
    files = [f for f in files_of(COMMON) if f not in left_out]
    try:
        # The templates, their slots filled with the graded parts' texts and files (by key).
        with open(os.path.join(KIT, "handout", "README.md")) as f:
            readme = render(for_the_course(f.read(), table.PARTS, KIT, CORE_FILES), table.PARTS, table.built_parts())
        with open(os.path.join(KIT, "feedback.txt")) as f:
            feedback = render_feedback(for_the_course(f.read(), table.PARTS, KIT, CORE_FILES), readme)
    except (HandoutError, OSError) as e:
        raise SystemExit(f"dist: {e}")
    # The staff's targets (grade, handout, check, ...) need what a handout
    # doesn't hold: their file, make/staff.mk, stays behind, and the copy's
    # course (holds = []) includes none.
    cut = staff_targets(KIT)
    # Written beside its place and moved there once checked: a handout
    # that fails its check never stays in dist/.
    partial = out + ".unchecked"
    try:
        with tarfile.open(partial, "w:gz") as tar:
            add_tree(tar, [f for f in files if f not in MADE], "dtrain-kit")
            add_text(tar, "dtrain-kit/feedback.txt", feedback.encode())
            add_text(tar, "dtrain-kit/course.toml", shipped_course("handout").encode())
            for name in ("README.md", "handout/README.md"):
                add_text(tar, f"dtrain-kit/{name}", readme.encode())
        print(f"dist: the handout leaves out {STAFF_MAKEFILE}, the targets {', '.join(sorted(cut))}")
        print(f"dist: made the handout ({len(files) + 1} files; extension parts graded: {', '.join(graded) or 'none'}; "
              f"{table.TOTAL_POINTS} points" + (f"; points other than the table's: " + ", ".join(
                  f"{p.key} {p.points}" for p in table.PARTS if p.points != TABLE_POINTS[p.key]) if any(
                  p.points != TABLE_POINTS[p.key] for p in table.PARTS) else "") + ")")
        status = verify_handout(partial) if verify else 0
    except BaseException:
        remove(partial)
        raise
    remove(out)
    if status:
        remove(partial)
        print(f"dist: no handout written ({os.path.relpath(out, KIT)} removed): fix what the check found, then "
              "make handout again")
        return status
    os.replace(partial, out)
    print(f"dist: wrote {os.path.relpath(out, KIT)}")
    return 0


def remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def verify_handout(tarball: str) -> int:
    """Unpacks the handout and checks it as a student would meet it."""
    problems = []
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
        for name in names:
            if "reference" in name.split("/") or name.startswith("dtrain-kit/grader"):
                problems.append(f"ships {name}")
        # Nothing of an extension part the course does not grade: no file, no section.
        readme = tar.extractfile("dtrain-kit/README.md").read().decode()
        for part in (p for p in table.ALL_PARTS if p.extension and p.key not in table.CONFIGURATION.graded):
            problems += [f"ships {f} of {part.key}, which the course does not grade" for f in part.own_paths()
                         if f"dtrain-kit/{f}" in names]
            if re.search(rf"^#+ {re.escape(part.handout)}\b", readme, re.M):
                problems.append(f"the README has a section {part.handout!r} ({part.key}), which the course does not grade")
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".cpp") and "/student/" in member.name:
                text = tar.extractfile(member).read().decode()
                if "is not implemented" not in text and "NotImplemented" not in text:
                    problems.append(f"{member.name} is not a stub")
    with tempfile.TemporaryDirectory(prefix="kit-handout-") as scratch:
        with tarfile.open(tarball) as tar:
            tar.extractall(scratch)
        kit = os.path.join(scratch, "dtrain-kit")
        # Self-contained: every README section, README file and make target
        # the handout or its files point to is in it.
        check = run([sys.executable, "-m", "kit", "check-handout"], kit, env=OWN_SWITCH)
        if check.returncode != 0:
            problems.append("kit check-handout fails in the handout:\n" + check.stdout[-3000:])
        makefile = open(os.path.join(kit, "Makefile")).read()
        for word in ("grader/", "staff/", "staff.", "STAFF_ONLY"):
            if word in makefile:
                problems.append(f"the handout's Makefile still mentions {word}")
        build = run(["make", "build"], kit, env=OWN_SWITCH)
        if build.returncode != 0:
            problems.append("make build fails:\n" + build.stdout[-3000:])
        else:
            test = run(["make", "test"], kit, env=OWN_SWITCH)
            lines = test.stdout.splitlines()
            if f"total: 0 / {table.TOTAL_POINTS} points" not in lines:
                problems.append(f"make test does not end at 0 / {table.TOTAL_POINTS}:\n" + "\n".join(lines[-15:]))
            if "is not implemented yet" not in test.stdout:
                problems.append("the stubs do not say they are not implemented")
            handin = run(["make", "handin"], kit, env=OWN_SWITCH)
            packed = tarfile.open(os.path.join(kit, "handin.tar")).getnames() if handin.returncode == 0 else []
            wanted = [f"student/{f}" for f in table.IMPL_FILES] + ["feedback.txt"]
            if packed != wanted:
                problems.append(f"make handin packs {packed or 'nothing'}, not {wanted}:\n" + handin.stdout[-2000:])
            # No symbol of the solution may be in the built binaries either.
            binary = os.path.join(kit, "build", "student", "kit_tests")
            strings = run(["strings", binary], kit).stdout if shutil.which("strings") else ""
            if "gather_column_blocks" in strings:
                problems.append("a reference helper's name is in the student binary")
    for p in problems:
        print(f"dist: handout check: {p}")
    print("dist: handout check " + ("FAILED" if problems else f"passed: builds, scores 0 / {table.TOTAL_POINTS}, no solution inside"))
    return 1 if problems else 0


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["handout"])
    ap.add_argument("--no-verify", action="store_true", help="handout: skip the build-and-score check")
    ap.add_argument("--out", help="handout: where to write it (default dist/handout.tar.gz)")
    args = ap.parse_args(argv)
    return handout(not args.no_verify, *([os.path.abspath(args.out)] if args.out else []))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
