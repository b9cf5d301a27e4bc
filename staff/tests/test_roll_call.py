"""The roll-call of a hung case: ranks in one state share a line, and what
the ranks waiting in point-to-point calls wait for is named: a tag
mismatch, a cycle, a message nobody takes. The diagnoses come from the
data the roll-call's records carry (tests/harness/records.h: "wait" and "phase");
the states are text for people, as the ledger writes them
(framework/comm/ledger_state.cpp), and nothing reads them back.

  python3 -m pytest staff/tests/test_roll_call.py -q
"""
from kit.diagnosis import doing, point_to_point_diagnosis, rank_label, roll_call, stalled, waiting_cycle


def send(to, tag):
    return {"op": "send", "to": to, "send_tag": tag, "from": -1, "recv_tag": -1}


def recv(source, tag):
    return {"op": "recv", "to": -1, "send_tag": -1, "from": source, "recv_tag": tag}


def sendrecv(to, send_tag, source, recv_tag):
    return {"op": "sendrecv", "to": to, "send_tag": send_tag, "from": source, "recv_tag": recv_tag}


def test_two_ranks_that_both_send_first_are_a_cycle_of_sends():
    answers = {0: {"state": "waiting in send to rank 1 (tag 1) on world (8 elements) in pipeline_step",
                   "seconds": 2.5, "wait": send(1, 1)},
               1: {"state": "waiting in send to rank 0 (tag 0) on world (8 elements) in pipeline_step",
                   "seconds": 2.5, "wait": send(0, 0)}}
    text = roll_call("KitPointToPoint.Anything", answers)  # a case of 4 ranks
    words = " ".join(text.split())
    assert "rank 0: waiting in send to rank 1 (tag 1)" in words and "rank 1: waiting in send to rank 0 (tag 0)" in words
    assert "ranks 2,3: did not answer" in words
    assert text.endswith("ranks 0 -> 1 -> 0: a cycle of sends, each waiting for the next, so none ever returns "
                         "(one of them must receive first, or use sendrecv)")


def cycle_of(ends):
    return waiting_cycle(ends)[0]


def test_receives_and_mixed_calls_name_their_own_cycle():
    assert "a cycle of receives" in cycle_of({0: recv(1, 0), 1: recv(0, 0)})
    mixed = cycle_of({0: send(1, 0), 1: recv(2, 0), 2: sendrecv(0, 0, 1, 0)})
    assert mixed.startswith("  ranks 0 -> 1 -> 2 -> 0: a cycle of point-to-point calls")


def test_ranks_are_followed_by_their_world_rank():
    # The ledger gives the other ends by their rank in MPI's world, whatever communicator the call is on.
    assert cycle_of({4: send(6, 0), 6: send(4, 0)}).startswith("  ranks 4 -> 6 -> 4: a cycle of sends")


def test_a_peer_that_takes_part_in_the_message_is_no_cycle():
    # Rank 1's sendrecv receives what rank 0 sends: rank 0's send returns, then its recv.
    assert cycle_of({0: send(1, 0), 1: sendrecv(0, 1, 0, 0)}) is None


def test_no_cycle_when_the_wait_ends_at_a_rank_doing_something_else():
    assert cycle_of({0: send(1, 0)}) is None
    assert cycle_of({}) is None


def answer(wait=None, phase="running", state="(text)"):
    return {"state": state, "seconds": 5.0, "phase": phase, "wait": wait}


def test_a_message_sent_with_another_tag_is_a_tag_mismatch_never_a_cycle():
    # A pipeline's stage 1 sent its gradient with the next micro-batch's tag.
    lines = point_to_point_diagnosis({0: answer(recv(1, 0)), 1: answer(send(0, 1))})
    assert lines == ["  rank 1 sends to rank 0 with tag 1, but rank 0 waits for tag 0 from rank 1: the tags differ"]
    # The same inside a sendrecv, whose send goes elsewhere and waits too: still no cycle.
    lines = point_to_point_diagnosis({0: answer(send(1, 0)), 1: answer(sendrecv(0, 1, 0, 5))})
    assert "  rank 0 sends to rank 1 with tag 0, but rank 1 waits for tag 5 from rank 0: the tags differ" in lines
    assert not [line for line in lines if "cycle" in line]


def test_a_real_cycle_of_sends_keeps_its_message():
    text = roll_call("KitPointToPoint.Anything", {0: answer(send(1, 0)), 1: answer(send(0, 0))})
    assert text.endswith("ranks 0 -> 1 -> 0: a cycle of sends, each waiting for the next, so none ever returns "
                         "(one of them must receive first, or use sendrecv)")
    assert "the tags differ" not in text and "nobody" not in text


def test_a_send_nobody_receives_says_what_its_target_does():
    finished = point_to_point_diagnosis({0: answer(send(1, 3)), 1: answer(phase="finished")})
    assert finished == ["  rank 0 sends to rank 1 (tag 3), which nobody receives: rank 1 finished the case"]
    elsewhere = point_to_point_diagnosis({0: answer(send(1, 3)), 1: answer(recv(2, 0)), 2: answer(phase="finished")})
    assert elsewhere[0] == "  rank 0 sends to rank 1 (tag 3), which nobody receives: rank 1 waits for rank 2 (tag 0)"
    assert elsewhere[1] == ("  rank 1 waits for a message from rank 2 (tag 0), which nobody sends: "
                            "rank 2 finished the case")
    collective = point_to_point_diagnosis({0: answer(send(1, 3)), 1: answer({**recv(-1, -1), "op": "allreduce"})})
    assert collective == ["  rank 0 sends to rank 1 (tag 3), which nobody receives: rank 1 waits in allreduce, a "
                          "collective"]
    assert point_to_point_diagnosis({0: answer(send(1, 3))}) == [
        "  rank 0 sends to rank 1 (tag 3), which nobody receives: rank 1 did not answer the roll-call"]


def test_a_state_that_reads_like_a_wait_is_no_wait():
    # Only the record's data counts: text that mimics the ledger's proves nothing.
    answers = {r: {"state": f"waiting in send to rank {1 - r} (tag 0) on world (2 elements)", "seconds": 1.0}
               for r in (0, 1)}
    text = roll_call("KitPointToPoint.Anything", answers)
    assert "cycle" not in text and "nobody" not in text and "tags differ" not in text


def test_ranks_are_named_as_the_kit_names_them():
    assert rank_label([2]) == "rank 2"
    assert rank_label([0, 3]) == "ranks 0,3"


def test_what_a_rank_was_doing_comes_from_its_record_alone():
    assert doing(3, None) == "rank 3 did not answer the roll-call"
    assert doing(1, answer(phase="failed")) == "rank 1 failed (above)"
    assert doing(1, answer(sendrecv(2, 4, 0, 5))) == "rank 1 sends to rank 2 (tag 4) and waits for rank 0 (tag 5)"
    assert doing(2, answer({**recv(-1, -1), "op": "wait"})) == "rank 2 waits for a request of its own to complete"
    assert doing(0, answer()) == "rank 0 is still running, in no call of the communicator"


def test_ranks_in_one_state_are_told_in_one_sentence():
    answers = {r: {"state": "waiting in barrier #1 on world", "seconds": 5.5} for r in range(4)}
    assert roll_call("KitPointToPoint.Anything", answers, limit_scale=1.0) == \
        "the case did not finish within its time limit of 5 s; all 4 ranks: waiting in barrier #1 on world"


def test_a_limit_the_watchdog_stretched_is_said_and_an_unknown_case_gives_its_time():
    answers = {0: {"state": "running", "seconds": 9.0}}
    assert roll_call("KitPointToPoint.Anything", answers, limit_scale=1.0).startswith(
        "the case did not finish within its time limit of 5 s (stretched to 9.0 s: the machine was busy); ")
    assert roll_call("NoSuchSuite.Case", answers) == "the case did not finish (stopped after 9.0 s); rank 0: running"


# ---- a stall: every rank of the case inside one collective call ----

CASE_OF_4 = "Part8Forward.KeepsNoFullWeightBetweenCalls"  # a case of 4 ranks


def collective(op="allgather", seq=2, count=128, group=1):
    return {"op": op, "to": -1, "send_tag": -1, "from": -1, "recv_tag": -1, "seq": seq, "count": count, "group": group}


def test_every_rank_in_the_same_collective_call_is_a_stall():
    assert stalled(CASE_OF_4, {r: answer(collective()) for r in range(4)})
    # Ranks 2,3 finished reduce_scatter #139, so every rank entered it: MPI owes ranks 0,1 its end.
    assert stalled(CASE_OF_4, {0: answer(collective("reduce_scatter", 139, 50176)),
                               1: answer(collective("reduce_scatter", 139, 50176)),
                               2: answer(collective("reduce_scatter", 140, 64)),
                               3: answer(collective("allgather", 141, 64))})
    assert stalled(CASE_OF_4, {0: answer(collective(seq=1)), 1: answer(collective()), 2: answer(collective()),
                               3: answer(collective())})


def test_anything_short_of_the_same_call_on_every_rank_is_no_stall():
    def with_rank_3(wait=None, phase="running", ranks=4):
        answers = {r: answer(collective()) for r in range(ranks)}
        if ranks == 4:
            answers[3] = answer(wait, phase)
        return answers
    assert not stalled(CASE_OF_4, with_rank_3(collective(seq=0)))        # no call of the student's code
    assert not stalled(CASE_OF_4, with_rank_3(collective(count=64)))     # another call (the agreement fails it)
    assert not stalled(CASE_OF_4, with_rank_3(collective(group=7)))      # another communicator's call
    assert not stalled(CASE_OF_4, with_rank_3(collective(op="allreduce")))
    assert not stalled(CASE_OF_4, with_rank_3(send(0, 0)))               # a point-to-point call
    assert not stalled(CASE_OF_4, with_rank_3(None))                     # in no call
    assert not stalled(CASE_OF_4, with_rank_3(collective(), phase="finished"))
    assert not stalled(CASE_OF_4, {r: answer(collective()) for r in range(3)})  # a rank did not answer
    # The usual mode's roll-call has no call number or group: never a stall.
    assert not stalled(CASE_OF_4, {r: answer(collective(seq=-1, group=-1)) for r in range(4)})
    assert not stalled("NoSuchSuite.Case", {r: answer(collective()) for r in range(4)})
