"""The roll-call of a hung case: ranks in one state share a line, and ranks
that wait on one another in point-to-point calls are named as a cycle.
The states are written as the ledger writes them (framework/ledger_state.cpp).

  python3 -m pytest staff/tests/test_roll_call.py -q
"""
from kit.jobs import roll_call, waiting_cycle


def answers(states):
    return {rank: {"state": state, "seconds": 2.5} for rank, state in states.items()}


def test_two_ranks_that_both_send_first_are_a_cycle_of_sends():
    states = {0: "waiting in send to rank 1 (tag 1) on world (8 elements) in pipeline_step",
              1: "waiting in send to rank 0 (tag 0) on world (8 elements) in pipeline_step"}
    text = roll_call("KitPointToPoint.Anything", answers(states))  # a case of 4 ranks
    words = " ".join(text.split())
    assert "rank 0: waiting in send to rank 1 (tag 1)" in words and "rank 1: waiting in send to rank 0 (tag 0)" in words
    assert "ranks 2,3: did not answer" in words
    assert text.endswith("ranks 0 -> 1 -> 0: a cycle of sends, each waiting for the next, so none ever returns "
                         "(one of them must receive first, or use sendrecv)")


def test_receives_and_mixed_calls_name_their_own_cycle():
    assert "a cycle of receives" in waiting_cycle({0: "waiting in recv from rank 1 (tag 0) on world (2 elements)",
                                                   1: "waiting in recv from rank 0 (tag 0) on world (2 elements)"})
    mixed = waiting_cycle({0: "waiting in send to rank 1 (tag 0) on world (2 elements)",
                           1: "waiting in recv from rank 2 (tag 0) on world (2 elements)",
                           2: "waiting in sendrecv to rank 0 (tag 0) and from rank 1 (tag 0) on world (2 elements)"})
    assert mixed.startswith("  ranks 0 -> 1 -> 2 -> 0: a cycle of point-to-point calls")


def test_a_rank_on_a_split_communicator_is_followed_by_its_world_rank():
    states = {4: "waiting in send to rank 6 (its rank 1 on pp_comm) (tag 0) on pp_comm (3 elements)",
              6: "waiting in send to rank 4 (its rank 0 on pp_comm) (tag 0) on pp_comm (3 elements)"}
    assert waiting_cycle(states).startswith("  ranks 4 -> 6 -> 4: a cycle of sends")


def test_a_peer_that_takes_part_in_the_message_is_no_cycle():
    # Rank 1's sendrecv receives what rank 0 sends: rank 0's send returns, then its recv.
    assert waiting_cycle({0: "waiting in send to rank 1 (tag 0) on world (2 elements)",
                          1: "waiting in sendrecv to rank 0 (tag 1) and from rank 0 (tag 0) on world (2 elements)"}) is None
    # The same, with the tags crossed: neither message is the one the other waits for.
    assert "a cycle of point-to-point calls" in waiting_cycle(
        {0: "waiting in send to rank 1 (tag 0) on world (2 elements)",
         1: "waiting in sendrecv to rank 0 (tag 1) and from rank 0 (tag 5) on world (2 elements)"})


def test_no_cycle_when_the_wait_ends_at_a_rank_doing_something_else():
    assert waiting_cycle({0: "waiting in send to rank 1 (tag 0) on world (2 elements)",
                          1: "still running pipeline_step, in no collective; without a collective",
                          2: "waiting in allreduce #3 on world (2 elements)"}) is None
    assert waiting_cycle({0: "waiting in allreduce #1 on world (2 elements)",
                          1: "waiting in allreduce #2 on world (2 elements)"}) is None
