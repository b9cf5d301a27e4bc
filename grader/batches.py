"""Grading a whole course without losing anything (grader/grade --batch).

Beside the gradebook, a folder <gradebook>.results/ keeps one JSON file per
handin: its scores, its status, the hash of its files and the kit's version.
Each is written atomically the moment its handin is graded, and the
gradebook (sorted by handin) and the handin's report are rebuilt from them
the same way. So:
  - killing the grader at any moment, even with kill -9, loses at most the
    handins being graded; their sandbox processes die with it (sandbox.py);
  - running the same command again grades only what is missing, or what
    changed (another content, or another kit); --regrade grades everything;
  - the final gradebook depends only on the results, not on how many runs
    it took; graded.jsonl logs every grading that finished;
  - each row carries its maximum and stamps (the kit's, the course's), and
    a points or visibility change is re-scored from the results, running
    no handin (grader/rescore.py): a batch that finds rows of another
    course's scale says so, with the commands.
Ctrl-C (or SIGTERM) stops the batch: the handins in progress are abandoned
(their processes killed), and a summary says what was and wasn't graded.
"""
import csv
import glob
import hashlib
import io
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
from grader.gradebook import write_atomically, write_gradebook, write_json_atomically
from kit import parts as table
from kit.handin_reader import read_handin, unreadable_key
from kit.paths import KIT_DIR
from kit.report import fmt

# What the grade of a handin depends on besides the handin: these folders of
# the kit (their sources) and the build's recipe.
VERSIONED = ("framework", "tests", "kit", "grader", "student", "programs")
STOP_SECONDS = 20  # Ctrl-C: how long the batch waits for its workers to notice


def kit_version(build: str) -> str:
    digest = hashlib.sha256()
    for top in VERSIONED:
        for root, dirs, files in os.walk(os.path.join(KIT_DIR, top)):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "tests"))
            for name in sorted(files):
                if name.endswith((".py", ".h", ".cpp", ".txt", ".in")) or name == "grade":
                    path = os.path.join(root, name)
                    digest.update(os.path.relpath(path, KIT_DIR).encode() + b"\0")
                    with open(path, "rb") as f:
                        digest.update(f.read())
    with open(os.path.join(build, "impl_recipe.json"), "rb") as f:
        digest.update(f.read())
    # The parts graded decide which cases run; their points do not (a re-score).
    digest.update(",".join(p.key for p in table.PARTS).encode())
    return digest.hexdigest()[:16]


def content_key(path: str) -> str:
    """The hash of what grading reads from a handin (kit/handin_reader.py,
    in a limited child process): its accepted files by name and what it
    refused; a file that is no readable handin, by its bytes. Never raises:
    no handin stops a batch or its resumption."""
    try:
        return read_handin(path).key
    except Exception:  # noqa: BLE001 (the host's trouble starting the reader: the file's bytes still tell)
        return unreadable_key(path)


def content_keys(handins: List[str], workers: int) -> Dict[str, str]:
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return dict(zip(handins, pool.map(content_key, handins)))


class Batch:
    def __init__(self, args, handins: List[str]):
        self.args = args
        self.handins = handins
        self.csv = os.path.abspath(args.csv)
        self.out_dir = os.path.dirname(self.csv)
        self.state_dir = os.path.splitext(self.csv)[0] + ".results"
        os.makedirs(self.state_dir, exist_ok=True)
        self.version = kit_version(args.build)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.unfinished = self.pending_regrade()  # a regrade an earlier run began, or None
        self.regrade = self.regrade_begun() if args.regrade else ""
        # What no handin's code may see: the other handins and every grade.
        self.private = tuple(dict.fromkeys([os.path.dirname(os.path.abspath(h)) for h in handins]
                                           + [self.out_dir, self.state_dir]))

    @staticmethod
    def stem(handin: str) -> str:
        return os.path.splitext(os.path.basename(handin))[0]

    def state_path(self, handin: str) -> str:
        return os.path.join(self.state_dir, self.stem(handin) + ".json")

    def done(self, handin: str, key: str) -> bool:
        """Graded with this content by this kit (and, during a regrade, since it began)."""
        try:
            with open(self.state_path(handin)) as f:
                state = json.load(f)
            return state["key"] == key and state["kit"] == self.version and \
                (not self.regrade or state.get("regrade") == self.regrade)
        except (OSError, ValueError, KeyError):
            return False

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
            return str(self.unfinished["id"])
        begun = {"id": os.urandom(8).hex(), "began": time.strftime("%Y-%m-%d %H:%M:%S")}
        write_json_atomically(self.regrade_path(), begun)
        return begun["id"]

    def regrade_finished(self) -> None:
        try:
            os.unlink(self.regrade_path())
        except OSError:
            pass

    def grade(self, handin: str, key: str) -> Optional[grades.Grade]:
        try:
            g = grading.grade_handin(handin, self.args.build, cancel=self.stop, private=self.private)
        except grading.Cancelled:
            return None
        except Exception as e:  # noqa: BLE001 (one handin's grader error never stops the batch)
            g = grades.Grade(os.path.basename(handin), status="grader error",
                              notes=[f"the grader itself failed ({type(e).__name__}: {e})"],
                              parts=grades.nothing_graded())
        if self.stop.is_set():
            return None  # abandoned mid-way: its result can't be trusted
        report = reports.human_report(g, self.args.show_hidden) + "\n" + reports.autolab_line(g) + "\n"
        write_atomically(os.path.join(self.out_dir, self.stem(handin) + ".report.txt"), report)
        state = {"handin": g.handin, "key": key, "kit": self.version, "scores": g.scores(), "total": g.total,
                 "status": g.status, "notes": g.notes, "seconds": round(g.seconds, 1), **rescore.kept(g, handin)}
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
        found = []
        for handin in self.handins:
            try:
                with open(self.state_path(handin)) as f:
                    found.append(json.load(f))
            except (OSError, ValueError):
                continue
        return found

    def write_gradebook(self) -> None:
        write_gradebook(self.csv, self.states())


def run_batch(args) -> int:
    pattern = args.batch
    handins = sorted(glob.glob(os.path.join(pattern, "*.tar")) if os.path.isdir(pattern) else glob.glob(pattern))
    if not handins:
        print(f"grade: no handins match {pattern}", file=sys.stderr)
        return 2
    stems = [Batch.stem(h) for h in handins]
    if len(set(stems)) != len(stems):
        print("grade: two handins have the same name; rename one (the gradebook has one row per name)",
              file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
    b = Batch(args, handins)
    resume = resume_command(args.regrade)
    unfinished = b.unfinished
    if args.regrade and unfinished:
        print(f"grade: going on with the regrade begun {unfinished.get('began', 'earlier')}", flush=True)
    elif unfinished:
        print(f"grade: a --regrade begun {unfinished.get('began', 'earlier')} did not finish; this run grades only "
              f"what is missing or changed. To finish the regrade: {resume_command(True)}", flush=True)
    todo, skipped = list(handins), 0
    note = rescore.scale_note(args.csv, b.states())
    if note:
        print(note, flush=True)
    graded: List[str] = []

    # Ctrl-C and a plain kill stop the batch cleanly, even when it was started
    # with SIGINT ignored (a background job of a script inherits that).
    def stop_batch(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
    signal.signal(signal.SIGINT, stop_batch)
    signal.signal(signal.SIGTERM, stop_batch)
    futures: Dict = {}
    try:
        keys = content_keys(handins, args.jobs)
        todo = [h for h in handins if not b.done(h, keys[h])]
        skipped = len(handins) - len(todo)
        if skipped:
            print(f"grade: {skipped} handin(s) already graded with the same content and kit"
                  f"{' in this regrade' if args.regrade else ''}; grading the other {len(todo)}"
                  f"{'' if args.regrade else ' (--regrade grades all)'}", flush=True)
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
              f"the same command grades the rest{', going on with the regrade' if args.regrade else ''}: {resume}",
              flush=True)
        if stuck:  # a worker the stop could not reach: its threads would hold the exit
            print(f"grade: {len(stuck)} worker(s) did not stop within {STOP_SECONDS} s; exiting without them (their "
                  f"handins are graded by the same command: {resume})", flush=True)
            os._exit(130)
        return 130
    pool.shutdown(wait=True)
    b.write_gradebook()
    if args.regrade:
        b.regrade_finished()
    errors = [s["handin"] for s in b.states() if s["status"] == "grader error"]
    print(f"grade: {len(graded)} handins graded now, {skipped} before; gradebook {args.csv}, reports beside it")
    note = rescore.scale_note(args.csv, b.states())
    if note and graded:  # said at the start already when nothing was graded since
        print(note)
    if errors:
        print(f"grade: {len(errors)} grader error(s): {', '.join(errors)} (grader/grade --errors {args.csv})")
    if args.canvas:
        return write_canvas(b, args.roster, args.canvas, args.assignment)
    return 0


def resume_command(regrade: bool) -> str:
    """This batch's command line, with --regrade or without, for a person
    to run again: a --regrade run goes on where an unfinished one stopped."""
    argv = [a for a in sys.argv[1:] if a != "--regrade"] + (["--regrade"] if regrade else [])
    return shlex.join([sys.argv[0]] + argv)


# ---- Canvas ----

CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def write_canvas(b: Batch, roster_path: str, out: str, assignment: str) -> int:
    """A CSV that Canvas's gradebook import takes: the student columns of
    Canvas's own gradebook export (the roster), then one assignment column
    with the total. A handin is matched to a student by its name (the file's
    stem) against SIS Login ID, SIS User ID or ID, in that order; a handin
    that matches no student is listed (and written to OUT.unmatched.txt),
    never dropped silently."""
    try:
        with open(roster_path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except (OSError, csv.Error) as e:
        print(f"grade: cannot read the roster {roster_path}: {e}", file=sys.stderr)
        return 2
    if not rows or "Student" not in rows[0] or not any(c in rows[0] for c in CANVAS_IDENTITY[1:4]):
        print(f"grade: {roster_path} is not a Canvas gradebook export (it needs the columns Student and one of "
              "ID, SIS User ID, SIS Login ID)", file=sys.stderr)
        return 2
    students = [r for r in rows if r.get("Student", "").strip() and "Points Possible" not in r.get("Student", "")]
    index: Dict[str, Dict] = {}
    for column in ("ID", "SIS User ID", "SIS Login ID"):  # later columns win: login first
        for r in students:
            if r.get(column, "").strip():
                index[r[column].strip().lower()] = r
    text = io.StringIO()
    writer = csv.writer(text)
    present = [c for c in CANVAS_IDENTITY if c in rows[0]]
    writer.writerow(present + [assignment])
    unmatched: List[Tuple[str, str]] = []
    matched = set()
    for state in sorted(b.states(), key=lambda s: s["handin"]):
        stem = os.path.splitext(state["handin"])[0].lower()
        student = index.get(stem)
        if student is None:
            unmatched.append((state["handin"], fmt(state["total"])))
            continue
        matched.add(id(student))
        writer.writerow([student.get(c, "") for c in present] + [fmt(state["total"])])
    write_atomically(out, text.getvalue())
    no_handin = [s["Student"] for s in students if id(s) not in matched]
    print(f"grade: Canvas import {out}: {len(matched)} student(s); {len(no_handin)} on the roster without a handin")
    if unmatched:
        write_atomically(out + ".unmatched.txt", "".join(f"{h},{t}\n" for h, t in unmatched))
        print(f"grade: {len(unmatched)} handin(s) match no student of the roster, listed in {out}.unmatched.txt: "
              + ", ".join(h for h, _ in unmatched))
    return 0


def list_errors(gradebook: str) -> int:
    """Every grader error of a batch, with why (grader/grade --errors)."""
    state_dir = os.path.splitext(os.path.abspath(gradebook))[0] + ".results"
    try:
        with open(gradebook, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("status") == "grader error"]
    except OSError as e:
        print(f"grade: cannot read {gradebook}: {e}", file=sys.stderr)
        return 2
    for r in rows:
        print(r["handin"])
        try:
            with open(os.path.join(state_dir, os.path.splitext(r["handin"])[0] + ".json")) as f:
                for note in json.load(f).get("notes", []):
                    print(f"    {note.splitlines()[0]}")
        except (OSError, ValueError):
            print("    (no saved result beside the gradebook)")
    print(f"{len(rows)} grader error(s) in {gradebook}")
    return 0
