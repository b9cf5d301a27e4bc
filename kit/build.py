"""Builds the kit's test binary from a directory holding the student files,
against an existing build: only those files are compiled; the framework and
the tests are linked from the build as they are (the grader, `make handin`
and the known-bug checks use it).

Each file compiles separately, so the caller learns which one failed; with
a fallback directory, a file that does not compile is replaced by that
directory's copy (the grader passes the stubs). A submitted file that
compiles is then link-checked (kit/link_check.py): an object it refuses is
treated like a file that does not compile, with the refusals as its errors.
"""
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Tuple

from kit import host_limits, link_check
from kit.host_limits import ResourceFailure
from kit.parts import IMPL_FILES
from kit.safe_read import open_sandbox_file

MAX_OBJECT_BYTES = 64 << 20  # the sandbox's per-file limit: no object the compiler wrote there is larger


class NotBuilt(Exception):
    """The build directory holds no configured kit build."""


def recipe(build: str) -> Dict:
    """How this build compiles a student file and links the test binary:
    CMake writes impl_recipe.json, and the compile flags are those of
    student/func_impl.cpp in compile_commands.json."""
    path = os.path.join(build, "impl_recipe.json")
    try:
        with open(path) as f:
            how = json.load(f)
        with open(os.path.join(build, "compile_commands.json")) as f:
            commands = json.load(f)
    except (OSError, ValueError) as e:
        raise NotBuilt(f"{build} is not a configured kit build ({e}); run `make build` first")
    template = next((c for c in commands if os.path.realpath(c["file"]) == os.path.realpath(how["compile_template"])),
                    None)
    if template is None:
        raise NotBuilt(f"no compile command for {how['compile_template']} in {build}")
    args = template.get("arguments") or shlex.split(template["command"])
    # Drop the source, the output and -c; keep flags, defines and include
    # paths. The precompiled header goes apart (pch_flags): it lives in the
    # build, which the grader's sandbox can't see; compile_one uses it only
    # outside the sandbox.
    flags, skip, pch_flags = [], False, []
    for i, a in enumerate(args[1:], 1):
        if skip:
            skip = False
            continue
        if a == "-o" or (a == "-include" and i + 1 < len(args) and args[i + 1].endswith("cmake_pch.hxx")):
            skip = True
            if a == "-include" and os.path.isfile(args[i + 1] + ".gch"):
                pch_flags = ["-Winvalid-pch", "-include", args[i + 1]]
            continue
        if a in ("-c", "-Winvalid-pch") or os.path.realpath(a) == os.path.realpath(template["file"]):
            continue
        flags.append(a)
    how["compile_flags"] = flags
    how["pch_flags"] = pch_flags
    how["cache_dir"] = os.path.join(build, "impl_cache")
    # The kit's public headers (the -I dirs: framework/include, all that a
    # student file sees) go into every object: a change to one must miss the cache.
    digest = hashlib.sha256()
    for flag in flags:
        if flag.startswith("-I") and os.path.isdir(flag[2:]):
            for name in sorted(os.listdir(flag[2:])):
                if name.endswith(".h"):
                    with open(os.path.join(flag[2:], name), "rb") as f:
                        digest.update(name.encode() + f.read())
    how["header_digest"] = digest.hexdigest()
    return how


# A tool killed by a signal: its status (negative, or 128 + the signal through
# a shell), or the driver's word for its killed back end.
_SIGNALS = {9: f"memory (killed: out of memory, or killed from outside); {host_limits.RAISE['memory']}",
            24: "CPU time (SIGXCPU)", 25: f"file size (SIGXFSZ); {host_limits.RAISE['file size']}",
            6: "the compiler's own abort (SIGABRT)"}
_KILLED_WORDS = ("signal terminated program", "internal compiler error: Killed", "File size limit exceeded",
                 "virtual memory exhausted", "out of memory allocating", "Cannot allocate memory")


def resource_failure(status: int, output: str, oom_before: Optional[int] = None) -> Optional[str]:
    """What ran out, if a compile or link with this status and output was
    killed rather than refused; `oom_before`: the OOM killer's count before
    it ran, which names memory for certain when it rose."""
    signal = -status if status < 0 else status - 128 if 128 < status < 160 else 0
    if oom_before is not None and (signal or status != 0):
        oom = host_limits.killed_by_oom(oom_before)
        if oom:
            return oom
    if signal:
        return _SIGNALS.get(signal, f"signal {signal}")
    for words in _KILLED_WORDS:
        if words in output:
            line = next((l for l in output.splitlines() if words in l), words)
            return f"memory, file size or time: {line.strip()}"
    return None


def run_plainly(cmd: List[str], timeout: float) -> Tuple[int, str]:
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", errors="replace")


def compile_one(how: Dict, source: str, obj: str, timeout: float = 120, runner=run_plainly,
                pch: Optional[bool] = None) -> Optional[str]:
    """Returns None on success, else the compiler's messages; raises
    ResourceFailure when the compiler was killed rather than refused. An object
    compiled before from the same text with the same flags is reused (the
    stubs, the reference's other files), from a cache beside the recipe.
    Its line table names the path it was first compiled from, so a message
    that quotes a student's line (student_line.h) may find no file there."""
    try:
        with open(source, "rb") as f:
            text = f.read()
    except OSError as e:
        return f"{os.path.basename(source)}: cannot read: {e.strerror}"
    flags = [how["compiler"]] + how["compile_flags"]
    cache_dir = how.get("cache_dir")
    key = hashlib.sha256(text + "\0".join(flags + [how.get("header_digest", "")]).encode()).hexdigest()
    cached = os.path.join(cache_dir, key + ".o") if cache_dir else None
    if cached and os.path.exists(cached):
        shutil.copyfile(cached, obj)
        return None
    # Eigen comes precompiled where the compiler can read the build's header
    # (outside the sandbox, or a sandbox that shows it: pch_dir): the same
    # object in less than half the time, so the same key.
    use_pch = pch if pch is not None else runner is run_plainly
    cmd = flags + (how.get("pch_flags", []) if use_pch else []) + ["-c", source, "-o", obj]
    oom_before = host_limits.oom_kills()
    try:
        status, output = runner(cmd, timeout)
    except subprocess.TimeoutExpired:
        return f"the compiler did not finish within {timeout:.0f} s"
    if status != 0:
        killed = resource_failure(status, output, oom_before)
        if killed:
            raise ResourceFailure(f"the compiler of {os.path.basename(source)} was killed; what ran out: {killed}")
        return output or f"the compiler failed with status {status}"
    if cached:
        # The object is the compiler's, in a directory the sandbox user owns:
        # read without following a link, and never more than a file may hold.
        try:
            data = open_sandbox_file(obj, MAX_OBJECT_BYTES)
        except OSError as e:
            return f"{os.path.basename(source)}: the compiled object can't be used: {e}"
        os.makedirs(cache_dir, exist_ok=True)
        tmp = cached + f".{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, cached)
    return None


def own_names(messages: Optional[str], impl_dir: str) -> Optional[str]:
    """The compiler's messages with the student's files named as the student
    knows them (func_impl.cpp:12:27), not by the scratch directory they were
    compiled in."""
    if messages is None:
        return None
    for where in dict.fromkeys([os.path.realpath(impl_dir), os.path.abspath(impl_dir), impl_dir]):
        messages = messages.replace(where.rstrip("/") + "/", "")
    return messages


def pch_dir(build_dir: str) -> Optional[str]:
    """The directory of the build's precompiled header, or None: what a
    sandbox must show its user for the compiler to take it."""
    flags = recipe(build_dir).get("pch_flags", [])
    return os.path.dirname(flags[-1]) if flags else None


def build(impl_dir: str, output: str, build_dir: str, fallback: Optional[str] = None, runner=run_plainly,
          obj_dir: Optional[str] = None, refused: Optional[Dict[str, str]] = None, pch: Optional[bool] = None,
          workers: Optional[int] = None) -> Dict:
    """Compiles with `runner(cmd, timeout) -> (status, output)` (the grader's
    sandbox); files named in `refused` (name -> why) are not compiled at all.
    `pch`: whether the compiler may use the precompiled header (default:
    outside a sandbox only); `workers`: compilers at once (default: the CPUs).
    Each file's report says what the link check found ("link_findings") and
    whether that refused it ("link_refused"; KIT_STATIC_CHECKS=warn only reports)."""
    how = recipe(build_dir)
    elsewhere = link_check.defined_elsewhere(how)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    obj_dir = obj_dir or output + ".objs"
    os.makedirs(obj_dir, exist_ok=True)
    refused = refused or {}
    report: Dict = {"files": {}, "linked": False, "link_errors": None}

    def work(name: str):
        source = os.path.join(impl_dir, name)
        obj = os.path.join(obj_dir, name + ".o")
        if name in refused:
            errors = refused[name]
        elif not os.path.isfile(source):
            errors = f"{name}: missing"
        else:
            errors = own_names(compile_one(how, source, obj, runner=runner, pch=pch), impl_dir)
        found: List[str] = []
        if errors is None and name not in refused:
            found = link_check.findings(obj, source, how, elsewhere)
            if found and link_check.enforced():
                errors = link_check.explain(found)
        link_refused = bool(found) and errors is not None
        used = "submitted"
        if errors is not None and fallback:
            alt = compile_one(how, os.path.join(fallback, name), obj, runner=runner, pch=pch)
            used = "fallback" if alt is None else "none"
        elif errors is not None:
            used = "none"
        return name, {"compiled": errors is None, "errors": errors, "used": used, "object": obj,
                      "link_findings": found, "link_refused": link_refused}

    # Every student file of the build: with the extension parts off, a handin
    # holds none of theirs, and their stubs (the fallback) fill in.
    files = how.get("impl_files") or list(IMPL_FILES)
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
        cmd = [how["compiler"]] + shlex.split(how["link_flags"]) + \
            [i for i in how["link_inputs"] if i.endswith(".o")] + objects + \
            [i for i in how["link_inputs"] if not i.endswith(".o")] + ["-o", output]
        oom_before = host_limits.oom_kills()
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        except subprocess.TimeoutExpired:
            report["link_errors"] = "the linker did not finish within 600 s"
            return report
        report["linked"] = proc.returncode == 0
        if not report["linked"]:
            report["link_errors"] = proc.stdout.decode("utf-8", errors="replace")
            killed = resource_failure(proc.returncode, report["link_errors"], oom_before)
            if killed:
                raise ResourceFailure(f"the linker was killed; what ran out: {killed}")
    return report

