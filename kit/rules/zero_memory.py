"""ZeRO-3's memory rule, as the MPI side reads the program's memory (kit/rules/).

When a ZeRO-3 forward or backward returns, the side reads the program's
memory as the kernel counts it (framework/comm/side/traffic.h): the most
the program held at those returns, beyond what it held when its first case
began, is the account's held@ mark of each function. It may pass the
reference's by HELD_SLACK_KIB, no more: a full weight kept between calls is
more. Under an emulator, whose memory the kernel counts as the program's,
the side writes facts.EMULATED instead, and the rule is judged in the rank
alone (docs/internals.md).
"""
from typing import List, Optional

from kit import facts

# The calls whose returns the rule reads, as the side's account names them.
RULED = ("ZeroDPStage3FCLayer.forward", "ZeroDPStage3FCLayer.backward")
# How much more than the reference's a program may hold at those returns:
# room for other allocation patterns and for what earlier parts' code
# keeps, half the 4 MiB weight of the layer Part 8 keeps no full weight of.
HELD_SLACK_KIB = 2048


def _held(account, function: str) -> Optional[int]:
    return next((count for (op, count, _), _times in account.items() if op == facts.mark(facts.MARK_HELD, function)),
                None)


def problems(got, want) -> List[str]:
    if (facts.EMULATED, 0, 0) in got:
        return []
    out = []
    for function in RULED:
        want_held = _held(want, function)
        if want_held is None:
            continue
        held = _held(got, function)
        if held is not None and held <= want_held + HELD_SLACK_KIB:
            continue
        amount = (f"{held} KiB" if held is not None and held < facts.SIDE_UNREAD_KIB
                  else "memory its MPI side could not read")
        call = function.rsplit(".", 1)[-1]
        out.append(f"when a ZeRO-3 {call} returned, the program held {amount} beyond what it held as its first "
                   f"case began, where the reference holds {want_held} KiB ({HELD_SLACK_KIB} KiB more is "
                   f"allowed): a full weight, or a copy as big, kept between calls, which ZeRO-3 never does (its "
                   f"MPI side reads the kernel's count, whatever holds the memory: what other functions keep for "
                   f"good from earlier cases counts too)")
    return out
