"""Part 13's order of events, as the MPI side placed each request (kit/rules/).

The side places every iallreduce, wait and test by the student call it was
made in (framework/comm/side/traffic.h): ("started_in@F", elements,
argument) per iallreduce begun in F, where grad_ready's argument is its
parameter; ("waited_in@F", 0, 0) per wait; ("tested_running_in@F", n, 0)
per request that n tests in one call found still running. The reference's
account of a case holds the same marks, so the judge holds each bucket's
iallreduce to the call that completes the bucket, as the reference makes
it, and backward to never waiting in grad_ready.
"""
from collections import Counter
from typing import List

from kit import facts

GRAD_READY, FINISH = "GradientBuckets.grad_ready", "GradientBuckets.finish"
# More test() calls than this on one request within one grad_ready call,
# each finding it still running, are a loop that waits for it.
MOST_TESTS_IN_ONE_CALL = 2
CPP_FACTS = {"kMostTestsInOneCall": MOST_TESTS_IN_ONE_CALL}
HEADING, JOINT = "its order of events, as its MPI side saw it, differs from the reference's: it ", "; it "


def _where(function: str, argument: int) -> str:
    # Only names of the framework's own are written out: the account's names
    # came through the program's link, and a message quotes none of its bytes.
    if function == GRAD_READY:
        return f"grad_ready({argument})"
    return {FINISH: "finish", facts.NO_CALL: "no student call"}.get(function, "another call")


def _starts(account) -> Counter:
    prefix = facts.mark(facts.MARK_STARTED_IN, "")
    return Counter({(count, op[len(prefix):], argument): times for (op, count, argument), times in account.items()
                    if op.startswith(prefix)})


def problems(got, want) -> List[str]:
    out: List[str] = []
    extra, missing = _starts(got) - _starts(want), _starts(want) - _starts(got)
    for (count, function, argument), n in sorted(extra.items()):
        wanted = sorted((f, a) for (c, f, a) in missing if c == count)
        out.append(f"started an iallreduce of {count} elements in {_where(function, argument)}" +
                   (f" {n} times" if n > 1 else "") +
                   (f", where the reference starts it in {_where(*wanted[0])}, the call that completes its bucket"
                    if wanted else ", which the reference doesn't"))
    for (count, function, argument), n in sorted(missing.items()):
        if not any(c == count for (c, _f, _a) in extra):
            out.append(f"started no iallreduce of {count} elements in {_where(function, argument)}, where the "
                       f"reference does")
    waits = facts.mark(facts.MARK_WAITED_IN, GRAD_READY)
    tests = facts.mark(facts.MARK_TESTED_RUNNING_IN, GRAD_READY)
    looped = lambda account: sum(t for (op, n, _), t in account.items()  # noqa: E731
                                 if op == tests and n > MOST_TESTS_IN_ONE_CALL)
    for n, w, text in ((got.get((waits, 0, 0), 0), want.get((waits, 0, 0), 0), "waited for a request in grad_ready"),
                       (looped(got), looped(want), f"tested a running request more than {MOST_TESTS_IN_ONE_CALL} "
                                                   f"times in one grad_ready call")):
        if n > w:
            out.append(f"{text} ({n} time{'s' if n != 1 else ''}): backward stops there; wait in finish")
    return out
