"""Part 16's memory rule, as the MPI side reads the program's memory (kit/rules/).

When Zero1Adam::step or Zero2Adam::step returns, the side reads the
student's process's memory as the kernel counts it; the most it held at
those returns, beyond what it held as its first case began, may pass the
reference's by zero_memory.HELD_SLACK_KIB, no more. The reference keeps
m and v for its own shard. The rule is a backstop: the cases read the
optimizer's own m and v directly (their length must be the shard's), and
their models are small enough for a rank's harness to check (a step's
arguments travel through it), so the rule sees a copy of 2 MiB or more
kept beside the shards, not the difference between a shard of moments and
the whole at those sizes. It is judged where the student's code has a
process of its own (every grading): in one process (`make test`) the
figures hold the harness's data of the earlier parts' cases (7 MiB after
Part 9's), which the side says beside them (facts.WITH_HARNESS).
"""
from typing import List

from kit import facts
from kit.rules.zero_memory import HELD_SLACK_KIB, held_problems

# The calls whose returns the rule reads, as the side's account names them.
RULED = ("Zero1Adam.step", "Zero2Adam.step")


def _say(function: str, amount: str, want_held: int) -> str:
    stage = function.split(".", 1)[0]
    return (f"when {stage}::step returned, the program held {amount} beyond what it held as its first case began, "
            f"where the reference holds {want_held} KiB ({HELD_SLACK_KIB} KiB more is allowed): the optimizer's "
            f"moments, or a copy as big, kept whole, where ZeRO keeps this rank's shard of them (its MPI side reads "
            f"the kernel's count, whatever holds the memory)")


def problems(got, want) -> List[str]:
    if (facts.WITH_HARNESS, 0, 0) in got:
        return []  # one process (make test): its figures hold the harness's data of every earlier part's cases
    return held_problems(got, want, RULED, _say)
