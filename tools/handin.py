#!/usr/bin/env python3
"""Writes handin.tar for submission (`make handin`).

The tarball holds exactly the three student files and feedback.txt, after a
check that each exists and compiles against the framework. It warns when
feedback.txt is still the template, and lists the tarball at the end.
"""
import argparse
import os
import stat
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_impl import IMPL_FILES, _recipe, compile_one  # noqa: E402
from static_checks import check_file, system_include_dirs  # noqa: E402
from partrun import KIT_DIR, default_build_dir  # noqa: E402

MEMBERS = [f"student/{name}" for name in IMPL_FILES] + ["feedback.txt"]
TEMPLATE_MARK = "1. How difficult was the assignment (1 = easy, 5 = very hard)?\n\n2."


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default=default_build_dir())
    ap.add_argument("--output", default=os.path.join(KIT_DIR, "handin.tar"))
    ap.add_argument("--source", default="student",
                    help="the directory of the three files, packed as student/ (staff: reference)")
    args = ap.parse_args(argv)
    source = os.path.join(KIT_DIR, args.source)

    def path_of(member: str) -> str:
        return os.path.join(source, os.path.basename(member)) if member.startswith("student/") else \
            os.path.join(KIT_DIR, member)

    missing = [m for m in MEMBERS if not os.path.isfile(path_of(m))]
    if missing:
        print(f"handin: missing {', '.join(missing)}; nothing written")
        return 1
    recipe = _recipe(args.build)
    failed = []
    with tempfile.TemporaryDirectory(prefix="kit-handin-") as scratch:
        for name in IMPL_FILES:
            errors = compile_one(recipe, os.path.join(source, name), os.path.join(scratch, name + ".o"))
            print(f"  compiles: {args.source}/{name}" if errors is None else f"  DOES NOT COMPILE: {args.source}/{name}")
            if errors is not None:
                failed.append(name)
                print("\n".join(errors.splitlines()[:20]))
    if failed:
        print("handin: fix the compile errors above first; nothing written")
        return 1
    # The grader's static rules (handout: Integrity): a file that breaks one is graded as its stub.
    flags = [recipe["compiler"]] + recipe["compile_flags"]
    dirs = system_include_dirs(flags)
    refused = []
    for name in IMPL_FILES:
        for finding in check_file(os.path.join(source, name), flags, system_dirs=dirs, name=name):
            print(f"  {finding}")
            if finding.severity == "fail":
                refused.append(name)
    if refused:
        print(f"handin: the grader would refuse {', '.join(sorted(set(refused)))} (graded as the stub); "
              "fix the lines above first; nothing written")
        return 1
    with open(os.path.join(KIT_DIR, "feedback.txt")) as f:
        if TEMPLATE_MARK in f.read():
            print("handin: note: feedback.txt is still the empty template (it is not graded, but we read it)")

    tmp = args.output + ".tmp"
    with tarfile.open(tmp, "w") as tar:
        for member in MEMBERS:
            info = tar.gettarinfo(path_of(member), arcname=member)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with open(path_of(member), "rb") as f:
                tar.addfile(info, f)
    os.replace(tmp, args.output)
    print(f"handin: wrote {os.path.relpath(args.output)}:")
    with tarfile.open(args.output) as tar:
        for info in tar.getmembers():
            print(f"  {stat.filemode(info.mode | stat.S_IFREG)} {info.size:>8} {info.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
