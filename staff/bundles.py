"""The autograder bundles, one per grading platform (course staff):
`make autograder`.

  python3 -m staff.bundles      writes, in dist/:
    autolab/        the course image's context (Containerfile, dtrain-kit/, hidden-values.txt), and the two files the
                    assessment takes: autograde.tar (the kit's stamp) and autograde-Makefile
    gradescope.zip  setup.sh (builds the kit when Gradescope builds its image) and run_autograder
    prairielearn/   the grader image's context (Containerfile, dtrain-kit/), the course files it
                    needs (serverFilesCourse/dtrain-kit/: the judge's hidden values, the kit's stamp)
                    and an example question (questions/dtrain/: info.json with externalGradingOptions)

The judge's hidden values (each part's grader/hidden/KEY/expected.txt and
the salt, kit/judge.py) go with the bundles in one file
(grader/hidden/expected.txt), only for the parts the course grades, and
never into an image: each
platform's section of grader/README.md says which upload or repository
holding them must stay private.

Every platform builds the kit once, when its image is built
(grader/platforms/prepare-image), and then compiles only a submission's
files for each grading. Each bundle holds the kit's shipped folders plus
grader/ (without its own tests), its own course.toml carrying the course
as it is for this command, and kit-stamp.txt: a hash of those
files, which the grader compares with the stamp the platform hands it,
so that an image left from an older kit is a grader error, not a grade.
Nothing under reference/, staff/ or .ci/ ships (staff/dist.py).
"""
import argparse
import hashlib
import json
import os
import shutil
import sys
import tarfile
import zipfile
from typing import Dict, List

from kit import judge
from kit import parts as table
from staff.dist import COMMON, DIST, GRADER, KIT, add_text, files_of, shipped_course

PLATFORMS = os.path.join("grader", "platforms")
# PrairieLearn's timeout counts the container's start too: the question's
# timeout is the course's budget for a grading plus this.
PRAIRIELEARN_START_SECONDS = 3


def kit_files() -> Dict[str, bytes]:
    """The bundles' copy of the kit: name -> content, without the files of
    the extension parts the course does not grade, and course.toml holding
    the course as it is for this command."""
    course = table.CONFIGURATION
    left_out = set(table.extension_paths([k for k in course.held if k not in course.graded]))
    # Each part's hidden values go in one file, below; none by its own path.
    secret = set(judge.hidden_files())
    files = {f: open(os.path.join(KIT, f), "rb").read() for f in files_of(COMMON + GRADER)
             if f not in left_out and f not in secret}
    files["course.toml"] = shipped_course("autograder").encode()
    files[HIDDEN_VALUES] = hidden_values().encode()
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name] + b"\0")
    files["kit-stamp.txt"] = (digest.hexdigest()[:16] + "\n").encode()
    return files


HIDDEN_VALUES = judge.BUNDLED


def hidden_values() -> str:
    """The salt and the hidden values of the parts graded, in one file: a
    bundle holds no secret the course does not use."""
    graded = dict.fromkeys(p.values_paths()[1] for p in table.PARTS)
    texts = []
    for rel in [judge.SALT] + list(graded):
        with open(os.path.join(KIT, rel)) as f:
            texts.append(f.read())
    return "".join(texts)
# The time stamp of every file of an image's context: the same files then
# make the same layer, whichever platform's context they are in.
CONTEXT_MTIME = 1700000000


def write_tree(files: Dict[str, bytes], dest: str) -> None:
    """The kit as a folder (an image's build context), modes kept, without
    the judge's hidden values, which each platform places itself."""
    shutil.rmtree(dest, ignore_errors=True)
    for name, data in files.items():
        if name == HIDDEN_VALUES:
            continue
        path = os.path.join(dest, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        source = os.path.join(KIT, name)
        os.chmod(path, os.stat(source).st_mode & 0o777 if os.path.exists(source) else 0o644)
    for root, dirs, names in os.walk(dest, topdown=False):
        for n in names + dirs:
            os.utime(os.path.join(root, n), (CONTEXT_MTIME, CONTEXT_MTIME))
    os.utime(dest, (CONTEXT_MTIME, CONTEXT_MTIME))


AUTOLAB_MAKEFILE = """# Autolab's autograder Makefile. Tango runs `make` in a folder holding this
# file, autograde.tar and the student's handin.tar, as the user autograde, in
# the course image (dist/autolab/Containerfile), where the kit is built. The
# score is the last line of the output.
all:
\t@dtrain-grade
"""

GRADESCOPE_SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image:
# the kit is built then (grader/platforms/prepare-image), so that each
# submission compiles only its own files.
set -euo pipefail
"$(dirname "$0")/dtrain-kit/grader/platforms/prepare-image"
"$(dirname "$0")/dtrain-kit/grader/platforms/prepare-image" --fits gradescope
"""

GRADESCOPE_RUN = f"""#!/usr/bin/env bash
# Gradescope runs this for every submission, as root. The submission is
# handin.tar, any other tarball, or the loose files (packed as a handin).
set -uo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
KIT="$ROOT/source/dtrain-kit"
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"
handin=$("$KIT/grader/platforms/pack-submission" "$ROOT/submission" "$ROOT/packed-handin.tar")
python3 "$KIT/grader/grade" "$handin" --gradescope "$ROOT/results/results.json" --platform gradescope
status=$?
# The grader writes results.json even when it fails inside; if Python itself
# could not run it, say so rather than leave Gradescope a bare failure.
if [ ! -s "$ROOT/results/results.json" ]; then
  printf '{{"score": 0, "output": "status: grader error: the autograder could not run (exit status %s); this is not your fault, the course staff will regrade", "tests": []}}\\n' "$status" > "$ROOT/results/results.json"
fi
"""

PRAIRIELEARN_QUESTION = """<pl-question-panel>
  <p>Upload your files from <code>student/</code>, and your <code>feedback.txt</code>.</p>
</pl-question-panel>
<pl-file-upload file-names="{files}" optional-file-names="feedback.txt"></pl-file-upload>
<pl-submission-panel>
  <pl-external-grader-results></pl-external-grader-results>
  <pl-file-preview></pl-file-preview>
</pl-submission-panel>
"""


def prairielearn_info(image: str) -> Dict:
    """The example question's info.json: its externalGradingOptions are what
    every question graded by the kit needs."""
    return {"uuid": "REPLACE-WITH-A-NEW-UUID", "title": "Distributed training: communication", "topic": "MPI",
            "type": "v3", "gradingMethod": "External", "singleVariant": True,
            "externalGradingOptions": {
                "enabled": True, "image": image,
                "entrypoint": "/opt/dtrain-kit/grader/platforms/prairielearn/entrypoint",
                "serverFilesCourse": ["dtrain-kit/"],
                "timeout": int(table.COURSE.budgets["prairielearn"] + PRAIRIELEARN_START_SECONDS), "environment": {}}}


def autolab(files: Dict[str, bytes]) -> None:
    out = os.path.join(DIST, "autolab")
    os.makedirs(out, exist_ok=True)
    write_tree(files, os.path.join(out, "dtrain-kit"))
    with open(os.path.join(out, "hidden-values.txt"), "wb") as f:
        f.write(files[HIDDEN_VALUES])
    shutil.copy(os.path.join(KIT, PLATFORMS, "autolab", "Containerfile"), os.path.join(out, "Containerfile"))
    with tarfile.open(os.path.join(out, "autograde.tar"), "w") as tar:
        add_text(tar, "kit-stamp.txt", files["kit-stamp.txt"])
    with open(os.path.join(out, "autograde-Makefile"), "w") as f:
        f.write(AUTOLAB_MAKEFILE)


def gradescope(files: Dict[str, bytes]) -> None:
    with zipfile.ZipFile(os.path.join(DIST, "gradescope.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo(f"dtrain-kit/{name}")
            source = os.path.join(KIT, name)
            info.external_attr = (os.stat(source).st_mode & 0o777 if os.path.exists(source) else 0o644) << 16
            z.writestr(info, data)
        for name, text in (("setup.sh", GRADESCOPE_SETUP), ("run_autograder", GRADESCOPE_RUN)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            z.writestr(info, text)


def prairielearn(files: Dict[str, bytes], image: str) -> None:
    out = os.path.join(DIST, "prairielearn")
    shutil.rmtree(out, ignore_errors=True)
    hidden = files[HIDDEN_VALUES]  # with the course, not in the image
    write_tree(files, os.path.join(out, "dtrain-kit"))
    shutil.copy(os.path.join(KIT, PLATFORMS, "prairielearn", "Containerfile"), os.path.join(out, "Containerfile"))
    course = os.path.join(out, "serverFilesCourse", "dtrain-kit")
    os.makedirs(course)
    for name, data in (("hidden-values.txt", hidden), ("kit-stamp.txt", files["kit-stamp.txt"])):
        with open(os.path.join(course, name), "wb") as f:
            f.write(data)
    question = os.path.join(out, "questions", "dtrain")
    os.makedirs(question)
    with open(os.path.join(question, "info.json"), "w") as f:
        json.dump(prairielearn_info(image), f, indent=2)
        f.write("\n")
    with open(os.path.join(question, "question.html"), "w") as f:
        f.write(PRAIRIELEARN_QUESTION.format(files=", ".join(table.IMPL_FILES)))


def autograder(image: str) -> int:
    os.makedirs(DIST, exist_ok=True)
    files = kit_files()
    autolab(files)
    gradescope(files)
    prairielearn(files, image)
    print(f"dist: wrote dist/autolab/ (image context, autograde.tar, autograde-Makefile), dist/gradescope.zip and "
          f"dist/prairielearn/ (image context, serverFilesCourse/, questions/) ({len(files)} kit files, stamp "
          f"{files['kit-stamp.txt'].decode().strip()})")
    return 0


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prairielearn-image", default="YOUR-DOCKERHUB-NAME/dtrain-grader:latest",
                    help="the grader image PrairieLearn pulls, as the example question names it")
    args = ap.parse_args(argv)
    return autograder(args.prairielearn_image)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
