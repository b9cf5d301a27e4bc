"""The course: one file of data, course.toml at the kit's top, holding the
course's choices (which extension parts it grades, points and time limits
other than the parts table's, what students see of failing cases, where
they submit, each platform's time budget, the MPI) and what this copy of
the kit holds. Its keys are declared once, in kit/course_schema.py; this
module reads and checks a file by them, and writes one (course.toml's
comments, the cuts' copies). The parts table itself stays in kit/part_table.py,
which applies the course when it loads.

  python3 -m kit course          checks the course file and prints the course as it takes effect

Environment variables override a choice for one command, and are read
here, once, when the kit loads: KIT_COURSE (another course file),
KIT_EXTENSIONS, KIT_MPI, KIT_TIME_BUDGET (docs/course-staff.md lists every
variable the kit reads).
"""
import hashlib
import json
import os
import textwrap
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kit import course_schema as schema
# The names the rest of the kit takes from here (grader/cli.py, grader/policy.py).
from kit.course_schema import (BUDGET_RANGE, HIDDEN_LEVELS, HOLDINGS, LEVELS, MPIS, PER_PART,  # noqa: F401
                               PLATFORMS, STDOUT_LEVELS, SUBMIT_TEXTS, THE_TABLE_S, keys_in, may_be)
from kit.paths import KIT_DIR
from kit.toml_subset import TomlError, dumps_value, loads

COURSE_FILE = os.path.join(KIT_DIR, "course.toml")
WIDTH = 79  # course.toml's comments


class CourseError(ValueError):
    """Every problem of a course file, one per line."""


@dataclass(frozen=True)
class Course:
    """A course file's values (kit/course_schema.py's KEYS say each one's key
    and default), with the environment's overrides applied."""
    extensions: Tuple[str, ...]      # the extension parts graded
    mpi: str
    platform: str
    points: Dict[str, int]           # part key -> points, where not the table's
    public: str
    public_after_due_date: bool
    hidden: str
    gradescope_stdout: str
    budgets: Dict[str, float]        # platform -> seconds of one grading
    time_limits: Dict[str, float]    # part key -> seconds of each of its cases, where not the table's
    submit: str                      # "": the platform's text
    holds: Tuple[str, ...]
    held: Tuple[str, ...]            # extension parts this copy holds
    file_mpi: str = "openmpi"        # the file's MPI, before KIT_MPI (make's default)
    budget_override: Optional[float] = None               # KIT_TIME_BUDGET
    path: str = COURSE_FILE

    def budget(self, platform: Optional[str]) -> Optional[float]:
        """The seconds a grading may take: KIT_TIME_BUDGET, else the platform's, else none (a laptop)."""
        if self.budget_override is not None:
            return self.budget_override
        return self.budgets.get(platform) if platform else None

    def submit_text(self) -> str:
        """Where and how students submit: the course's own words, else its platform's."""
        return self.submit or SUBMIT_TEXTS[self.platform]


def _course(values: Dict[str, Any], path: str) -> Course:
    fields: Dict[str, Any] = {}
    for key in schema.KEYS:
        name, _, item = key.field.partition(":")
        if item:
            fields.setdefault(name, {})[item] = values[key.where]
        else:
            fields[name] = values[key.where]
    return Course(**fields, file_mpi=fields["mpi"], path=path)


def file_values(course: Course) -> Dict[str, Any]:
    """{key.where: value} of a course file that makes `course`: its MPI the
    file's, its other values as they take effect (a cut grades the parts
    KIT_EXTENSIONS chose)."""
    out = {}
    for key in schema.KEYS:
        name, _, item = key.field.partition(":")
        value = course.file_mpi if name == "mpi" else getattr(course, name)
        out[key.where] = value[item] if item else value
    return out


def read(path: str, part_keys: Sequence[str], extension_keys: Sequence[str]) -> Course:
    """The course as the file at `path` says it, every problem refused at once."""
    try:
        with open(path, encoding="utf-8") as f:
            data = loads(f.read())
    except OSError as e:
        raise CourseError(f"{path}: cannot read the course file ({e.strerror}); the kit's is course.toml at its "
                          "top (docs/course-staff.md)")
    except TomlError as e:
        raise CourseError(f"{path}: {e}")
    values, problems = schema.check(data, part_keys, extension_keys)
    if problems:
        raise CourseError("\n".join(f"{path}: {p}" for p in problems))
    return _course(values, path)


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
    course = read(os.path.abspath(environ.get("KIT_COURSE") or COURSE_FILE), part_keys, extension_keys)
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


# A cut's course file opens by saying what cut it (course.toml's: the schema's SECTIONS[""]).
CUT_OPENING = "The course: its choices, as `make handout` or `make autograder` cut this copy."
SCHEMA_NOTE = ("`python3 -m kit course` checks this file and prints the course as it takes effect; its "
               "comments are kit/course_schema.py's, written again, every value kept, by `python3 -m kit "
               "course --write-template`.")


def _comment(text: str, indent: str = "") -> List[str]:
    return textwrap.wrap(text, WIDTH, initial_indent="# " + indent, subsequent_indent="# " + indent,
                         break_on_hyphens=False)


def default_text(key) -> str:
    """A key's default as the comments and the docs say it."""
    if key.default == THE_TABLE_S or key.name == PER_PART:
        return "the table's" if key.name == PER_PART else key.default
    return dumps_value(list(key.default) if isinstance(key.default, tuple) else key.default)


def template(values: Dict[str, Any], opening: str = "") -> str:
    """A course file holding `values` ({key.where: value}, as file_values
    gives them), each key with its comment from the schema."""
    lines = _comment(opening or schema.SECTIONS[""]) + _comment(SCHEMA_NOTE)
    for section, doc in schema.SECTIONS.items():
        if section:
            lines += [""] + _comment(doc)
        if section == "handout":
            lines += _comment("The platforms' own texts of submit:") + \
                [line for p, t in SUBMIT_TEXTS.items() for line in _comment(f"{p}: {t}", "  ")]
        for key in keys_in(section):
            if key.name == PER_PART:
                lines += _comment(f"One line per part key: {key.doc}. Each may be {may_be(key)}, such as") + \
                    [f"#   {key.example}", f"[{section}]"]
                lines += [f"{part} = {dumps_value(v)}" for part, v in values[key.where].items()]
                continue
            if key is keys_in(section)[0] and section:
                lines.append(f"[{section}]")
            value = values[key.where]
            lines += _comment(f"{key.name}: {key.doc}. It may be {may_be(key)}; default {default_text(key)}.")
            lines.append(f"{key.name} = {dumps_value(list(value) if isinstance(value, tuple) else value)}")
    return "\n".join(lines) + "\n"


def text(course: Course, points: Dict[str, int], holds: Sequence[str], held: Sequence[str], mpi: str) -> str:
    """A course file holding `course`'s choices (the cuts' own): points other
    than the table's, what the copy holds (the extension parts `held`), its
    default MPI; no time limit of a part the copy leaves out."""
    values = file_values(course)
    values.update({"points.*": dict(points), "copy.holds": tuple(holds), "copy.extension_parts": tuple(held),
                   "mpi": mpi, "time_limit.*": {k: s for k, s in course.time_limits.items()
                                                if k not in course.held or k in held}})
    return template(values, CUT_OPENING)
