"""When a known-bug check may leave a part's put-off cases unrun
(staff/mutants.py, settled): only once the verdict those cases could change
is certain.

  python3 -m pytest staff/tests/test_mutants.py -q
"""
from kit.jobs import CaseOutcome
from staff.mutants import Mutant, settled

HANG = Mutant("a hang in part 7", "func_impl.cpp", "", "", ("part7",), says=(r"waiting in allreduce",))
ZERO = HANG._replace(zero=("part7",))
LOST = {"Part7WeightGrad.SeedCaseTwoRows": CaseOutcome("Part7WeightGrad.SeedCaseTwoRows", False, 1.0, [
    {"rank": None, "message": "ranks 1,2,3:  waiting in allreduce #1 on dp_comm (16 elements)"}])}
NEXT = "Part7WeightGrad.SeedCaseFourRows"


def test_a_part_that_has_lost_a_case_and_said_its_message_is_settled():
    assert settled(HANG, NEXT, LOST)


def test_a_part_that_must_score_zero_runs_every_case():
    assert not settled(ZERO, NEXT, LOST)


def test_a_part_that_must_keep_its_points_runs_every_case():
    assert not settled(HANG._replace(loses=("part3",)), NEXT, LOST)


def test_a_part_that_has_lost_nothing_yet_runs_on():
    passed = {case: CaseOutcome(case, True) for case in LOST}
    assert not settled(HANG, NEXT, passed)


def test_a_message_not_yet_given_keeps_the_part_running():
    assert not settled(HANG._replace(says=(r"rank 0: +waiting in allreduce #3",)), NEXT, LOST)


def test_a_case_of_no_part_is_never_settled():
    assert not settled(HANG, "NoSuchSuite.NoCase", LOST)
