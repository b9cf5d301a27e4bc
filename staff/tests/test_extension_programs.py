"""The extension parts' programs: pipeline_train (Part 12: training, the
bubble from the ledger's spans, the stashes under both schedules, its trace),
the ring timing behind `make mpi-demo CASE=ring` (Part 11), ddp_train (Part
13: the three ways of averaging, measured from the ledger's spans, its
trace) and request_progress (`make mpi-demo CASE=progress`), on the
reference; the stubs' programs stop with the part's message. Parts 14-16
test theirs in files of their own (test_KEY.py).

  python3 -m pytest staff/tests/test_extension_programs.py -q      (after `make build`)
"""
import csv
import os
import subprocess
import sys

from kit import trace_file
from kit.paths import KIT_DIR, KITRUN, build_dir
from staff.tests.trainers import trainer


def pipeline_train(tmp_path, ranks, *flags, impl="reference"):
    return trainer("pipeline_train", tmp_path, ranks, *flags, impl=impl)


def test_pipeline_train_reports_the_bubble_and_both_schedules_stashes(tmp_path):
    # K = 3, M = 5 under 1F1B: stage k holds min(K-k, M) micro-batches; GPipe all 5.
    proc, report = pipeline_train(tmp_path, 3, "--micro_batches", "5", "--schedule", "1f1b")
    assert proc.returncode == 0, proc.stdout
    p = report["pipeline"]
    assert (p["stages"], p["micro_batches"], p["schedule"]) == (3, 5, "1f1b")
    assert p["stash"]["1f1b"]["micro_batches"] == [3, 2, 1] == p["stash"]["1f1b"]["formula_micro_batches"]
    assert p["stash"]["gpipe"]["micro_batches"] == [5, 5, 5] == p["stash"]["gpipe"]["formula_micro_batches"]
    # A stash holds the input and the pre-activation of each row: (784 + 256) doubles on stage 0.
    # Batches of 64 rows: micro-batches of 13, 13, 13, 13 and 12.
    assert p["stash"]["1f1b"]["bytes"][0] == 3 * 13 * (784 + 256) * 8
    assert p["stash"]["gpipe"]["bytes"][0] == 64 * (784 + 256) * 8
    assert p["bubble_formula"] == 2 / 7
    assert len(p["idle_measured"]) == len(p["idle_played"]) == len(p["idle_equal_stages"]) == 3
    # Shares of a step: stage 0 (784x256) works most and sets the pace, the last (256x10) works least.
    assert all(0 <= share < 1 for share in p["idle_measured"] + p["idle_played"] + p["idle_equal_stages"]), p
    assert p["forward_seconds"][0] > p["forward_seconds"][2] and p["idle_played"][0] < p["idle_played"][2], p
    assert p["busiest_stage"] == 0 and p["bubble_measured"] == p["idle_measured"][0], p
    assert p["bubble_equal_stages"] == min(p["idle_equal_stages"]), p
    assert report["test_accuracy"] > 0.5, report
    for line in ("bubble: the share of a step the busiest stage idles", "equal stages (3 layers of 512x512",
                 "peak stash per stage", "Test Acc:"):
        assert line in proc.stdout, proc.stdout


def test_pipeline_train_refuses_a_bad_schedule_and_too_many_micro_batches(tmp_path):
    proc, _ = pipeline_train(tmp_path, 2, "--schedule", "zigzag")
    assert proc.returncode == 2 and "--schedule must be gpipe or 1f1b, got 'zigzag'" in proc.stdout, proc.stdout
    proc, _ = pipeline_train(tmp_path, 2, "--micro_batches", "65")
    assert proc.returncode == 2 and "1 <= --micro_batches <= --batch_size" in proc.stdout, proc.stdout


def test_pipeline_train_on_the_stubs_names_the_part(tmp_path):
    proc, _ = pipeline_train(tmp_path, 2, impl="student")
    assert proc.returncode == 1, proc.stdout
    assert "pipeline_step is not implemented" in proc.stdout and "Part 12" in proc.stdout, proc.stdout


def test_a_traced_pipeline_shows_each_stage_s_calls_and_messages_on_one_clock(tmp_path):
    path = tmp_path / "trace.json"
    proc, _ = pipeline_train(tmp_path, 2, "--micro_batches", "4", "--schedule", "gpipe", "--trace", str(path))
    assert proc.returncode == 0, proc.stdout
    events, other = trace_file.load(str(path))
    for rank in (0, 1):
        names = [e["name"] for e in events if e["pid"] == rank]
        # 18 steps (1200 rows, batches of 64) of 4 micro-batches: a forward and a backward span for each.
        assert names.count("forward") == names.count("backward") == 72, (rank, names.count("forward"))
    sends = [e for e in events if trace_file.point_to_point(e) and e["args"]["op"] == "send"]
    assert len(other["messages"]) == len(sends) > 0
    drawn = subprocess.run([sys.executable, "-m", "kit", "trace", str(path), "--check-overlap"], cwd=KIT_DIR,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert drawn.returncode == 0, drawn.stdout
    assert (tmp_path / "trace.png").stat().st_size > 0


def test_the_ring_timing_checks_every_byte_count_and_draws_the_chart(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kit", "ring", "--impl", "reference", "--ranks", "2", "3",
                           "--out", str(tmp_path)], cwd=KIT_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    assert "bytes differ" not in proc.stdout and (tmp_path / "ring.png").stat().st_size > 0
    with open(tmp_path / "ring.csv") as f:
        rows = list(csv.DictReader(f))
    assert {(r["algorithm"], r["ranks"]) for r in rows} == {(a, n) for a in ("naive", "ring", "mpi") for n in "23"}
    # n = 3 and 4 MiB: 524288 elements in blocks of 174762 or 174763, four each.
    assert "      3 ring " in proc.stdout and "5592384-5592416" in proc.stdout, proc.stdout


def test_the_ring_timing_on_the_stubs_names_the_part(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kit", "ring", "--impl", "student", "--ranks", "2",
                           "--out", str(tmp_path)], cwd=KIT_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout
    assert "naive_allreduce is not implemented" in proc.stdout, proc.stdout


def ddp_train(tmp_path, ranks, *flags, impl="reference"):
    return trainer("ddp_train", tmp_path, ranks, *flags, impl=impl)


def test_ddp_train_measures_three_ways_of_averaging(tmp_path):
    proc, report = ddp_train(tmp_path, 2, "--bucket_kb", "256")
    assert proc.returncode == 0, proc.stdout
    d = report["ddp"]
    # 784-256-256-10: W1 b1 W2 b2 W3 b3; 256 KiB hold 32768 elements: b3, W3 and b2 share bucket 0.
    assert d["parameters"] == [784 * 256, 256, 256 * 256, 256, 2560, 10]
    assert d["plan"] == [[5, 4, 3], [2], [1], [0]] and d["trained"] == "buckets_at_once"
    ways = d["ways"]
    assert ways["per_parameter"]["allreduces_per_step"] == 6
    assert ways["buckets_after"]["allreduces_per_step"] == ways["buckets_at_once"]["allreduces_per_step"] == 4
    # Allreduces that start after backward's last layer, or block, lie inside none of its computing.
    assert ways["per_parameter"]["overlap_share"] == ways["buckets_after"]["overlap_share"] == 0
    assert all(0 <= w["overlap_share"] <= 1 and w["step_seconds"] > 0 for w in ways.values()), ways
    assert report["test_accuracy"] > 0.5, report
    # Each bucket is its own request in start order: bucket k starts no earlier than bucket k-1.
    starts = [b["start_seconds"] for b in d["buckets"]]
    assert len(starts) == 4 and starts == sorted(starts), d["buckets"]
    assert all(b["complete_seconds"] >= b["start_seconds"] for b in d["buckets"]), d["buckets"]
    for line in ("steps each way", "no buckets: a blocking allreduce per parameter", "rank 0's buckets", "Test Acc:"):
        assert line in proc.stdout, proc.stdout


def test_ddp_train_without_overlap_and_on_the_stubs(tmp_path):
    proc, report = ddp_train(tmp_path, 2, "--bucket_kb", "0", "--no-overlap")
    assert proc.returncode == 0, proc.stdout
    assert report["ddp"]["trained"] == "buckets_after" and len(report["ddp"]["plan"]) == 6
    proc, _ = ddp_train(tmp_path, 2, impl="student")
    assert proc.returncode == 1 and "is not implemented" in proc.stdout and "Part 13" in proc.stdout, proc.stdout
    proc, _ = ddp_train(tmp_path, 2, "--bucket_kb", "-1")
    assert proc.returncode == 2 and "--bucket_kb >= 0" in proc.stdout, proc.stdout


def test_a_traced_ddp_run_shows_each_request_beside_backward(tmp_path):
    path = tmp_path / "trace.json"
    proc, _ = ddp_train(tmp_path, 2, "--trace", str(path))
    assert proc.returncode == 0, proc.stdout
    events, _ = trace_file.load(str(path))
    for rank in (0, 1):
        requests = [e for e in events if e["pid"] == rank and trace_file.request(e)]
        # 20 steps (1200 rows, batches of 60) of 4 buckets, each request on its own track.
        assert len(requests) == 80 and all(e["tid"] == 1 for e in requests), len(requests)
        assert {e["args"]["completed_by"] for e in requests} <= {"wait", "test", "progress"}
    drawn = subprocess.run([sys.executable, "-m", "kit", "trace", str(path), "--check-overlap"], cwd=KIT_DIR,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert drawn.returncode == 0 and "80 requests (iallreduce)" in drawn.stdout, drawn.stdout
    # The per-rank table counts the requests as collectives (and their bytes), as the blocking ones.
    table = [line.split() for line in drawn.stdout.splitlines() if line.split()[:1] in (["0"], ["1"])]
    assert len(table) == 2 and all(int(row[2]) >= 80 and float(row[5]) > 0 for row in table), drawn.stdout


def test_request_progress_measures_each_way_of_waiting(tmp_path):
    path = tmp_path / "progress.json"
    proc = subprocess.run([KITRUN, "-n", "2", os.path.join(build_dir(), "reference", "request_progress"),
                           "--repeats", "2", "--compute_ms", "10", "--trace", str(path)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    assert "at once" in proc.stdout and "after computing with test()" in proc.stdout, proc.stdout
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip().split(" ")[0] in ("1000", "100000",
                                                                                                "1000000")]
    assert [r[0] for r in rows] == ["1000", "100000", "1000000"] and all(len(r) == 4 for r in rows), proc.stdout
    events, _ = trace_file.load(str(path))
    # One traced run of each mode, of the largest size: three requests a rank, two of them beside a computing span.
    assert sorted(len([e for e in events if e["pid"] == r and trace_file.request(e)]) for r in (0, 1)) == [3, 3]
    assert len([e for e in events if e["pid"] == 0 and e["name"] == "compute"]) == 2
