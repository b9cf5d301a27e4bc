"""The limits a handin can exceed, calibrated on the machine that grades.

A limit measured in seconds on one host turns a slower host into the
student's fault: a correct file whose compile takes 8 s of CPU here took 3 s
where the limits were first set. So each such limit is a multiple of what
the reference takes on this machine, with the table's figure as its floor:

  a file's compile (CPU)   COMPILE_MULTIPLE x the reference's file, at least COMPILE_CPU_FLOOR
  the files' compiles      HONEST_MULTIPLE x the reference's files in all, at least HONEST_FLOOR:
                           past it, a grading that runs out of time spent it on the compile
  a case (the watchdog)    CASE_MULTIPLE x the reference's slowest case of its run, at least
                           the run's own limit (kit/part_table.py); its job's limit in proportion

What the reference takes here is its figures where they were recorded
(kit/reference_figures.json, `make calibration-data`, staff, where the
reference is) times this machine's pace against that one's: the
CPU time of one probe, a compile of a stub file with the build's
precompiled header (the fewest of three: about 1.5 s of CPU), measured on
both. It runs once per machine: its figure is kept in the build
(calibration.json), under the machine's key (its processor and compiler),
so an image built on one machine and run on another measures again (in
every job, where each job starts from the image). CPU time is the measure: a busy
host or a container's CPU quota stretches wall time, not CPU time (the
watchdog counts a case's time in proportion to the CPU it could have had).

  python3 -m kit.calibration            this machine's pace and every limit, with the figures behind them
  python3 -m kit.calibration --platform prairielearn
                                        whether an honest grading fits that platform's budget here
                                        (prepare-image asks, when an image is built)
  make calibration-data                 (staff) time the reference on this machine into kit/reference_figures.json
                                        (staff/calibration_data.py)

KIT_CALIBRATION_SCALE=F (staff, kit/overrides.py) multiplies the pace:
the self-test grades as if the machine were F times slower.
"""
import argparse
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from kit import overrides
from kit import parts as table
from kit.paths import KIT_DIR, STUBS_DIR

# The multiples and floors (the one home of each; the report quotes them).
COMPILE_MULTIPLE = 4
COMPILE_CPU_FLOOR = 10.0
HONEST_MULTIPLE = 2
HONEST_FLOOR = 12.0
CASE_MULTIPLE = 20
# An honest grading must fit a platform's time budget this many times over
# to call the platform big enough (the estimate is the reference's, and a
# handin's own compile may take twice the reference's), with room besides
# for one hung case at the floor and the job started again after it: a
# student's endless loop is an ordinary mistake, and on a platform without
# that room it would cost cases of parts that never hung.
GRADING_MARGIN = 1.25
JOB_START_SECONDS = 2.0   # a job of 8 ranks started again, at one CPU, where the figures were recorded
# Each platform's CPUs at its defaults (the grading's wall time follows
# them): Autolab's Tango sets no CPU limit (the machine's), Gradescope 0.5,
# PrairieLearn 0.9 (graderDockerCpuQuota).
PLATFORM_CPUS = {"autolab": None, "gradescope": 0.5, "prairielearn": 0.9}

FIGURES_FILE = os.path.join(KIT_DIR, "kit", "reference_figures.json")
CACHE_NAME = "calibration.json"
# The probe: a stub that includes what the students' files include (Eigen
# through tensor.h), compiled with the build's precompiled header (0.5 s of
# CPU where the limits were last recorded; 3.5 s without it), or without it
# where the build has none: each kind of probe has its own figure.
PROBE_FILE = table.SPLIT


@dataclass
class Figures:
    """What the reference took where its figures were recorded: `pace` is the
    probe's CPU seconds there (by kind: "pch", "plain"), `compile` each
    file's CPU seconds (without the precompiled header), `cases` each run's
    slowest case in seconds at one CPU (wall time times the CPUs its ranks
    could use)."""
    pace: Dict[str, float]
    compile: Dict[str, float]
    cases: Dict[str, float]
    where: str = ""
    # A warm grading of the reference (its objects cached): the CPU seconds
    # of all its processes, and how many CPUs they kept busy on average.
    grading_cpu: float = 0.0
    grading_parallel: float = 1.0
    compile_pch: Dict[str, float] = field(default_factory=dict)  # each file's, with the precompiled header

    @staticmethod
    def load(path: str = FIGURES_FILE) -> "Figures":
        with open(path) as f:
            data = json.load(f)
        return Figures({k: float(v) for k, v in data["pace"].items()},
                       {k: float(v) for k, v in data["compile"].items()},
                       {k: float(v) for k, v in data["cases"].items()}, str(data.get("where", "")),
                       float(data.get("grading", {}).get("cpu", 0.0)), float(data.get("grading", {}).get("parallel", 1.0)),
                       {k: float(v) for k, v in data.get("compile_pch", {}).items()})


@dataclass
class Limits:
    """The limits in force on this machine, and what they come from."""
    ratio: float                 # this machine's pace over the recording machine's (KIT_CALIBRATION_SCALE applied)
    figures: Figures
    measured: str = ""           # how this machine's pace was found, for the report
    compile_here: Dict[str, float] = field(default_factory=dict)
    cases_here: Dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.compile_here = {f: s * self.ratio for f, s in self.figures.compile.items()}
        self.cases_here = {r: s * self.ratio for r, s in self.figures.cases.items()}

    # ---- a file's compile ----
    def compile_cpu(self, name: str) -> float:
        return max(COMPILE_CPU_FLOOR, COMPILE_MULTIPLE * self.compile_here.get(name, 0.0))

    def compile_basis(self, name: str) -> str:
        """Why a file's compile limit is what it is, as the report says it."""
        ref = self.compile_here.get(name)
        if ref is None:
            return f"its floor; the reference solution has no {name}"
        if COMPILE_MULTIPLE * ref <= COMPILE_CPU_FLOOR:
            return f"its floor; the reference solution's takes {ref:.1f} s on this machine"
        return f"{COMPILE_MULTIPLE} times the reference solution's {ref:.1f} s on this machine"

    def honest_compile_cpu(self, names) -> float:
        return max(HONEST_FLOOR, HONEST_MULTIPLE * sum(self.compile_here.get(n, 0.0) for n in names))

    # ---- a case ----
    def case_seconds(self, run: table.Run) -> float:
        return max(run.case_seconds, CASE_MULTIPLE * self.cases_here.get(run.filter, 0.0))

    def case_factor(self, run: table.Run) -> float:
        """The case limit over the table's: a job's own limit grows with it."""
        return self.case_seconds(run) / run.case_seconds

    def case_basis(self, run: table.Run) -> str:
        ref = self.cases_here.get(run.filter)
        if ref is None:
            return "the run's own limit"
        if CASE_MULTIPLE * ref <= run.case_seconds:
            return (f"its floor; the reference solution's slowest case of this run takes "
                    f"{_seconds(ref)} on this machine")
        return f"{CASE_MULTIPLE} times the reference solution's slowest case of this run, {_seconds(ref)} on this machine"

    # ---- a whole grading ----
    def honest_grading_seconds(self, cpus: float) -> float:
        """About how long an honest grading takes here with `cpus` CPUs (a
        container's quota): the reference's warm grading and its files'
        compiles (with the precompiled header, as a grading compiles them
        where the sandbox can read it), at this machine's pace."""
        compiles = self.figures.compile_pch or self.figures.compile
        cpu = (self.figures.grading_cpu + sum(compiles.get(f, 0.0) for f in table.IMPL_FILES)) * self.ratio
        return cpu / max(0.05, min(cpus, self.figures.grading_parallel))

    def hang_allowance(self, cpus: float) -> float:
        """What one hung case at the floor and the job's start after it take here."""
        return (table.CASE_SECONDS + JOB_START_SECONDS * self.ratio) / max(0.05, min(1.0, cpus))

    def needs(self, cpus: float) -> float:
        """The budget a platform with `cpus` CPUs needs here: an honest
        grading GRADING_MARGIN times over, and one hang's allowance."""
        return self.honest_grading_seconds(cpus) * GRADING_MARGIN + self.hang_allowance(cpus)

    def fits(self, budget: float, cpus: float) -> bool:
        return self.needs(cpus) <= budget

    def overridden_runs(self) -> Dict[str, float]:
        """Each run whose case limit is above the table's, and the limit (the
        test binary's --case-limit)."""
        return {r.filter: self.case_seconds(r) for r in table.all_runs() if self.case_factor(r) > 1.0}

    def describe(self) -> Dict:
        """For the report's record."""
        return {"pace": round(self.ratio, 3), "measured": self.measured,
                "compile_cpu": {n: round(self.compile_cpu(n), 1) for n in table.built_files()},
                "case_seconds": {k: round(v, 2) for k, v in self.overridden_runs().items()}}


def _seconds(value: float) -> str:
    return "under 0.001 s" if value < 0.001 else f"{value:.2g} s"


def host_key(how: Dict) -> str:
    """What a pace holds for: the processor, the compiler and its flags."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags", "Features", "CPU part")):
                    model += line
    except OSError:
        model = platform.processor()
    digest = hashlib.sha256((model + platform.machine() + how["compiler"] + " ".join(how["compile_flags"]) +
                             how.get("header_digest", "")).encode())
    return digest.hexdigest()[:24]


def probe_kind(how: Dict) -> str:
    return "pch" if how.get("pch_flags") else "plain"


def probe(how: Dict, rounds: int = 1, kind: Optional[str] = None) -> float:
    """The probe's CPU seconds on this machine: the fewest of `rounds`
    compiles (a compile's CPU time hardly moves with the host's load)."""
    from kit.measured import run_measured
    source = os.path.join(STUBS_DIR, PROBE_FILE)
    pch = how.get("pch_flags", []) if (kind or probe_kind(how)) == "pch" else []
    best = None
    with tempfile.TemporaryDirectory(prefix="kit-probe-") as scratch:
        for _ in range(rounds):
            cmd = [how["compiler"]] + how["compile_flags"] + pch + ["-c", source, "-o",
                                                                    os.path.join(scratch, "probe.o")]
            ran = run_measured(cmd, 600)
            if ran.status != 0:
                raise RuntimeError(f"the calibration's probe, a compile of the stub {PROBE_FILE}, failed:\n"
                                   f"{ran.output[:2000]}")
            best = ran.cpu if best is None else min(best, ran.cpu)
    return best


def scale_override() -> float:
    text = overrides.CALIBRATION_SCALE or ""
    try:
        factor = float(text) if text else 1.0
    except ValueError:
        factor = 0.0
    if not factor > 0:
        raise SystemExit(f"KIT_CALIBRATION_SCALE must be a positive number, got {text!r}")
    return factor


def _cache_path(build_dir: str) -> str:
    return os.path.join(build_dir, CACHE_NAME)


def pace_here(build_dir: str) -> tuple:
    """(this machine's probe seconds, the probe's kind, how it was found):
    from the build's cache when it holds this machine's key, else measured
    now and kept."""
    from kit.recipe import recipe
    how = recipe(build_dir)
    kind = probe_kind(how)
    key = host_key(how) + "-" + kind
    try:
        with open(_cache_path(build_dir)) as f:
            kept = json.load(f)
        if kept.get("host") == key and float(kept.get("pace", 0)) > 0:
            return float(kept["pace"]), kind, f"measured {kept.get('when', 'earlier')}"
    except (OSError, ValueError, TypeError):
        pass
    begun = time.monotonic()
    seconds = probe(how, rounds=3)
    kept = {"host": key, "pace": round(seconds, 3), "when": time.strftime("%Y-%m-%d %H:%M")}
    try:
        tmp = _cache_path(build_dir) + f".{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(kept, f)
        os.replace(tmp, _cache_path(build_dir))
    except OSError:
        pass  # a build this user can't write: measured again next time
    return seconds, kind, f"measured now ({time.monotonic() - begun:.1f} s)"


_LIMITS: Dict[str, Limits] = {}


def limits(build_dir: Optional[str] = None, strict: bool = True) -> Limits:
    """The limits in force for gradings and tests with this build, once a
    process. Without the recorded figures (a copy that lost them) or a
    build, the table's own limits hold (the floors). A probe that can't
    compile here (a cross-built build run under an emulator) raises
    RuntimeError, or with strict=False (a student's own test run, never a
    grading) leaves the table's limits, saying why."""
    # Only the path: a test of another build (build-mpich) has told its
    # launcher its MPI already, and this must not tell it another.
    from kit.paths import build_path
    build_dir = build_path(build_dir)
    if build_dir not in _LIMITS:
        try:
            figures = Figures.load()
        except (OSError, ValueError, KeyError) as e:
            _LIMITS[build_dir] = Limits(1.0, Figures({}, {}, {}), f"no recorded figures ({e}): the table's limits")
            return _LIMITS[build_dir]
        from kit.recipe import NotBuilt
        try:
            seconds, kind, how = pace_here(build_dir)
        except (RuntimeError, OSError, NotBuilt) as e:
            if strict:
                raise
            _LIMITS[build_dir] = Limits(1.0, figures, "the table's limits: " + str(e).splitlines()[0])
            return _LIMITS[build_dir]
        if kind not in figures.pace:
            raise RuntimeError(f"{FIGURES_FILE} has no figure for a probe of kind {kind!r}: record it again "
                               "(make calibration-data)")
        scale = scale_override()
        ratio = seconds / figures.pace[kind] * scale
        how += (f"; the probe took {seconds:.2f} s of CPU, {figures.pace[kind]:.2f} s where the figures were "
                "recorded")
        if scale != 1:
            how += f"; times {scale:g} (KIT_CALIBRATION_SCALE)"
        _LIMITS[build_dir] = Limits(ratio, figures, how)
    return _LIMITS[build_dir]


def platform_check(name: str, lim: Limits) -> int:
    """Whether an honest grading fits the platform's budget at its default
    CPUs on this machine: 0, else 3 with what to raise (prepare-image)."""
    budget = table.COURSE.budget(name)
    cpus = PLATFORM_CPUS[name] or os.cpu_count() or 1
    needs = lim.honest_grading_seconds(cpus)
    print(f"{name}: an honest grading takes about {needs:.0f} s on this machine at the platform's "
          f"{cpus:g} CPU(s), and the platform needs {lim.needs(cpus):.0f} s for it with room for one hung case; "
          f"the course gives it {budget:g} s (course.toml [time_budget])")
    if lim.fits(budget, cpus):
        return 0
    print(f"{name}: TOO SLOW: on a machine like this one a grading that runs out of time before a case of a part "
          f"that never hung ends as a grader error (no handin is graded lower for it). Raise the course's "
          f"[time_budget] {name} to at least {lim.needs(cpus):.0f} s and make autograder again (PrairieLearn's "
          "question timeout follows it), or grade on a faster machine")
    return 3


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="the build directory (default: the kit's)")
    ap.add_argument("--platform", choices=sorted(PLATFORM_CPUS),
                    help="whether an honest grading fits the platform's time budget here (exit 3 if not)")
    args = ap.parse_args(argv)
    from kit.paths import build_dir as default_build
    build_dir = os.path.abspath(args.build or default_build())
    lim = limits(build_dir)
    if args.platform:
        return platform_check(args.platform, lim)
    print(f"this machine's pace: {lim.ratio:.2f} (its CPU time for the same work over that of the machine the "
          f"figures were recorded on: above 1 is slower; {lim.measured})")
    for name in table.built_files():
        print(f"  compile of {name:<30} limit {lim.compile_cpu(name):5.1f} s of CPU ({lim.compile_basis(name)})")
    print(f"  the files' compiles in all         honest under {lim.honest_compile_cpu(table.IMPL_FILES):.1f} s of CPU "
          f"({HONEST_MULTIPLE} times the reference's, at least {HONEST_FLOOR:g} s)")
    for run in table.all_runs():
        print(f"  a case of {run.filter:<28} limit {lim.case_seconds(run):5.1f} s ({lim.case_basis(run)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
