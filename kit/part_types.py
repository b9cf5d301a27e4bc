"""What a row of the parts table (kit/part_table.py) is made of: a part, its
runs of cases, and the files it adds to the kit; and how a part scores its
cases. kit/part_table.py holds the rows; nothing here knows a part.

Every part keeps its files under its key (Part 8's two halves under
"part8"): its tests in tests/KEY/, its hidden cases in grader/hidden/KEY/.
An extension part, and a part added by the recipe of
docs/course-staff.md, keeps its programs in programs/KEY/, its handout
texts in handout/parts/KEY*.md (KEY.md its section, KEY.SLOT.md the text it
adds where the handout has the slot SLOT, KEY.feedback.txt its questions in
feedback.txt), its make targets in make/KEY.mk and its lines of the link
check's allowlist in kit/allowlist/KEY.txt. Its row names each of them.
"""
import posixpath
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Dict, List, Optional, Tuple

# Time limits of a case's run, in seconds (kit/limits.py has the others).
CASE_SECONDS = 5.0            # one case, unless its run says otherwise: a deadlock is stopped after this
JOB_SECONDS = 60.0            # one run's share of a job's wall-clock budget


@dataclass(frozen=True)
class Run:
    filter: str                         # gtest filter of the cases: a suite, "Part3NaiveForward.*"
    ranks: int                          # the cases run on ranks 0..ranks-1 of the job
    case_seconds: float = CASE_SECONDS
    job_seconds: float = JOB_SECONDS
    hidden: bool = False                # the grader's cases (grader/hidden/), not shipped to students


@dataclass(frozen=True)
class Adds:
    """What an extension part adds to the kit besides its student files and
    public tests, so that a build holds its sources only where the
    configuration holds the part, and a cut leaves them out with it."""
    framework: Tuple[str, ...] = ()   # sources of the kit's library (framework/)
    served: Tuple[str, ...] = ()      # sources of the student's process of the driven mode (its KIT_SERVED functions)
    programs: Tuple[str, ...] = ()    # programs/KEY/<name>.cpp, built against each implementation as <name>
    unit_tests: Tuple[str, ...] = ()  # sources of the framework's unit tests (one process, no MPI)
    hidden: Tuple[str, ...] = ()      # its hidden cases (grader/hidden/KEY/)
    other: Tuple[str, ...] = ()       # its headers, test helpers and commands
    explore: str = ""                 # its panel of `make explore`: a module of kit/ with panel(build, impl, out)
    handout: Tuple[str, ...] = ()     # its handout texts (handout/parts/KEY*.md, KEY.feedback.txt)
    make: str = ""                    # its make targets (make/KEY.mk), included where the copy holds it
    allowlist: str = ""               # its lines of the link check's allowlist (kit/allowlist/KEY.txt)
    # Its commands, `python3 -m kit NAME`: (NAME, its module of kit/, what it
    # does), each module with main(argv) and named in `other` too.
    commands: Tuple[Tuple[str, str, str], ...] = ()
    # Its module of kit/ whose CPP_FACTS and CPP_TEXT kit/facts.py writes into
    # the build's kit_facts.h, as dtrain::facts::<the module's name> (named in `other` too).
    facts: str = ""

    def paths(self) -> Tuple[str, ...]:
        return self.framework + self.served + self.programs + self.unit_tests + self.hidden + self.other + self.handout + \
            tuple(p for p in (self.make, self.allowlist) if p)


@dataclass(frozen=True)
class Part:
    key: str
    title: str
    points: int
    runs: Tuple[Run, ...]
    handout: str                 # its section of handout/README.md
    files: Tuple[str, ...]       # the student files its cases use
    tests: Tuple[str, ...]       # its public test sources
    # Case globs that gate the part: if one of them fails, the part scores 0
    # (ZeRO's memory rule: a layer that keeps its full weight is not ZeRO-3).
    gates: Tuple[str, ...] = ()
    extension: bool = False      # graded only where the course says so (course.toml, extensions)
    adds: Adds = field(default_factory=Adds)
    functions: Tuple[str, ...] = ()  # what a student implements, as the handout's parts table names it
    about: str = ""              # an extension part: what its file is for, in the handout's list of files
    # Its rules are about traffic: the judge compares each case's, as the
    # ranks' MPI sides account it, with the reference's (kit/traffic.py),
    # and holds it to the part's own rules besides (kit/rules/NAME.py).
    traffic: bool = False
    rules: Tuple[str, ...] = ()
    # Its cases are graded by the driven harness (docs/driven-calls.md): its
    # student calls run in a process of their own, which the harness, in
    # another, drives; its jobs are then its own, apart from the others'.
    driven: bool = False

    def text(self, slot: str) -> Optional[str]:
        """Its handout text for the slot `slot` ("section": handout/parts/KEY.md)."""
        name = f"{self.key}.md" if slot == "section" else f"{self.key}.{slot}."
        return next((t for t in self.adds.handout if t.rsplit("/", 1)[-1].startswith(name)), None)

    def public_runs(self) -> Tuple[Run, ...]:
        return tuple(r for r in self.runs if not r.hidden)

    def owns(self, case: str) -> bool:
        return any(matches(run.filter, case) for run in self.runs)

    def score(self, results: Dict[str, bool]) -> float:
        """Points for case -> passed of this part's cases (others are ignored).
        A part's points are split evenly over its cases, but where hidden
        cases ran (the grader), the public cases count at most in the
        proportion of the hidden cases that pass: their inputs and values
        ship with the handout, so returning them earns nothing the hidden
        cases don't confirm. Correct code passes both, and loses nothing."""
        mine = {c: ok for c, ok in results.items() if self.owns(c)}
        public = [ok for c, ok in mine.items() if not is_hidden(c)]
        hidden = [ok for c, ok in mine.items() if is_hidden(c)]
        return self.score_counts(sum(public), len(public), sum(hidden), len(hidden), bool(self.gate_failed(mine)))

    def score_counts(self, public_passed: int, public: int, hidden_passed: int, hidden: int, gated: bool) -> float:
        """The same from the counts alone, which a gradebook keeps: a re-score
        (grader/rescore.py) runs no case."""
        if gated or not public + hidden:
            return 0.0
        if not hidden:
            return self.points * public_passed / public
        confirmed = hidden_passed / hidden
        return self.points * (public * min(public_passed / max(public, 1), confirmed) + hidden_passed) / \
            (public + hidden)

    def unconfirmed(self, results: Dict[str, bool]) -> bool:
        """Every public case passes and every hidden case fails: public answers
        returned without the code behind them, or code for the public shapes
        alone. The grader flags the part for staff."""
        mine = {c: ok for c, ok in results.items() if self.owns(c)}
        public = [ok for c, ok in mine.items() if not is_hidden(c)]
        hidden = [ok for c, ok in mine.items() if is_hidden(c)]
        return bool(public) and bool(hidden) and all(public) and not any(hidden)

    def gate_failed(self, results: Dict[str, bool]) -> List[str]:
        return [c for c, ok in results.items() if self.owns(c) and not ok
                and any(fnmatchcase(c, g) for g in self.gates)]

    def values_paths(self) -> Tuple[str, str]:
        """Where `make hidden-data` keeps the judge's values of its cases
        (kit/judge.py): the public cases' beside its tests, the hidden
        cases' beside its hidden cases. Part 8's halves share both."""
        return (posixpath.join(posixpath.dirname(self.tests[0]), "expected_values.txt"),
                posixpath.join(posixpath.dirname(self.adds.hidden[0]), "expected.txt"))

    def own_paths(self) -> List[str]:
        """Every file of the tree that only this extension part uses."""
        return [f"student/{f}" for f in self.files] + list(self.tests) + list(self.adds.paths()) + \
            list(self.values_paths())


def is_hidden(case: str) -> bool:
    """A hidden case's suite is named Hidden<...> (grader/hidden/)."""
    return case.startswith("Hidden")


def matches(gtest_filter: str, case: str) -> bool:
    """gtest's filter syntax: positive patterns, then '-' and negative ones."""
    positive, _, negative = gtest_filter.partition("-")
    hit = any(fnmatchcase(case, p) for p in (positive or "*").split(":") if p)
    return hit and not any(fnmatchcase(case, p) for p in negative.split(":") if p)


def hidden(run: Run, ranks: int) -> Run:
    """The hidden twin of a public run: suites named Hidden<...>."""
    return Run("Hidden" + run.filter, ranks, run.case_seconds, run.job_seconds, hidden=True)


def part(key, title, points, runs, hidden_ranks, files, tests, section, gates=(), adds=None, functions=(),
         extension=False, about="", traffic=False, rules=(), driven=False) -> Part:
    """A part whose hidden cases mirror its public runs, on `hidden_ranks` (one
    per run); an extension part is graded only where the course says so."""
    runs = tuple(runs)
    return Part(key, title, points, runs + tuple(hidden(r, n) for r, n in zip(runs, hidden_ranks)), section,
                tuple(files), tuple(tests), tuple(gates), extension, adds or Adds(), tuple(functions), about, traffic,
                tuple(rules), driven)


def under(folder: str, key: str, *names: str) -> Tuple[str, ...]:
    """Files of a part found by its key: FOLDER/KEY/NAME."""
    return tuple(f"{folder}/{key}/{n}" for n in names)


def laid_out(key: str, stem: str, header: str, programs: Tuple[str, ...] = (), also: Tuple[str, ...] = (),
             explore: str = "") -> Adds:
    """What an extension part adds when its files follow the layout by key
    (Parts 14 and 15): its public header framework/include/HEADER; under
    tests/KEY/, its served forms (STEM_served.cpp), calls (STEM_calls.h),
    forms (STEM_forms.h) and checks (STEM_checks.h); its hidden cases
    (grader/hidden/KEY/hidden_STEM.cpp); its known bugs
    (staff/part_mutants/KEY.py); each program's source
    (programs/KEY/NAME.cpp); its handout section and feedback slot; its make
    targets (make/KEY.mk) and allowlist (kit/allowlist/KEY.txt); and `also`,
    other files of its own (a rules module of kit/rules/, named by its key,
    its panel of `make explore`, named as `explore`)."""
    return Adds(served=under("tests", key, f"{stem}_served.cpp"),
                programs=under("programs", key, *(f"{name}.cpp" for name in programs)),
                hidden=under("grader/hidden", key, f"hidden_{stem}.cpp"),
                other=(f"framework/include/{header}",) +
                under("tests", key, f"{stem}_calls.h", f"{stem}_forms.h", f"{stem}_checks.h") +
                (f"staff/part_mutants/{key}.py",) + also,
                handout=texts(key, "feedback"), make=f"make/{key}.mk", allowlist=f"kit/allowlist/{key}.txt",
                explore=explore)


def texts(key: str, *slots: str) -> Tuple[str, ...]:
    """A part's handout texts: its section, handout/parts/KEY.md, and one per
    slot it fills (handout/parts/KEY.SLOT.md; "feedback": KEY.feedback.txt)."""
    return (f"handout/parts/{key}.md",) + tuple(
        f"handout/parts/{key}.{s}.{'txt' if s == 'feedback' else 'md'}" for s in slots)
