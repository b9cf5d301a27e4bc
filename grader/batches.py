"""Grading a whole course without losing anything (grader/grade --batch).

Beside the gradebook, a folder <gradebook>.results/ keeps one JSON file per
handin: its scores, its status, the hash of its files and the kit's stamps.
Each is written atomically the moment its handin is graded, and the
gradebook (sorted by handin) and the handin's report are rebuilt from them
the same way: from every result the folder keeps, whichever run graded it,
so a batch of one handin (a late one, or one student's regrade) leaves every
other row as it was. So:
  - killing the grader at any moment, even with kill -9, loses at most the
    handins being graded; their sandbox processes die with it (sandbox.py);
  - running the same command again grades only what is missing, or what
    changed (another content); --regrade grades the named handins again;
  - a result graded by another kit (a fix, new hidden values) is graded
    again only with --regrade all: before that, the batch says which stamp
    changed, for how many handins, and how long grading them would take;
  - the final gradebook depends only on the results, not on how many runs
    it took; graded.jsonl logs every grading that finished;
  - each row carries its maximum and stamps (the kit's, the course's), and
    a points, parts or visibility change is re-scored from the results,
    running no handin (grader/rescore.py): a batch that finds rows of
    another course's scale says so, with the commands.
Ctrl-C (or SIGTERM) stops the batch: the handins in progress are abandoned
(their processes killed), and a summary says what was and wasn't graded.
"""
import glob
import json
import os
import shlex
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Dict, List, Optional, Tuple

from grader import grades, grading, reports, rescore, staging
from grader.gradebook import write_atomically, write_canvas, write_gradebook, write_json_atomically
from grader.stamps import case_stamps, content_keys, kit_stamps
from kit import parts as table
from kit.report import fmt

STOP_SECONDS = 20  # Ctrl-C: how long the batch waits for its workers to notice


def regrade_mode(args) -> str:
    """What --regrade asks: "" (nothing: grade what is new or changed),
    "named" (the handins --batch names, again) or "all" (those and every
    other handin the gradebook holds a result of)."""
    value = getattr(args, "regrade", None)
    return "" if not value else "all" if value == "all" else "named"


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h"


class Batch:
    def __init__(self, args, named: List[str]):
        self.args = args
        self.mode = regrade_mode(args)
        self.csv = os.path.abspath(args.csv)
        self.out_dir = os.path.dirname(self.csv)
        self.state_dir = os.path.splitext(self.csv)[0] + ".results"
        os.makedirs(self.state_dir, exist_ok=True)
        self.version, self.sources = kit_stamps(args.build)
        self.core, self.part_stamps = case_stamps(args.build)
        self.partial: Dict[str, List[str]] = {}  # --regrade all: handin -> the parts whose cases alone run again
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.orphans: List[str] = []  # gradebook rows no result holds (gradebook.write_gradebook)
        self.gone: List[str] = []     # --regrade all: results whose handin's file is no longer there
        self.handins = list(named) + (self.elsewhere(named) if self.mode == "all" else [])
        self.unfinished = self.pending_regrade()  # a regrade an earlier run began, or None
        self.conflict: Optional[Dict] = None  # that regrade, when this run asks for another
        self.regrade = self.regrade_begun() if self.mode else ""
        # What no handin's code may see: the other handins and every grade.
        self.private = tuple(dict.fromkeys([os.path.dirname(os.path.abspath(h)) for h in self.handins]
                                           + [self.out_dir, self.state_dir]))

    @staticmethod
    def stem(handin: str) -> str:
        return os.path.splitext(os.path.basename(handin))[0]

    def state_path(self, handin: str) -> str:
        return os.path.join(self.state_dir, self.stem(handin) + ".json")

    def kept(self, handin: str) -> Optional[Dict]:
        try:
            with open(self.state_path(handin)) as f:
                state = json.load(f)
            return state if isinstance(state, dict) else None
        except (OSError, ValueError):
            return None

    def elsewhere(self, named: List[str]) -> List[str]:
        """--regrade all: the handins of the gradebook's other results, found
        where they were graded from (each result keeps its handin's path)."""
        stems = {self.stem(h) for h in named}
        found = []
        for _, state in rescore.results_of(self.csv):
            path = state.get("path", "")
            if self.stem(state["handin"]) in stems:
                continue
            if path and os.path.isfile(path):
                found.append(path)
            else:
                self.gone.append(state["handin"])
        return sorted(found)

    def stale(self, state: Dict) -> Optional[Tuple[str, str]]:
        """Why a kept result no longer stands, as (what changed, in words), or
        None when it does: graded by this kit, or by one that differed only
        in parts the course has dropped since (a re-score drops them)."""
        if state.get("kit") == self.version:
            return None
        if state.get("core") == self.core and isinstance(state.get("part_stamps"), dict) and "parts" in state:
            # Only some parts' cases changed (a hidden case added, a part added): only theirs run again.
            have = {k["key"] for k in state["parts"]}
            changed = [p.key for p in table.PARTS
                       if p.key not in have or state["part_stamps"].get(p.key) != self.part_stamps.get(p.key)]
            return ("cases", ", ".join(changed)) if changed else None
        if state.get("sources") == self.sources:
            why = rescore.why_not(state)
            return ("parts", why) if why else None
        return ("kit", str(state.get("kit", "?")))

    def plan(self, keys: Dict[str, str]) -> Tuple[List[str], List[Dict], int]:
        """(the handins to grade, the results left as they are although they
        no longer stand, how many handins are graded already). A handin
        named by --batch is graded when it is new or its content changed,
        or, with --regrade, when this regrade has not graded it yet; a result
        graded by another kit is graded again only with --regrade (named or
        all): the batch says so instead (held_note)."""
        todo, held, skipped = [], [], 0
        for h in self.handins:
            state = self.kept(h)
            # A grader error is no grade: the batch run again, once the setup is fixed, grades it again.
            if state is None or state.get("key") != keys[h] or state.get("status") == "grader error":
                todo.append(h)
            elif self.regrade:
                if state.get("regrade") == self.regrade:
                    skipped += 1
                else:
                    todo.append(h)
                    why = self.stale(state) if self.mode == "all" else None
                    if why and why[0] == "cases":
                        self.partial[h] = why[1].split(", ")
            elif self.stale(state):
                held.append(state)
            else:
                skipped += 1
        stems = {self.stem(h) for h in self.handins}
        held += [s for _, s in rescore.results_of(self.csv)
                 if self.stem(s["handin"]) not in stems and self.stale(s)]
        return todo, held, skipped

    def held_note(self, held: List[Dict]) -> Optional[str]:
        """What a batch says of the results that no longer stand and that it
        leaves as they are: which stamp changed, how many handins, and the
        time grading them again would take, from their last gradings."""
        if not held:
            return None
        whys: Dict[str, List[str]] = {}
        for state in held:
            kind, detail = self.stale(state)
            whys.setdefault(kind, []).append(detail)
        said = []
        if "kit" in whys:
            said.append(f"{len(whys['kit'])} were graded by another kit (its stamp "
                        f"{', '.join(sorted(set(whys['kit'])))} then, {self.version} now: the kit's sources, its build "
                        "or the judge's values changed, by a fix to the kit, make hidden-data or another MPI)")
        if "parts" in whys:
            parts = "; ".join(sorted(set(whys["parts"])))
            said.append(f"{len(whys['parts'])} were graded before the course added parts ({parts})")
        if "cases" in whys:
            parts = ", ".join(sorted(set(", ".join(whys["cases"]).split(", "))))
            said.append(f"{len(whys['cases'])} were graded before the cases of {parts} changed (a case added or "
                        f"changed, make hidden-data, a part added): only those parts' cases run again")
        seconds = sum(float(s.get("seconds") or 0) for s in held)
        jobs = max(1, min(getattr(self.args, "jobs", 1) or 1, len(held)))
        return (f"grade: {len(held)} handin(s) of the gradebook have results that no longer stand: {'; '.join(said)}. "
                f"This run leaves their rows as they are. Grading them again would take about "
                f"{duration(seconds / jobs)} on {jobs} job(s) (their last gradings took {duration(seconds)} in all): "
                f"{resume_command('all')}")

    def regrade_path(self) -> str:
        return os.path.join(self.state_dir, "regrade.json")

    def pending_regrade(self) -> Optional[Dict]:
        """The regrade an earlier --regrade run began and did not finish, or None."""
        try:
            with open(self.regrade_path()) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def regrade_begun(self) -> str:
        """The regrade this --regrade run belongs to: the unfinished one, if
        any (so that the same command goes on where it stopped), else a new one."""
        if self.unfinished and self.unfinished.get("id"):
            if self.unfinished.get("command") and self.unfinished["command"] != resume_command(self.mode):
                self.conflict = self.unfinished  # another regrade: never taken over, never forgotten
                return ""
            return str(self.unfinished["id"])
        begun = {"id": os.urandom(8).hex(), "began": time.strftime("%Y-%m-%d %H:%M:%S"),
                 "command": resume_command(self.mode)}
        write_json_atomically(self.regrade_path(), begun)
        return begun["id"]

    def regrade_finished(self) -> None:
        try:
            os.unlink(self.regrade_path())
        except OSError:
            pass

    def grade(self, handin: str, key: str) -> Optional[grades.Grade]:
        try:
            g = grading.grade_handin(handin, self.args.build, cancel=self.stop, private=self.private,
                                     time_budget=getattr(self.args, "time_budget", None),
                                     only_parts=self.partial.get(handin))
        except grading.Cancelled:
            return None
        except Exception as e:  # noqa: BLE001 (one handin's grader error never stops the batch)
            g = grades.Grade(os.path.basename(handin), status="grader error",
                              notes=[f"the grader itself failed ({type(e).__name__}: {e})"],
                              parts=grades.nothing_graded())
        if self.stop.is_set():
            return None  # abandoned mid-way: its result can't be trusted
        if handin in self.partial and g.status == "graded":
            g = rescore.merged(self.kept(handin), g, self.partial[handin])
        report = reports.human_report(g, self.args.show_hidden) + "\n" + reports.autolab_line(g) + "\n"
        write_atomically(os.path.join(self.out_dir, self.stem(handin) + ".report.txt"), report)
        state = {"handin": g.handin, "key": key, "kit": self.version, "sources": self.sources, "core": self.core,
                 "part_stamps": self.part_stamps, "scores": g.scores(),
                 "total": g.total, "status": g.status, "notes": g.notes, "seconds": round(g.seconds, 1),
                 **rescore.kept(g, handin)}
        if self.regrade:
            state["regrade"] = self.regrade
        write_json_atomically(self.state_path(handin), state)
        with self.lock:
            with open(os.path.join(self.state_dir, "graded.jsonl"), "a") as f:
                f.write(json.dumps({"handin": g.handin, "key": key, "kit": self.version}) + "\n")
            self.write_gradebook()
        print(f"  {g.handin}: {fmt(g.total)} / {table.TOTAL_POINTS} ({g.status}, {g.seconds:.1f} s)", flush=True)
        return g

    def states(self) -> List[Dict]:
        """Every result the gradebook keeps, whichever run graded it: a batch
        of one handin rewrites the gradebook with every row."""
        return [state for _, state in rescore.results_of(self.csv)]

    def write_gradebook(self) -> None:
        self.orphans = write_gradebook(self.csv, self.states())


def named_handins(pattern: str) -> List[str]:
    """The handins --batch names: a folder's *.tar, a glob's matches, or one file."""
    return sorted(glob.glob(os.path.join(pattern, "*.tar")) if os.path.isdir(pattern) else glob.glob(pattern))


def run_batch(args) -> int:
    handins = named_handins(args.batch)
    if not handins:
        print(f"grade: no handins match {args.batch}", file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
    b = Batch(args, handins)
    stems = [Batch.stem(h) for h in b.handins]
    if len(set(stems)) != len(stems):
        twice = sorted({s for s in stems if stems.count(s) > 1})
        print(f"grade: two handins have the same name ({', '.join(twice)}); rename one (the gradebook has one row "
              "per name)", file=sys.stderr)
        return 2
    resume = resume_command(b.mode)
    unfinished = b.unfinished
    if b.conflict:
        print(f"grade: another regrade, begun {b.conflict.get('began', 'earlier')}, did not finish; finish it first "
              f"with its own command: {b.conflict['command']}  (or remove {b.regrade_path()} to give it up); nothing "
              "was graded", file=sys.stderr)
        return 2
    if b.mode and unfinished:
        print(f"grade: going on with the regrade begun {unfinished.get('began', 'earlier')}", flush=True)
    elif unfinished:
        print(f"grade: a --regrade begun {unfinished.get('began', 'earlier')} did not finish; this run grades only "
              f"what is missing or changed. To finish the regrade: "
              f"{unfinished.get('command') or resume_command('named')}", flush=True)
    if b.gone:
        print(f"grade: {len(b.gone)} result(s) of the gradebook can't be graded again, their handins being no longer "
              f"where they were graded from: {', '.join(b.gone)}; their rows stay as they are", flush=True)
    todo, skipped = list(b.handins), 0
    note = rescore.scale_note(args.csv, b.states())
    if note:
        print(note, flush=True)
    graded: List[str] = []
    held_note = None

    # Ctrl-C and a plain kill stop the batch cleanly, even when it was started
    # with SIGINT ignored (a background job of a script inherits that).
    def stop_batch(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
    signal.signal(signal.SIGINT, stop_batch)
    signal.signal(signal.SIGTERM, stop_batch)
    futures: Dict = {}
    try:
        keys = content_keys(b.handins, args.jobs)
        todo, held, skipped = b.plan(keys)
        held_note = b.held_note(held)
        if held_note:
            print(held_note, flush=True)
        if skipped:
            print(f"grade: {skipped} handin(s) already graded with the same content and kit"
                  f"{' in this regrade' if b.mode else ''}; grading the other {len(todo)}"
                  f"{'' if b.mode else ' (--regrade grades them again)'}", flush=True)
        futures = {pool.submit(b.grade, h, keys[h]): h for h in todo}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            graded += [futures[f] for f in finished if f.result() is not None]
    except KeyboardInterrupt:
        b.stop.set()
        print("\ngrade: stopping: abandoning the handins in progress ...", flush=True)
        pool.shutdown(wait=False, cancel_futures=True)
        # The jobs end now, and again until every worker has seen the stop: a
        # worker between two commands may start one more first. Nothing a
        # job does can hold the batch longer than STOP_SECONDS.
        deadline = time.monotonic() + STOP_SECONDS
        while any(not f.done() for f in futures) and time.monotonic() < deadline:
            staging.end_all_sandboxes()
            wait([f for f in futures if not f.done()], timeout=0.2)
        staging.end_all_sandboxes()
        stuck = [futures[f] for f in futures if not f.done()]
        graded += [futures[f] for f in futures if f.done() and not f.cancelled() and f.exception() is None
                   and f.result() is not None and futures[f] not in graded]
        missing = [os.path.basename(h) for h in todo if h not in graded]
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        b.write_gradebook()
        print(f"grade: stopped. Graded now: {len(graded)}; graded before: {skipped}; not graded: {len(missing)}"
              + (f" ({', '.join(missing)})" if missing else "") + f". Gradebook {args.csv}; "
              f"the same command grades the rest{', going on with the regrade' if b.mode else ''}: {resume}",
              flush=True)
        if stuck:  # a worker the stop could not reach: its threads would hold the exit
            print(f"grade: {len(stuck)} worker(s) did not stop within {STOP_SECONDS} s; exiting without them (their "
                  f"handins are graded by the same command: {resume})", flush=True)
            os._exit(130)
        return 130
    pool.shutdown(wait=True)
    b.write_gradebook()
    if b.mode:
        b.regrade_finished()
    states = b.states()
    errors = [s["handin"] for s in states if s["status"] == "grader error"]
    print(f"grade: {len(graded)} handins graded now, {skipped} before; gradebook {args.csv} ({len(states)} "
          f"row(s)), reports beside it")
    if held_note and graded:  # said at the start; said again where the end of a long run shows it
        print(f"grade: results of another kit or fewer parts keep their rows (said above): {resume_command('all')}")
    if b.orphans:
        print(f"grade: {len(b.orphans)} row(s) of {args.csv} have no result in {b.state_dir} and stay as they were: "
              f"{', '.join(b.orphans)} (graded again, they get one)")
    note = rescore.scale_note(args.csv, states)
    if note and graded:  # said at the start already when nothing was graded since
        print(note)
    if errors:
        print(f"grade: {len(errors)} grader error(s): {', '.join(errors)} (grader/grade --errors {args.csv})")
    if args.canvas:
        return write_canvas(states, args.roster, args.canvas, args.assignment)
    return 0


def resume_command(mode: str) -> str:
    """This batch's command line for a person to run again, with --regrade
    as `mode` says ("", "named", "all"): a --regrade run goes on where an
    unfinished one stopped."""
    argv: List[str] = []
    rest = iter(sys.argv[1:])
    for a in rest:
        if a == "--regrade=all":
            continue
        if a == "--regrade":
            following = next(rest, None)
            if following is not None and following != "all":
                argv.append(following)
            continue
        argv.append(a)
    return shlex.join([sys.argv[0]] + argv + {"": [], "named": ["--regrade"], "all": ["--regrade", "all"]}[mode])

