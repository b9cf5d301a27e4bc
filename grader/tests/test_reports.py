"""The platforms' result files, from grades made by hand: PrairieLearn's
results.json (score in [0, 1], a test per part, `gradable: false` where a
student must not lose an attempt) and Gradescope's.

  python3 -m pytest grader/tests/test_reports.py -q
"""
import json

from grader import reports
from grader.grades import Grade, PartResult
from kit import parts as table


def graded(points=None, failing=()) -> Grade:
    g = Grade("h.tar", files={f: {"state": "compiled"} for f in table.IMPL_FILES})
    points = points or {p.key: p.points for p in table.PARTS}
    for p in table.PARTS:
        r = PartResult(p.key, p.title, points[p.key], p.points, 3, 4, hidden_cases=1, hidden_passed=1)
        r.failures = [f for f in failing if f["part"] == p.key]
        g.parts.append(r)
    return g


def test_prairielearn_gets_a_fraction_and_a_test_per_part():
    failing = [{"part": "part7", "case": "Part7WeightGrad.SeedCaseTwoRows", "hidden": False,
                "lines": ["[rank 0] got_w differs at (0, 0)"]},
               {"part": "part7", "case": "HiddenPart7WeightGrad.X", "hidden": True, "lines": ["secret"]}]
    points = {p.key: p.points for p in table.PARTS}
    points["part7"] = 5.0
    r = reports.prairielearn_results(graded(points, failing))
    assert r["gradable"] is True and r["score"] == round((table.TOTAL_POINTS - 5) / table.TOTAL_POINTS, 4)
    tests = {t["name"].split(":")[0]: t for t in r["tests"]}
    assert set(tests) == {p.key for p in table.PARTS}
    assert tests["part7"]["points"] == 5.0 and tests["part7"]["max_points"] == 10
    assert "SeedCaseTwoRows" in tests["part7"]["output"] and "got_w differs" in tests["part7"]["output"]
    assert "secret" not in json.dumps(r) and "1 hidden case failed" in tests["part7"]["output"]  # the policy's counts
    assert len(json.dumps(r)) < 1 << 20


def test_what_is_no_handin_costs_no_attempt_and_an_empty_tar_scores_0():
    not_tar = Grade("h.tar", status="not a readable handin", notes=["h.tar is not a readable tar archive"])
    r = reports.prairielearn_results(not_tar)
    assert r == {"gradable": False, "format_errors": ["h.tar is not a readable tar archive"]}
    # A tar without the files (an empty one) is a handin: 0, as in a batch and on Gradescope.
    empty = graded({p.key: 0.0 for p in table.PARTS})
    empty.files = {f: {"state": "missing"} for f in table.IMPL_FILES}
    r = reports.prairielearn_results(empty)
    assert r["gradable"] is True and r["score"] == 0 and "func_impl.cpp is missing" in r["output"], r
    assert reports.gradescope_results(empty)["score"] == 0


def test_a_grader_error_is_not_gradable_and_says_whose_fault():
    g = Grade("h.tar", status="grader error", notes=["the compiler of func_impl.cpp was killed; what ran out: memory"])
    r = reports.prairielearn_results(g)
    assert r["gradable"] is False and "not your files' fault" in r["format_errors"][0]
    assert "what ran out: memory" in r["format_errors"][0]


def test_gradescope_never_shows_a_hidden_cases_name_or_messages():
    failing = [{"part": "part7", "case": "HiddenPart7WeightGrad.X", "hidden": True, "lines": ["secret"]}]
    r = reports.gradescope_results(graded(failing=failing))
    visible = [t for t in r["tests"] if t["visibility"] == "visible"]
    assert len(visible) == len(r["tests"]) == len(table.PARTS)
    assert all({"name", "score", "max_score", "output"} <= set(t) for t in visible)
    assert "secret" not in json.dumps(r) and "HiddenPart7WeightGrad" not in json.dumps(r)


def test_a_file_problem_is_said_once_at_the_top():
    g = graded({p.key: (0.0 if p.key == "part1" else p.points) for p in table.PARTS},
               [{"part": "part1", "case": f"Part1DataSplit.Case{i}", "hidden": False,
                 "lines": ["data_parallel_preprocess.cpp missing: graded with the stub",
                           "[all ranks] split_data is not implemented yet"]} for i in range(17)])
    g.files["data_parallel_preprocess.cpp"] = {"state": "missing"}
    text = reports.human_report(g)
    assert text.count("data_parallel_preprocess.cpp is missing") == 1, text
    assert "graded with the stub" not in text and "Case3" not in text, text
    assert text.index("is missing") < text.index("part1 ")  # at the top, before the table
    assert "part1: its cases ran with the stub of data_parallel_preprocess.cpp" in text
    gs = reports.gradescope_results(g)
    assert gs["output"].count("data_parallel_preprocess.cpp is missing") == 1


def test_compile_errors_are_shown_under_their_file():
    g = graded()
    g.files["func_impl.cpp"] = {"state": "does not compile", "errors": "func_impl.cpp:12:27: error: oops\n" * 30}
    text = reports.human_report(g)
    assert text.count("func_impl.cpp does not compile") == 1
    assert text.count("func_impl.cpp:12:27: error: oops") == 12 and "(18 more lines)" in text
