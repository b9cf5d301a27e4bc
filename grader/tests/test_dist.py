"""The distributions: the student handout and the two autograder bundles,
each checked in a scratch copy laid out as its platform lays it out.

  python3 -m pytest grader/tests/test_dist.py -q
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

import pytest

from conftest import KIT, SUMMED, handin

# The tests share dist/: one xdist worker runs them all, in order.
pytestmark = pytest.mark.xdist_group("dist")

DIST = os.path.join(KIT, "dist")


def run(cmd, cwd=KIT, env=None, timeout=900):
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    return proc


def test_handout_builds_scores_zero_and_holds_no_solution():
    proc = run([sys.executable, "-m", "staff.dist", "handout"])
    assert proc.returncode == 0, proc.stdout
    assert "handout check passed" in proc.stdout
    with tarfile.open(os.path.join(DIST, "handout.tar.gz")) as tar:
        names = tar.getnames()
    assert "dtrain-kit/README.md" in names and "dtrain-kit/student/func_impl.cpp" in names
    assert not [n for n in names if "/reference/" in n or "/grader/" in n or "/staff/" in n]
    with tarfile.open(os.path.join(DIST, "handout.tar.gz")) as tar:
        makefile = tar.extractfile("dtrain-kit/Makefile").read().decode()
    # No target that can't work in the handout, and no note about one.
    assert "\ngrade:" not in makefile and "make grade" not in makefile and "grader/" not in makefile
    assert "\nhandin:" in makefile and "\ntest:" in makefile


def test_the_handout_check_catches_pointers_to_what_it_does_not_ship(tmp_path):
    from kit.check_handout import readme_references, students_makefile
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "run").write_text("# see README: On a cluster\n# README \"Setup\" says how\n"
                                            "# the threat model is in grader/README.md\n"
                                            "# the kit's README has more\n")
    handout = "# Assignment\n## Setup\n**On your laptop: a Mac.** text\n"
    problems, checked = readme_references(str(tmp_path), handout)
    assert checked == 4
    assert len(problems) == 3, problems
    assert "'on a cluster'" in problems[0] and "grader/README.md" in problems[1] and "kit's README" in problems[2]
    text, cut = students_makefile(open(os.path.join(KIT, "Makefile")).read())
    assert {"grade", "grade-reference", "handout", "check"} <= cut and "handin" not in cut
    assert "STAFF_ONLY" not in text and not [t for t in cut if f" {t} " in text.split(".PHONY:")[1].split("\n")[0] + " "]


@pytest.fixture(scope="module")
def gradescope_built():
    """The Gradescope bundle unpacked and set up (its setup.sh builds the kit)
    in <dir>/source, as /autograder/source. The Autolab test then unpacks its
    own bundle over the same dtrain-kit/, so the two share one build."""
    root = tempfile.mkdtemp(prefix="kit-platform-", dir="/tmp")
    os.chmod(root, 0o755)  # the grader's sandbox user must reach the kit
    assert run([sys.executable, "-m", "staff.bundles"]).returncode == 0
    source = pathlib.Path(root) / "source"
    source.mkdir()
    with zipfile.ZipFile(os.path.join(DIST, "gradescope.zip")) as z:
        for info in z.infolist():
            z.extract(info, source)
            os.chmod(source / info.filename, (info.external_attr >> 16) or 0o644)
    proc = run(["bash", str(source / "setup.sh")])
    assert proc.returncode == 0, proc.stdout[-3000:]
    yield pathlib.Path(root)
    shutil.rmtree(root, ignore_errors=True)


def test_gradescope_bundle_grades_loose_files(gradescope_built):
    tmp_path = gradescope_built
    source, submission = tmp_path / "source", tmp_path / "submission"
    submission.mkdir()
    # Loose files, as a student may upload them, with one bug in part 7.
    for name in ("func_impl.cpp", "data_parallel_preprocess.cpp", "zero_dp_stage3.cpp"):
        text = open(os.path.join(KIT, "reference", name)).read()
        if name in SUMMED:
            text = text.replace(*SUMMED[name])
        (submission / name).write_text(text)
    env = dict(os.environ, AUTOGRADER_ROOT=str(tmp_path))
    proc = run(["bash", str(source / "run_autograder")], env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert 140 <= results["score"] < 150
    assert all({"name", "score", "max_score", "output", "visibility"} <= set(t) for t in results["tests"])
    part7 = next(t for t in results["tests"] if t["name"].startswith("part7:"))
    assert part7["score"] < part7["max_score"]
    hidden = [t for t in results["tests"] if t["visibility"] == "after_due_date"]
    assert hidden and all("Hidden" in t["output"] for t in hidden)


def test_autolab_bundle_grades_a_handin(gradescope_built):
    workdir = gradescope_built / "source"  # Autolab's working directory; its dtrain-kit/ is already built
    shutil.copy(os.path.join(DIST, "autograde.tar"), workdir)
    shutil.copy(os.path.join(DIST, "autograde-Makefile"), workdir / "Makefile")
    with tarfile.open(workdir / "autograde.tar") as tar:
        assert not [n for n in tar.getnames() if "/reference/" in n]
    handin(workdir, name="handin.tar")
    # As Autolab runs it: a top-level make, not one nested in `make check`.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    proc = run(["make"], cwd=workdir, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["scoreboard"] == [150.0] and set(last["scores"]) >= {"part1", "part9"}
