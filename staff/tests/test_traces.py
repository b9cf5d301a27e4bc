"""Traces are on one clock, and `make test-partN TRACE=1` draws the cases it
is offered for: a hang, a mismatch, a wrong reduction.

  python3 -m pytest staff/tests/test_traces.py -q      (after `make build`)
"""
import json
import subprocess
import sys

from kit import timeline, trace, trace_file
from kit.paths import KIT_DIR
from staff.tests.broken import mutant_binary, traced_training


def traced_case(tmp_path, mutant_name: str, part: str, case: str):
    """Runs `part` of the reference with one mutant of staff/mutants.py, as
    `make test-partN TRACE=1` does; returns (stdout, events, otherData) of
    the case's trace."""
    binary = mutant_binary(tmp_path, mutant_name)
    traces = tmp_path / "traces"
    proc = subprocess.run([sys.executable, "-m", "kit", "test", part, "--binary", binary, "--trace-dir", str(traces)],
                          cwd=KIT_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    path = traces / f"{case}.json"
    assert f"trace of {case}: {path}, drawn in {traces / case}.png" in proc.stdout, proc.stdout
    assert (traces / f"{case}.png").stat().st_size > 10000
    assert not list(traces.glob(f"{case}.rank*.json")), "the parts of a stopped case are merged and removed"
    events, other = trace_file.load(str(path))
    return proc.stdout, events, other


def labels(events):
    _, _, rows, _ = timeline.panel(events, None, trace_file.last_arrivals(events))
    return [row.split('"')[1] for row in rows]


def test_a_traced_training_is_on_one_clock_and_holds_every_rank(tmp_path):
    path = tmp_path / "trace.json"
    proc = traced_training(path)
    assert proc.returncode == 0, proc.stdout
    data = json.loads(path.read_text())
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert {e["pid"] for e in spans} == {0, 1, 2, 3}
    for rank in range(4):
        mine = [e for e in spans if e["pid"] == rank and e["cat"] == "collective"]
        assert sum(e["args"]["bytes"] for e in mine) == data["otherData"]["bytes_transferred"][rank] > 0
        assert {e["args"]["communicator"] for e in mine} >= {"mp_comm", "dp_comm"}
        assert {"forward", "backward", "optimizer"} <= {e["name"] for e in spans if e["pid"] == rank}
    events, other = trace_file.load(str(path))
    spans = [e for e in events if trace_file.collective(e)]
    assert spans and all(e["pid"] in e["args"]["ranks"] for e in spans)
    assert [c["uncertainty_us"] for c in other["clocks"]] == [0.0] * 4  # one host: one clock, nothing to estimate
    checked, problems = trace_file.overlap_problems(events)
    assert problems == [] and checked >= 100, problems
    # The check bites: rank 3's clock 1 ms late splits the calls it shares.
    shifted = [dict(e, ts=e["ts"] + 1000 * (e["pid"] == 3)) for e in events]
    _, problems = trace_file.overlap_problems(shifted)
    assert problems and all("rank 3" in p for p in problems)
    assert timeline.draw(events, str(tmp_path / "trace.png")) is None


def test_a_hung_case_is_drawn_up_to_where_each_rank_waits(tmp_path):
    case = "Part7WeightGrad.SeedCaseFourRows"
    out, events, other = traced_case(tmp_path, "one rank calls an extra allreduce", "part7", case)
    assert "waiting in allreduce #3 on dp_comm" in out
    assert other["stopped_by_watchdog"] and {c["rank"] for c in other["clocks"]} == {0, 1, 2, 3}
    for rank in range(4):
        mine = sorted((e for e in events if e["pid"] == rank), key=lambda e: e["ts"])
        assert [e["args"]["seq"] for e in mine] == ([1, 2, 3] if rank == 0 else [1, 2])
        assert all(e["args"]["function"] == "collect_weight_grad" for e in mine)
        assert [bool(e["args"].get("pending")) for e in mine] == [False] * (len(mine) - 1) + [rank == 0]
    waiting = next(e for e in events if e["args"].get("pending"))
    assert waiting["args"]["op"] == "allreduce" and waiting["args"]["communicator"] == "dp_comm"
    assert waiting["dur"] > 1e6  # open until the watchdog stopped the case, seconds later
    assert trace_file.overlap_problems(events) == (2, [])  # the two calls all four ranks finished
    assert any(text.startswith("WAITING when stopped") and text.endswith("allreduce Sum 8") for text in labels(events))


def test_a_mismatch_is_drawn_with_the_disagreeing_call_marked(tmp_path):
    case = "Part7WeightGrad.SeedCaseFourRows"
    _, events, _ = traced_case(tmp_path, "one rank makes its two allreduces in swapped order", "part7", case)
    marked = [e for e in events if "mismatch" in e["args"]]
    assert sorted(e["pid"] for e in marked) == [0, 1, 2, 3]
    assert all("collective #1 on dp_comm in collect_weight_grad: ranks disagree" in e["args"]["mismatch"]
               for e in marked)
    assert {e["pid"]: e["args"]["elements"] for e in marked} == {0: 32, 1: 8, 2: 32, 3: 32}
    assert trace_file.overlap_problems(events) == (1, [])  # the agreement check itself is one call of all four
    assert sorted(t for t in labels(events) if t.startswith("MISMATCH")) == \
        ["MISMATCH: allreduce Sum 32"] * 3 + ["MISMATCH: allreduce Sum 8"]


def test_a_wrong_reduction_shows_in_the_picture(tmp_path):
    case = "Part4MegatronForward.OutputInGroupsOfTwo"
    _, events, _ = traced_case(tmp_path, "Megatron partial outputs not summed", "part4", case)
    reductions = [e for e in events if e["args"].get("op") == "allreduce"]
    assert sorted(e["pid"] for e in reductions) == [0, 1, 2, 3]
    assert {e["args"]["reduction"] for e in reductions} == {"Max"}
    shown = labels(events)
    assert shown.count(f"allreduce Max {reductions[0]['args']['elements']}") == 4, shown


def p2p_span(rank, ts, dur, op, peer, tag, pending=False):
    """A point-to-point call's span as framework/comm/trace.cpp writes it."""
    args = {"op": op, "elements": 8, "bytes": 64 if op == "send" else 0, "communicator": "world", "function": "f"}
    args.update({"dest": peer, "send_tag": tag} if op == "send" else {"source": peer, "recv_tag": tag})
    if pending:
        args["pending"] = True
    return {"name": f"{op} {peer}", "cat": "p2p", "ph": "X", "pid": rank, "tid": 0, "ts": ts, "dur": dur,
            "args": args}


def test_point_to_point_calls_are_drawn_with_an_arrow_per_message(tmp_path):
    # Rank 0 sends to rank 1 (tag 0), which receives from 100 to 300 us;
    # then both send to each other and wait: the cycle a roll-call names.
    events = [p2p_span(0, 50, 250, "send", 1, 0), p2p_span(1, 100, 200, "recv", 0, 0),
              {"name": "message", "cat": "p2p", "ph": "s", "id": 7, "pid": 0, "tid": 0, "ts": 50},
              {"name": "message", "cat": "p2p", "ph": "f", "bp": "e", "id": 7, "pid": 1, "tid": 0, "ts": 299.5},
              p2p_span(0, 400, 5000, "send", 1, 1, pending=True), p2p_span(1, 420, 5000, "send", 0, 2, pending=True)]
    path = tmp_path / "p2p.json"
    path.write_text(json.dumps({"traceEvents": events, "otherData": {}}))
    spans, other = trace_file.load(str(path))
    assert other["messages"] == [(0, 50, 1, 299.5)] and len(spans) == 4
    assert trace_file.overlap_problems(spans) == (0, []), "a point-to-point call is no collective to line up"
    lines = trace.summary(spans, other)
    assert "rank 0: WAITING in send to 1 (tag 1) 8 on world when the watchdog stopped the case" in lines
    assert "rank 0: 2 point-to-point calls, 5.2 ms, 0.00 MiB sent" in lines
    _, _, label_rows, arrows = timeline.panel(spans, None, trace_file.last_arrivals(spans), other["messages"])
    assert arrows == ["0.0500 0 0.2495 1"], "from rank 0 at the send's start to rank 1 at the recv's end"
    assert any('"recv from 0 (tag 0) 8"' in row for row in label_rows), label_rows
    png = tmp_path / "p2p.png"
    proc = subprocess.run([sys.executable, "-m", "kit", "trace", str(path), "--png", str(png)], cwd=KIT_DIR,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert proc.returncode == 0 and f"timeline: {png}" in proc.stdout, proc.stdout
    assert png.stat().st_size > 10000


def test_the_per_rank_table_counts_a_request_as_a_collective():
    # One blocking allreduce (1 ms, 1 MiB) and one iallreduce (in flight 5 ms,
    # 2 MiB) whose wait() blocked 0.5 ms: two collectives, 1.5 ms in them, 3 MiB.
    def span(cat, ts, dur, **args):
        return {"name": cat, "cat": cat, "ph": "X", "pid": 0, "tid": 1 if cat == "request" else 0, "ts": ts,
                "dur": dur, "args": dict({"op": "allreduce", "elements": 8, "communicator": "world", "ranks": [0],
                                          "seq": 1}, **args)}
    events = [span("collective", 0, 1000, bytes=2**20),
              span("request", 2000, 5000, op="iallreduce", bytes=2**21, request=1, seq=2),
              span("wait", 6500, 500, op="wait", request=1, seq=2)]
    lines = trace.summary(events, {})
    assert lines[1].split() == ["0", "7.0", "2", "1.5", "21%", "3.00"], lines
    assert "rank 0: 1 request (iallreduce), 5.0 ms in flight, 0.5 ms of it blocked in wait(), 2.00 MiB" in lines
