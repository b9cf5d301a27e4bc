"""The records end to end: the C++ builders (tests/harness/records.h)
write one record of every kind, kit/records.py reads them back, and what a
hostile handin could leave in the file (a FIFO, a link, a line built to
break the reader, a flood) is refused or counted, never raised; the judge
(kit/judge.py) decides from values, not from a record's word.

  python3 -m pytest staff/tests/test_records.py -q      (after `make build`; `make check` runs it)
"""
import json
import os
import subprocess
import time

import pytest

from kit import judge, records
from kit.launch import Job
from kit.outcomes import outcomes_of
from kit.paths import build_dir

AWKWARD = "quote \" backslash \\ newline\n tab\t bell\a end"


def write_every_kind(tmp_path) -> str:
    out = str(tmp_path / "records.jsonl")
    binary = os.path.join(build_dir(), "framework_tests")
    proc = subprocess.run([binary, "--gtest_filter=Records.WriteEveryKindForTheRunner"], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ, KIT_RECORDS_OUT=out),
                          timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert "1 test" in proc.stdout and "SKIPPED" not in proc.stdout, proc.stdout
    return out


def test_every_kind_round_trips(tmp_path):
    got = records.read(write_every_kind(tmp_path))
    assert got.malformed == 0 and got.problem is None
    assert got.plan == ["Suite.One", "Suite." + AWKWARD]
    assert got.plans[0]["ranks"] == 8
    assert got.values == {"Suite.One": {("forward#1", 3): records.Observed(2, 3, 2, [0.5, -1e300, None])}}
    assert got.plans[0]["syscall_filter"] == "off_other_rank"
    assert [(r["case"], r["status"], r["seconds"]) for r in got.results] == \
        [("Suite.One", "pass", 1.5), ("Suite." + AWKWARD, "fail", 0.125)]
    assert got.results[1]["failures"] == [{"rank": 0, "message": AWKWARD}, {"rank": 7, "message": "second"}]
    assert got.failures == {"Suite.One": [{"rank": 5, "message": AWKWARD},
                                          {"rank": 6, "message": "crashed with SIGSEGV"}]}
    assert got.rollcalls == {"Suite.One": {2: {"state": "waiting in allreduce #3 on dp_comm (2 elements)",
                                               "seconds": 5.0, "phase": "running",
                                               "wait": {"op": "allreduce", "to": -1, "send_tag": -1, "from": -1,
                                                        "recv_tag": -1, "seq": 3, "count": 2,
                                                        "group": (1 << 52) - 1}},
                                           3: {"state": "waiting in send to rank 1 (tag 4)", "seconds": 5.0,
                                               "phase": "running",
                                               "wait": {"op": "send", "to": 1, "send_tag": 4, "from": -1,
                                                        "recv_tag": -1, "seq": -1, "count": -1, "group": -1}},
                                           1: {"state": "finished the case after 1 collective on world",
                                               "seconds": 5.0, "phase": "finished", "wait": None}}}
    assert set(records.FIELDS) == {records.PLAN, records.VALUE, records.RESULT, records.RANK_FAILURE,
                                   records.ABORT, records.ROLLCALL}


def test_lines_built_to_break_the_reader_are_counted_not_raised(tmp_path):
    path = tmp_path / "r.jsonl"
    lines = ["[" * 100000, "{" * 50000, '{"event":"result","case":1,"status":"pass","seconds":0,"failures":[]}',
             '{"event":"value","case":"A.b","rank":0,"label":"x#1","rows":-1,"cols":1,"stride":1,"values":[]}',
             '{"event":"plan","ranks":true,"cases":[]}', "x" * (records.MAX_LINE_BYTES + 1), "not json", "7"]
    path.write_text("\n".join(lines) + "\n")
    got = records.read(str(path))
    assert got.malformed == len(lines) and got.results == [] and got.plan is None


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory"])
def test_a_results_path_that_is_no_regular_file_is_refused_at_once(tmp_path, kind):
    path = str(tmp_path / "r.jsonl")
    target = tmp_path / "elsewhere"
    target.write_text('{"event":"plan","ranks":1,"cases":["A.b"]}\n')
    {"fifo": lambda: os.mkfifo(path), "symlink": lambda: os.symlink(target, path),
     "directory": lambda: os.mkdir(path)}[kind]()
    got = records.read(path)  # a FIFO with no writer would block a plain open() for ever
    assert got.plan is None and got.problem


def test_a_results_file_over_the_size_limit_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "MAX_FILE_BYTES", 1000)
    path = tmp_path / "r.jsonl"
    path.write_text('{"event":"plan","ranks":1,"cases":["A.b"]}\n' + "y" * 5000)
    got = records.read(str(path))
    assert got.plan is None and "over the 1000 bytes the grader reads" in got.problem


def expected_for(case="A.b", values=(1.0, 2.5)) -> judge.Expected:
    return judge.Expected([case], {case: {("forward#1", 0): records.Observed(1, len(values), 1, list(values))}})


def job_of(lines) -> Job:
    return Job(records.parse(lines), None, 0, 1.0)


PLAN = '{"event":"plan","ranks":1,"cases":["A.b"]}'
PASS = '{"event":"result","case":"A.b","status":"pass","seconds":0.5,"failures":[]}'


def value(values="[1.0,2.5]", label="forward#1", rank=0) -> str:
    return (f'{{"event":"value","case":"A.b","rank":{rank},"label":"{label}","rows":1,"cols":2,"stride":1,'
            f'"values":{values}}}')


def test_the_judge_passes_a_case_only_on_the_recorded_values():
    expected = expected_for()
    assert outcomes_of(job_of([PLAN, value(), PASS]), {}, expected, ["A.b"])[0].passed
    for lines, says in [([PLAN, PASS], "returned nothing here"),
                        ([PLAN, value("[1.0,2.6]"), PASS], "forward differs at (0, 1): expected 2.5, got 2.6"),
                        ([PLAN, value("[1.0,null]"), PASS], "got nothing (not a finite number)"),
                        ([PLAN, value(), value(label="forward#2"), PASS], "integrity: 1 value(s) the reference"),
                        ([PLAN, value(), value(), PASS], "given twice"),
                        ([PLAN, value(), PASS, PASS], "integrity: 2 results for this case")]:
        outcome = outcomes_of(job_of(lines), {}, expected, ["A.b"])[0]
        assert not outcome.passed and says in "\n".join(outcome.summary()), (lines, outcome.summary())


def test_a_pass_claimed_over_a_rank_failure_fails():
    failure = '{"event":"rank_failure","case":"A.b","rank":1,"message":"got_w differs"}'
    outcome = outcomes_of(job_of([PLAN, value(), failure, PASS]), {}, expected_for(), ["A.b"])[0]
    assert not outcome.passed and "got_w differs" in "\n".join(outcome.summary())


def test_a_case_the_judge_does_not_know_is_ignored_when_grading():
    forged = ['{"event":"plan","ranks":1,"cases":["A.b","Z.z"]}', value(), PASS,
              '{"event":"result","case":"Z.z","status":"pass","seconds":0.5,"failures":[]}']
    assert [o.case for o in outcomes_of(job_of(forged), {}, expected_for(), ["A.b"])] == ["A.b"]


def test_the_expected_file_round_trips(tmp_path):
    expected = expected_for(values=(0.1, -3e-300))
    path = tmp_path / "expected.txt"
    path.write_text(judge.dump(expected.cases, expected.values, salt=12345678901234567))
    again = judge.load(str(path))
    assert again.cases == expected.cases and again.values == expected.values and again.salt == 12345678901234567


def test_only_jobs_of_hidden_cases_get_the_salt_and_a_hung_part_runs_last(monkeypatch):
    """The salt of the hidden inputs goes to jobs of hidden cases, never to a
    job whose public cases' messages students read; a part whose case ended
    a job runs its other cases after every other part's, at a share of
    their limits."""
    from kit import jobs
    from kit.outcomes import CaseOutcome
    from kit import limits
    from kit import parts as table
    launched = []

    def fake_run_cases(launch, gtest_filter, tally, on_outcome=None, deferred=None):
        launched.append((gtest_filter, launch.hidden_salt, launch.case_share))
        mine = [c for c in ("Part1DataSplit.A", "Part1DataSplit.B", "Part7WeightGrad.A", "HiddenPart7WeightGrad.A")
                if table.matches(gtest_filter, c)]
        if deferred is not None and "Part1DataSplit.A" in mine:  # its hang puts off the rest of part 1
            deferred.append("Part1DataSplit.B")
            mine = [c for c in mine if c != "Part1DataSplit.B"]
        return {c: CaseOutcome(c, True) for c in mine}

    monkeypatch.setattr(jobs, "run_cases", fake_run_cases)
    chosen = [p for p in table.PARTS if p.key in ("part1", "part7")]
    ran = jobs.run_parts("kit_tests", chosen, hidden=True, launch_args={"expected": judge.Expected(salt=99)})
    assert [(salt is not None, share) for _, salt, share in launched] == \
        [(False, 1.0), (True, 1.0), (False, limits.HUNG_PART_SHARE), (True, limits.HUNG_PART_SHARE)]
    public, hidden_now, public_later, hidden_later = (f for f, _, _ in launched)
    assert "Hidden" not in public and "Hidden" not in public_later and public_later == "Part1DataSplit.B"
    assert "HiddenPart7" in hidden_now and "HiddenPart1" not in hidden_now and "HiddenPart1" in hidden_later
    assert all(salt == 99 for f, salt, _ in launched if "Hidden" in f)
    assert set(ran.outcomes) >= {"Part1DataSplit.A", "Part1DataSplit.B", "HiddenPart7WeightGrad.A"}


def test_value_records_past_the_harness_limits_are_not_kept(monkeypatch):
    # A file of valid-looking value records can't fill the grader's memory.
    monkeypatch.setattr(records, "MAX_VALUE_RECORDS", 3)
    big = value("[" + ",".join(["0"] * (records.MAX_VALUES_PER_RECORD + 1)) + "]")
    got = records.parse([big] + [value(label=f"forward#{n}") for n in range(1, 6)])
    assert got.malformed == 1 + 2 and len(got.values["A.b"]) == 3


def test_a_channel_speaks_for_its_own_rank_only():
    """A job's records come with the rank of the channel they came through:
    a record naming another rank, or rank 0's plan or result on another
    channel, is malformed; numbers out of range are malformed, and a value
    that is not a finite number is nothing, never an error."""
    plan = '{"event":"plan","ranks":2,"cases":["A.b"]}'
    result = '{"event":"result","case":"A.b","status":"pass","seconds":0.1,"failures":[]}'
    fail = '{"event":"rank_failure","case":"A.b","rank":%d,"message":"m"}'
    got = records.parse([(1, plan), (1, result), (1, fail % 0), (0, fail % 1)])
    assert got.malformed == 4 and got.plan is None and not got.results and not got.failures
    got = records.parse([(0, plan), (0, result), (1, fail % 1)])
    assert got.malformed == 0 and got.plan == ["A.b"] and got.failures["A.b"] == [{"rank": 1, "message": "m"}]
    huge = ['{"event":"result","case":"A.b","status":"pass","seconds":1e999,"failures":[]}',
            '{"event":"rank_failure","case":"A.b","rank":%d,"message":"m"}' % (1 << 40),
            '{"event":"rank_failure","case":"A.b","rank":-1,"message":"m"}',
            '{"event":"result","case":"A.b","status":"pass","seconds":1,"failures":[{"rank":"x","message":"m"}]}']
    assert records.parse([(0, line) for line in huge]).malformed == len(huge)
    # A plan's filter state is one of the kit's codes, never text a report could quote.
    coded = [plan.replace("]}", '],"syscall_filter":"%s"}' % state) for state in records.FILTER_STATES]
    assert records.parse([(0, line) for line in coded]).malformed == 0
    assert records.parse([(0, plan.replace("]}", '],"syscall_filter":"off: a hidden input"}'))]).malformed == 1
    wild = records.parse([(0, '{"event":"value","case":"A.b","rank":0,"label":"forward#1","rows":1,"cols":4,'
                              '"stride":1,"values":[1e999,NaN,-Infinity,1e308]}')])
    assert wild.malformed == 0 and wild.values["A.b"][("forward#1", 0)].values == [None, None, None, 1e308]
    # The judge shows a value that is no finite number as such, never crashes on it.
    message = judge.compare("forward#1", wild.values["A.b"][("forward#1", 0)],
                            records.Observed(1, 4, 1, [1.0, 2.0, 3.0, 1e308]))
    assert "not a finite number" in message and "3 of 4" in message


def test_channels_keep_each_ranks_lines_apart_and_bound_the_flood(tmp_path, monkeypatch):
    from kit import channels as ch
    monkeypatch.setattr(ch, "MAX_BYTES", 1 << 16)
    c = ch.Channels(str(tmp_path), 2)
    writers = [os.open(os.path.join(c.dir, f"rank{r}"), os.O_WRONLY) for r in range(2)]
    os.write(writers[1], b'{"rank":1,"half":')
    os.write(writers[0], b"zero\n")
    os.write(writers[1], b'"line"}\nnext')  # a line cut off by the job's end is no record
    with pytest.raises(OSError):
        os.read(writers[0], 1)  # a rank's end is write-only
    deadline = time.monotonic() + 10  # rank 1's line is in before the flood fills the cap
    while len(c.lines) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    flood = b"x" * 1000 + b"\n"
    for _ in range(100):
        os.write(writers[0], flood)
    for fd in writers:
        os.close(fd)
    lines = c.close()
    assert [line for rank, line in lines if rank == 1] == [b'{"rank":1,"half":"line"}']
    assert [line for rank, line in lines if rank == 0][0] == b"zero"
    assert c.torn == 1 and c.dropped > 0 and c.bytes > ch.MAX_BYTES
    assert not os.path.exists(c.dir)


def test_a_flood_of_empty_lines_costs_the_grader_no_more_than_the_cap(tmp_path, monkeypatch):
    """Each kept line is charged what keeping it costs, so lines of nothing
    are bounded like long ones (a million newlines, 1 MiB, kept past the cap
    would cost the grader a hundred times that)."""
    from kit import channels as ch
    monkeypatch.setattr(ch, "MAX_BYTES", 1 << 16)
    c = ch.Channels(str(tmp_path), 1)
    writer = os.open(os.path.join(c.dir, "rank0"), os.O_WRONLY)
    for _ in range(16):
        os.write(writer, b"\n" * (1 << 16))
    os.close(writer)
    lines = c.close()
    assert len(lines) * ch.LINE_COST <= (1 << 16) + ch.LINE_COST and c.dropped > 0
    assert c.bytes == 16 << 16


def test_an_anomaly_fails_every_case_of_its_job_and_quotes_nothing_it_wrote():
    # What only code under test writes (here: an account of a case no job
    # planned, named after a hidden case's input) fails the job's cases,
    # and the words never repeat what was written.
    job = job_of([PLAN, value(), PASS])
    job.anomalies = ["the MPI sides gave accounts of 1 case(s) the job never planned (the side names the cases "
                     "its program tells it of)"]
    [outcome] = outcomes_of(job, {}, expected_for(), ["A.b"])
    text = "\n".join(outcome.summary())
    assert not outcome.passed and "integrity: the MPI sides gave accounts of 1 case(s)" in text
    assert "every case of its job fails" in text


def test_the_anomalies_of_a_job_are_counted_not_quoted(tmp_path):
    from kit import traffic
    from kit.channels import Channels
    from kit.launch import _anomalies
    secret = "Part9Hidden.salt_1234567"
    side = [(0, json.dumps({"event": "traffic", "case": secret, "rank": 0, "calls": [], "overflow": 0}).encode()),
            (0, b"not an account " + secret.encode())]
    channels = Channels(str(tmp_path), 1)
    channels.close()
    found = _anomalies(records.parse([PLAN]), traffic.parse(side), channels)
    assert len(found) == 2 and not any(secret in a or "salt" in a for a in found), found


def _stalled_job(plan, passing=(), stalls_in=None):
    """A finished job of `plan`: a result for each of `passing`, then, if
    asked, a case stopped with every rank in allgather #2 of the world."""
    lines = [(0, json.dumps({"event": "plan", "ranks": 4, "cases": plan}))]
    lines += [(0, json.dumps({"event": "result", "case": c, "status": "pass", "seconds": 0.1, "failures": []}))
              for c in passing]
    wait = {"op": "allgather", "to": -1, "send_tag": -1, "from": -1, "recv_tag": -1, "seq": 2, "count": 128, "group": 1}
    if stalls_in:
        lines += [(r, json.dumps({"event": "rollcall", "case": stalls_in, "rank": r, "seconds": 7.2,
                                  "state": "waiting in allgather #2 on comm (128 elements)", "phase": "running",
                                  "wait": wait})) for r in range(4)]
    return Job(records.parse(lines), None, 0, 7.5)


@pytest.mark.parametrize("second_run_stalls", [False, True])
def test_a_case_stalled_inside_one_collective_runs_once_more(monkeypatch, second_run_stalls):
    """A case stopped with every rank inside the same collective call is a
    stall of the host (kit/diagnosis.py, stalled): it runs again, first in
    the next job, at its full limit, and that run's outcome stands."""
    from kit import jobs
    from kit.launch import JobTally, Launch
    first, second = "Part8Forward.KeepsNoFullWeightBetweenCalls", "Part8Forward.MovesOnlyWhatStageThreeNeeds"
    runs = [_stalled_job([first, second], stalls_in=first),
            _stalled_job([first, second], stalls_in=first) if second_run_stalls
            else _stalled_job([first, second], passing=[first, second])]
    filters = []

    def fake_run_job(launch, gtest_filter, tally):
        filters.append(gtest_filter)
        return runs[len(filters) - 1] if len(filters) <= len(runs) else _stalled_job([second], passing=[second])

    monkeypatch.setattr(jobs, "run_job", fake_run_job)
    tally = JobTally()
    got = jobs.run_cases(Launch("kit_tests", 4, 60), f"{first}:{second}", tally)
    assert filters[:2] == [f"{first}:{second}"] * 2 and tally.stalled == [first]
    assert got[second].passed
    if second_run_stalls:
        assert not got[first].passed and tally.hangs == 1
        assert got[first].failures[-1]["message"] == jobs.STALLED_TWICE
        assert "all 4 ranks: waiting in allgather #2" in got[first].failures[0]["message"]
    else:
        assert got[first].passed and tally.hangs == 0 and len(filters) == 2
