"""The distributions: the student handout, built and scored in a scratch
copy, and what each platform's bundle holds (`make check-platforms` grades
them in their images).

  python3 -m pytest grader/tests/test_dist.py -q
"""
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile

import pytest

from conftest import KIT
from kit import judge
from kit import parts as table

# The tests share dist/: one xdist worker runs them all, in order.
pytestmark = pytest.mark.xdist_group("dist")

DIST = os.path.join(KIT, "dist")


def run(cmd, cwd=KIT, env=None, timeout=900):
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    return proc


@pytest.mark.long  # the handout built and graded in a scratch copy: CTest's framework/handout checks its cut
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
    from kit.check_handout import readme_references
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "run").write_text("# see README: On a cluster\n# README \"Setup\" says how\n"
                                            "# the threat model is in grader/README.md\n"
                                            "# the kit's README has more\n")
    handout = "# Assignment\n## Setup\n**On your laptop: a Mac.** text\n"
    problems, checked = readme_references(str(tmp_path), handout)
    assert checked == 4
    assert len(problems) == 3, problems
    assert "'on a cluster'" in problems[0] and "grader/README.md" in problems[1] and "kit's README" in problems[2]


def test_the_staff_targets_are_a_file_of_their_own_that_only_a_copy_holding_staff_includes(tmp_path):
    from kit.build_lists import STAFF_MAKEFILE
    from kit.check_handout import shipped_files, staff_targets
    cut = staff_targets(KIT)
    assert {"grade", "grade-reference", "handout", "check"} <= cut and "handin" not in cut
    makefile = open(os.path.join(KIT, "Makefile")).read()
    assert not [t for t in cut if re.search(rf"^{t}:", makefile, re.M)], "a staff target in the Makefile itself"
    assert STAFF_MAKEFILE not in shipped_files(KIT)
    holding = run([sys.executable, "-m", "kit.parts_cli", "--make"]).stdout
    assert f"KIT_STAFF_MAKEFILES := {STAFF_MAKEFILE}" in holding
    course = open(os.path.join(KIT, "course.toml")).read()
    (tmp_path / "course.toml").write_text(re.sub(r"^holds = .*$", "holds = []", course, flags=re.M))
    handout = run([sys.executable, "-m", "kit.parts_cli", "--make"], env={**os.environ, "KIT_COURSE": str(tmp_path / "course.toml")})
    assert "KIT_STAFF_MAKEFILES := \n" in handout.stdout, handout.stdout


def test_the_bundles_hold_what_each_platform_needs_and_no_secret_where_it_goes_public():
    # The bundles graded in their images, at each platform's limits: `make
    # check-platforms` (CI). Here, quickly, what each holds.
    assert run([sys.executable, "-m", "staff.bundles"]).returncode == 0
    stamp = open(os.path.join(DIST, "autolab", "dtrain-kit", "kit-stamp.txt")).read()
    for place in ("autolab", "prairielearn"):
        kit = os.path.join(DIST, place, "dtrain-kit")
        assert os.path.isfile(os.path.join(kit, "grader", "platforms", "prepare-image"))
        # No hidden value by its own path either: the salt and each part's stay out of every image.
        assert not [rel for rel in judge.hidden_files() + [judge.BUNDLED] if os.path.exists(os.path.join(kit, rel))], place
        assert not os.path.exists(os.path.join(kit, "reference")) and not os.path.exists(os.path.join(kit, "staff"))
        assert open(os.path.join(kit, "kit-stamp.txt")).read() == stamp
    # Autolab: the image takes the hidden values after the kit's build; the
    # assessment's autograde.tar carries the stamp the image must match.
    assert os.path.getsize(os.path.join(DIST, "autolab", "hidden-values.txt")) > 0
    with tarfile.open(os.path.join(DIST, "autolab", "autograde.tar")) as tar:
        assert tar.getnames() == ["kit-stamp.txt"] and tar.extractfile("kit-stamp.txt").read().decode() == stamp
    assert "dtrain-grade" in open(os.path.join(DIST, "autolab", "autograde-Makefile")).read()
    # PrairieLearn: the image holds no hidden value; the course's files do.
    course = os.path.join(DIST, "prairielearn", "serverFilesCourse", "dtrain-kit")
    assert open(os.path.join(course, "kit-stamp.txt")).read() == stamp
    hidden = open(os.path.join(course, "hidden-values.txt")).read()
    assert hidden == open(os.path.join(DIST, "autolab", "hidden-values.txt")).read()
    # Of the hidden values, the graded parts' alone, and the salt.
    cases = {line.split()[1] for line in hidden.splitlines() if not line.startswith("salt ")}
    assert hidden.startswith("salt ") and cases and all(any(p.owns(c) for p in table.PARTS) for c in cases), \
        sorted(c for c in cases if not any(p.owns(c) for p in table.PARTS))[:5]
    every = [line for rel in judge.hidden_files() for line in open(os.path.join(KIT, rel)).read().splitlines()]
    assert len(hidden.splitlines()) == sum(1 for line in every if line.startswith("salt ") or
                                           any(p.owns(line.split()[1]) for p in table.PARTS))
    # PrairieLearn keeps and shows /grade/results: its entry writes results.json alone there.
    entry = open(os.path.join(KIT, "grader", "platforms", "prairielearn", "entrypoint")).read()
    assert {w.rstrip("./") for w in re.findall(r"/grade/results/?[\w.]*", entry)} == \
        {"/grade/results", "/grade/results/results.json"} and "--json" not in entry and "--show-hidden" not in entry
    info = json.load(open(os.path.join(DIST, "prairielearn", "questions", "dtrain", "info.json")))
    options = info["externalGradingOptions"]
    # The course's budget (course.toml) ends the jobs in time; the timeout adds the container's start.
    assert options["enabled"] and options["serverFilesCourse"] == ["dtrain-kit/"] and options["timeout"] == 90
    assert options["environment"] == {} and table.COURSE.budget("prairielearn") < options["timeout"]
    # Gradescope: the kit, its stamp, and the two scripts it runs.
    with zipfile.ZipFile(os.path.join(DIST, "gradescope.zip")) as z:
        names = z.namelist()
        assert {"setup.sh", "run_autograder", "dtrain-kit/grader/hidden/expected.txt"} <= set(names)
        assert not [n for n in names if "/reference/" in n or "/staff/" in n]
        assert "prepare-image" in z.read("setup.sh").decode()
