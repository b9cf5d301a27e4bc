"""The autograder bundles (course staff): `make autograder`.

  python3 -m staff.bundles     dist/autograde.tar + dist/autograde-Makefile (Autolab)
                               and dist/gradescope.zip (Gradescope)

Each bundle holds the kit's shipped folders plus grader/ (without its own
tests), with kit/parts.py carrying the course's switch as it is for this
command; nothing under reference/, staff/ or .ci/ ships (staff/dist.py).
"""
import argparse
import os
import sys
import tarfile
import zipfile
from typing import List

from kit.parts import IMPL_FILES
from staff.dist import COMMON, DIST, GRADER, KIT, add_text, add_tree, files_of, shipped_configuration


AUTOLAB_MAKEFILE = """# Autolab's autograder Makefile: Autolab puts autograde.tar and the
# student's handin.tar in the working directory and runs `make`; the score
# is the last line of output, so make must add nothing after it.
MAKEFLAGS += --no-print-directory
all:
\ttar xf autograde.tar
\tcd dtrain-kit && make build BUILD=build > build.log 2>&1 || { tail -40 build.log; exit 1; }
\tcd dtrain-kit && python3 grader/grade ../handin.tar
"""

GRADESCOPE_SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when the autograder image is built.
set -euo pipefail
cd "$(dirname "$0")/dtrain-kit"   # /autograder/source/dtrain-kit
./setup.sh
make build BUILD=build   # build/ under either MPI (MPI=mpich picks MPICH; the grader follows the build)
# Where the container forbids namespaces, the grader's sandbox user relies on
# these modes to keep out of the hidden cases and the build (grader/README.md).
chmod -R o-rwx grader/hidden build
"""

GRADESCOPE_RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission. The submission is handin.tar,
# any other tarball, or the loose files; loose files are packed as a handin.
set -uo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
KIT="$ROOT/source/dtrain-kit"
SUB="$ROOT/submission"
mkdir -p "$ROOT/results"
handin=$(find "$SUB" -maxdepth 1 -name '*.tar' | head -n 1)
if [ -z "$handin" ]; then
  handin="$ROOT/packed-handin.tar"
  members=()
  for f in {impl_files} feedback.txt; do
    found=$(find "$SUB" -name "$f" -type f | head -n 1)
    [ -n "$found" ] && members+=("-C" "$(dirname "$found")" "$f")
  done
  tar cf "$handin" --files-from /dev/null "${members[@]}"
fi
rm -f "$ROOT/results/results.json"
cd "$KIT" && python3 grader/grade "$handin" --gradescope "$ROOT/results/results.json"
status=$?
# The grader writes results.json even when it fails inside; if Python itself
# could not run it, say so rather than leave Gradescope a bare failure.
if [ ! -s "$ROOT/results/results.json" ]; then
  printf '{"score": 0, "output": "status: grader error: the autograder could not run (exit status %s); this is not your fault, the course staff will regrade", "tests": []}\n' "$status" > "$ROOT/results/results.json"
fi
"""


def autograder() -> int:
    os.makedirs(DIST, exist_ok=True)
    files = files_of(COMMON + GRADER)
    parts = shipped_configuration("autograder").encode()
    tar_path = os.path.join(DIST, "autograde.tar")
    with tarfile.open(tar_path, "w") as tar:
        add_tree(tar, [f for f in files if f != "kit/parts.py"], "dtrain-kit")
        add_text(tar, "dtrain-kit/kit/parts.py", parts)
    with open(os.path.join(DIST, "autograde-Makefile"), "w") as f:
        f.write(AUTOLAB_MAKEFILE)
    zip_path = os.path.join(DIST, "gradescope.zip")
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            info = zipfile.ZipInfo.from_file(os.path.join(KIT, f), arcname=f"dtrain-kit/{f}")
            with open(os.path.join(KIT, f), "rb") as data:
                z.writestr(info, parts if f == "kit/parts.py" else data.read())
        run_autograder = GRADESCOPE_RUN.replace("{impl_files}", " ".join(IMPL_FILES))
        for name, text in (("setup.sh", GRADESCOPE_SETUP), ("run_autograder", run_autograder)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            z.writestr(info, text)
    print(f"dist: wrote dist/autograde.tar, dist/autograde-Makefile and dist/gradescope.zip ({len(files)} kit files)")
    return 0


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.parse_args(argv)
    return autograder()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
