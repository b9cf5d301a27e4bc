"""Builds the kit's test binary from a directory holding the student files,
against an existing build: only those files are compiled; the framework and
the tests are linked from the build as they are (the grader, `make handin`
and the known-bug checks use it).

Each file compiles separately, so the caller learns which one failed; with
a fallback directory, a file that does not compile is replaced by that
directory's copy (the grader passes the stubs). A submitted file that
compiles is then link-checked (kit/link_check.py): an object it refuses is
treated like a file that does not compile, with the refusals as its errors.
How the build compiles is read from it by kit/recipe.py; objects are kept
by content in kit/object_cache.py.
"""
import hashlib
import os
import shlex
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional

from kit import calibration, facts, host_limits, link_check, object_cache
from kit.host_limits import ResourceFailure
from kit import limits
from kit import parts as table
from kit.measured import Ran, RanPastCpu, run_measured
from kit.recipe import recipe
from kit.safe_read import open_sandbox_file

MAX_OBJECT_BYTES = facts.FILE_LIMIT_BYTES  # the sandbox's per-file limit: no object the compiler wrote there is larger

# What one compile of a student file may take, and the files' compiles in
# all when the code is honest, are calibrated on the machine that grades
# (kit/calibration.py): multiples of the reference's figures here, with
# floors. A compile past its limit is the handin's, as a hung case is: the
# file is graded as its stub. CPU time is the measure; the clock stops a
# compile only when it makes no progress (STALL_SECONDS without CPU: it
# waits for something), for a busy or slow host stretches its wall time.
STALL_SECONDS = 20.0


def compile_wall_seconds(cpu_limit: float) -> float:
    """A compile's last wall-clock limit, behind the stall check: its CPU
    limit at the pace the container's quota allows, twenty times over (a
    compile that keeps the CPU it gets busy never meets it on any host that
    grades: it meets its CPU limit first)."""
    return 20 * cpu_limit / min(1.0, host_limits.cpus())


def resource_failure(status: int, oom_before: Optional[int]) -> Optional[str]:
    """What ran out of the platform's, if a compile or link that ended with
    `status` was killed from outside: only when the OOM killer struck while
    it ran (the container's count, `oom_before` before it, rose). Never from
    its messages, which the handin writes (`#error virtual memory exhausted`),
    nor from a signal alone: the compiler's CPU, memory and file-size limits
    are the sandbox's, and a compile that meets one is the handin's."""
    if status == 0 or oom_before is None:
        return None
    return host_limits.killed_by_oom(oom_before)


def run_plainly(cmd: List[str], timeout: float, stall: Optional[float] = None,
                cpu_limit: Optional[float] = None) -> Ran:
    return run_measured(cmd, timeout, stall=stall, cpu_limit=cpu_limit)


def compile_limits(seconds: float) -> List[str]:
    """The compile's limits, set on the compiler's processes: its CPU
    seconds, as a backstop (SIGXCPU half again past the limit the runner
    enforces, SIGKILL 5 s later: the kernel's clock runs ahead under load)
    and its private memory (kit/limits.py, COMPILE_DATA_MIB)."""
    limit = max(2, int(1.5 * seconds + 1.999))
    return [shutil.which("prlimit"), f"--cpu={limit}:{limit + 5}", f"--data={limits.COMPILE_DATA_MIB << 20}", "--"] \
        if shutil.which("prlimit") else []


def compile_one(how: Dict, source: str, obj: str, timeout: Optional[float] = None, runner=run_plainly,
                pch: Optional[bool] = None, spent: Optional[Dict] = None,
                compiler_cache: bool = False, cpu_limit: Optional[float] = None,
                basis: str = "") -> Optional[str]:
    """Returns None on success, else the compiler's messages; raises
    ResourceFailure when the compiler was killed from outside (the OOM
    killer). A compile past `cpu_limit` s of CPU (the floor of
    kit/calibration.py if not given; `basis` says where the limit comes
    from, for the message), that takes no CPU for STALL_SECONDS, or that
    runs past `timeout` s of wall time, fails as the handin's. `spent`, if given, gets the CPU
    seconds the compile took ("cpu"; None from a cache or a runner that
    does not say) and whether it ran past its limit ("ran_past").
    An object compiled before from the same text with the same flags is
    reused (the stubs, the reference's other files), from a cache beside the
    recipe. Its line table names the path it was first compiled from, so a
    message that quotes a student's line (student_line.h) may find no file there.
    `compiler_cache`: through the build's compiler cache (ccache, the
    recipe's "compiler_cache"), for the staff's own files outside any sandbox:
    the cache outlives the build, so a clean clone's known-bug checks compile
    nothing they compiled before. Never a handin's: its compile must not
    write where root's builds read."""
    spent = spent if spent is not None else {}
    spent.update(cpu=None, ran_past=False)
    try:
        with open(source, "rb") as f:
            text = f.read()
    except OSError as e:
        return f"{os.path.basename(source)}: cannot read: {e.strerror}"
    flags = [how["compiler"]] + how["compile_flags"]
    cache_dir = how.get("cache_dir")
    key = hashlib.sha256(text + "\0".join(flags + [how.get("header_digest", "")]).encode()).hexdigest()
    cached = os.path.join(cache_dir, key + ".o") if cache_dir else None
    if cached and object_cache.from_cache(cached, obj):
        return None
    # Eigen comes precompiled where the compiler can read the build's header
    # (outside the sandbox, or a sandbox that shows it: pch_dir): the same
    # object in less than half the time, so the same key. `run_flags`: the
    # flags with the public headers' copy on the include path (build's `headers`).
    use_pch = pch if pch is not None else runner is run_plainly
    cache = [a for a in how.get("compiler_cache", []) if a] if compiler_cache and runner is run_plainly else []
    cpu_limit = cpu_limit or calibration.COMPILE_CPU_FLOOR
    cmd = compile_limits(cpu_limit) + cache + [how["compiler"]] + how.get("run_flags", how["compile_flags"]) + \
        (how.get("pch_flags", []) if use_pch else []) + ["-c", source, "-o", obj]
    timeout = timeout or compile_wall_seconds(cpu_limit)
    name = os.path.basename(source)
    oom_before = host_limits.oom_kills()
    try:
        ran = runner(cmd, timeout, stall=STALL_SECONDS, cpu_limit=cpu_limit)
    except RanPastCpu as e:
        spent.update(cpu=round(e.cpu, 2), ran_past=True)
        return ran_past_cpu(name, cpu_limit, basis)
    except subprocess.TimeoutExpired as e:
        spent["ran_past"] = True
        if e.timeout < timeout:
            return (f"{name}: its compile took no CPU for {STALL_SECONDS:.0f} s: it waited for something (an "
                    "#include of a pipe or a device?) and was stopped")
        return f"{name}: its compile ran past {timeout:.0f} s of wall time, the time a file's compile may take"
    status, output = ran[:2] if isinstance(ran, tuple) else (ran.status, ran.output)
    spent["cpu"] = None if isinstance(ran, tuple) else round(ran.cpu, 2)
    if status != 0:
        killed = resource_failure(status, oom_before)
        if killed:
            raise ResourceFailure(f"the compiler of {name} was killed; what ran out: {killed}")
        # The backstop's kill (a runner that does not watch the CPU): the
        # kernel's clock is ahead of wait4's figure (9 s at a 10 s limit, seen).
        if spent["cpu"] is not None and spent["cpu"] >= cpu_limit:
            spent["ran_past"] = True
            return ran_past_cpu(name, cpu_limit, basis)
        if "out of memory allocating" in output or "virtual memory exhausted" in output:
            # The compiler's words (a handin may write them itself: never
            # evidence of anything), then what they would mean here.
            return (f"{output.rstrip()}\n{name}: its compile ran out of the {limits.COMPILE_DATA_MIB} MiB a file's "
                    "compile may hold (the reference's largest takes 330 MiB)")
        return output or f"the compiler failed with status {status}"
    if cached:
        # The object is the compiler's, in a directory the sandbox user owns:
        # read without following a link, and never more than a file may hold.
        try:
            data = open_sandbox_file(obj, MAX_OBJECT_BYTES)
        except OSError as e:
            return f"{name}: the compiled object can't be used: {e}"
        object_cache.to_cache(cache_dir, cached, data)
    return None


def ran_past_cpu(name: str, cpu_limit: float, basis: str) -> str:
    return (f"{name}: its compile ran past {cpu_limit:.0f} s of CPU, the time a file's compile may take "
            f"here ({basis or 'the least a compile gets'})")


def own_names(messages: Optional[str], impl_dir: str) -> Optional[str]:
    """The compiler's messages with the student's files named as the student
    knows them (func_impl.cpp:12:27), not by the scratch directory they were
    compiled in."""
    if messages is None:
        return None
    for where in dict.fromkeys([os.path.realpath(impl_dir), os.path.abspath(impl_dir), impl_dir]):
        messages = messages.replace(where.rstrip("/") + "/", "")
    return messages


def place_side(build_dir: str, output: str) -> bool:
    """Puts the build's MPI side (framework/comm/comm_link.h) beside the binary,
    where tools/kitrun looks for it: a grading's binary lies in the sandbox,
    which may see nothing of the kit's build. False if the build has none."""
    side = os.path.join(build_dir, "kit_mpi_side")
    there = os.path.join(os.path.dirname(os.path.abspath(output)), "kit_mpi_side")
    if os.path.abspath(side) == there:
        return True
    if not os.path.isfile(side):
        return False
    copy_program(side, there, 0o755)
    return True


def copy_program(source: str, there: str, mode: int) -> None:
    """A program copied to `there` with `mode`, whole or not at all."""
    shutil.copyfile(source, there + ".tmp")
    os.chmod(there + ".tmp", mode)
    os.replace(there + ".tmp", there)


HIDDEN_OBJECTS = os.sep + os.path.join("grader", "hidden") + os.sep  # in the path of a hidden case file's object


def public_twin(binary: str) -> str:
    """The binary the public cases run in when grading: the same, without
    the hidden cases, whose names and code then never run beside a public
    case whose messages students read."""
    return binary + "_public"


def server_of(binary: str) -> str:
    """The student process's program linked beside a grading's test binary
    (build's `server`): the same student objects, for the driven parts."""
    return binary + "_server"


def place_driven_harness(build_dir: str, beside: str) -> str:
    """Copies the build's driven harness and its public twin beside the
    binary `beside` (a grading's, in the sandbox); returns the harness's path."""
    there = os.path.join(os.path.dirname(os.path.abspath(beside)), "kit_tests_driven")
    for name in (there, public_twin(there)):
        copy_program(os.path.join(build_dir, os.path.basename(name)), name, 0o711)  # run, not read: hidden cases
    return there


def build(impl_dir: str, output: str, build_dir: str, fallback: Optional[str] = None, runner=run_plainly,
          obj_dir: Optional[str] = None, refused: Optional[Dict[str, str]] = None, pch: Optional[bool] = None,
          workers: Optional[int] = None, headers: Optional[str] = None,
          enforce: Optional[bool] = None, compiler_cache: bool = False, twin: bool = False,
          server: Optional[str] = None, in_process: bool = True) -> Dict:
    """Compiles with `runner(cmd, timeout) -> (status, output)` (the grader's
    sandbox); files named in `refused` (name -> why) are not compiled at all.
    `pch`: whether the compiler may use the precompiled header (default:
    outside a sandbox only); `workers`: compilers at once (default: the CPUs);
    `headers`: a copy of the public headers (public_headers_copy) to put on
    the include path in place of the kit's directory.
    Each file's report says what the link check found ("link_findings") and
    whether that refused it ("link_refused"; KIT_STATIC_CHECKS=warn, or
    `enforce=False`, only reports), and what its compile took ("cpu",
    "ran_past": compile_one), against its limit on this machine
    (kit/calibration.py). `compiler_cache`: compile_one's. `twin`: also link
    public_twin(output), without the hidden cases (a grading's). `server`:
    also link the same objects into this student process's program of the
    driven mode (student_server; kit/jobs.py, Driven). `in_process`: False
    where every part graded is driven: no test program holds the handin
    then, and `output` (and its twin) are not linked."""
    enforce = link_check.enforced() if enforce is None else enforce
    how = recipe(build_dir)
    limits = calibration.limits(build_dir)
    if headers:
        how["run_flags"] = [f for f in how["compile_flags"] if not f.startswith("-I")] + [f"-I{headers}"]
    elsewhere = link_check.defined_elsewhere(how)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    obj_dir = obj_dir or output + ".objs"
    os.makedirs(obj_dir, exist_ok=True)
    refused = refused or {}
    report: Dict = {"files": {}, "linked": False, "link_errors": None}

    def work(name: str):
        source = os.path.join(impl_dir, name)
        obj = os.path.join(obj_dir, name + ".o")
        spent: Dict = {"cpu": None, "ran_past": False}
        if name in refused:
            errors = refused[name]
        elif not os.path.isfile(source):
            errors = f"{name}: missing"
        else:
            errors = own_names(compile_one(how, source, obj, runner=runner, pch=pch, spent=spent,
                                           compiler_cache=compiler_cache, cpu_limit=limits.compile_cpu(name),
                                           basis=limits.compile_basis(name)), impl_dir)
        found: List[str] = []
        if errors is None and name not in refused:
            found = link_check.findings(obj, source, how, elsewhere)
            if found and enforce:
                errors = link_check.explain(found)
        link_refused = bool(found) and errors is not None
        used = "submitted"
        if errors is not None and fallback:
            alt = compile_one(how, os.path.join(fallback, name), obj, runner=runner, pch=pch,
                              cpu_limit=limits.compile_cpu(name))
            used = "fallback" if alt is None else "none"
        elif errors is not None:
            used = "none"
        return name, {"compiled": errors is None, "errors": errors, "used": used, "object": obj,
                      "link_findings": found, "link_refused": link_refused, **spent}

    # Every student file of the build: with the extension parts off, a handin
    # holds none of theirs, and their stubs (the fallback) fill in.
    files = how.get("impl_files") or list(table.IMPL_FILES)
    # The longest compile first, so that two compilers finish together.
    longest_first = sorted(files, key=lambda f: -os.path.getsize(os.path.join(impl_dir, f))
                           if os.path.isfile(os.path.join(impl_dir, f)) else 0)
    with ThreadPoolExecutor(max_workers=max(1, min(len(files), workers or os.cpu_count() or 2))) as pool:
        done = dict(pool.map(work, longest_first))
    report["files"] = {name: done[name] for name in files}
    objects = [r["object"] for r in report["files"].values() if r["used"] != "none"]
    # The link runs as root: only regular files, never a link planted to another object.
    unsafe = [o for o in objects if os.path.islink(o) or not os.path.isfile(o)]
    if unsafe:
        report["link_errors"] = "not regular files, not linked: " + ", ".join(unsafe)
    elif len(objects) == len(files):
        def link(out: str, hidden: bool, kit_inputs: str = "link_inputs") -> subprocess.CompletedProcess:
            inputs = [i for i in how[kit_inputs] if i.endswith(".o") and (hidden or HIDDEN_OBJECTS not in i)]
            cmd = [how["compiler"]] + shlex.split(how["link_flags"]) + inputs + objects + \
                [i for i in how[kit_inputs] if not i.endswith(".o")] + ["-o", out]
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        oom_before = host_limits.oom_kills()
        try:
            proc = link(output, True) if in_process else subprocess.CompletedProcess([], 0, b"")
            if proc.returncode == 0 and twin and in_process:
                proc = link(public_twin(output), False)
            if proc.returncode == 0 and server:
                proc = link(server, False, "server_link_inputs")
        except subprocess.TimeoutExpired:
            report["link_errors"] = "the linker did not finish within 600 s"
            return report
        report["linked"] = proc.returncode == 0 and place_side(build_dir, output)
        if proc.returncode == 0 and not report["linked"]:
            report["link_errors"] = f"{build_dir} has no kit_mpi_side, the ranks' MPI side: run make build"
        elif proc.returncode != 0:
            report["link_errors"] = proc.stdout.decode("utf-8", errors="replace")
            killed = resource_failure(proc.returncode, oom_before)
            if killed:
                raise ResourceFailure(f"the linker was killed; what ran out: {killed}")
    return report

