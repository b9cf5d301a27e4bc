"""The facts both languages use, written once: the model's sizes, the
trainers' batch, the communication volumes, the ledger's operations, the
record cap and the per-file limit. The kit's Python imports them from here;
CMake writes them into a C++ header when it configures:

  python3 -m kit.facts --cpp build/generated/kit_facts.h

A formula is written here twice, in Python and as the C++ the header
carries, side by side; staff/tests/test_facts.py compiles the header and
checks that both give the same numbers on a table of inputs, and that no
fact is written again anywhere else. Each run's rank count stays in the
parts table (kit/part_table.py); the header names the suites of the runs whose
suite ends in its rank count, so that a test file lists them from there.
"""
import re
import sys
from typing import Dict, List

# The assignment's model: a 784-256-10 MLP on 28x28 images of 10 classes.
FEATURES, HIDDEN, CLASSES = 784, 256, 10
# The trainers' default global batch (each rank takes GLOBAL_BATCH / dp rows).
GLOBAL_BATCH = 60
# The bytes of one value the communicator moves (a double).
VALUE_BYTES = 8

# The ledger's operations, in the order of their codes (from 1); the
# records and the trace name a call by these.
OPERATIONS = ("allreduce", "allgather", "reduce_scatter", "split", "barrier", "send", "recv", "sendrecv",
              "iallreduce", "wait")
POINT_TO_POINT = ("send", "recv", "sendrecv")
# The reductions, by their codes (comm.h's Op, from 0), and the code of a
# call that reduces nothing (an allgather, a split), as the ledger and the
# side's agreement compare them.
REDUCTIONS = ("Sum", "Min", "Max")
NO_REDUCTION = -1
# How an MPI side's account of a case writes what it could not read of the
# program's memory (more than any rank may hold). framework/comm/side/traffic.h
# writes it, kit/traffic.py reads it.
SIDE_UNREAD_KIB = 1 << 30
# The marks an MPI side writes of the student calls the framework tells it
# of, as MARK@FUNCTION entries of a case's account (framework/comm/side/traffic.h):
# each return, the most memory held at the returns, and where each
# iallreduce, wait and test was made. FUNCTION is the framework's name, "::"
# written "."; requests outside every student call are NO_CALL's. A return
# with no call open, a call nested past MOST_OPEN_CALLS or a name that
# breaks the rules is UNPAIRED, which no reference's account holds. A part's
# rules read the marks (kit/rules/); the judge compares the returns.
MARK_RETURNED, MARK_HELD, MARK_STARTED_IN, MARK_WAITED_IN, MARK_TESTED_RUNNING_IN = (
    "returned", "held", "started_in", "waited_in", "tested_running_in")
CALL_MARKS = (MARK_RETURNED, MARK_HELD, MARK_STARTED_IN, MARK_WAITED_IN, MARK_TESTED_RUNNING_IN)
MARK_SEPARATOR = "@"
NO_CALL = "framework"
UNPAIRED = "unpaired"
EMULATED = "emulated"  # in place of the memory marks, under an emulator (its memory is not the program's)
MOST_OPEN_CALLS = 32
MOST_TESTS_COUNTED = 8       # tests of one request in one call past this count as this many
MOST_CALL_ARGUMENT = 1 << 20  # a call's argument past this is written as this (no reference's)

# A time limit counts the time a job could have run, not the clock's: in
# full on a host no busier than the job's own ranks and IDLE_COMPANY more
# runnable tasks (the runner, MPI's helpers) make it, in proportion to the
# job's share of the cores on a busier one, and in proportion to the CPUs
# a container's quota gives it below LIMIT_CPUS (the limits hold with one
# CPU free for the job). A loaded host stretches a limit at most
# MOST_STRETCH times. The ranks' watchdog (tests/harness/watchdog.cpp)
# and the runner's (kit/launch.py) count so.
IDLE_COMPANY = 2
MOST_STRETCH = 8
LIMIT_CPUS = 1


def time_share(ranks: int, cores: float, runnable: int, cpus: float) -> float:
    """What a second of the clock counts of a job's time limit."""
    idle = max(ranks, cores) + IDLE_COMPANY
    host_share = idle / runnable if runnable > idle else 1.0
    return host_share * min(1.0, cpus / LIMIT_CPUS)


def mark(what: str, function: str) -> str:
    """A mark's name in an account: returned@split_data."""
    return what + MARK_SEPARATOR + function

# The calls every rank of a communicator makes at the same point of its
# sequence, which the agreement check compares.
COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "split", "barrier", "iallreduce")

# The kit's own requests a rank's MPI side carries (framework/comm/comm_link.h):
# every one made while a case runs goes into the case's account, as the
# collectives do, because any request can move data. The judge compares
# them with the reference's, all but "test" and "wait": how often a running
# request was found still running is the machine's pace, and whether a
# request completes in a wait or a test is the code's choice (kit/traffic.py). "refused": a message whose sizes its two ends
# disagreed on, which still carried the sender's count. "salt": a hidden case's input salted by the side, which alone
# holds the salt (framework/comm/side/comm_side_salt.h).
KIT_REQUESTS = ("hello", "dup", "free", "members", "agree", "max", "gather_text", "clock_offset", "rendezvous",
                "refused", "test", "salt")
UNJUDGED_REQUESTS = ("test", "wait")  # how a request completes (a wait, or a test that finds it done) is the code's choice
# What the harness asks of the side between one case's end and the next
# case's start (or the program's end), at most: the ranks' verdict (max),
# communicators freed (the case's, and at the end the groups': a free moves
# nothing), the next group's rendezvous and its communicator; and after a
# failure, when the run writes traces (make test TRACE=1, never a grading),
# the trace gathered for rank 0 and its clock reading. Each rank's messages
# go to the runner as its own records, never as a collective. A case's
# "after" account holding anything else, or more, was made by code under
# test (kit/traffic.py).
BETWEEN_CASES = {"max": 2, "free": 64, "rendezvous": 2, "dup": 1}
AFTER_A_FAILURE = {"gather_text": 1, "clock_offset": 1}
# The most distinct (operation, elements, ranks) entries one case's account
# holds, its memory readings included; every call past them is counted
# ("overflow"), and a case with any differs from the reference's.
ACCOUNT_MOST_KINDS = 256

# The test program's exit status when, driven, the student's process ended
# before its first call (code before main that exits): the job ends before
# its plan, and the runner says why in these words (kit/jobs.py).
EXIT_STUDENT_GONE = 3
STUDENT_GONE = "the student's code ended its process before main: a static object's constructor?"

# The most values one value record holds: the harness writes no more, and
# the runner reads no more (kit/records.py).
MAX_VALUES_PER_RECORD = 256

# The largest file a grading writes (the test binary, an object): the
# sandbox's per-file limit, which the host must allow too.
FILE_LIMIT_BYTES = 64 << 20


def ring_bytes(elements: int, n: int, passes: int) -> int:
    """What one rank sends in one collective of `elements` values on n ranks,
    by the ring algorithm (framework/include/comm.h): passes * (n-1)/n of
    the buffer, in integer arithmetic. An allreduce makes 2 passes, an
    allgather or a reduce-scatter 1."""
    return passes * (n - 1) * elements * VALUE_BYTES // n


# The same formula in C++, for the header.
CPP_FORMULAS = """\
// What one rank sends in one collective of `elements` values on n ranks, by
// the ring algorithm (framework/include/comm.h): passes * (n-1)/n of the buffer.
constexpr std::uint64_t ring_bytes(long elements, int n, int passes) {
  return static_cast<std::uint64_t>(passes) * (static_cast<std::uint64_t>(n) - 1) *
         static_cast<std::uint64_t>(elements) * kValueBytes / static_cast<std::uint64_t>(n);
}
"""


def _code_name(op: str) -> str:
    """reduce_scatter -> kReduceScatter: the ledger's C++ name of an operation."""
    return "k" + "".join(w.capitalize() for w in op.split("_"))


def suites_by_ranks(runs) -> Dict[str, List[str]]:
    """The runs whose filter is a whole suite named for its rank count
    (Suite4.* on 4 ranks), grouped by the suite's stem (Suite)."""
    stems: Dict[str, List[str]] = {}
    for r in runs:
        m = re.fullmatch(r"([A-Za-z]\w*?)(\d+)\.\*", r.filter)
        if m and int(m.group(2)) == r.ranks:
            stems.setdefault(m.group(1), []).append(m.group(1) + m.group(2))
    return stems


def _part_facts(namespace: str, module) -> str:
    """A part's module's CPP_FACTS (whole numbers) and CPP_TEXT (C++ that
    may use this header's facts), in a namespace of their own; "" if none."""
    numbers = "".join(f"inline constexpr long {k} = {v};\n" for k, v in getattr(module, "CPP_FACTS", {}).items())
    text = numbers + getattr(module, "CPP_TEXT", "")
    return f"namespace {namespace} {{\n{text}}}  // namespace {namespace}\n" if text else ""


def cpp_text() -> str:
    from kit import parts  # the table's runs; kit.parts does not import this module's callers
    codes = ", ".join(f"{_code_name(op)}{' = 1' if i == 0 else ''}" for i, op in enumerate(OPERATIONS))
    names = ", ".join(['""'] + [f'"{op}"' for op in OPERATIONS])
    p2p = " || ".join(f"op == {_code_name(op)}" for op in POINT_TO_POINT)
    coll = " || ".join(f"op == {_code_name(op)}" for op in COLLECTIVES)
    requests = ", ".join(f"kRequest{_code_name(r)[1:]}" for r in KIT_REQUESTS)
    request_names = ", ".join(f'"{r}"' for r in KIT_REQUESTS)
    runs = [r for p in parts.ALL_PARTS for r in p.runs]
    suites = "\n".join(f"#define KIT_SUITES_{stem}(CASES) " + " ".join(f"CASES({s})" for s in names_)
                       for stem, names_ in suites_by_ranks(runs).items())
    # The parts' own numbers and formulas, each in a namespace of its module's
    # name: those of the rules a row names (kit/rules/), and of a part's facts
    # module (Adds.facts).
    import importlib
    held = [p for p in parts.ALL_PARTS if not p.extension or p.key in parts.CONFIGURATION.held]
    modules = dict.fromkeys([f"kit.rules.{n}" for p in held for n in p.rules] +
                            [p.adds.facts for p in held if p.adds.facts])
    # A module with no facts adds nothing, not even a line: a part added by its
    # row leaves this header, which nearly every file includes, byte for byte
    # the same, and a compiler cache compiles none of those files again.
    rule_facts = "\n".join(t for t in (_part_facts(m.rsplit(".", 1)[-1], importlib.import_module(m))
                                       for m in modules) if t)
    return f"""// Generated from kit/facts.py when CMake configures; edit kit/facts.py, not this file.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace dtrain::facts {{

inline constexpr int kFeatures = {FEATURES}, kHidden = {HIDDEN}, kClasses = {CLASSES};
inline constexpr int kGlobalBatch = {GLOBAL_BATCH};
inline constexpr std::uint64_t kValueBytes = {VALUE_BYTES};
inline constexpr long kMaxValuesPerRecord = {MAX_VALUES_PER_RECORD};
inline constexpr int kExitStudentGone = {EXIT_STUDENT_GONE};
inline constexpr long kSideUnreadKib = {SIDE_UNREAD_KIB};
inline constexpr std::size_t kAccountMostKinds = {ACCOUNT_MOST_KINDS};

// The marks of student calls in an account (kit/facts.py, CALL_MARKS).
inline constexpr const char *kMarkReturned = "{MARK_RETURNED}", *kMarkHeld = "{MARK_HELD}",
                            *kMarkStartedIn = "{MARK_STARTED_IN}", *kMarkWaitedIn = "{MARK_WAITED_IN}",
                            *kMarkTestedRunningIn = "{MARK_TESTED_RUNNING_IN}";
inline constexpr const char *kMarkSeparator = "{MARK_SEPARATOR}", *kNoCall = "{NO_CALL}", *kUnpaired = "{UNPAIRED}",
                            *kEmulated = "{EMULATED}";
inline constexpr int kMostOpenCalls = {MOST_OPEN_CALLS};
inline constexpr long kMostTestsCounted = {MOST_TESTS_COUNTED}, kMostCallArgument = {MOST_CALL_ARGUMENT};
inline constexpr double kIdleCompany = {IDLE_COMPANY}, kMostStretch = {MOST_STRETCH}, kLimitCpus = {LIMIT_CPUS};
inline double time_share(int ranks, double cores, int runnable, double cpus) {{
  const double idle = std::max(static_cast<double>(ranks), cores) + kIdleCompany;
  const double host_share = runnable > idle ? idle / runnable : 1.0;
  return host_share * std::min(1.0, cpus / kLimitCpus);
}}

// The kit's own requests, as a case's account names them.
enum KitRequest : int {{ {requests} }};
inline constexpr const char* kKitRequestNames[] = {{{request_names}}};

// The ledger's operations: a code each (0 is none), and its name.
enum OpCode : std::int64_t {{ {codes} }};
inline constexpr const char* kOpNames[] = {{{names}}};
inline constexpr const char* kReductionNames[] = {{{", ".join(f'"{r}"' for r in REDUCTIONS)}}};
inline constexpr std::int64_t kNoReduction = {NO_REDUCTION};
inline constexpr bool is_point_to_point(std::int64_t op) {{ return {p2p}; }}
inline constexpr bool is_collective(std::int64_t op) {{ return {coll}; }}

{CPP_FORMULAS}
// The parts' own numbers and formulas (kit/rules/, and each part's facts module).
{rule_facts}

}}  // namespace dtrain::facts

// The suites of the runs named for their rank count (kit/part_table.py): a test
// file writes KIT_SUITES_<stem>(ITS_CASES) to define its cases in each.
{suites}
"""


def main(argv: List[str]) -> int:
    from kit.build_lists import header_main
    return header_main(argv, cpp_text, "the facts")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
