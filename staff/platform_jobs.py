"""Each grading platform of `make check-platforms` (staff/platforms.py) as
that platform runs a job: its image built from its bundle with podman, on
a Debian 12 base made here, and one handin graded in it at the platform's
default limits, its result read as the platform reads it.
"""
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from typing import Callable, Dict, List

from kit.calibration import PLATFORM_CPUS
from kit import parts as table
from kit.paths import KIT_DIR
from staff.bundles import PRAIRIELEARN_START_SECONDS
from staff.container import LIMITS, PODMAN, image_exists, run
from staff.student_loop_as_user import StepFailed

DIST = os.path.join(KIT_DIR, "dist")
CCACHE = os.environ.get("CCACHE_DIR") or os.path.expanduser("~/.cache/ccache")


@dataclass
class Result:
    scores: Dict[str, float]
    status: str
    text: str        # what the platform shows (the output, or results.json), for the messages
    seconds: float


@dataclass
class Platform:
    name: str
    image: str
    time_limit: float        # the platform's own, in seconds: no grading may take longer
    correct_within: float    # what a correct handin's grading must take at most (the figures)
    limits: str              # for the table's header
    build: Callable[["Platform", str], None]
    grade: Callable[..., Result]   # (platform, handin, job folder, cpus=None: the platform's default CPUs)

    def default_cpus(self) -> float:
        """The CPUs the platform gives a grading by default (Autolab's Tango:
        the machine's)."""
        return PLATFORM_CPUS.get(self.name) or float(os.cpu_count() or 1)


def make_deps_base() -> str:
    """Debian 12 with the kit's packages (setup.sh's list), ccache and sudo,
    made once with mmdebstrap: every platform's recipe then finds its
    packages installed, and the platforms' images differ only in their own
    steps (a fresh apt-get install is the dev container's check). Its tag
    holds a hash of the package list, so a changed list makes a new base."""
    packages = subprocess.run([os.path.join(KIT_DIR, "setup.sh"), "--list"], capture_output=True, text=True,
                              check=True).stdout.split() + ["ccache", "sudo"]
    key = hashlib.sha256(" ".join(packages).encode()).hexdigest()[:12]
    name = f"localhost/dtrain-deps:bookworm-{key}"
    if image_exists(name):
        return name
    started = time.monotonic()
    tar = subprocess.Popen(["mmdebstrap", "--quiet", "--variant=minbase", f"--include={','.join(packages)}",
                            "bookworm", "-"], stdout=subprocess.PIPE)
    out = run(PODMAN + ["import", "-", name], stdin=tar.stdout)
    tar.stdout.close()
    if tar.wait() != 0 or not out.startswith("[exit 0]"):
        raise StepFailed(f"making {name} failed (is the Debian mirror reachable?):\n{out[-2000:]}")
    print(f"  base: {name} made in {time.monotonic() - started:.0f} s", flush=True)
    return name


def podman_build(image: str, context: str, base: str) -> None:
    """An image from a bundle's context, its kit compiled with the host's
    compiler cache when there is one (the same compiles, other paths)."""
    volume = ["-v", f"{CCACHE}:/root/.cache/ccache"] if os.path.isdir(CCACHE) else []
    out = run(PODMAN + ["build", *LIMITS, *volume, "--build-arg", f"BASE={base}", "-t", image,
                        "-f", os.path.join(context, "Containerfile"), context], timeout=3600)
    if not out.startswith("[exit 0]"):
        raise StepFailed(f"podman build of {image} failed:\n{out[-4000:]}")


def timed_run(cmd: List[str], limit: float) -> tuple:
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=limit * 3)
        out = proc.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + f"\n[killed after {limit * 3:.0f} s]"
    return out, time.monotonic() - started


# ---- Autolab ----

# Tango's autodriver, done with the same limits by root in the container: the
# job's folder handed to autograde, `make` run as autograde with 100
# processes and 100 MB files at most, killed at the timeout, and the output
# cut to its first and last 500 KiB.
TANGO_JOB = """set -e
cp -r /home/mount/. /home/autograde/autolab/ && chown -R autograde: /home/autograde/autolab
cd /home/autograde/autolab
set +e
prlimit --nproc=100 --fsize=104857600 -- setpriv --reuid=autograde --regid=autograde --init-groups -- \\
  timeout -s KILL {timeout} make > /tmp/output.log 2>&1
echo "Autodriver: Job exited with status $?" >> /tmp/output.log
python3 -c 'import sys; d = open("/tmp/output.log", "rb").read(); n = 1024000
sys.stdout.buffer.write(d if len(d) <= n else d[:n // 2] + b"\\n...[excess bytes elided]...\\n" + d[-n // 2:])' \\
  > /home/mount/feedback
"""


def autolab_build(p: Platform, base: str) -> None:
    podman_build(p.image, os.path.join(DIST, "autolab"), base)


def cpu_flags(p: Platform, cpus) -> List[str]:
    """podman's flags for the CPUs a job gets: the platform's own, or `cpus`
    (the check's halved share)."""
    return [f"--cpus={cpus:g}"] if cpus is not None else [f"--cpus={p.default_cpus():g}"] \
        if PLATFORM_CPUS.get(p.name) else []


def autolab_grade(p: Platform, handin: str, job: str, cpus=None) -> Result:
    os.makedirs(job)
    shutil.copy(os.path.join(DIST, "autolab", "autograde.tar"), job)
    shutil.copy(os.path.join(DIST, "autolab", "autograde-Makefile"), os.path.join(job, "Makefile"))
    shutil.copy(handin, os.path.join(job, "handin.tar"))
    out, seconds = timed_run(PODMAN + ["run", "--rm", *LIMITS, *cpu_flags(p, cpus), "--network=none",
                                       "-v", f"{job}:/home/mount",
                                       p.image, "sh", "-c", TANGO_JOB.format(timeout=int(p.time_limit))],
                             p.time_limit)
    feedback = open(os.path.join(job, "feedback"), errors="replace").read() if os.path.exists(
        os.path.join(job, "feedback")) else out
    lines = [l for l in feedback.splitlines() if l.strip()]
    last = lines[-2] if len(lines) >= 2 and lines[-1].startswith("Autodriver:") else (lines[-1] if lines else "")
    try:
        scores = json.loads(last)["scores"]
    except (ValueError, KeyError, TypeError):
        scores = {}
    status = next((l.split("(", 1)[1].split(",")[0] for l in lines if l.startswith("handin: ")), "no report")
    return Result(scores, status, feedback, seconds)


# ---- Gradescope ----

GRADESCOPE_IMAGE = """FROM {base}
COPY source /autograder/source
RUN cp /autograder/source/run_autograder /autograder/run_autograder && /autograder/source/setup.sh
"""


def gradescope_build(p: Platform, base: str) -> None:
    context = tempfile.mkdtemp(prefix="kit-gradescope-")
    try:
        source = os.path.join(context, "source")
        with zipfile.ZipFile(os.path.join(DIST, "gradescope.zip")) as z:
            for info in z.infolist():
                z.extract(info, source)
                os.chmod(os.path.join(source, info.filename), (info.external_attr >> 16) or 0o644)
        with open(os.path.join(context, "Containerfile"), "w") as f:
            f.write(GRADESCOPE_IMAGE.format(base=base))
        podman_build(p.image, context, base)
    finally:
        shutil.rmtree(context, ignore_errors=True)


def gradescope_grade(p: Platform, handin: str, job: str, memory: str = "768m", cpus=None) -> Result:
    submission, results = os.path.join(job, "submission"), os.path.join(job, "results")
    os.makedirs(submission)
    os.makedirs(results)
    with tarfile.open(handin) as tar:  # loose files, as most students upload them
        for member in tar.getmembers():
            with open(os.path.join(submission, os.path.basename(member.name)), "wb") as f:
                f.write(tar.extractfile(member).read())
    out, seconds = timed_run(PODMAN + ["run", "--rm", *LIMITS, "--network=none", *cpu_flags(p, cpus), f"--memory={memory}",
                                       f"--memory-swap={memory}", "-v", f"{submission}:/autograder/submission",
                                       "-v", f"{results}:/autograder/results", p.image, "/autograder/run_autograder"],
                             p.time_limit)
    try:
        data = json.load(open(os.path.join(results, "results.json")))
    except (OSError, ValueError):
        return Result({}, "no results.json", out, seconds)
    scores = {t["name"].split(":")[0]: t["score"] for t in data.get("tests", []) if t.get("max_score")}
    status = (data.get("output") or "").splitlines()[0].replace("status: ", "") if data.get("output") else "?"
    return Result(scores, status, json.dumps(data, indent=1), seconds)


# ---- PrairieLearn ----

def prairielearn_build(p: Platform, base: str) -> None:
    podman_build(p.image, os.path.join(DIST, "prairielearn"), base)


def prairielearn_grade(p: Platform, handin: str, job: str, cpus=None) -> Result:
    student = os.path.join(job, "student")
    os.makedirs(student)
    os.makedirs(os.path.join(job, "data"))
    with open(os.path.join(job, "data", "data.json"), "w") as f:
        json.dump({"submitted_answers": {}}, f)
    shutil.copytree(os.path.join(DIST, "prairielearn", "serverFilesCourse"), os.path.join(job, "serverFilesCourse"))
    if tarfile.is_tarfile(handin):
        with tarfile.open(handin) as tar:  # pl-file-upload hands over the files themselves
            for member in tar.getmembers():
                with open(os.path.join(student, os.path.basename(member.name)), "wb") as f:
                    f.write(tar.extractfile(member).read())
    else:  # an upload that is no handin, as it came
        shutil.copy(handin, os.path.join(student, "handin.tar"))
    info = json.load(open(os.path.join(DIST, "prairielearn", "questions", "dtrain", "info.json")))
    options = info["externalGradingOptions"]
    env = [a for k, v in options["environment"].items() for a in ("-e", f"{k}={v}")]
    quota = int(100000 * (cpus if cpus is not None else p.default_cpus()))
    out, seconds = timed_run(PODMAN + ["run", "--rm", *LIMITS, "--network=none", "--cpu-period=100000",
                                       f"--cpu-quota={quota}", "--memory=2g", "--memory-swap=2g", "--pids-limit=1024",
                                       "--ipc=private", "--ulimit", "core=0", *env, "-v", f"{job}:/grade",
                                       "--entrypoint", options["entrypoint"], p.image], p.time_limit)
    try:
        data = json.load(open(os.path.join(job, "results", "results.json")))
    except (OSError, ValueError):
        return Result({}, "no results.json", out, seconds)
    if not data.get("gradable", True):
        return Result({}, "not gradable", json.dumps(data), seconds)
    scores = {t["name"].split(":")[0]: t["points"] for t in data.get("tests", [])}
    status = (data.get("output") or "").splitlines()[0].replace("status: ", "") if data.get("output") else "?"
    return Result(scores, status, json.dumps(data, indent=1), seconds)


def platforms() -> List[Platform]:
    """The platforms, each at the current course's limits."""
    return [
        Platform("autolab", "localhost/dtrain-autolab:check", 60, 60, "Tango: 100 processes, 100 MB files, 1000 KiB output",
                 autolab_build, autolab_grade),
        Platform("gradescope", "localhost/dtrain-gradescope:check", 600, 60, "0.5 CPU, 768 MiB",
                 gradescope_build, gradescope_grade),
        # PrairieLearn's own limit is the question's timeout, which make autograder writes from the course's budget.
        Platform("prairielearn", "localhost/dtrain-prairielearn:check",
                 table.COURSE.budget("prairielearn") + PRAIRIELEARN_START_SECONDS, 30, "0.9 CPU, 2 GiB, 1024 pids, no network",
                 prairielearn_build, prairielearn_grade),
    ]
