"""The course file's schema, declared once: every key of course.toml, its
[table], its type, its default, what it may be and a line of what it says
(KEYS). kit/course.py reads and checks a file by it and writes a course's
file from it (course.toml's comments, the cuts' copies); `python3 -m kit
course` prints the course by it and writes docs/course-staff.md's table
from it. A key added here appears everywhere; nowhere else lists keys.
"""
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

MPIS = ("openmpi", "mpich")
HOLDINGS = ("reference", "grader", "staff")
LEVELS = ("messages", "names", "counts", "nothing")   # grader/policy.py says what each shows
HIDDEN_LEVELS = ("counts", "nothing")                 # a hidden case's name and messages never reach students
STDOUT_LEVELS = ("visible", "hidden", "after_due_date", "after_published")
PLATFORMS = ("autolab", "gradescope", "prairielearn")  # those the grader has an entry (and a time budget) for
COURSE_PLATFORMS = PLATFORMS + ("none",)
BUDGET_RANGE = (10, 3600)
POINTS_RANGE = (1, 1000)
LIMIT_RANGE = (1, 600)
SUBMIT_LENGTH = 400

PER_PART = "*"            # a key's name that stands for one line per part key
HELD, TABLE = "held", "table"  # the extension parts a list of parts may name: the copy's, or the table's
THE_TABLE_S = "the table's extension parts"  # a default the parts table gives (copy.extension_parts)

# Where and how students submit, by the course's platform, unless
# [handout] submit says otherwise: the handout's Submitting section.
SUBMIT_TEXTS = {
    "autolab": "Upload `handin.tar` to the assignment on Autolab.",
    "gradescope": "Upload `handin.tar` to the assignment on Gradescope, or the loose files it holds: "
                  "your `student/*.cpp` files and `feedback.txt`.",
    "prairielearn": "Upload your loose files to the assignment's question on PrairieLearn, not `handin.tar`: "
                    "your `student/*.cpp` files (those listed above) and `feedback.txt`.",
    "none": "Hand in `handin.tar` as your course tells you.",
}


@dataclass(frozen=True)
class Key:
    section: str   # its [table]; "" at the file's top
    name: str      # PER_PART: a line per part key
    kind: str      # choice, choices, parts, bool, points, seconds, text: what may_be() says
    default: Any
    allowed: Tuple = ()  # a choice's values, a number's (low, high), or HELD / TABLE for parts
    field: str = ""      # the Course attribute it sets; "budgets:autolab" sets an item of one
    doc: str = ""        # what it says, one line
    example: str = ""    # a per-part key's line, for the comments

    @property
    def where(self) -> str:
        return f"{self.section}.{self.name}" if self.section else self.name


# The file's [tables] in order, each with what it is for (course.toml's comments).
SECTIONS: Dict[str, str] = {
    "": "The course: what this copy of the kit grades, and how. Course staff edit this file, and nothing else, "
        "to choose; the parts table itself (cases, rank counts, files) is kit/part_table.py. An environment variable "
        "overrides a choice for one command (docs/course-staff.md lists them).",
    "points": "A part's points, where the course gives other points than the parts table (a gradebook "
              "graded under other points is re-scored in seconds: grader/grade --rescore out/gradebook.csv).",
    "visibility": "What students see of the cases they fail, in the reports, Autolab's output and "
                  "Gradescope's and PrairieLearn's results (grader/policy.py); the handout says it too.",
    "time_budget": "The seconds each platform gives one grading (grader/grade --platform NAME): the test jobs "
                   "end in time for the reports. Keep Autolab's job timeout above its figure; PrairieLearn's "
                   "question timeout is its figure plus 3 s (make autograder writes it); Gradescope's own "
                   "limit is 10 minutes. KIT_TIME_BUDGET or grader/grade --time-budget overrides it once.",
    "time_limit": "A part's time limit, where the course gives another than the parts table: the seconds "
                  "each of its cases may take, a floor the kit's calibration may only raise on a slow "
                  "machine (python3 -m kit.calibration prints every limit).",
    "handout": "What the handout (make handout) says in the course's voice.",
    "copy": "What this copy of the kit holds beyond a student's handout; no choice: make handout and make "
            "autograder write it into the copies they cut.",
}

KEYS: Tuple[Key, ...] = (
    Key("", "extensions", "parts", (), (HELD,), "extensions",
        "the extension parts graded; [] grades Parts 1-9 alone (KIT_EXTENSIONS=1, 0 or keys overrides it)"),
    Key("", "mpi", "choice", "openmpi", MPIS, "mpi", "the MPI a build uses unless make's MPI=... says otherwise"),
    Key("", "platform", "choice", "none", COURSE_PLATFORMS, "platform",
        "where students submit: the handout's Submitting section says how, unless [handout] submit does"),
    Key("points", PER_PART, "points", {}, POINTS_RANGE, "points",
        "a part's points (`python3 -m kit parts` lists the part keys)", "part2 = 15"),
    Key("visibility", "public", "choice", "messages", LEVELS, "public",
        "what a failing public case shows: its name and failure messages, its name, its part's count, nothing"),
    Key("visibility", "public_after_due_date", "bool", False, (), "public_after_due_date",
        "Gradescope also gets a public case's full messages in an entry shown after the due date"),
    Key("visibility", "hidden", "choice", "counts", HIDDEN_LEVELS, "hidden",
        "what failing hidden cases show: their part's count or nothing (never a name or a value)"),
    Key("visibility", "gradescope_stdout", "choice", "visible", STDOUT_LEVELS, "gradescope_stdout",
        "Gradescope's setting for the autograder's whole output"),
    *(Key("time_budget", p, "seconds", s, BUDGET_RANGE, f"budgets:{p}", f"the seconds {n} gives one grading{more}")
      for p, s, n, more in (("autolab", 55, "Autolab", " (its job timeout must be more)"),
                            ("gradescope", 540, "Gradescope", ""),
                            ("prairielearn", 87, "PrairieLearn", " (its question's timeout is 3 s more)"))),
    Key("time_limit", PER_PART, "seconds", {}, LIMIT_RANGE, "time_limits",
        "the seconds each case of a part may take (the table's: `python3 -m kit course` prints them)",
        "part9 = 150"),
    Key("handout", "submit", "text", "", (), "submit",
        "where and how students submit, for the handout; \"\" says the platform's own text"),
    Key("copy", "holds", "choices", HOLDINGS, HOLDINGS, "holds",
        "what the copy holds: the solution (reference), the hidden cases (grader), the self-test (staff)"),
    Key("copy", "extension_parts", "parts", THE_TABLE_S, (TABLE,), "held", "the extension parts whose files it has"),
)

PART_LISTS = {HELD: "this copy holds", TABLE: "of the parts table"}


def keys_in(section: str) -> List[Key]:
    return [k for k in KEYS if k.section == section]


def may_be(key: Key) -> str:
    """What a value of `key` may be, in the words of its error message."""
    lo_hi = key.allowed
    return {"choice": lambda: "one of " + ", ".join(map(repr, key.allowed)),
            "choices": lambda: "a list of " + ", ".join(map(repr, key.allowed)),
            "parts": lambda: "a list of extension parts' keys, such as [\"part13_ddp\"]",
            "bool": lambda: "true or false",
            "points": lambda: f"a whole number of points from {lo_hi[0]} to {lo_hi[1]}",
            "seconds": lambda: f"a number of seconds from {lo_hi[0]} to {lo_hi[1]}",
            "text": lambda: f"a string in double quotes, at most {SUBMIT_LENGTH} characters"}[key.kind]()


def _fits(key: Key, value) -> bool:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key.kind == "choice":
        return value in key.allowed
    if key.kind in ("choices", "parts"):
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value) and \
            (key.kind == "parts" or all(v in key.allowed for v in value))
    if key.kind == "bool":
        return isinstance(value, bool)
    if key.kind in ("points", "seconds"):
        whole = isinstance(value, int) or key.kind == "seconds"
        return number and whole and key.allowed[0] <= value <= key.allowed[1]
    return isinstance(value, str) and len(value) <= SUBMIT_LENGTH and "\n" not in value


def _known(where: str, table, allowed: Sequence[str], problems: List[str]) -> Dict:
    """The entries of a [table] whose keys are `allowed`; a problem for each other."""
    if not isinstance(table, dict):
        problems.append(f"{where} must be a table ([{where}]), got {table!r}")
        return {}
    for key in table:
        if key not in allowed:
            problems.append(f"{where + '.' if where else ''}{key} is no key of the course file here; the keys "
                            f"are: {', '.join(allowed)}")
    return {k: v for k, v in table.items() if k in allowed}


def check(data: Dict, part_keys: Sequence[str], extension_keys: Sequence[str]) -> Tuple[Dict[str, Any], List[str]]:
    """{key.where: its value} for every key of the schema (a per-part key's:
    {part: value}), from a parsed file, the default where it says nothing or
    is wrong; and every problem, each naming its key and what it may be."""
    problems: List[str] = []
    top = _known("", data, [k.name for k in keys_in("")] + [s for s in SECTIONS if s], problems)
    tables = {"": top}
    for section in (s for s in SECTIONS if s):
        per_part = keys_in(section)[0].name == PER_PART
        if per_part:
            problems += split_parts(section, top.get(section, {}), part_keys)
        tables[section] = _known(section, top.get(section, {}),
                                 list(part_keys) if per_part else [k.name for k in keys_in(section)], problems)
    parts = {TABLE: list(extension_keys), HELD: list(extension_keys)}
    values: Dict[str, Any] = {}
    # [copy] first: the extension parts it holds are those `extensions` may name.
    for key in sorted(KEYS, key=lambda k: k.section != "copy"):
        if key.name == PER_PART:
            values[key.where] = _per_part(key, tables[key.section], problems)
            continue
        default = list(extension_keys) if key.default == THE_TABLE_S else key.default
        value = tables[key.section].get(key.name, default)
        if not _fits(key, value):
            problems.append(f"{key.where} must be {may_be(key)}, got {value!r}")
            value = default
        if key.kind == "parts":
            own = parts[key.allowed[0]]
            for name in value:
                if name not in own:
                    problems.append(f"{key.where}: {name!r} is no extension part {PART_LISTS[key.allowed[0]]}; "
                                    f"they are: {', '.join(map(repr, own)) or 'none'}")
            value = tuple(k for k in extension_keys if k in value)
            if key.allowed == (TABLE,):
                parts[HELD] = list(value)
        elif key.kind == "choices":
            value = tuple(h for h in key.allowed if h in value)
        values[key.where] = value
    return values, problems


def _per_part(key: Key, table: Dict, problems: List[str]) -> Dict[str, Any]:
    out = {}
    for part, value in table.items():
        if _fits(key, value):
            out[part] = value
        else:
            problems.append(f"{key.section}.{part} must be {may_be(key)}, got {value!r}")
    return out


def split_parts(section: str, table, part_keys: Sequence[str]) -> List[str]:
    """A problem for each key of a per-part table that stands for a part
    split in parts of its own (part8: part8_forward and part8_backward)."""
    found = []
    for key in table if isinstance(table, dict) else ():
        halves = [k for k in part_keys if k.startswith(key + "_")]
        if key not in part_keys and halves:
            found.append(f"{section}.{key}: {key} has parts of its own; set {' and '.join(halves)}")
    return found
