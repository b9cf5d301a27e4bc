"""Runs test cases of the kit's test binary under MPI and gives one outcome
per case, whatever the student code does: which jobs run, in what order,
and what happens to the cases a job left unrun.

A job is one mpirun of the test binary. Its ranks write records
(tests/harness/records.h), each through a channel of its own that this process
drains as they arrive (kit/channels.py): a plan, what student functions
returned, a result per case, and, from any rank, its failures at once and
an abort record when a case can't finish. When a job ends before its plan
is done, the case in flight is failed with what the ranks recorded, and a
new job runs the cases after it. Outcomes come only from the records, never
from the program's output, and the records are evidence, never a verdict: with expected values
(`Launch.expected`, the grader's), the judge (kit/judge.py) decides every
case, the list of cases is the judge's own, and a case the ranks never
reported fails.

The parts a row marks `driven` run in jobs of their own, of the driven
harness (docs/driven-calls.md), whose student calls each rank's student
process carries out: a job is all of one mode.

Starting and stopping one job is kit/launch.py's; its records read as
outcomes, kit/outcomes.py's; the roll-call of a case that hung,
kit/diagnosis.py's.
"""
import os
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from kit import calibration, facts, host_limits
from kit import limits as kit_limits
from kit import parts as table
from kit import rules
from kit.build import public_twin
from kit.launch import OUT_OF_TIME, JobTally, Launch, run_job
from kit.outcomes import CaseOutcome, outcomes_of
from kit.paths import driven_harness, student_program


# A job needs this much of the grading's time left to be worth starting: MPI's
# start-up and the first cases.
MIN_JOB_SECONDS = 3.0
# A case that takes over this share of its limit spends the grading's time
# as a hang does: correct code takes under a twentieth of it. The limit as
# the watchdog stretches it where the job has less than a CPU.
SLOW_SHARE = 0.2


def is_slow(outcome: CaseOutcome, scale: float, limits: Optional[calibration.Limits] = None) -> bool:
    """Over SLOW_SHARE of its limit on this machine (`limits`: the table's
    when not given)."""
    run = next((r for r in table.all_runs() if table.matches(r.filter, outcome.case)), None)
    stretch = 1 / min(1.0, host_limits.cpus())
    limit = run and (limits.case_seconds(run) if limits is not None else run.case_seconds)
    return run is not None and outcome.seconds > SLOW_SHARE * limit * scale * stretch


def split_off_part(pending: List[str], ended: CaseOutcome) -> tuple:
    """(the pending cases of other parts, those of the part whose case ended
    its job: a hang, a crash). The second go to a job after every other:
    under a time limit, one part's hangs must not cost the other parts their
    turn. (A job runs its cases in the binary's order, whatever the filter's.)"""
    part = next((p for p in table.ALL_PARTS if p.owns(ended.case)), None)
    if part is None:
        return pending, []
    return [c for c in pending if not part.owns(c)], [c for c in pending if part.owns(c)]


def rules_of(case: str):
    """The rules of the part that owns `case` (kit/rules/), as its row names them."""
    return rules.modules(next((p.rules for p in table.ALL_PARTS if p.owns(case)), ()))


def run_cases(launch: Launch, gtest_filter: str, tally: Optional[JobTally] = None,
              on_outcome: Optional[Callable[[CaseOutcome], None]] = None,
              deferred: Optional[List[str]] = None) -> Dict[str, CaseOutcome]:
    """Runs every case the filter selects, in as many jobs as it takes, and
    returns case -> outcome. With the judge's expected values, every case
    of theirs that the filter selects has an outcome, reported or not. With
    a deadline, the cases it leaves unrun fail and are listed in
    `tally.out_of_time` (the caller says whose fault that was). With
    `deferred`, the cases of a part whose case ended a job are not run here
    but added to it, for the caller to run after everything else. A case
    stopped with every rank inside one collective call (a stall of the
    host: diagnosis.stalled) runs once more, first in the next job, and
    its second run's outcome stands (`tally.stalled`). So does a job that
    ended before its program planned a case, once per call."""
    tally = tally if tally is not None else JobTally()
    wanted = None
    if launch.expected is not None and launch.judges_cases:
        wanted = [c for c in launch.expected.cases if table.matches(gtest_filter, c)]
    outcomes: Dict[str, CaseOutcome] = {}
    queue = [gtest_filter]  # the filters of the jobs to come, in order
    cancelled = lambda: launch.cancel is not None and launch.cancel.is_set()  # noqa: E731
    timed_out = False
    relaunched = False  # a job that planned nothing runs once more (below)
    while queue and not cancelled():
        pending = queue.pop(0)
        if not pending:
            continue
        if launch.deadline is not None and time.monotonic() > launch.deadline - MIN_JOB_SECONDS:
            queue.insert(0, pending)
            timed_out = True
            break
        job = run_job(launch, pending, tally)
        tally.jobs.append({"seconds": round(job.seconds, 2), "planned": len(job.records.plan or []),
                           "reported": len(job.records.results), "stopped": job.stopped})
        if job.records.plan is None and job.stopped == OUT_OF_TIME:
            queue.insert(0, pending)
            timed_out = True
            break
        if job.records.plan is None and not job.stopped and not relaunched and job.returncode != facts.EXIT_STUDENT_GONE:
            # The launcher ended before the program planned anything: Open
            # MPI's launcher fails so, silently, when another job's cleanup
            # removes the session folder they share as it makes its own
            # (seen once in CI among thousands of jobs). Not a case's doing;
            # the second launch's outcome stands. (A student's process gone
            # before main says so, and is its code's doing.)
            relaunched = True
            queue.insert(0, pending)
            continue
        if job.records.plan is None:
            why = facts.STUDENT_GONE if job.returncode == facts.EXIT_STUDENT_GONE else f"exit status {job.returncode}"
            tally.error = job.stopped or f"the test program did not start its cases ({why})"
            break
        plan = job.records.plan if wanted is None else [c for c in job.records.plan if c in set(wanted)]
        if wanted is not None:
            tally.unjudged += [c for c in job.records.plan if c not in set(wanted) and c not in tally.unjudged][:20]
        ended = None
        for outcome in outcomes_of(job, outcomes, launch.expected, wanted, rules_of):
            if outcome.ended_job and job.stopped == OUT_OF_TIME:
                continue  # not the case's doing: it is listed with the unrun ones below
            if outcome.ended_job and outcome.stalled and outcome.case not in tally.stalled:
                tally.stalled.append(outcome.case)  # the host's doing: run again, first in the next job
                continue
            if outcome.stalled:
                outcome.failures.append({"rank": None, "message": STALLED_TWICE})
            outcomes[outcome.case] = outcome
            if outcome.ended_job:
                ended = outcome
                tally.hangs += bool(job.stopped or job.records.rollcalls.get(outcome.case))
                tally.ended_parts.update(p.key for p in table.ALL_PARTS if p.owns(outcome.case))
            else:
                tally.slow += is_slow(outcome, launch.scale(), launch.calibrated())
            if on_outcome:
                on_outcome(outcome)
        left = [c for c in plan if c not in outcomes]
        now, later = split_off_part(left, ended) if ended else (left, [])
        if deferred is not None:
            deferred += later
            queue = [":".join(now)] + queue
        else:
            queue = [":".join(now)] + queue + [":".join(later)]
        if job.stopped == OUT_OF_TIME:
            timed_out = True
            break
    if timed_out and not cancelled():
        unrun = [c for c in (wanted if wanted is not None else ":".join(queue).split(":"))
                 if c and "*" not in c and c not in outcomes and c not in (deferred or ())]
        tally.out_of_time += unrun
        for case in unrun:
            outcomes[case] = CaseOutcome(case, False, 0.0, [{"rank": None, "message": OUT_OF_TIME_MESSAGE}])
            if on_outcome:
                on_outcome(outcomes[case])
    if wanted is not None and outcomes and not cancelled():
        for case in wanted:
            if case not in outcomes and case not in (deferred or ()):
                outcomes[case] = CaseOutcome(case, False, 0.0, [{"rank": None, "message": (
                    "the test program never reported this case (its plan left it out: written by code under "
                    "test?)")}])
                if on_outcome:
                    on_outcome(outcomes[case])
    return outcomes


STALLED_TWICE = ("this case ran twice: its first run too was stopped with every rank inside the same collective "
                 "call, which MPI finishes whatever the code did before it; the second run's outcome stands")
OUT_OF_TIME_MESSAGE = "not run: the grading's time on this platform ran out before this case"


@dataclass
class PartsRun:
    """What running some parts' cases gave: an outcome per case that ran,
    and why none ran if none did."""
    outcomes: Dict[str, CaseOutcome]
    error: Optional[str]   # the binary could not run its cases (the job's reason), else None
    keys: str = ""         # the parts run: "part1, part2"
    output: str = ""       # what the jobs printed, when captured (JobTally.output)

    def labelled_error(self) -> Optional[str]:
        """The error, after the parts it cost: "part1, part2: why"."""
        return f"{self.keys}: {self.error}" if self.error else None


@dataclass(frozen=True)
class Driven:
    """The programs of the driven parts' jobs (a row's `driven`): the
    harness (with the hidden cases; its public twin without) and the student
    process's program, whose calls it drives."""
    harness: str
    student_program: str

    @staticmethod
    def of_build(build: str, impl: str) -> "Driven":
        return Driven(driven_harness(build), student_program(build, impl))

    def missing(self) -> List[str]:
        return [p for p in (public_twin(self.harness), self.student_program) if not os.access(p, os.X_OK)]


def run_parts(binary: str, chosen: List[table.Part], hidden: bool = False, launch_args: Optional[Dict] = None,
              tally: Optional[JobTally] = None,
              on_outcome: Optional[Callable[[CaseOutcome], None]] = None,
              settled: Optional[Callable[[str, Dict[str, CaseOutcome]], bool]] = None,
              public_binary: Optional[str] = None, driven: Optional[Driven] = None,
              hidden_salt: Optional[int] = None) -> PartsRun:
    """Runs the chosen parts' public cases in one job with as many ranks as
    the largest case needs, then, if asked, their hidden cases in jobs of
    their own: no process that ran a hidden case runs a public one, so
    nothing a rank saw of a hidden case can travel in a public case's
    records, which students see with their messages. A part whose case
    ended a job (a hang, a crash) runs its other cases, public then hidden,
    after every other part's, each at HUNG_PART_SHARE of its limit: under a
    platform's time limit, one part's hangs never cost the other parts their
    turn, and cost its own the same time everywhere. Without hidden cases,
    a put-off case for which `settled(case, outcomes so far)` holds is not
    run: the known-bug checks stop a part whose verdict is already certain.
    `public_binary`: the binary without the hidden cases (kit/build.py,
    public_twin), for the public jobs. `driven`: the driven parts' programs;
    without it, every part's cases run in `binary`. `hidden_salt`: the
    hidden jobs' salt where no judge's values give one (make hidden-data)."""
    tally = tally if tally is not None else JobTally()
    outcomes: Dict[str, CaseOutcome] = {}

    expected = (launch_args or {}).get("expected")

    driven_runs = {r.filter for p in chosen if p.driven for r in p.runs} if driven else set()

    def run(runs: List[table.Run], cases: Optional[List[str]] = None, later: Optional[List[str]] = None) -> None:
        for in_driven in (False, True):  # a job is all of one mode
            mine = [r for r in runs if (r.filter in driven_runs) == in_driven]
            picked = None if cases is None else [c for c in cases if any(table.matches(r.filter, c) for r in mine)]
            run_job_of(mine, picked, later, in_driven)

    def run_job_of(runs: List[table.Run], cases: Optional[List[str]], later: Optional[List[str]],
                   in_driven: bool) -> None:
        if not runs or tally.error or (cases is not None and not cases):
            return
        share = kit_limits.HUNG_PART_SHARE if cases is not None else 1.0  # the cases of a part that hung
        salt = (expected.salt if expected is not None else hidden_salt) if all(r.hidden for r in runs) else None
        # A run's job limit grows with its cases' limits on this machine.
        limits = (launch_args or {}).get("limits") or calibration.limits()
        all_hidden = all(r.hidden for r in runs)
        if in_driven and driven:
            exe = driven.harness if all_hidden else public_twin(driven.harness)
        else:
            exe = binary if public_binary is None or all_hidden else public_binary
        args = dict(launch_args or {})
        if in_driven and driven:
            args["env"] = dict(args.get("env") or os.environ, KIT_STUDENT_PROGRAM=driven.student_program)
        launch = Launch(exe, max(r.ranks for r in runs),
                        timeout=sum(r.job_seconds * limits.case_factor(r) for r in runs),
                        **{"capture": on_outcome is None, "case_share": share, "hidden_salt": salt, "limits": limits,
                           **args})
        chosen_filter = ":".join(cases) if cases is not None else ":".join(r.filter for r in runs)
        outcomes.update(run_cases(launch, chosen_filter, tally, on_outcome, deferred=later))

    public = [run_ for part in chosen for run_ in part.public_runs()]
    put_off: List[str] = []
    run(public, later=put_off)
    if hidden:
        hung = [p for p in chosen if any(p.owns(c) for c in put_off)]
        run([r for p in chosen if p not in hung for r in p.runs if r.hidden], later=put_off)
        hung = [p for p in chosen if any(p.owns(c) for c in put_off)]
        later_hidden = [r for p in hung for r in p.runs if r.hidden]
        run(public, [c for c in put_off if not table.is_hidden(c)])
        run(later_hidden, [c for c in put_off if table.is_hidden(c)] +
            [r.filter for r in later_hidden if not any(table.matches(r.filter, c) for c in outcomes)])
    else:
        run(public, [c for c in put_off if not (settled and settled(c, outcomes))])
    return PartsRun(outcomes, tally.error, ", ".join(p.key for p in chosen), tally.output)
