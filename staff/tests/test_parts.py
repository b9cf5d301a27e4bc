"""The parts table's own rules, and the copies of its facts that live
elsewhere (each copy is checked here, so none can drift).

  python3 -m pytest staff/tests -q
"""
import os
import re

import pytest

from kit import parts as table
from kit.paths import KIT_DIR


def test_every_run_selects_whole_suites_and_no_two_runs_overlap():
    # "Part1*" would also select Part11...; a run names its suites exactly.
    filters = [run.filter for run in table.all_runs()]
    assert all(re.fullmatch(r"[A-Za-z0-9]+\.\*", f) for f in filters), filters
    assert len(set(filters)) == len(filters)


def test_points_add_up_and_files_exist():
    assert table.TOTAL_POINTS == sum(p.points for p in table.PARTS)
    for part in table.PARTS:
        assert set(part.files) <= set(table.IMPL_FILES), part.key
        for test in part.tests:
            assert os.path.isfile(os.path.join(KIT_DIR, test)), test
        for name in table.IMPL_FILES:
            assert os.path.isfile(os.path.join(KIT_DIR, "student", name))


def test_the_generated_files_hold_the_table(tmp_path):
    assert table.main(["--cmake", str(tmp_path / "p.cmake"), "--cpp", str(tmp_path / "p.h")]) == 0
    cmake = (tmp_path / "p.cmake").read_text()
    # A build compiles every part of the tree, the ungraded extension parts too.
    assert f"set(KIT_PART_KEYS {' '.join(p.key for p in table.built_parts())})" in cmake
    assert f"set(KIT_IMPL_FILES {' '.join(table.built_files())})" in cmake
    header = (tmp_path / "p.h").read_text()
    for run in table.all_runs():
        assert f'{{"{run.filter}", {run.ranks}, {run.case_seconds!r}}},' in header


def test_make_accepts_every_key_and_group():
    assert "part8" in table.make_keys() and "part8_forward" in table.make_keys()
    assert table.find(["part8"]) == [p for p in table.PARTS if p.key.startswith("part8")]


def test_the_time_scale_only_shortens_limits(monkeypatch):
    monkeypatch.setenv("KIT_TIME_SCALE", "0.4")
    assert table.limit(table.CASE_SECONDS) == table.CASE_SECONDS * 0.4
    for bad in ("0", "1.5", "-1", "fast"):
        monkeypatch.setenv("KIT_TIME_SCALE", bad)
        try:
            table.time_scale()
        except SystemExit as e:
            assert "KIT_TIME_SCALE must be a number in (0, 1]" in str(e)
        else:
            raise AssertionError(f"KIT_TIME_SCALE={bad} was taken")
    monkeypatch.delenv("KIT_TIME_SCALE")
    assert table.limit(table.STARTUP_SECONDS) == table.STARTUP_SECONDS


def test_the_extension_switch(monkeypatch):
    import importlib
    try:
        for value, points, keys, files in (("0", 150, 10, 3), ("1", 200, 12, 5)):
            monkeypatch.setenv("KIT_EXTENSIONS", value)
            t = importlib.reload(table)
            assert (t.TOTAL_POINTS, len(t.PARTS), len(t.IMPL_FILES)) == (points, keys, files), value
            assert {"part11_ring", "part12_pipeline"} <= {p.key for p in t.built_parts()}
        monkeypatch.setenv("KIT_EXTENSIONS", "yes")
        with pytest.raises(SystemExit, match="KIT_EXTENSIONS must be 0 or 1"):
            importlib.reload(table)
    finally:
        monkeypatch.delenv("KIT_EXTENSIONS")
        importlib.reload(table)
