"""The messages between a rank's program and its MPI side, defined once.

framework/comm/comm_link.h carries each request as a Header and each answer
as a Reply (the bytes that follow, and who copies what, are its business).
What a request of each kind asks, and what its answer says, are named
fields, defined here and nowhere else; CMake writes them into a C++ header
when it configures, and both ends (the program's framework/comm/ and the
side's framework/comm/side/) read the same names:

  python3 -m kit.link --cpp build/generated/link_messages.h

A kind's fields are whole numbers (int64). Kinds that ask the same (the
three collectives) share one set of fields. staff/tests/test_link.py checks
that the header fits the link's fixed places and compiles.
"""
import sys
from dataclasses import dataclass
from typing import List, Sequence, Tuple

from kit.records import FILTER_STATES

# The most fields a request asks, and an answer says: the Header's and the
# Reply's fixed room for them (comm_link.h).
ASK_ROOM, ANSWER_ROOM = 5, 2


@dataclass(frozen=True)
class Kind:
    name: str                      # CamelCase: the enum's name and, in snake_case, its fields' union member's
    about: str                     # what it asks, and what comes back besides the fields
    ask: Tuple[str, ...] = ()      # the request's fields, in order
    answer: Tuple[str, ...] = ()   # the answer's fields, in order
    # A name for fields several kinds ask (or answer) alike: their struct's,
    # and, in snake_case, the one union member they share.
    ask_type: str = ""
    answer_type: str = ""
    answered: bool = True          # False: no answer (the side reads it and goes on)
    # Who may send it, where a rank's harness and the student's code run in
    # processes of their own (the side's driven mode): "both", "harness"
    # (the kit's test program alone) or "program" (the student's process
    # alone). A kind from the wrong process is an anomaly that fails the job.
    by: str = "both"


_COLLECTIVE = ("count", "reduction", "one_rank")
_MADE = ("rank", "size")

# In the order of their codes, from 1.
KINDS: List[Kind] = [
    Kind("Hello", "the program's first request; the world's rank and size come back", answer=_MADE,
         answer_type="Made"),
    Kind("Dup", "a copy of comm; data back: its members (int32, world ranks)", answer=_MADE, answer_type="Made"),
    Kind("Split", "comm split by color and key; data back: the new one's members (int32, world ranks)",
         ask=("color", "key"), answer=_MADE, answer_type="Made"),
    Kind("Free", "comm is no longer used"),
    Kind("Members", "data back: comm's members (int32, world ranks)"),
    Kind("Allreduce", "data: src (double); data back: dst", _COLLECTIVE, ask_type="Collective"),
    Kind("Allgather", "data: count doubles; data back: count * size doubles", _COLLECTIVE, ask_type="Collective"),
    Kind("ReduceScatter", "data: count * size doubles; data back: count doubles (count: the block)", _COLLECTIVE,
         ask_type="Collective"),
    Kind("Barrier", "every rank of comm arrives; idle: how a waiting side spends the wait (link::Idle)",
         ask=("idle",)),
    Kind("Agree", "data: kAgreeFields int64; data back: size * kAgreeFields int64", by="harness"),
    Kind("MaxOverRanks", "the largest value of comm's ranks", ask=("value",), answer=("maximum",), by="harness"),
    Kind("GatherText", "data: text; data back, at root: per rank, an int64 length then the text", ask=("root",),
         by="harness"),
    Kind("ClockOffset", "data back: offset and uncertainty (double), then the processor name", by="harness"),
    Kind("Send", "data: src; the receiver's count of elements comes back", ask=("dest", "tag"),
         answer=("receiver_count",)),
    Kind("Recv", "data back: dst, when the two counts agree", ask=("source", "tag", "count"),
         answer=("sender_count",)),
    Kind("Sendrecv", "data: src; data back: dst, when the counts agree",
         ask=("dest", "send_tag", "source", "recv_tag", "recv_count"), answer=("receiver_count", "sender_count")),
    Kind("Istart", "an iallreduce begins; data: src", ask=("count", "reduction"), answer=("request",)),
    Kind("Test", "data back: dst, when complete", ask=("request",), answer=("complete",), ask_type="Pending"),
    Kind("Wait", "data back: dst", ask=("request",), ask_type="Pending"),
    Kind("Case", "data: the name of the case now beginning, or none once it is over", by="harness"),
    Kind("Finalize", "the program ends normally"),
    Kind("Enter", "a student call begins; data: the function's name", ask=("argument",), answered=False,
         by="harness"),
    Kind("Return", "the student call entered last returns; data: its name", by="harness"),
    Kind("Salt", "data: doubles; data back: the same, salted with the hidden cases' salt, which only the side holds "
                 "(unchanged in a job without one)", by="harness"),
    # The driven mode (framework/calls/driven.h): the harness asks for a
    # student call, the side hands it to the student's process as the
    # answer to its Serve, carries that process's requests as the call's,
    # and answers the Call with what the next Serve brings back. A Serve's
    # `filter` is, at the first (before any code of the student's has run),
    # the system-call filter's state in that process (FILTER_CODES, from 1); 0 after.
    # A Call's `marked` (1) makes it a student call in the case's account,
    # with a return mark and the memory read at its return, as the
    # in-process harness's StudentScope does; 0 is the kit's own access to
    # an object in that process (a field read or set, a constructor of the
    # framework's), whose requests the account still counts.
    # Its `argument`: the call's key argument, which the account keeps beside
    # each iallreduce the call starts (grad_ready's parameter), as Enter's.
    # Its `reads_memory` (1): the side reads the program's memory at the
    # call's return, and tells the student's process so in the Serve's
    # answer, which then gives back what the call freed before it returns
    # (framework/guards/zero_rules.h). 0, where no rule judges the figure
    # (a training case's calls: MemoryUnread, driven.h): neither reads nor
    # gives back, and that process reuses its freed pages, unfaulted. Only
    # the harness sets it: the student's process can skip the giving back,
    # which only raises its own figure.
    Kind("Call", "a student call; data: the function's name, then its arguments (call_values.h); data back: the "
                 "side's findings (side_bytes of int64, Ops::take_findings), then what the call returned or threw",
         ask=("name_bytes", "marked", "argument", "reads_memory"), answer=("outcome", "side_bytes"), by="harness"),
    Kind("Serve", "the student's process is ready for a call; data: what the last one returned or threw (none at "
                  "first); data back: the next call (as Call's data), or none: the program ends",
         ask=("outcome", "filter"), answer=("name_bytes", "reads_memory"), by="program"),
    # A call back: the student's code calls a function of the kit's (a
    # pipeline stage's forward, say) that runs in the harness. The side
    # answers the harness's Call (or Resume) with it, and the student's
    # Upcall with the harness's Resume; the account names it in its call.
    Kind("Upcall", "during a call, a function of the harness's; data: its name (a Text), then its arguments "
                   "(call_values.h); "
                   "data back: the outcome (an Int) then what it returned or threw", by="program"),
    Kind("Resume", "the harness's answer to an Upcall; data: what the function returned; data back: as a Call's",
         answer=("outcome", "side_bytes"), ask_type="", answer_type="Call", by="harness"),
]


# A driven call's outcome, as the Call's (or Resume's) answer says it, by
# code from 0: what the student's process answered, or an Upcall of its
# (the harness runs it and answers with a Resume). Gone (-1): the process
# ended during the call (the side says so).
OUTCOMES = ("Returned", "ThrewInvalid", "Threw", "CheckFailed", "Unknown", "Upcall")

# The system-call filter's state in the driven mode's student process, as
# its first Serve says it (and the side's page keeps it), by the records'
# codes (kit/records.py) that one process can have: 0 is not known yet.
FILTER_CODES = tuple(c for c in FILTER_STATES if c != "off_other_rank")

# What the side found of a driven call (comm_side_serve.cpp), which answers
# the harness's Call before the student's values: each finding is its kind's
# code, then its fields (int64), in this order. A disagreement's fields are
# followed by `ranks` rows of kAgreeFields values (comm_agreement.cpp).
FINDINGS = [
    ("Disagreement", ("comm", "seq", "ranks")),
    ("Ended", ("signaled", "code")),  # the student's process ended during the call: by signal `code`, or exit(code)
    ("Strays", ("count",)),  # processes the call started and left running, which the side ended
    # A request the call made, or a request's end it saw, as the ledger logs one (LoggedCall): the event
    # (REQUEST_EVENTS), its operation (facts' OpCode; a request's end: the request's), communicator (the side's
    # number), other ends by rank on it (-1: none), elements (sent; a recv's: received), the request's number
    # (an iallreduce and a request's ends; else 0), the tests in the call that found it still running, and
    # a point-to-point call's tags (-1 for the end it has not), and the first element it sends and the sum of
    # its elements in order (each a double's bits; a NaN's where it sends none: framework/comm/sent_digest.h).
    ("Request", ("event", "op", "comm", "dest", "source", "count", "request", "failed_tests", "send_tag",
                 "recv_tag", "first", "sum")),
    # Requests past MOST_LOGGED_REQUESTS in one call: counted, not logged (the account still holds each).
    ("Unlogged", ("count",)),
]

# The most Request findings the side logs for one call (its upcalls
# included): an honest call of any part makes a few dozen; past it the side
# counts them, and the harness fails the case, whose checks can't see them.
MOST_LOGGED_REQUESTS = 4096

# The most bytes an Upcall's name and arguments may take: an honest one (a
# pipeline stage's micro-batch) is some 100 KiB, and the harness, which
# holds them, has a few MiB (kit/limits.py, DRIVEN_HARNESS_DATA_MIB).
MOST_UPCALL_BYTES = 1 << 20

# A Request finding's event, by code from 0, as ledger::LoggedCall::Event
# names them: a call of the communicator; a request that wait() saw
# complete; one a test() saw complete; and, as the call returns, one its
# tests found still running and that did not complete in it.
REQUEST_EVENTS = ("Call", "Waited", "Tested", "TestedRunning")


def snake(name: str) -> str:
    """ReduceScatter -> reduce_scatter."""
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _struct(name: str, fields: Sequence[str]) -> str:
    return f"struct {name} {{ std::int64_t {', '.join(fields)}; }};"


def cpp_text() -> str:
    for k in KINDS:
        if len(k.ask) > ASK_ROOM or len(k.answer) > ANSWER_ROOM:
            raise SystemExit(f"kit/link.py: {k.name} has more fields than the link has room for")
    kinds = "\n".join(f"  {k.name}{' = 1' if i == 0 else ''},  // {k.about}" for i, k in enumerate(KINDS))
    asked, answered, ask_types, answer_types = {}, {}, {}, {}
    for k in KINDS:
        if k.ask:
            type_name = k.ask_type or k.name
            if ask_types.setdefault(type_name, k.ask) != k.ask:
                raise SystemExit(f"kit/link.py: {k.name} asks other fields than {type_name}'s")
            asked.setdefault(type_name, f"  ask::{type_name} {snake(type_name)};")
        if k.answer:
            type_name = k.answer_type or k.name
            if answer_types.setdefault(type_name, k.answer) != k.answer:
                raise SystemExit(f"kit/link.py: {k.name} answers other fields than {type_name}'s")
            answered.setdefault(type_name, f"  answer::{type_name} {snake(type_name)};")
    unanswered = " || ".join(f"k == Kind::{k.name}" for k in KINDS if not k.answered) or "false"
    for k in KINDS:
        if k.by not in ("both", "harness", "program"):
            raise SystemExit(f"kit/link.py: {k.name} is sent by {k.by!r}: both, harness or program")
    findings = "\n".join(f"  {name}{' = 1' if i == 0 else ''},  // then {', '.join(fields)}"
                         for i, (name, fields) in enumerate(FINDINGS))
    outcomes = ", ".join(f"{o}{' = 0' if i == 0 else ''}" for i, o in enumerate(OUTCOMES))
    events = ", ".join(f"{e}{' = 0' if i == 0 else ''}" for i, e in enumerate(REQUEST_EVENTS))
    filter_codes = ", ".join(f"{''.join(w.title() for w in c.split('_'))}{' = 1' if i == 0 else ''}"
                             for i, c in enumerate(FILTER_CODES))
    finding_sizes = "\n".join(f"inline constexpr int k{name}Fields = {len(fields)};" for name, fields in FINDINGS)
    harness_only = " || ".join(f"k == Kind::{k.name}" for k in KINDS if k.by == "harness") or "false"
    program_only = " || ".join(f"k == Kind::{k.name}" for k in KINDS if k.by == "program") or "false"
    return f"""// Generated from kit/link.py when CMake configures; edit kit/link.py, not this file.
// What each request of the link asks and what its answer says (comm_link.h).
#pragma once

#include <cstdint>

namespace dtrain::link {{

enum class Kind : std::int32_t {{
{kinds}
}};

namespace ask {{
{chr(10).join(_struct(n, f) for n, f in ask_types.items())}
}}  // namespace ask

namespace answer {{
{chr(10).join(_struct(n, f) for n, f in answer_types.items())}
}}  // namespace answer

// A request's fields, by its kind's name (or the name of fields kinds share).
union Asked {{
  std::int64_t room[{ASK_ROOM}];
{chr(10).join(asked.values())}
}};

// An answer's fields, by its request's kind's name (or the shared name).
union Answered {{
  std::int64_t room[{ANSWER_ROOM}];
{chr(10).join(answered.values())}
}};

static_assert(sizeof(Asked) == {ASK_ROOM} * sizeof(std::int64_t) && sizeof(Answered) == {ANSWER_ROOM} * sizeof(std::int64_t));

// Whether a request of this kind gets an answer.
inline constexpr bool answered(Kind k) {{ return !({unanswered}); }}

// A driven call's outcome (kit/link.py, OUTCOMES).
enum class Outcome : std::int64_t {{ {outcomes}, Gone = -1 }};

// What the side found of a driven call, by code (kit/link.py, FINDINGS).
enum class Finding : std::int64_t {{
{findings}
}};
{finding_sizes}
inline constexpr int kMostLoggedRequests = {MOST_LOGGED_REQUESTS};
inline constexpr long long kMostUpcallBytes = {MOST_UPCALL_BYTES};

// A Request finding's event (kit/link.py, REQUEST_EVENTS).
enum class RequestEvent : std::int64_t {{ {events} }};

// The student's process's system-call filter, as its first Serve says it (kit/link.py, FILTER_CODES).
enum class FilterCode : std::int64_t {{ Unknown = 0, {filter_codes} }};

// Who may send it in the driven mode: the harness alone, or the student's process alone.
inline constexpr bool harness_only(Kind k) {{ return {harness_only}; }}
inline constexpr bool program_only(Kind k) {{ return {program_only}; }}

}}  // namespace dtrain::link
"""


def main(argv: List[str]) -> int:
    from kit.build_lists import header_main
    return header_main(argv, cpp_text, "the link's messages")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
