"""The roll-call of a hung case: ranks in one state share a line, and ranks
that wait on one another in point-to-point calls are named as a cycle. The
cycle is found in the waits the roll-call's records carry as data
(tests/records.h: "wait"); the states are text for people, as the ledger
writes them (framework/ledger_state.cpp), and nothing reads them back.

  python3 -m pytest staff/tests/test_roll_call.py -q
"""
from kit.jobs import roll_call, waiting_cycle


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


def test_receives_and_mixed_calls_name_their_own_cycle():
    assert "a cycle of receives" in waiting_cycle({0: recv(1, 0), 1: recv(0, 0)})
    mixed = waiting_cycle({0: send(1, 0), 1: recv(2, 0), 2: sendrecv(0, 0, 1, 0)})
    assert mixed.startswith("  ranks 0 -> 1 -> 2 -> 0: a cycle of point-to-point calls")


def test_ranks_are_followed_by_their_world_rank():
    # The ledger gives the other ends by their rank in MPI's world, whatever communicator the call is on.
    assert waiting_cycle({4: send(6, 0), 6: send(4, 0)}).startswith("  ranks 4 -> 6 -> 4: a cycle of sends")


def test_a_peer_that_takes_part_in_the_message_is_no_cycle():
    # Rank 1's sendrecv receives what rank 0 sends: rank 0's send returns, then its recv.
    assert waiting_cycle({0: send(1, 0), 1: sendrecv(0, 1, 0, 0)}) is None
    # The same, with the tags crossed: neither message is the one the other waits for.
    assert "a cycle of point-to-point calls" in waiting_cycle({0: send(1, 0), 1: sendrecv(0, 1, 0, 5)})


def test_no_cycle_when_the_wait_ends_at_a_rank_doing_something_else():
    assert waiting_cycle({0: send(1, 0), 1: None, 2: None}) is None
    assert waiting_cycle({0: None, 1: None}) is None


def test_a_state_that_reads_like_a_wait_is_no_wait():
    # Only the record's data counts: text that mimics the ledger's proves nothing.
    answers = {r: {"state": f"waiting in send to rank {1 - r} (tag 0) on world (2 elements)", "seconds": 1.0}
               for r in (0, 1)}
    assert "cycle" not in roll_call("KitPointToPoint.Anything", answers)
