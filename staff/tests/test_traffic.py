"""The MPI sides' accounts of traffic, read and judged (kit/traffic.py),
without a job: the lines are what framework/comm/side/traffic.cpp writes.
  /usr/bin/python3 -m pytest staff/tests/test_traffic.py -q -p no:cacheprovider
"""
import json

from kit import facts
from kit import judge
from kit import rules
from kit import traffic


def line(case, rank, calls, overflow=0, **extra):
    return json.dumps({"event": "traffic", "case": case, "rank": rank, "calls": calls, "overflow": overflow,
                       **extra}).encode()


ZERO_BACKWARD = [["allgather", 6, 4, 1], ["reduce_scatter", 6, 4, 1], ["reduce_scatter", 2, 4, 1]]


def test_an_account_is_read_per_case_and_rank():
    t = traffic.parse([(0, line("A.B", 0, ZERO_BACKWARD)), (1, line("A.B", 1, ZERO_BACKWARD))])
    assert t.malformed == 0 and not t.doubled
    assert t.accounts["A.B"][1] == {("allgather", 6, 4): 1, ("reduce_scatter", 6, 4): 1, ("reduce_scatter", 2, 4): 1}


def test_lines_no_side_writes_are_malformed():
    bad = [
        (0, line("A.B", 1, ZERO_BACKWARD)),                 # another rank's name on rank 0's channel
        (0, line("A.B", 0, [["allreduce", -1, 4, 1]])),     # a negative count
        (0, line("A.B", 0, [["allreduce", 1e999, 4, 1]])),  # not a whole number (JSON's infinity)
        (0, line("A.B", 0, [["launch", 1, 4, 1]])),         # no operation of the ledger's
        (0, line("A.B", 0, [["allreduce", 1, 4]])),         # a call of three fields
        (0, line("A.B", 0, ZERO_BACKWARD, overflow=True)),  # a flag where a count belongs
        (0, line("A.B", 0, [ZERO_BACKWARD[0]] * 257)),      # past the record's 256 kinds
        (0, b"{" * 100000),                                 # built to break the reader
        (0, b"not json"),
    ]
    t = traffic.parse(bad)
    assert t.malformed == len(bad) and not t.accounts


def test_a_second_account_of_a_case_fails_it_as_integrity():
    t = traffic.parse([(0, line("A.B", 0, ZERO_BACKWARD)), (0, line("A.B", 0, ZERO_BACKWARD))])
    failures = traffic.judge_case("A.B", t, {"A.B": {0: t.accounts["A.B"][0]}})
    assert len(failures) == 1 and failures[0]["message"].startswith("integrity: two accounts")


def test_an_allreduce_where_the_reference_reduce_scatters_is_named():
    want = traffic.parse([(0, line("A.B", 0, ZERO_BACKWARD))]).accounts
    got = traffic.parse([(0, line("A.B", 0, [["allgather", 6, 4, 1], ["allreduce", 24, 4, 1],
                                             ["reduce_scatter", 2, 4, 1]]))])
    [failure] = traffic.judge_case("A.B", got, want)
    assert failure["rank"] == 0
    assert "made allreduce of 24 elements on 4 ranks, which the reference doesn't" in failure["message"]
    assert "made no reduce-scatter of 6 elements on 4 ranks, which the reference makes" in failure["message"]


def test_messages_compare_as_elements_sent_whatever_the_calls():
    # A ring of 4 ranks moving 12 elements: sends and recvs, or sendrecvs, are alike.
    want = traffic.parse([(1, line("R.C", 1, [["send", 3, 4, 6], ["recv", 3, 4, 6]]))]).accounts
    same = traffic.parse([(1, line("R.C", 1, [["sendrecv", 3, 4, 6]]))])
    assert traffic.judge_case("R.C", same, want) == []
    collective = traffic.parse([(1, line("R.C", 1, [["allreduce", 12, 4, 1]]))])
    [failure] = traffic.judge_case("R.C", collective, want)
    assert "made allreduce of 12 elements on 4 ranks" in failure["message"]
    assert "sent 0 elements in messages, where the reference sends 18" in failure["message"]


def test_a_rank_without_an_account_fails_and_a_case_without_a_recorded_one_is_not_judged():
    want = {"A.B": {0: {("allgather", 6, 4): 1}, 1: {("allgather", 6, 4): 1}}}
    got = traffic.parse([(0, line("A.B", 0, [["allgather", 6, 4, 1]]))])
    [failure] = traffic.judge_case("A.B", got, want)
    assert failure["rank"] == 1 and "gave no account" in failure["message"]
    assert traffic.judge_case("Other.Case", got, want) == []


def test_calls_past_the_account_never_match():
    want = traffic.parse([(0, line("A.B", 0, ZERO_BACKWARD))]).accounts
    got = traffic.parse([(0, line("A.B", 0, ZERO_BACKWARD, overflow=3))])
    [failure] = traffic.judge_case("A.B", got, want)
    assert "3 calls past what one account holds" in failure["message"]


def test_accounts_of_unplanned_cases_are_found():
    t = traffic.parse([(0, line("A.B", 0, [])), (0, line("Hidden.X", 0, []))])
    assert traffic.unplanned(t, ["A.B"]) == ["Hidden.X"]


def test_the_expected_file_keeps_accounts_line_by_line(tmp_path):
    accounts = {"A.B": {0: {("allgather", 6, 4): 1, ("reduce_scatter", 2, 4): 2}, 1: {}}}
    path = tmp_path / "expected.txt"
    path.write_text(judge.dump(["A.B"], {}, None, accounts))
    assert "traffic A.B 0 allgather:6:4:1 reduce_scatter:2:4:2" in path.read_text()
    assert judge.load(str(path)).traffic == accounts
    path.write_text("traffic A.B 0 launch:1:1:1\n")
    try:
        judge.load(str(path))
    except ValueError as e:
        assert "unknown operation" in str(e)
    else:
        raise AssertionError("an unknown operation was read")


# What a ZeRO-3 case's account holds besides its calls: the backward's
# returns, and the most the program held at them (KiB).
BACKWARD = "ZeroDPStage3FCLayer.backward"
ZERO_RULES = [rules.load("zero_memory")]


def measured(held, returns=2, op=None):
    op = op or facts.mark(facts.MARK_HELD, BACKWARD)
    return ZERO_BACKWARD + [[facts.mark(facts.MARK_RETURNED, BACKWARD), 0, 0, returns], [op, held, 0, 1]]


def zero_judged(got, want):
    return traffic.judge_case("Z.K", got, want, ZERO_RULES)


def test_memory_within_the_slack_of_the_references_passes():
    want = traffic.parse([(0, line("Z.K", 0, measured(3300)))]).accounts
    near = traffic.parse([(0, line("Z.K", 0, measured(3300 + rules.load("zero_memory").HELD_SLACK_KIB)))])
    assert zero_judged(near, want) == []


def test_a_kept_weight_fails_the_case_naming_both_figures():
    want = traffic.parse([(0, line("Z.K", 0, measured(3300)))]).accounts
    kept = traffic.parse([(0, line("Z.K", 0, measured(3300 + 4096)))])
    [failure] = zero_judged(kept, want)
    assert failure["rank"] == 0
    assert "backward returned, the program held 7396 KiB" in failure["message"]
    assert "the reference holds 3300 KiB" in failure["message"]
    assert "communication" not in failure["message"]  # memory is not traffic
    # Without the part's rules the figure is no one's business: it is not a call.
    assert traffic.judge_case("Z.K", kept, want) == []


def test_a_figure_the_side_could_not_read_fails():
    want = traffic.parse([(0, line("Z.K", 0, measured(3300)))]).accounts
    unread = traffic.parse([(0, line("Z.K", 0, measured(traffic.UNREAD_KIB)))])
    [failure] = zero_judged(unread, want)
    assert "memory its MPI side could not read" in failure["message"]


def test_skipped_returns_change_the_account():
    # A program that keeps the side from measuring (it never names a return)
    # makes fewer returns than the reference, which fails the case, whatever
    # the part's rules.
    want = traffic.parse([(0, line("Z.K", 0, measured(3300)))]).accounts
    fewer = traffic.parse([(0, line("Z.K", 0, measured(1000, returns=1)))])
    [failure] = traffic.judge_case("Z.K", fewer, want)
    assert f"returned from {BACKWARD} 1 time(s), where the reference returns 2" in failure["message"]
    none = traffic.parse([(0, line("Z.K", 0, ZERO_BACKWARD))])
    assert any("0 time(s)" in f["message"] for f in zero_judged(none, want))


def test_returns_from_calls_the_reference_never_makes_are_counted_not_quoted():
    want = traffic.parse([(0, line("Z.K", 0, measured(3300)))]).accounts
    named = measured(3300) + [[facts.mark(facts.MARK_RETURNED, "HiddenPart9Adam.Secret"), 0, 0, 1]]
    [failure] = traffic.judge_case("Z.K", traffic.parse([(0, line("Z.K", 0, named))]), want)
    assert "returned 1 time(s) from student calls the reference never makes" in failure["message"]
    assert "Secret" not in failure["message"]
    unpaired = traffic.parse([(0, line("Z.K", 0, measured(3300) + [[facts.UNPAIRED, 0, 0, 3]]))])
    [failure] = traffic.judge_case("Z.K", unpaired, want)
    assert "a student call's mark its MPI side could not pair (3 times)" in failure["message"]


def test_a_mark_of_no_shape_the_side_writes_is_malformed():
    for op in ("returned@", "returned@a b", "held@" + "x" * 65, "landed@ZeroDPAdam.step", "returned@Zero:step"):
        assert traffic.parse([(0, line("Z.K", 0, [[op, 0, 0, 1]]))]).malformed == 1, op


def test_under_an_emulator_memory_is_not_judged():
    want = traffic.parse([(0, line("Z.K", 0, measured(3300)))]).accounts
    emulated = traffic.parse([(0, line("Z.K", 0, measured(0, op=facts.EMULATED)))])
    assert zero_judged(emulated, want) == []


def test_memory_lines_round_trip_through_the_expected_file():
    accounts = traffic.parse([(0, line("Z.K", 0, measured(3300)))]).accounts["Z.K"]
    [text] = traffic.dump_lines("Z.K", accounts)
    assert f"returned@{BACKWARD}:0:0:2" in text and f"held@{BACKWARD}:3300:0:1" in text
    loaded = {}
    traffic.load_line(text.split(), loaded)
    assert loaded == {"Z.K": accounts}


# Part 13, one backward of two buckets on 2 ranks: grad_ready(3) .. (0), then
# finish; bucket {3, 2} of 8 elements completes in grad_ready(2), bucket
# {1, 0} of 36 in grad_ready(0).
READY, FINISH = "GradientBuckets.grad_ready", "GradientBuckets.finish"
STARTED = facts.mark(facts.MARK_STARTED_IN, READY)
DDP_STEP = [[facts.mark(facts.MARK_RETURNED, READY), 0, 0, 4], [facts.mark(facts.MARK_RETURNED, FINISH), 0, 0, 1],
            ["iallreduce", 8, 2, 1], ["iallreduce", 36, 2, 1], [STARTED, 8, 2, 1], [STARTED, 36, 0, 1]]
DDP_RULES = [rules.load("part13_ddp")]


def ddp(*changes):
    calls = {tuple(c[:3]): c[3] for c in DDP_STEP}
    for c in changes:
        if c[3]:
            calls[tuple(c[:3])] = c[3]
        else:
            calls.pop(tuple(c[:3]), None)
    return traffic.parse([(0, line("D.S", 0, [list(k) + [n] for k, n in calls.items()]))])


def test_the_references_order_passes():
    assert traffic.judge_case("D.S", ddp(), ddp().accounts, DDP_RULES) == []


def test_an_iallreduce_started_in_finish_is_placed_and_named():
    late = ddp([STARTED, 8, 2, 0], [facts.mark(facts.MARK_STARTED_IN, FINISH), 8, 0, 1])
    [failure] = traffic.judge_case("D.S", late, ddp().accounts, DDP_RULES)
    assert failure["message"].startswith("its order of events, as its MPI side saw it, differs")
    assert ("started an iallreduce of 8 elements in finish, where the reference starts it in grad_ready(2), the "
            "call that completes its bucket") in failure["message"]


def test_a_wait_or_a_loop_of_tests_in_grad_ready_is_named():
    most = rules.load("part13_ddp").MOST_TESTS_IN_ONE_CALL
    waits = ddp([facts.mark(facts.MARK_WAITED_IN, READY), 0, 0, 2])
    [failure] = traffic.judge_case("D.S", waits, ddp().accounts, DDP_RULES)
    assert "waited for a request in grad_ready (2 times): backward stops there" in failure["message"]
    loops = ddp([facts.mark(facts.MARK_TESTED_RUNNING_IN, READY), most + 1, 0, 1])
    [failure] = traffic.judge_case("D.S", loops, ddp().accounts, DDP_RULES)
    assert f"more than {most} times in one grad_ready call (1 time)" in failure["message"]
    # As often as the rule allows: the machine's pace, not a loop.
    assert traffic.judge_case("D.S", ddp([facts.mark(facts.MARK_TESTED_RUNNING_IN, READY), most, 0, 3]),
                              ddp().accounts, DDP_RULES) == []


def test_a_grad_ready_the_framework_never_called_changes_the_account():
    # A program that tells its side of a grad_ready of its own, to place a
    # late iallreduce there, adds a return to the framework's count.
    forged = ddp([facts.mark(facts.MARK_RETURNED, READY), 0, 0, 5], [STARTED, 8, 2, 0], [STARTED, 8, 7, 1])
    failures = traffic.judge_case("D.S", forged, ddp().accounts, DDP_RULES)
    assert any(f"returned from {READY} 5 time(s), where the reference returns 4" in f["message"] for f in failures)


def test_the_kits_own_requests_are_judged_as_the_calls_are():
    # A ZeRO-3 backward that sums the gradient through the report's text
    # gather: the reference makes no such request within a case.
    honest = ZERO_BACKWARD + [["agree", 0, 4, 3]]
    want = traffic.parse([(0, line("A.B", 0, honest))]).accounts
    got = traffic.parse([(0, line("A.B", 0, honest + [["gather_text", 9408, 4, 1]]))])
    [failure] = traffic.judge_case("A.B", got, want)
    assert "made a kit 'gather_text' request of 9408 bytes on 4 ranks, which the reference doesn't" \
        in failure["message"]
    # A count the machine's pace decides is not compared: how often a running request was tested.
    polled = traffic.parse([(0, line("A.B", 0, honest + [["test", 0, 0, 17]]))])
    assert traffic.judge_case("A.B", polled, want) == []


def test_the_calls_are_named_before_the_agreements_that_precede_them():
    want = traffic.parse([(0, line("A.B", 0, ZERO_BACKWARD + [["agree", 0, 4, 3]]))]).accounts
    got = traffic.parse([(0, line("A.B", 0, ZERO_BACKWARD + [["allreduce", 24, 4, 1], ["agree", 0, 4, 4]]))])
    [failure] = traffic.judge_case("A.B", got, want)
    assert failure["message"].index("allreduce of 24") < failure["message"].index("'agree'")


def test_the_fullest_account_a_side_writes_is_read_and_one_past_it_is_not():
    # framework/comm/side/traffic.cpp keeps kAccountMostKinds - MOST_OPEN_CALLS
    # kinds of call, then a memory reading per function: the reader takes every one of them.
    calls = [["allreduce", n, 4, 1] for n in range(facts.ACCOUNT_MOST_KINDS - facts.MOST_OPEN_CALLS)]
    held = [[facts.mark(facts.MARK_HELD, f"F{n}"), 100, 0, 1] for n in range(facts.MOST_OPEN_CALLS)]
    full = traffic.parse([(0, line("Z.K", 0, calls + held, overflow=5))])
    assert full.malformed == 0 and full.accounts["Z.K"][0][("overflow", 0, 0)] == 5
    past = traffic.parse([(0, line("Z.K", 0, calls + held + [["allgather", 1, 4, 1]]))])
    assert past.malformed == 1


def after(case, rank, calls):
    return line(case, rank, calls, section="after")


def test_what_follows_a_case_holds_only_the_harnesss_own_requests():
    honest = [["max", 0, 4, 1], ["free", 0, 4, 1], ["rendezvous", 0, 4, 1], ["dup", 0, 4, 1]]
    t = traffic.parse([(0, line("A.B", 0, ZERO_BACKWARD)), (0, after("A.B", 0, honest))])
    assert t.malformed == 0 and traffic.after_problems("A.B", t, [0], passed=True, job_ended=True) == []
    # A case ended early by code under test: the calls it made then are here.
    early = traffic.parse([(0, after("A.B", 0, honest + [["allreduce", 24, 4, 1], ["agree", 0, 4, 1]]))])
    [failure] = traffic.after_problems("A.B", early, [0], passed=True, job_ended=True)
    assert failure["rank"] == 0 and "after this case had ended" in failure["message"]
    assert "allreduce of 24 elements on 4 ranks" in failure["message"]
    # The messages of a failed case are gathered there; of a passed one, never.
    gathered = traffic.parse([(0, after("A.B", 0, honest + [["gather_text", 120, 4, 1]]))])
    assert traffic.after_problems("A.B", gathered, [0], passed=False, job_ended=True) == []
    assert traffic.after_problems("A.B", gathered, [0], passed=True, job_ended=True)


def test_a_side_that_gave_no_account_of_what_followed_fails_unless_the_job_was_stopped():
    t = traffic.parse([(0, line("A.B", 0, ZERO_BACKWARD))])
    [failure] = traffic.after_problems("A.B", t, [0], passed=True, job_ended=True)
    assert "gave no account of what followed this case" in failure["message"]
    assert traffic.after_problems("A.B", t, [0], passed=True, job_ended=False) == []


HARNESS_AFTER = [["max", 0, 4, 1], ["free", 0, 4, 1], ["rendezvous", 0, 4, 1], ["dup", 0, 4, 1]]


def test_a_job_whose_sides_were_spoken_for_fails_whatever_the_cases_part():
    # The fourth red team's handin hooked the harness's own link calls: each
    # ZeRO-3 case's calls went to the account of a Part 1 case already run
    # (a stand-in no rule judges), and the case's own account was replayed
    # with zeros. One rank's side then gives the stand-in two accounts.
    ranks = {"P1.A": 4, "Z.K": 4}
    honest = [(0, line("P1.A", 0, [])), (0, after("P1.A", 0, HARNESS_AFTER)),
              (0, line("Z.K", 0, ZERO_BACKWARD)), (0, after("Z.K", 0, HARNESS_AFTER))]
    assert traffic.job_problems(traffic.parse(honest), ["P1.A", "Z.K"], {"P1.A": 1, "Z.K": 1}, True) == []
    stand_in = honest + [(0, line("P1.A", 0, [["allreduce", 24, 4, 1]]))]
    [problem] = traffic.job_problems(traffic.parse(stand_in), ["P1.A", "Z.K"], {"P1.A": 1, "Z.K": 1}, True)
    assert "given twice" in problem and "P1.A" not in problem
    # An account from a rank outside the case's group, calls between cases
    # the harness never makes there, and a rank's case with no account.
    outside = traffic.parse(honest + [(3, line("P1.A", 3, [])), (3, after("P1.A", 3, HARNESS_AFTER))])
    assert any("outside their case's group" in p for p in traffic.job_problems(outside, ["P1.A"], {"P1.A": 1}, True))
    between = traffic.parse([(0, line("P1.A", 0, [])), (0, after("P1.A", 0, HARNESS_AFTER + [["allreduce", 9, 4, 1]]))])
    assert any("between two cases" in p for p in traffic.job_problems(between, ["P1.A"], ranks, True))
    silent = traffic.parse([(0, line("P1.A", 0, [])), (0, after("P1.A", 0, HARNESS_AFTER))])
    assert any("no account of a case their rank ran" in p for p in traffic.job_problems(silent, ["P1.A"], ranks, True))
    # A job that did not report every case, or was stopped, owes no account of what followed.
    unfinished = traffic.parse([(0, line("P1.A", 0, []))])
    assert traffic.job_problems(unfinished, ["P1.A"], {"P1.A": 1}, False) == []
    assert traffic.job_problems(unfinished, ["P1.A"], {"P1.A": 1}, True) == [
        "1 MPI side(s) gave no account of what followed a case"]

