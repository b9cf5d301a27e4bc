"""What a student sees in the loop edit -> make test-partN -> read: the static
checks' warning, one summary per run, and traces.

  python3 -m pytest staff/tests -q      (after `make build`)
"""
import json
import os
import re
import shutil
import subprocess
import sys

from kit import parts as table
from kit import trace
from kit.build import build
from kit.paths import KITRUN, KIT_DIR, REFERENCE_DIR, build_dir
from kit.suite import refusal_warning, static_findings


def test_a_file_the_grader_would_refuse_is_warned_about(tmp_path):
    for name in table.IMPL_FILES:
        shutil.copy(os.path.join(REFERENCE_DIR, name), tmp_path)
    path = tmp_path / "func_impl.cpp"
    path.write_text("#include <cstdlib>\n" + path.read_text().replace(
        "namespace dtrain {", "namespace dtrain {\nstatic const char* home = std::getenv(\"HOME\");", 1))
    # Its own cache: the kit's build is shared with the hostile gallery, which checks nothing else wrote there.
    cache = str(tmp_path / "cache.json")
    found = static_findings(str(tmp_path), table.find(["part7"]), build_dir(), cache)
    lines = refusal_warning(found)
    assert lines and lines[0].startswith("!! THE GRADER WOULD REFUSE student/func_impl.cpp")
    assert "part2, part3, part4, part5, part6, part7 would score 0" in lines[0]
    assert any("'getenv': reading or changing the environment is not allowed" in line for line in lines)
    clean = static_findings(REFERENCE_DIR, table.find(["part7"]), build_dir(), cache)
    assert refusal_warning(clean) == []


def test_a_crash_and_its_resumed_job_give_one_summary(tmp_path):
    impl = tmp_path / "impl"
    impl.mkdir()
    for name in table.IMPL_FILES:
        shutil.copy(os.path.join(REFERENCE_DIR, name), impl)
    source = impl / "func_impl.cpp"
    head = "Matrix naive_collect_backward_output(const Matrix& output_grad, int mp_group_idx, int mp_size) {"
    source.write_text(source.read_text().replace(
        head, head + "\n  if (mp_group_idx == 2 && output_grad.rows() == 2) { volatile int* p = nullptr; *p = 1; }"))
    binary = str(tmp_path / "kit_tests")
    assert build(str(impl), binary, build_dir())["linked"]
    proc = subprocess.run([sys.executable, "-m", "kit", "test", "part5", "--binary", binary], cwd=KIT_DIR,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    summaries = re.findall(r"^\d+ passed, \d+ failed", proc.stdout, re.M)
    assert summaries == ["5 passed, 1 failed"], proc.stdout
    assert "crashed with SIGSEGV" in proc.stdout and "the job ended here" in proc.stdout
    assert re.search(r"^part5: [\d.]+ / 20 points", proc.stdout, re.M)


def test_a_trace_holds_every_rank_and_the_bytes_of_the_counters(tmp_path):
    path = tmp_path / "trace.json"
    proc = subprocess.run([KITRUN, "-n", "4", os.path.join(build_dir(), "reference", "unified_train"),
                           "--mp_size", "2", "--dp_size", "2", "--num_train_samples", "600", "--num_test_samples", "100",
                           "--trace", str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout
    data = json.loads(path.read_text())
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert {e["pid"] for e in spans} == {0, 1, 2, 3}
    for rank in range(4):
        mine = [e for e in spans if e["pid"] == rank and e["cat"] == "collective"]
        assert sum(e["args"]["bytes"] for e in mine) == data["otherData"]["bytes_transferred"][rank] > 0
        assert {e["args"]["communicator"] for e in mine} >= {"mp_comm", "dp_comm"}
        assert {"forward", "backward", "optimizer"} <= {e["name"] for e in spans if e["pid"] == rank}
    events, _ = trace.load(str(path))
    assert trace.draw(events, str(tmp_path / "trace.png")) is None
    assert (tmp_path / "trace.png").stat().st_size > 10000
