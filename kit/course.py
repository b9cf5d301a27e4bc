"""The course: one file of data, course.toml at the kit's top, holding the
course's choices (which extension parts it grades, points other than the
parts table's, what students see of failing cases, each platform's time
budget, the MPI) and what this copy of the kit holds. The parts table
itself stays in kit/parts.py, which applies the course when it loads.

  python3 -m kit course          checks the course file and prints the course as it takes effect

Environment variables override a choice for one command, and are read
here, once, when the kit loads: KIT_COURSE (another course file),
KIT_EXTENSIONS, KIT_MPI, KIT_TIME_BUDGET (docs/course-staff.md lists every
variable the kit reads).
"""
import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Tuple

from kit.paths import KIT_DIR
from kit.toml_subset import TomlError, dumps_value, loads

COURSE_FILE = os.path.join(KIT_DIR, "course.toml")
MPIS = ("openmpi", "mpich")
HOLDINGS = ("reference", "grader", "staff")
LEVELS = ("messages", "names", "counts", "nothing")   # grader/policy.py says what each shows
HIDDEN_LEVELS = ("counts", "nothing")                 # a hidden case's name and messages never reach students
STDOUT_LEVELS = ("visible", "hidden", "after_due_date", "after_published")
PLATFORMS = ("autolab", "gradescope", "prairielearn")
BUDGET_RANGE = (10, 3600)
POINTS_RANGE = (1, 1000)


class CourseError(ValueError):
    """Every problem of a course file, one per line."""


@dataclass(frozen=True)
class Course:
    extensions: Tuple[str, ...] = ()                     # the extension parts graded
    mpi: str = "openmpi"
    points: Dict[str, int] = field(default_factory=dict)  # part key -> points, where not the table's
    public: str = "messages"
    public_after_due_date: bool = False
    hidden: str = "counts"
    gradescope_stdout: str = "visible"
    budgets: Dict[str, float] = field(default_factory=lambda: {"autolab": 55, "gradescope": 540, "prairielearn": 27})
    holds: Tuple[str, ...] = HOLDINGS
    held: Tuple[str, ...] = ("part11_ring", "part12_pipeline", "part13_ddp")  # extension parts this copy holds
    file_mpi: str = "openmpi"        # the file's MPI, before KIT_MPI (make's default)
    budget_override: Optional[float] = None               # KIT_TIME_BUDGET
    path: str = COURSE_FILE

    def budget(self, platform: Optional[str]) -> Optional[float]:
        """The seconds a grading may take: KIT_TIME_BUDGET, else the platform's, else none (a laptop)."""
        if self.budget_override is not None:
            return self.budget_override
        return self.budgets.get(platform) if platform else None


def _problems(data: Dict, part_keys: Sequence[str], extension_keys: Sequence[str]) -> Tuple[Dict, List[str]]:
    """The course's values from a parsed file, and every problem found, each
    naming its key and what it may be."""
    out: Dict = {}
    problems: List[str] = []

    def one_of(where: str, value, allowed: Sequence[str]) -> bool:
        if value not in allowed:
            problems.append(f"{where} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
            return False
        return True

    def keys_of(where: str, table, allowed: Sequence[str]) -> Dict:
        if not isinstance(table, dict):
            problems.append(f"{where} must be a table ([{where}]), got {table!r}")
            return {}
        for key in table:
            if key not in allowed:
                problems.append(f"{where + '.' if where else ''}{key} is no key of the course file here; the keys "
                                f"are: {', '.join(allowed)}")
        return {k: v for k, v in table.items() if k in allowed}

    top = keys_of("", data, ("extensions", "mpi", "points", "visibility", "time_budget", "copy"))
    copy = keys_of("copy", top.get("copy", {}), ("holds", "extension_parts"))
    held = copy.get("extension_parts", list(Course.held))
    if not isinstance(held, list) or not all(isinstance(k, str) and k in extension_keys for k in held):
        problems.append(f"copy.extension_parts must be a list of the table's extension parts "
                        f"({', '.join(extension_keys)}), got {held!r}")
        held = []
    out["held"] = tuple(k for k in extension_keys if k in held)
    holds = copy.get("holds", list(HOLDINGS))
    if not isinstance(holds, list) or not all(h in HOLDINGS for h in holds):
        problems.append(f"copy.holds must be a list of {', '.join(map(repr, HOLDINGS))}, got {holds!r}")
        holds = []
    out["holds"] = tuple(h for h in HOLDINGS if h in holds)

    graded = top.get("extensions", [])
    if not isinstance(graded, list) or not all(isinstance(k, str) for k in graded):
        problems.append(f"extensions must be a list of extension parts' keys, such as [\"part13_ddp\"], got {graded!r}")
        graded = []
    for key in graded:
        if key not in out["held"]:
            problems.append(f"extensions: {key!r} is no extension part this copy holds; they are: "
                            f"{', '.join(map(repr, out['held'])) or 'none'}")
    out["extensions"] = tuple(k for k in out["held"] if k in graded)
    mpi = top.get("mpi", "openmpi")
    out["mpi"] = mpi if one_of("mpi", mpi, MPIS) else "openmpi"

    points = {}
    for key, value in keys_of("points", top.get("points", {}), list(part_keys)).items():
        if isinstance(value, bool) or not isinstance(value, int) or not POINTS_RANGE[0] <= value <= POINTS_RANGE[1]:
            problems.append(f"points.{key} must be a whole number of points from {POINTS_RANGE[0]} to "
                            f"{POINTS_RANGE[1]}, got {value!r}")
        else:
            points[key] = value
    for key in top.get("points", {}) if isinstance(top.get("points"), dict) else ():
        halves = [k for k in part_keys if k.startswith(key + "_")]
        if key not in part_keys and halves:
            problems.append(f"points.{key}: {key} has parts of its own; set {' and '.join(halves)}")
    out["points"] = points

    seen = keys_of("visibility", top.get("visibility", {}),
                   ("public", "public_after_due_date", "hidden", "gradescope_stdout"))
    for key, allowed in (("public", LEVELS), ("hidden", HIDDEN_LEVELS), ("gradescope_stdout", STDOUT_LEVELS)):
        if key in seen and one_of(f"visibility.{key}", seen[key], allowed):
            out[key] = seen[key]
    if "public_after_due_date" in seen:
        if isinstance(seen["public_after_due_date"], bool):
            out["public_after_due_date"] = seen["public_after_due_date"]
        else:
            problems.append(f"visibility.public_after_due_date must be true or false, got "
                            f"{seen['public_after_due_date']!r}")

    budgets = dict(Course().budgets)
    for platform, seconds in keys_of("time_budget", top.get("time_budget", {}), PLATFORMS).items():
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or \
                not BUDGET_RANGE[0] <= seconds <= BUDGET_RANGE[1]:
            problems.append(f"time_budget.{platform} must be a number of seconds from {BUDGET_RANGE[0]} to "
                            f"{BUDGET_RANGE[1]}, got {seconds!r}")
        else:
            budgets[platform] = seconds
    out["budgets"] = budgets
    return out, problems


def graded_by_switch(text: str, held: Sequence[str]) -> Tuple[str, ...]:
    """KIT_EXTENSIONS: 1 (every part held), 0 (none) or a list of keys; a
    number alone (part13) stands for its key."""
    if text in ("0", "1"):
        return tuple(held) if text == "1" else ()
    asked = {k.strip(): [h for h in held if h == k.strip() or h.startswith(k.strip() + "_")]
             for k in text.split(",") if k.strip()}
    unknown = [k for k, found in asked.items() if not found]
    if unknown:
        raise CourseError(f"KIT_EXTENSIONS must be 1, 0 or a list of extension parts this copy holds "
                          f"({', '.join(held) or 'none'}), got {', '.join(unknown)}")
    return tuple(k for k in held if any(k in found for found in asked.values()))


def overridden(name: str) -> bool:
    """Whether the environment sets this course override (KIT_COURSE,
    KIT_EXTENSIONS, ...): `python3 -m kit course` says which choices it made."""
    return bool(os.environ.get(name, "").strip())


def load(part_keys: Sequence[str], extension_keys: Sequence[str], environ=None) -> Course:
    """The course as it takes effect: the course file (KIT_COURSE, or
    course.toml), then the environment's one-command overrides."""
    environ = os.environ if environ is None else environ
    path = os.path.abspath(environ.get("KIT_COURSE") or COURSE_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            data = loads(f.read())
    except OSError as e:
        raise CourseError(f"{path}: cannot read the course file ({e.strerror}); the kit's is course.toml at its "
                          "top (docs/course-staff.md)")
    except TomlError as e:
        raise CourseError(f"{path}: {e}")
    values, problems = _problems(data, part_keys, extension_keys)
    if problems:
        raise CourseError("\n".join(f"{path}: {p}" for p in problems))
    course = Course(**values, file_mpi=values["mpi"], path=path)
    switch = environ.get("KIT_EXTENSIONS", "").strip()
    if switch:
        course = replace(course, extensions=graded_by_switch(switch, course.held))
    mpi = environ.get("KIT_MPI")
    if mpi:
        if mpi not in MPIS:
            raise CourseError(f"KIT_MPI must be one of {', '.join(MPIS)}, got {mpi!r}")
        course = replace(course, mpi=mpi)
    budget = environ.get("KIT_TIME_BUDGET", "").strip()
    if budget:
        try:
            seconds = float(budget)
        except ValueError:
            seconds = -1.0
        if not BUDGET_RANGE[0] <= seconds <= BUDGET_RANGE[1]:
            raise CourseError(f"KIT_TIME_BUDGET must be a number of seconds from {BUDGET_RANGE[0]} to "
                              f"{BUDGET_RANGE[1]}, got {budget!r}")
        course = replace(course, budget_override=seconds)
    return course


def stamp(points: Dict[str, int], course: Course) -> str:
    """What a gradebook row's scale depends on: the graded parts with their
    points, and what students see. Two rows of one stamp add up the same."""
    scale = {"points": points, "visibility": [course.public, course.public_after_due_date, course.hidden]}
    return hashlib.sha256(json.dumps(scale, sort_keys=True).encode()).hexdigest()[:12]


def text(course: Course, points: Dict[str, int], holds: Sequence[str], held: Sequence[str], mpi: str) -> str:
    """A course file holding `course`'s choices (the cuts' own): points other
    than the table's, what the copy holds, its default MPI."""
    v = dumps_value
    lines = [
        "# The course: its choices, as `make handout` or `make autograder` cut this copy.",
        "# `python3 -m kit course` checks this file and prints the course as it takes effect.",
        f"extensions = {v(list(course.extensions))}",
        f"mpi = {v(mpi)}",
        "",
        "[points]",
        *[f"{k} = {n}" for k, n in points.items()],
        "",
        "[visibility]",
        f"public = {v(course.public)}",
        f"public_after_due_date = {v(course.public_after_due_date)}",
        f"hidden = {v(course.hidden)}",
        f"gradescope_stdout = {v(course.gradescope_stdout)}",
        "",
        "[time_budget]",
        *[f"{p} = {v(course.budgets[p])}" for p in PLATFORMS],
        "",
        "[copy]",
        f"holds = {v(list(holds))}",
        f"extension_parts = {v(list(held))}",
    ]
    return "\n".join(lines) + "\n"
