"""The results file's format end to end: the C++ builders (tests/records.h)
write one record of every kind, sealed with a key given as the runner gives
it, and kit/records.py reads them back.

  python3 -m pytest staff/tests -q      (after `make build`; `make check` runs it)
"""
import os
import secrets
import subprocess

from kit import records
from kit.paths import build_dir

AWKWARD = "quote \" backslash \\ newline\n tab\t bell\a end"


def write_every_kind(tmp_path, key: bytes) -> str:
    out = str(tmp_path / "records.jsonl")
    binary = os.path.join(build_dir(), "framework_tests")
    proc = subprocess.run([binary, "--gtest_filter=Records.WriteEveryKindForTheRunner"],
                          input=key.hex() + "\n", text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=dict(os.environ, KIT_RECORDS_OUT=out, KIT_RESULTS_KEY="stdin"), timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert "1 test" in proc.stdout and "SKIPPED" not in proc.stdout, proc.stdout
    return out


def test_every_kind_round_trips(tmp_path):
    key = secrets.token_bytes(32)
    got = records.read(write_every_kind(tmp_path, key), key)
    assert got.forged == 0
    assert got.plan == ["Suite.One", "Suite." + AWKWARD]
    assert got.plans[0]["ranks"] == 8
    assert got.plans[0]["syscall_filter"] == "off: " + AWKWARD
    assert [(r["case"], r["status"], r["seconds"]) for r in got.results] == \
        [("Suite.One", "pass", 1.5), ("Suite." + AWKWARD, "fail", 0.125)]
    assert got.results[1]["failures"] == [{"rank": 0, "message": AWKWARD}, {"rank": 7, "message": "second"}]
    assert got.failures == {"Suite.One": [{"rank": 5, "message": AWKWARD},
                                          {"rank": 6, "message": "crashed with SIGSEGV"}]}
    assert got.rollcalls == {"Suite.One": {2: {"state": "waiting in allreduce #3 on dp_comm (2 elements)",
                                               "seconds": 5.0}}}
    assert set(records.FIELDS) == {records.PLAN, records.RESULT, records.RANK_FAILURE, records.ABORT,
                                   records.ROLLCALL}


def test_a_wrong_key_trusts_no_plan_and_no_result(tmp_path):
    path = write_every_kind(tmp_path, secrets.token_bytes(32))
    got = records.read(path, secrets.token_bytes(32))
    assert got.plan is None and got.results == []
    assert got.forged == 3
    assert len(got.failures["Suite.One"]) == 2  # failures need no seal: they can only fail a case


def test_an_edited_result_is_forged(tmp_path):
    key = secrets.token_bytes(32)
    path = write_every_kind(tmp_path, key)
    with open(path) as f:
        lines = f.readlines()
    lines[2] = lines[2].replace('"status":"fail"', '"status":"pass"')
    got = records.parse(lines, key)
    assert got.forged == 1 and [r["case"] for r in got.results] == ["Suite.One"]
