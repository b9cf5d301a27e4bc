"""The limits a handin can exceed follow the machine that grades
(kit/calibration.py): each is a multiple of the reference's figure on this
machine with a floor, the same grade comes out on a machine 2.5 times
slower, and the report says what a limit came from.

  python3 -m pytest grader/tests/test_calibration.py -q      (after `make build`)
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, KIT, grade, handin
from kit import calibration
from kit import parts as table

SLOWER = 2.5
SPIN = {table.SPLIT: ("                                     int rank) {\n",
                      "                                     int rank) {\n"
                      "  for (volatile unsigned long spin = 0;; spin = spin + 1) {}\n")}


@pytest.fixture(scope="module")
def figures() -> calibration.Figures:
    return calibration.Figures.load()


def test_the_figures_hold_every_file_and_run_of_the_table(figures):
    # A part added without recording the reference would run at the floors
    # alone: a slow machine would again be the student's fault.
    assert set(table.built_files()) <= set(figures.compile), "record them: make calibration-data"
    part_runs = {r.filter for p in table.built_parts() for r in p.runs}
    assert part_runs <= set(figures.cases), sorted(part_runs - set(figures.cases))
    assert all(v > 0 for v in figures.pace.values()) and "plain" in figures.pace


def test_every_limit_is_a_multiple_of_the_reference_here_with_a_floor(figures):
    here, slower = calibration.Limits(1.0, figures), calibration.Limits(SLOWER, figures)
    for name, seconds in figures.compile.items():
        assert slower.compile_cpu(name) == pytest.approx(
            max(calibration.COMPILE_CPU_FLOOR, calibration.COMPILE_MULTIPLE * SLOWER * seconds))
        assert slower.compile_cpu(name) >= here.compile_cpu(name)
    files = list(table.IMPL_FILES)
    assert slower.honest_compile_cpu(files) == pytest.approx(max(
        calibration.HONEST_FLOOR, calibration.HONEST_MULTIPLE * SLOWER * sum(figures.compile[f] for f in files)))
    for run in table.all_runs():
        ref = figures.cases.get(run.filter, 0.0)
        assert slower.case_seconds(run) == pytest.approx(max(run.case_seconds, calibration.CASE_MULTIPLE * SLOWER * ref))
        assert slower.case_factor(run) >= here.case_factor(run) >= 1.0
    # Past the floors, every limit grows with the machine's pace, in proportion.
    far = calibration.Limits(100.0, figures)
    for name, seconds in figures.compile.items():
        assert far.compile_cpu(name) == pytest.approx(calibration.COMPILE_MULTIPLE * 100 * seconds)
    assert "4 times the reference solution's" in far.compile_basis(table.ZERO)


def test_a_machine_measures_its_pace_once_and_another_measures_again(tmp_path, monkeypatch):
    build = tmp_path / "build"
    build.mkdir()
    for name in ("impl_recipe.json", "compile_commands.json"):
        (build / name).write_bytes(open(os.path.join(BUILD, name), "rb").read())
    probes = []
    monkeypatch.setattr(calibration, "probe", lambda how, rounds=1, kind=None: probes.append(kind) or 0.5)
    assert calibration.pace_here(str(build))[0] == 0.5 and len(probes) == 1
    assert calibration.pace_here(str(build))[2].startswith("measured 2") and len(probes) == 1  # kept
    kept = json.loads((build / calibration.CACHE_NAME).read_text())
    (build / calibration.CACHE_NAME).write_text(json.dumps(dict(kept, host="another machine")))
    calibration.pace_here(str(build))
    assert len(probes) == 2


def test_a_slower_machine_raises_every_limit_it_reports(figures):
    def report(scale):
        env = dict(os.environ, KIT_CALIBRATION_SCALE=scale)
        out = subprocess.run([sys.executable, "-m", "kit.calibration", "--build", BUILD], cwd=KIT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        assert out.returncode == 0, out.stdout
        return out.stdout
    plain, slow = report("1"), report(repr(SLOWER))
    pace = lambda text: float(text.split("pace: ")[1].split()[0])  # noqa: E731
    assert pace(slow) == pytest.approx(SLOWER * pace(plain), rel=0.35)  # two probes of one machine
    assert "times 2.5 (KIT_CALIBRATION_SCALE)" in slow


@pytest.mark.long
def test_on_a_machine_2_5_times_slower_the_grades_are_the_same(tmp_path, monkeypatch):
    """The reference keeps full marks, with its limits and figures scaled in
    its report; split_data that loops for ever loses Part 1 alone, and its
    message says the limit and the reference's figure on this machine."""
    monkeypatch.setenv("KIT_CALIBRATION_SCALE", repr(SLOWER))
    ref = grade(tmp_path, handin(tmp_path))
    assert ref.total == table.TOTAL_POINTS, ref.stdout
    here = calibration.Limits(ref.report["limits"]["calibrated"]["pace"] / SLOWER, calibration.Figures.load())
    reported = ref.report["limits"]["calibrated"]["compile_cpu"]
    for name in table.IMPL_FILES:
        assert reported[name] >= here.compile_cpu(name) - 0.05
    (tmp_path / "spin").mkdir()
    spin = grade(tmp_path / "spin", handin(tmp_path / "spin", edits=SPIN), hangs=True)
    lost = {k for k, v in spin.scores.items() if v < dict((p.key, p.points) for p in table.PARTS)[k]}
    assert lost == {"part1"}, spin.stdout
    assert "the reference solution's slowest case of this run takes" in spin.stdout, spin.stdout
