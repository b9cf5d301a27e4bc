"""`make check-platforms` (staff, as root): each grading platform's bundle
(`make autograder`) built into its image with podman, from a Debian 12 base
made here, and six handins graded in it as the platform runs a job, at the
platform's default limits:

  Autolab       dist/autolab/Containerfile; a job as Tango's docker back end and its
                autodriver run it: `make` as the user autograde, 100 processes, files of
                100 MB at most, output cut to 1000 KiB, no CPU or memory limit; 60 s
  Gradescope    Debian 12 with gradescope.zip's setup.sh run at build time (Gradescope's
                base image is Ubuntu's, on a registry this machine can't reach);
                run_autograder as root at 0.5 CPU and 768 MiB; 60 s (its own limit is 10 min)
  PrairieLearn  dist/prairielearn/Containerfile; the entrypoint as root at 0.9 CPU, 2 GiB
                without swap, 1024 processes, no network, private IPC; 30 s

The handins, and what each platform must give them:
  reference  full marks             correct    a correct variant (staff/mutants.py): full marks
  stubs      0                      hog        get_info keeps 600 MB a rank: loses part2 alone, with
                                               the memory budget's message (the host's grader too)
  hang       rank 0 leaves collect_weight_grad before its allreduces, where the others wait: loses
             part7 alone, and the grading ends within the platform's time limit
  spin       split_data loops for ever, so every case of part 1 hangs, first of all the cases:
             loses part1 alone on every platform, as on the host (its other cases run last, each at a
             fifth of its limit, and a platform's time cut spends only them)

Then the reference and spin (with --halve-all, every handin) again in each image with its CPUs halved
(Autolab's Tango, which sets none, at half the machine's): a slower machine
must give the same grades, or, where an honest grading no longer fits the
platform's time budget there (kit/calibration.py's estimate), a grader
error that names the setting to raise, never a lower grade. No report may
say the exec guard or the system-call filter is off (a container may
forbid namespaces and CPU cgroups; those two may be).

The gradings run side by side where the machine has the CPUs for them: each
platform's at one CPU share is a lane (Gradescope's 0.5 CPU, its halved 0.25,
PrairieLearn's 0.9 and 0.45), lanes run at once while their shares add up to
no more than the machine's CPUs, and a lane without a cap (Autolab's at its
default, the host's grader) runs alone. A quota is a cap, so a grading beside others has the
CPU it has alone, and the check takes its longest lane's time, not the sum
(--one-at-a-time: one grading after another).

Each result is read as its platform reads it: Autolab's last line of output,
Gradescope's results.json, PrairieLearn's results.json. Last, the reference
on Gradescope at 512 MiB, too small for a job: a grader error that names
the memory setting; and on PrairieLearn an upload that is no tar archive:
`gradable: false`, so it costs no attempt. The table shows platform, handin, score, status and
seconds. Each platform's image and job are staff/platform_jobs.py's.

  python3 -m staff.platforms [--platform NAME ...] [--handin NAME ...] [--keep DIR] [--halve-all]
                            [--one-at-a-time]
"""
import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Callable, Dict, List

from kit import calibration, host_limits
from kit import parts as table
from kit.paths import KIT_DIR, REFERENCE_DIR, STUBS_DIR
from staff.container import image_exists, require_podman, run
from staff.mutants import MUTANTS
from staff.platform_jobs import Platform, platforms as all_platforms, Result, gradescope_grade, make_deps_base, prairielearn_grade
from staff.student_loop_as_user import StepFailed

# The handins that are the reference with one change: known bugs of staff/mutants.py.
FROM_MUTANTS = {"correct": "correct: std::vector buffers seen through Eigen maps",
                "hog": "keeps 600 MB a rank in get_info",
                "hang": "rank 0 returns before its allreduces"}


def handin_files(name: str) -> Dict[str, str]:
    """The three files of one of the check's handins."""
    source = STUBS_DIR if name == "stubs" else REFERENCE_DIR
    files = {f: open(os.path.join(source, f)).read() for f in table.IMPL_FILES}
    if name == "spin":  # before anything else runs: the first case of the first part hangs
        head = "                                     int rank) {\n"
        if head not in files["data_parallel_preprocess.cpp"]:
            raise StepFailed("handin spin: the reference's split_data no longer starts as expected")
        files["data_parallel_preprocess.cpp"] = files["data_parallel_preprocess.cpp"].replace(
            head, head + "  for (volatile unsigned long spin = 0;; spin = spin + 1) {}\n", 1)
    if name in FROM_MUTANTS:
        mutant = next(m for m in MUTANTS if m.name == FROM_MUTANTS[name])
        if mutant.find not in files[mutant.file]:
            raise StepFailed(f"handin {name}: the reference's {mutant.file} no longer holds {mutant.find!r}")
        files[mutant.file] = files[mutant.file].replace(mutant.find, mutant.replace, 1)
    return files


def write_handin(name: str, path: str) -> None:
    with tarfile.open(path, "w") as tar:
        for f, text in list(handin_files(name).items()) + [("feedback.txt", "checked by staff/platforms.py\n")]:
            data = text.encode()
            info = tarfile.TarInfo(f"student/{f}" if f != "feedback.txt" else f)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))


@dataclass
class Expect:
    total: float                    # the score every platform must give
    loses: str = ""                 # the one part it loses, if any
    says: str = ""                  # words its failures must hold
    # Where the platform's time ran out first (a host busier than the
    # platform's own), the least it may score: the parts whose cases hung
    # run last, so the others are graded before the time goes.
    at_least_when_cut: float = 0.0


HANDINS = ("reference", "correct", "stubs", "hog", "hang", "spin")


def expectations() -> Dict[str, Expect]:
    """What each handin must score under the current course."""
    total = float(table.TOTAL_POINTS)
    points = {p.key: p.points for p in table.PARTS}
    return {"reference": Expect(total), "correct": Expect(total), "stubs": Expect(0.0),
            "hog": Expect(total - points["part2"], "part2", "over its memory budget: get_info asked for a block of 600.0 MiB"),
            "hang": Expect(total - points["part7"], "part7", at_least_when_cut=100.0),
            "spin": Expect(total - points["part1"], "part1")}



# What a platform's report may never say is off: the guards every mode of
# grading in a platform's container has (a container may forbid namespaces
# and keep the cgroups read-only, so those two may be off).
NEVER_OFF = {"exec guard: off": "the exec guard is off", "syscall filter: ": "the system-call filter is off",
             "isolation reduced: the grader is not root": "the grader ran without root"}
# The handins graded again with the platform's CPUs halved: what a slower
# machine does to a correct handin's time and to a hang's.
HALVED = ("reference", "spin")


def guards_off(r: Result) -> List[str]:
    return [why for says, why in NEVER_OFF.items() if says in r.text]


def verdict(handin: str, p: Platform, r: Result, fits: bool = True, stretch: float = 1.0) -> List[str]:
    """What is wrong with the platform's grade of this handin ([] when
    right). Where an honest grading does not fit the platform's budget
    (`fits` False: kit/calibration.py's estimate at its CPUs), a grader
    error that names the setting to raise is right too, never a lower grade.
    A correct handin's time is held to the platform's figure at this
    machine's pace (kit/calibration.py), times `stretch` (fewer CPUs)."""
    # The kit's own word, in the container, that the platform is too small:
    # right for a handin that hangs (its one hang is in the room a platform
    # needs), and for any handin where the host's estimate agrees.
    too_small = r.status in ("grader error", "not gradable") and "this platform is too small" in r.text
    if too_small and (not fits or handin not in ("reference", "correct")):
        return guards_off(r)
    expect = expectations()[handin]
    points = {p.key: p.points for p in table.PARTS}
    problems = guards_off(r)
    total = sum(r.scores.values())
    if set(r.scores) != set(points):
        problems.append(f"the result names parts {sorted(r.scores)}, not {sorted(points)}")
    cut = expect.at_least_when_cut and "the grading's time on this platform" in r.text
    if cut and total < expect.at_least_when_cut:
        problems.append(f"scored {total:g}, under {expect.at_least_when_cut:g} with the time cut")
    elif not cut and abs(total - expect.total) > 0.01:
        problems.append(f"scored {total:g}, not {expect.total:g}")
    if expect.loses and r.scores.get(expect.loses, 0) >= points[expect.loses]:
        problems.append(f"{expect.loses} kept its points")
    if expect.says and expect.says not in r.text:
        problems.append(f"its report does not say {expect.says!r}")
    if r.seconds > p.time_limit:
        problems.append(f"took {r.seconds:.0f} s, over the platform's {p.time_limit:.0f} s")
    elif expect.total == table.TOTAL_POINTS and r.seconds > p.correct_within * stretch * max(1.0, calibration.limits().ratio):
        problems.append(f"took {r.seconds:.0f} s; a correct handin must be graded within {p.correct_within:.0f} s "
                        f"(times {stretch:g} for its CPUs, and this machine's pace)")
    return problems


@dataclass
class Lane:
    """One platform's gradings at one CPU share, in order: lanes run side by
    side while their shares fit in the machine's CPUs (a platform's quota is
    a cap, so a grading beside others gets the same CPU as alone); a lane
    without a cap (Autolab's Tango) runs alone."""
    name: str
    share: float                       # the CPUs its gradings may use at once
    gradings: List[Callable[[], tuple]]  # each returns one row of the table


def run_lanes(lanes: List[Lane], cpus: float) -> None:
    """Runs the lanes, each in a thread, as many at once as their shares fit in
    `cpus`: the check's time is then the longest lane's, not the sum."""
    pending, running, free = list(lanes), {}, cpus
    with ThreadPoolExecutor(max_workers=len(lanes) or 1) as pool:
        while pending or running:
            for lane in list(pending):
                if lane.share <= free + 1e-9 or not running:
                    pending.remove(lane)
                    free -= lane.share
                    running[pool.submit(lambda lane=lane: [g() for g in lane.gradings])] = lane
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                free += running.pop(future).share
                future.result()


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platform", action="append", choices=[p.name for p in all_platforms()])
    ap.add_argument("--handin", action="append", choices=list(HANDINS))
    ap.add_argument("--keep", help="keep each job's folder (results, output) here")
    ap.add_argument("--reuse-images", action="store_true", help="grade with the images an earlier run built")
    ap.add_argument("--halve-all", action="store_true",
                    help=f"grade every handin again at half the CPUs, not only {' and '.join(HALVED)} (CI's)")
    ap.add_argument("--one-at-a-time", action="store_true",
                    help="grade one handin at a time, not the platforms side by side within the machine's CPUs")
    args = ap.parse_args(argv)
    require_podman("check-platforms")
    platforms = [p for p in all_platforms() if not args.platform or p.name in args.platform]
    handins = [h for h in HANDINS if not args.handin or h in args.handin]
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="kit-platforms-")
    rows, failed = [], []
    planned = []  # (platform, label) in the table's order, whatever order the lanes end in
    printing = threading.Lock()

    def row(name: str, label: str, r: Result, problems: List[str], note: str = "") -> tuple:
        with printing:
            print(f"  {name:<13} {label:<22} {sum(r.scores.values()):>6g} / {table.TOTAL_POINTS}  {r.status:<13} "
                  f"{r.seconds:5.1f} s  {'ok' if not problems else 'WRONG: ' + '; '.join(problems)}{note}", flush=True)
            rows.append((name, label, sum(r.scores.values()), r.status, r.seconds, problems))
            if problems:
                failed.append((name, label, r.text[-3000:]))
        return rows[-1]

    def graded(p: Platform, h: str, tar: str, half: float = 0.0, fits: bool = True) -> Callable[[], tuple]:
        label = f"{h} at {half:g} CPU" if half else h
        planned.append((p.name, label))

        def grade() -> tuple:
            r = p.grade(p, tar, os.path.join(work, p.name, h + ("-halved" if half else "")),
                        **({"cpus": half} if half else {}))
            note = "" if fits else " (an honest grading does not fit here: a grader error is right too)"
            return row(p.name, label, r,
                       verdict(h, p, r, fits, stretch=2.0) if half else verdict(h, p, r), note)
        return grade

    def small_gradescope(p: Platform, tar: str) -> tuple:  # a container too small for a job: the setting, never a grade
        r = gradescope_grade(p, tar, os.path.join(work, "gradescope", "small"), "512m")
        return row("gradescope", "at 512 MiB", r, [] if r.status == "grader error" and "raise the memory" in r.text
                   else [f"at 512 MiB: {r.status}, not a grader error that names the memory setting"])

    def junk_prairielearn(p: Platform) -> tuple:  # an upload that is no handin costs no attempt
        junk = os.path.join(work, "junk.tar")
        with open(junk, "wb") as f:
            f.write(b"these are my notes, not a tar archive\n")
        r = prairielearn_grade(p, junk, os.path.join(work, "prairielearn", "junk"))
        return row("prairielearn", "not a tar", r, [] if r.status == "not gradable" and "not a readable tar archive"
                   in r.text else [f"an upload that is no tar: {r.status}, not gradable: false with the reason"])

    try:
        out = run([sys.executable, "-m", "staff.bundles"], timeout=600)
        if not out.startswith("[exit 0]"):
            raise StepFailed("make autograder failed:\n" + out)
        base = make_deps_base()
        limits = calibration.limits()
        tars = {}
        for h in handins:
            tars[h] = os.path.join(work, f"{h}.tar")
            write_handin(h, tars[h])
        machine = host_limits.cpus()  # what the lanes share: the affinity, capped by a cgroup quota
        lanes = []
        for p in platforms:
            begun = time.monotonic()
            if not (args.reuse_images and image_exists(p.image)):
                p.build(p, base)
            print(f"  {p.name}: image {p.image} in {time.monotonic() - begun:.0f} s ({p.limits}; "
                  f"{p.time_limit:.0f} s)", flush=True)
            os.makedirs(os.path.join(work, p.name), exist_ok=True)
            extra = [lambda p=p: small_gradescope(p, tars["reference"])] \
                if p.name == "gradescope" and "reference" in handins else \
                [lambda p=p: junk_prairielearn(p)] if p.name == "prairielearn" else []
            lanes.append(Lane(p.name, p.default_cpus(), [graded(p, h, tars[h]) for h in handins] + extra))
            planned.extend([(p.name, "at 512 MiB")] if p.name == "gradescope" else
                           [(p.name, "not a tar")] if p.name == "prairielearn" else [])
            # The same image on a machine twice as slow: the same grades, or,
            # where an honest grading can't fit the budget, a grader error.
            half = p.default_cpus() / 2
            fits = limits.fits(table.COURSE.budget(p.name), half)
            lanes.append(Lane(f"{p.name} halved", half, [graded(p, h, tars[h], half, fits) for h in handins
                                                         if args.halve_all or h in HALVED]))
        if "hog" in handins:  # the host's grader, as staff run it, gives the hog what every platform gives
            def host_hog() -> tuple:
                r = host_grade(tars["hog"])
                return row("host", "hog", r, verdict("hog", Platform("host", "", 600, 600, "", None, None), r))
            lanes.append(Lane("host", machine, [host_hog]))
            planned.append(("host", "hog"))
        # Capped lanes first, the slowest (the smallest shares) first of all; uncapped ones last, alone.
        lanes.sort(key=lambda lane: (lane.share >= machine, lane.share))
        run_lanes(lanes, 0.0 if args.one_at_a_time else machine)
    except (StepFailed, subprocess.TimeoutExpired) as e:
        print(f"check-platforms: FAILED: {e}")
        return 1
    finally:
        if args.keep:
            shutil.copytree(work, args.keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'platform':<13} {'handin':<22} {'score':>7}  {'status':<13} {'seconds':>7}  verdict")
    for name, h, total, status, seconds, problems in sorted(rows, key=lambda r: planned.index(r[:2])):
        print(f"{name:<13} {h:<22} {total:>7g}  {status:<13} {seconds:>7.1f}  {'ok' if not problems else 'WRONG'}")
    for name, h, text in failed:
        print(f"\n---- {name} / {h}: what the platform shows (the end) ----\n{text}")
    print(f"\ncheck-platforms: {'FAILED' if failed else 'passed'} in {time.monotonic() - started:.0f} s")
    return 1 if failed else 0


def host_grade(handin: str) -> Result:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kit-platforms-host-") as d:
        report = os.path.join(d, "report.json")
        proc = subprocess.run([sys.executable, os.path.join(KIT_DIR, "grader", "grade"), handin, "--json", report],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        data = json.load(open(report)) if os.path.exists(report) else {}
    scores = {p["key"]: p["points"] for p in data.get("parts", [])}
    return Result(scores, data.get("status", "no report"), proc.stdout.decode(errors="replace"),
                  time.monotonic() - started)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

