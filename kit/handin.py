"""`make handin`: writes handin.tar for submission.

  python3 -m kit handin [--source reference --output PATH]

The tarball holds exactly the student files and feedback.txt, after a
check that each exists, compiles against the framework and passes the
grader's static rules and its link check (a file that breaks one would be
graded as its stub).
It warns when feedback.txt is still the template, and lists the tarball.
"""
import argparse
import os
import tarfile
import tempfile
from typing import List

from kit import link_check
from kit.build import compile_one
from kit.handin_reader import read_handin
from kit import parts as table
from kit.paths import KIT_DIR, build_dir
from kit.recipe import recipe
from kit.static_checks import check_files

FEEDBACK = "feedback.txt"
TEMPLATE_MARK = "1. How difficult was the assignment (1 = easy, 5 = very hard)?\n\n2."


def members() -> List[str]:
    """What a handin holds: the course's student files and the feedback."""
    return [f"student/{name}" for name in table.IMPL_FILES] + [FEEDBACK]


def refused_files(source: str, build: str, label: str = "") -> List[str]:
    """Prints every static finding of the student files in `source`;
    returns the files the grader would refuse (and grade as the stub)."""
    refused = []
    paths = [os.path.join(source, name) for name in table.IMPL_FILES if os.path.isfile(os.path.join(source, name))]
    for path, findings in check_files(paths, build).items():
        for finding in findings:
            print(f"  {label}{finding}")
            if finding.severity == "fail" and os.path.basename(path) not in refused:
                refused.append(os.path.basename(path))
    return refused


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m kit handin", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="the CMake build directory (default: $KIT_BUILD or build/)")
    ap.add_argument("--output", default=os.path.join(KIT_DIR, "handin.tar"))
    ap.add_argument("--source", default="student",
                    help="the directory of the student files, packed as student/ (staff: reference)")
    args = ap.parse_args(argv)
    build = build_dir(args.build)
    source = os.path.join(KIT_DIR, args.source)

    def refuse(why: str) -> int:
        # An older handin.tar left beside a refusal would be handed in by mistake.
        stale = os.path.exists(args.output)
        if stale:
            os.remove(args.output)
        print(f"handin: {why}; nothing written" +
              (f" (the earlier {os.path.relpath(args.output)} was removed, so it can't be handed in by mistake)"
               if stale else ""))
        return 1

    def path_of(member: str) -> str:
        return os.path.join(source, os.path.basename(member)) if member.startswith("student/") else \
            os.path.join(KIT_DIR, member)

    missing = [m for m in members() if not os.path.isfile(path_of(m))]
    if missing:
        return refuse(f"missing {', '.join(missing)}")
    how = recipe(build)
    failed = []
    linked_out: List[str] = []
    elsewhere = link_check.defined_elsewhere(how)
    with tempfile.TemporaryDirectory(prefix="kit-handin-") as scratch:
        for name in table.IMPL_FILES:
            obj = os.path.join(scratch, name + ".o")
            errors = compile_one(how, os.path.join(source, name), obj)
            print(f"  compiles: {args.source}/{name}" if errors is None else
                  f"  DOES NOT COMPILE: {args.source}/{name}")
            if errors is not None:
                failed.append(name)
                print("\n".join(errors.splitlines()[:20]))
                continue
            found = link_check.findings(obj, os.path.join(source, name), how, elsewhere)
            for line in found:
                print(f"  {line}")
            if found:
                linked_out.append(name)
    if failed:
        return refuse("fix the compile errors above first")
    refused = refused_files(source, build)
    refused += [name for name in linked_out if name not in refused]
    if refused:
        return refuse(f"the grader would refuse {', '.join(refused)} (graded as the stub); fix the lines above first")
    with open(os.path.join(KIT_DIR, FEEDBACK)) as f:
        if TEMPLATE_MARK in f.read():
            print(f"handin: note: {FEEDBACK} is still the empty template (it is not graded, but we read it)")

    tmp = args.output + ".tmp"
    with tarfile.open(tmp, "w") as tar:
        for member in members():
            info = tar.gettarinfo(path_of(member), arcname=member)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with open(path_of(member), "rb") as f:
                tar.addfile(info, f)
    os.replace(tmp, args.output)
    # Read back as the grader reads it (its bounded reader): what is listed is what gets graded.
    read = read_handin(args.output)
    if not read.readable or read.rejected or sorted(read.files) != sorted(os.path.basename(m) for m in members()):
        return refuse(f"the grader could not read back what was written ({read.why or '; '.join(read.rejected)})")
    print(f"handin: wrote {os.path.relpath(args.output)}:")
    for member in read.members:
        print(f"  {member['size']:>8} {member['name']}")
    return 0
