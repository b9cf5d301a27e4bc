"""The parts table as a course grades it: the table (kit/part_table.py) with
the course's choices applied (course.toml and the environment's overrides,
kit/course.py): which extension parts it grades and this copy holds, points
and time limits other than the table's, its MPI.

Importing this module reads no file: the course is loaded at its first use,
once per process, as one object (`current()`, a `Graded`). A command that
grades under another course makes its own (`Graded(course)`).

`make test-partN`, `make test`, CTest, the grader, the test binary and the
staff tools all read it:
  - CMake runs `python3 -m kit.parts_cli --cmake FILE --cpp FILE` when it
    configures: the part keys, the sources and programs of the parts this
    copy holds, the student files and the test sources for the build, and
    each run's rank count and per-case time limit for the test binary (a
    case runs on as many ranks as the run that selects it).
  - The Makefile reads `python3 -m kit.parts_cli --make`: the default MPI,
    what this copy holds and the make targets of the parts it builds
    (make/KEY.mk). Neither looks for files to find out.

  python3 -m kit parts            prints the table and the configuration (kit/parts_cli.py)
"""
from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

from kit import course as courses
# The table's names, which the rest of the kit imports from here with the
# course's view of it (kit/part_table.py, kit/part_types.py).
from kit.part_table import (COMPRESS, CORE_FILES, DDP, DECENTRAL, FUNC, KIT_CHECKS, KIT_TESTS, PIPELINE,  # noqa: F401
                            RING, SPLIT, TABLE, TABLE_POINTS, ZERO, ZERO12, test_file)
from kit.part_types import (CASE_SECONDS, JOB_SECONDS, Adds, Part, Run, hidden, is_hidden, matches,  # noqa: F401
                            under)


@dataclass(frozen=True)
class Configuration:
    """The configuration one command runs under: the course file's
    (course.toml, kit/course.py), with KIT_EXTENSIONS and KIT_MPI applied."""
    graded: Tuple[str, ...]  # the extension parts graded, in the table's order
    held: Tuple[str, ...]    # the extension parts this copy holds (built, whether graded or not)
    mpi: str
    holds: Tuple[str, ...]


class InvalidCourse(SystemExit):
    """The course file, or an override of it, is not valid: met at the
    course's first use, it ends the command with what to fix."""


def timed(p: Part, seconds) -> Part:
    """`p` with each of its cases given `seconds` (course.toml, [time_limit];
    None: the table's), a floor kit/calibration.py may only raise. A run's
    job keeps room for as many cases as at the table's limit."""
    if seconds is None:
        return p
    return replace(p, runs=tuple(replace(r, case_seconds=float(seconds),
                                         job_seconds=max(r.job_seconds, r.job_seconds * seconds / r.case_seconds))
                                 for r in p.runs))


class Graded:
    """The table as one course grades it."""

    def __init__(self, course: courses.Course):
        self.course = course
        # Every part of the table, at the course's points and time limits.
        self.all_parts: List[Part] = [timed(replace(p, points=course.points.get(p.key, p.points)),
                                            course.time_limits.get(p.key)) for p in TABLE]
        self.configuration = Configuration(course.extensions, course.held, course.mpi, course.holds)
        self.mpi = course.file_mpi  # the default MPI of make and CMake (KIT_MPI, make's MPI=..., chooses for one command)
        self.holds = course.holds
        # The graded parts: the assignment's, and the extension parts the course grades.
        self.parts: List[Part] = [p for p in self.all_parts if not p.extension or p.key in course.extensions]
        self.total_points = sum(p.points for p in self.parts)
        # The scale of a gradebook row graded under this course (grader/batches.py).
        self.stamp = courses.stamp({p.key: p.points for p in self.parts}, course)
        self.impl_files: Tuple[str, ...] = tuple(dict.fromkeys(list(CORE_FILES) +
                                                               [f for p in self.parts for f in p.files]))

    def built_parts(self) -> List[Part]:
        """The parts a build of this copy compiles, graded or not: the
        assignment's, and every extension part the course holds."""
        return [p for p in self.all_parts if not p.extension or p.key in self.configuration.held]

    def built_files(self) -> Tuple[str, ...]:
        """The student files a build of this tree compiles (the graded ones first)."""
        return tuple(dict.fromkeys(list(self.impl_files) + [f for p in self.built_parts() for f in p.files]))

    def all_runs(self) -> List[Run]:
        return [run for p in self.built_parts() for run in p.runs] + list(KIT_CHECKS.values())

    def extension_paths(self, keys) -> List[str]:
        """Every file of the tree that only the extension parts `keys` use."""
        return [f for p in self.all_parts if p.extension and p.key in keys for f in p.own_paths()]

    def find(self, keys: List[str]) -> List[Part]:
        """Parts by key, graded or not (`make test-part11` runs it ungraded too);
        'part8' stands for both of its halves."""
        chosen: List[Part] = []
        parts = self.built_parts()
        for key in keys:
            group = [p for p in parts if p.key == key or p.key.startswith(key + "_")]
            if not group:
                raise KeyError(f"unknown part '{key}'; the parts are: {', '.join(p.key for p in parts)}")
            chosen += [p for p in group if p not in chosen]
        return chosen

    def make_keys(self) -> List[str]:
        """What `make test-partN` accepts: every key, and the group of a split part."""
        keys: List[str] = []
        for p in self.built_parts():
            for k in (p.key.split("_")[0], p.key):
                if k not in keys:
                    keys.append(k)
        return keys


_current: Optional[Graded] = None


def current() -> Graded:
    """The course this process grades under (course.toml, KIT_COURSE and the
    other overrides), loaded at the first call."""
    global _current
    if _current is None:
        try:
            course = courses.load([p.key for p in TABLE], [p.key for p in TABLE if p.extension])
        except courses.CourseError as e:
            raise InvalidCourse(f"the course file is not valid (python3 -m kit course checks it):\n{e}")
        _current = Graded(course)
    return _current


# The current course's figures, by the names the kit reads them by
# (`table.PARTS`): each is current()'s, at its first use, never at import.
_FIGURES = {"ALL_PARTS": "all_parts", "PARTS": "parts", "TOTAL_POINTS": "total_points", "COURSE_STAMP": "stamp",
            "IMPL_FILES": "impl_files", "CONFIGURATION": "configuration", "MPI": "mpi", "HOLDS": "holds",
            "COURSE": "course"}


def __getattr__(name: str):
    if name in _FIGURES:
        return getattr(current(), _FIGURES[name])
    raise AttributeError(f"module 'kit.parts' has no attribute {name!r}")


def built_parts() -> List[Part]:
    return current().built_parts()


def built_files() -> Tuple[str, ...]:
    return current().built_files()


def all_runs() -> List[Run]:
    return current().all_runs()


def extension_paths(keys) -> List[str]:
    return current().extension_paths(keys)


def find(keys: List[str]) -> List[Part]:
    return current().find(keys)


def make_keys() -> List[str]:
    return current().make_keys()
