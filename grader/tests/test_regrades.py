"""A course's term in one gradebook: one student regraded, a late handin
graded alone, a changed kit named before anything is graded again, the
time budget in a batch, and a gradebook that a kill -9 leaves whole. The
gradings are faked (grader.grading.grade_handin), so these run in seconds;
test_batches.py regrades one student of a really graded class.

  python3 -m pytest grader/tests/test_regrades.py -q      (after `make build`)
"""
import csv
import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import BUILD, KIT
from grader import batches, cli, gradebook, grades, grading
from kit import parts as table


def rows(path):
    with open(path, newline="") as f:
        return {r["handin"]: r for r in csv.DictReader(f)}


def inbox_of(tmp_path, names=("ann", "bob", "cat", "dan")):
    inbox = tmp_path / "handins"
    inbox.mkdir(exist_ok=True)
    for name in names:
        (inbox / f"{name}.tar").write_bytes(b"not a tar: " + name.encode())
    return inbox


class FakeGrading:
    """grading.grade_handin, faked: each handin scores its `points` (part1
    only) in 7 s as the grade says; `graded` lists what was graded, and
    `budgets` the time budget each grading was given."""

    def __init__(self, monkeypatch, points=10.0):
        self.graded, self.budgets, self.points = [], [], points
        monkeypatch.setattr(grading, "grade_handin", self)

    def __call__(self, handin, build, cancel=None, private=(), time_budget=None, **_):
        self.graded.append(os.path.basename(handin))
        self.budgets.append(time_budget)
        g = grades.Grade(os.path.basename(handin), parts=grades.nothing_graded(), seconds=7.0)
        g.parts[0].points = self.points
        return g


def batch(monkeypatch, pattern, gradebook_path, *extra):
    """grader/grade --batch PATTERN --csv GRADEBOOK EXTRA..., in this process."""
    argv = ["grader/grade", "--build", BUILD, "--batch", str(pattern), "--csv", str(gradebook_path), *extra]
    monkeypatch.setattr(sys, "argv", argv)
    return cli.main(argv[1:])


def test_one_students_regrade_keeps_every_other_row(tmp_path, monkeypatch, capsys):
    inbox, book = inbox_of(tmp_path), tmp_path / "out" / "gradebook.csv"
    fake = FakeGrading(monkeypatch)
    assert batch(monkeypatch, inbox, book) == 0 and len(fake.graded) == 4
    before = rows(book)
    fake.graded.clear()
    fake.points = 5.0
    # The gradebook is made from every result kept beside it, whichever run
    # graded it: even a gradebook lost since comes back whole.
    book.unlink()
    # The TA's command: one handin named, --regrade.
    assert batch(monkeypatch, inbox / "bob.tar", book, "--regrade") == 0
    assert fake.graded == ["bob.tar"]
    after = rows(book)
    assert set(after) == {"ann.tar", "bob.tar", "cat.tar", "dan.tar"}, after
    assert {k: v for k, v in after.items() if k != "bob.tar"} == {k: v for k, v in before.items() if k != "bob.tar"}
    assert after["bob.tar"]["part1"] == "5" and before["bob.tar"]["part1"] == "10"
    assert not (tmp_path / "out" / "gradebook.results" / "regrade.json").exists()  # that regrade finished
    # A glob regrades what it names, as --regrade always did.
    fake.graded.clear()
    assert batch(monkeypatch, inbox / "[bc]*.tar", book, "--regrade") == 0
    assert sorted(fake.graded) == ["bob.tar", "cat.tar"] and len(rows(book)) == 4
    # And without --regrade, one handin named and graded already: nothing runs, nothing is lost.
    fake.graded.clear()
    assert batch(monkeypatch, inbox / "ann.tar", book) == 0 and fake.graded == [] and len(rows(book)) == 4
    capsys.readouterr()


def test_a_late_handin_is_graded_alone(tmp_path, monkeypatch, capsys):
    inbox, book = inbox_of(tmp_path), tmp_path / "out" / "gradebook.csv"
    fake = FakeGrading(monkeypatch)
    assert batch(monkeypatch, inbox, book) == 0
    before = rows(book)
    (inbox / "eve.tar").write_bytes(b"late, and not a tar either")
    fake.graded.clear()
    assert batch(monkeypatch, inbox, book) == 0
    assert fake.graded == ["eve.tar"]
    assert "4 handin(s) already graded with the same content and kit; grading the other 1" in capsys.readouterr().out
    after = rows(book)
    assert set(after) == set(before) | {"eve.tar"} and all(after[h] == before[h] for h in before)


def test_a_grader_error_is_graded_again_and_never_a_canvas_grade(tmp_path, monkeypatch, capsys):
    # A grader error is the setup's, never a grade: the batch run again once
    # the setup is fixed grades it again, and no Canvas cell holds its 0.
    inbox, book = inbox_of(tmp_path, ("ann", "bob")), tmp_path / "out" / "gradebook.csv"
    fake = FakeGrading(monkeypatch)
    real = fake.__call__

    def broken_for_bob(handin, *args, **kwargs):
        g = real(handin, *args, **kwargs)
        if handin.endswith("bob.tar"):
            g.status = "grader error"
        return g
    monkeypatch.setattr(grading, "grade_handin", broken_for_bob)
    assert batch(monkeypatch, inbox, book) == 0
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\nAnn,1,a1,ann,S\nBob,2,b2,bob,S\n")
    states = [state for _, state in batches.rescore.results_of(str(book))]
    assert gradebook.write_canvas(states, str(roster), str(tmp_path / "canvas.csv"), "A1") == 0
    cells = {r["SIS Login ID"]: r["A1"] for r in csv.DictReader(open(tmp_path / "canvas.csv"))}
    assert cells == {"ann": "10", "bob": ""}, cells
    out = capsys.readouterr().out
    assert "1 handin(s) ended in a grader error, their cells left empty" in out
    assert "the roster has no column 'A1': Canvas will make a new assignment" in out, out
    fake.graded.clear()
    monkeypatch.setattr(grading, "grade_handin", fake)
    assert batch(monkeypatch, inbox, book) == 0
    assert fake.graded == ["bob.tar"]  # ann's grade stands; bob's error is graded again
    assert rows(book)["bob.tar"]["status"] == "graded"


def test_another_regrade_never_takes_over_an_unfinished_one(tmp_path, monkeypatch, capsys):
    # A stopped regrade of the class, then one student's: the second must not
    # go on as the first (and finish it, forgotten, after one handin).
    inbox, book = inbox_of(tmp_path), tmp_path / "out" / "gradebook.csv"
    fake = FakeGrading(monkeypatch)
    assert batch(monkeypatch, inbox, book) == 0
    pending = {"id": "0123456789abcdef", "began": "2026-11-27 10:00:00",
               "command": f"grader/grade --batch {inbox} --csv {book} --regrade all"}
    (tmp_path / "out" / "gradebook.results" / "regrade.json").write_text(json.dumps(pending))
    fake.graded.clear()
    assert batch(monkeypatch, inbox / "bob.tar", book, "--regrade") == 2 and fake.graded == []
    err = capsys.readouterr().err
    assert "another regrade, begun 2026-11-27 10:00:00, did not finish" in err and pending["command"] in err, err
    assert json.loads((tmp_path / "out" / "gradebook.results" / "regrade.json").read_text()) == pending


def test_a_changed_case_runs_only_its_parts_cases_again(tmp_path, monkeypatch, capsys):
    # A hidden case added to part1 (make hidden-data): only part1's stamp
    # changes; the batch says so, and --regrade all runs part1's cases alone,
    # every other part's result kept.
    inbox, book = inbox_of(tmp_path, ("ann", "bob")), tmp_path / "out" / "gradebook.csv"
    asked = []

    def counting(passed):
        def grade_handin(handin, build, cancel=None, private=(), time_budget=None, only_parts=None, **_):
            asked.append((os.path.basename(handin), only_parts))
            g = grades.Grade(os.path.basename(handin), parts=grades.nothing_graded(), seconds=7.0)
            for p, part in zip(g.parts, table.PARTS):
                if p.key in passed:
                    p.passed, p.cases = passed[p.key], 2
                    p.points = part.score_counts(p.passed, p.cases, 0, 0, False)
            return g
        return grade_handin
    monkeypatch.setattr(grading, "grade_handin", counting({"part1": 1, "part2": 2}))
    assert batch(monkeypatch, inbox, book) == 0
    assert {h: (r["part1"], r["part2"]) for h, r in rows(book).items()} == {"ann.tar": ("5", "20"), "bob.tar": ("5", "20")}
    version, sources = batches.kit_stamps(BUILD)
    core, stamps = batches.case_stamps(BUILD)
    monkeypatch.setattr(batches, "kit_stamps", lambda build: ("another kit", sources))
    monkeypatch.setattr(batches, "case_stamps", lambda build: (core, dict(stamps, part1="a new case")))
    asked.clear()
    monkeypatch.setattr(grading, "grade_handin", counting({"part1": 2, "part2": 0}))
    assert batch(monkeypatch, inbox, book) == 0 and asked == []
    out = capsys.readouterr().out
    assert "2 were graded before the cases of part1 changed" in out and "only those parts' cases run again" in out, out
    assert batch(monkeypatch, inbox, book, "--regrade", "all") == 0
    assert sorted(asked) == [("ann.tar", ["part1"]), ("bob.tar", ["part1"])], asked
    # part1 from the new run, part2 kept (the new run's 0 of part2 is never used)
    assert {h: (r["part1"], r["part2"]) for h, r in rows(book).items()} == {"ann.tar": ("10", "20"),
                                                                            "bob.tar": ("10", "20")}
    report = (tmp_path / "out" / "ann.report.txt").read_text()
    assert "only the cases of part1 ran again" in report, report


def test_a_changed_kit_is_named_with_its_cost_and_regraded_only_with_regrade_all(tmp_path, monkeypatch, capsys):
    inbox, book = inbox_of(tmp_path), tmp_path / "out" / "gradebook.csv"
    fake = FakeGrading(monkeypatch)
    assert batch(monkeypatch, inbox, book, "--jobs", "2") == 0
    before = rows(book)
    old_stamp = before["ann.tar"]["kit"]
    capsys.readouterr()
    # A fix to the kit: another stamp for its sources and for the kit.
    monkeypatch.setattr(batches, "kit_stamps", lambda build: ("feedfacefeedface", "0123456789abcdef"))
    monkeypatch.setattr(batches, "case_stamps", lambda build: ("a fixed framework", {}))  # the kit's core changed
    fake.graded.clear()
    assert batch(monkeypatch, inbox, book, "--jobs", "2") == 0
    out = capsys.readouterr().out
    assert fake.graded == [] and rows(book) == before, out
    assert "4 handin(s) of the gradebook have results that no longer stand: 4 were graded by another kit (its stamp " \
           f"{old_stamp} then, feedfacefeedface now" in out, out
    # 4 gradings of 7 s on 2 jobs: 14 s.
    assert "would take about 14 s on 2 job(s) (their last gradings took 28 s in all)" in out, out
    assert out.count(f"--batch {inbox} --csv {book} --jobs 2 --regrade all") >= 1, out
    # One student by name: that one alone, the others still named.
    assert batch(monkeypatch, inbox / "bob.tar", book, "--regrade") == 0
    out = capsys.readouterr().out
    assert fake.graded == ["bob.tar"] and "3 handin(s) of the gradebook have results that no longer stand" in out
    assert rows(book)["bob.tar"]["kit"] == "feedfacefeedface" and rows(book)["ann.tar"]["kit"] == old_stamp
    # --regrade all, even with one handin named: every handin of the gradebook, found where it was graded from.
    fake.graded.clear()
    assert batch(monkeypatch, inbox / "bob.tar", book, "--regrade", "all") == 0
    assert sorted(fake.graded) == ["ann.tar", "bob.tar", "cat.tar", "dan.tar"]
    assert {r["kit"] for r in rows(book).values()} == {"feedfacefeedface"}
    assert "no longer stand" not in capsys.readouterr().out


def test_dropping_a_part_needs_a_rescore_not_a_regrade(tmp_path, monkeypatch, capsys):
    inbox, book = inbox_of(tmp_path), tmp_path / "out" / "gradebook.csv"
    fake = FakeGrading(monkeypatch)
    assert batch(monkeypatch, inbox, book) == 0
    version, sources = batches.kit_stamps(BUILD)
    # The parts graded change the kit's stamp, not its sources': a result that
    # holds every part the course grades still stands.
    monkeypatch.setattr(batches, "kit_stamps", lambda build: ("0000000000000000", sources))
    fake.graded.clear()
    assert batch(monkeypatch, inbox, book) == 0 and fake.graded == []
    assert "no longer stand" not in capsys.readouterr().out
    # A part the results never ran is another matter: the batch names it.
    for path in (tmp_path / "out" / "gradebook.results").glob("*.json"):
        state = json.loads(path.read_text())
        state["parts"] = [p for p in state["parts"] if p["key"] != "part7"]
        path.write_text(json.dumps(state))
    assert batch(monkeypatch, inbox, book) == 0 and fake.graded == []
    out = capsys.readouterr().out
    assert "4 were graded before the cases of part7 changed (a case added or changed, make hidden-data, a part " \
        "added): only those parts' cases run again" in out, out


def test_a_row_without_a_result_is_kept(tmp_path, monkeypatch, capsys):
    inbox, book = inbox_of(tmp_path, ("ann",)), tmp_path / "out" / "gradebook.csv"
    book.parent.mkdir()
    header = ["handin"] + [p.key for p in table.PARTS] + ["total", "max", "status", "kit", "course"]
    old = ["zed.tar"] + ["1"] * len(table.PARTS) + [str(len(table.PARTS)), "150", "graded", "k", "c"]
    book.write_text(",".join(header) + "\n" + ",".join(old) + "\n")
    FakeGrading(monkeypatch)
    assert batch(monkeypatch, inbox, book) == 0
    got = rows(book)
    assert list(got["zed.tar"].values()) == old and "ann.tar" in got
    assert "1 row(s) of" in capsys.readouterr().out


def test_a_batch_gives_each_grading_the_time_budget(tmp_path, monkeypatch, capsys):
    inbox, book = inbox_of(tmp_path, ("ann",)), tmp_path / "out" / "gradebook.csv"
    fake = FakeGrading(monkeypatch)
    assert batch(monkeypatch, inbox, book, "--time-budget", "12") == 0
    assert batch(monkeypatch, inbox, book, "--platform", "prairielearn", "--regrade") == 0
    assert fake.budgets == [12.0, table.COURSE.budget("prairielearn")]
    # KIT_TIME_BUDGET is read when the kit loads: a process of its own.
    script = ("import sys; sys.argv = ['grader/grade'] + sys.argv[1:]\n"
              "from grader import cli, grading, grades\n"
              "def fake(handin, build, time_budget=None, **_):\n"
              "    print('budget', time_budget)\n"
              "    return grades.Grade('ann.tar', parts=grades.nothing_graded())\n"
              "grading.grade_handin = fake\n"
              "sys.exit(cli.main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", script, "--build", BUILD, "--batch", str(inbox), "--csv", str(book),
                           "--regrade"], cwd=KIT, env=dict(os.environ, KIT_TIME_BUDGET="11"),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert proc.returncode == 0 and "budget 11.0" in proc.stdout, proc.stdout
    capsys.readouterr()


# A child that rewrites the gradebook and stops for good at a point of the
# write, to be killed there: half the new text written, or the new file
# written and synced but not yet renamed over the old one.
STOPS = {
    "mid-write": ("import builtins, signal\n"
                  "class Half:\n"
                  "    def __init__(self, f): self.f = f\n"
                  "    def __enter__(self): return self\n"
                  "    def __exit__(self, *a): self.f.close()\n"
                  "    def write(self, text):\n"
                  "        self.f.write(text[:len(text) // 2]); self.f.flush()\n"
                  "        print('stopped', flush=True); signal.pause()\n"
                  "    def __getattr__(self, name): return getattr(self.f, name)\n"
                  "def opened(path, mode='r', **k):\n"
                  "    f = builtins.open(path, mode, **k)\n"
                  "    return Half(f) if 'w' in mode else f\n"
                  "gradebook.open = opened\n"),
    "before the rename": ("import signal\n"
                          "def stop(src, dst): print('stopped', flush=True); signal.pause()\n"
                          "gradebook.os.replace = stop\n"),
}


@pytest.mark.parametrize("stop", sorted(STOPS))
def test_a_kill_9_while_the_gradebook_is_written_leaves_the_old_one_whole(tmp_path, stop):
    book = tmp_path / "gradebook.csv"
    old = "handin,total\nann.tar,150\n"
    book.write_text(old)
    states = [{"handin": f"s{i:03d}.tar", "scores": {}, "total": 1, "status": "graded"} for i in range(500)]
    script = ("import json, sys\nfrom grader import gradebook\n" + STOPS[stop] +
              "gradebook.write_gradebook(sys.argv[1], json.loads(sys.argv[2]))\n")
    child = subprocess.Popen([sys.executable, "-c", script, str(book), json.dumps(states)], cwd=KIT,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "stopped"
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        child.kill()
    assert book.read_text() == old
    left = [p.name for p in tmp_path.iterdir() if p.name != "gradebook.csv"]
    assert left and all(p.endswith(".tmp") for p in left), left  # the new file, never renamed over the old
