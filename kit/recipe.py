"""How a kit build compiles a student file and links the test binary, read
from the build CMake configured (impl_recipe.json, compile_commands.json):
the compiler's flags, the precompiled header apart, and the public headers
a compile of a student file sees. kit/build.py compiles with it, and the
link check (kit/link_check.py) reads the link's other inputs from it.
"""
import hashlib
import json
import os
import shlex
import shutil
from typing import Dict, Optional


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
    # A name's last part first: realpath on each of the build's hundreds of
    # commands cost a grading 0.1 s, asked a dozen times.
    wanted = how["compile_template"]
    template = next((c for c in commands if os.path.basename(c["file"]) == os.path.basename(wanted)
                     and os.path.realpath(c["file"]) == os.path.realpath(wanted)), None)
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
        if a in ("-c", "-Winvalid-pch") or (os.path.basename(a) == os.path.basename(template["file"])
                                             and os.path.realpath(a) == os.path.realpath(template["file"])):
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


def public_headers_copy(build_dir: str, dest: str) -> str:
    """Copies the public headers (the recipe's -I directories) into `dest`,
    made for the grader's user and readable by all: pointed to instead of
    the kit's, they are all a compile sees of the kit, so that a relative
    path out of the include directory (`#include "../../tests/..."`) finds
    nothing. Returns `dest`."""
    os.makedirs(dest, mode=0o755, exist_ok=True)
    for flag in recipe(build_dir)["compile_flags"]:
        if flag.startswith("-I") and os.path.isdir(flag[2:]):
            for name in sorted(os.listdir(flag[2:])):
                if name.endswith(".h"):
                    shutil.copyfile(os.path.join(flag[2:], name), os.path.join(dest, name))
                    os.chmod(os.path.join(dest, name), 0o644)
    os.chmod(dest, 0o755)
    return dest


def pch_dir(build_dir: str) -> Optional[str]:
    """The directory of the build's precompiled header, or None: what a
    sandbox must show its user for the compiler to take it."""
    flags = recipe(build_dir).get("pch_flags", [])
    return os.path.dirname(flags[-1]) if flags else None
