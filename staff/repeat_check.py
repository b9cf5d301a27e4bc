"""Full marks for correct code, every time: the whole public suite, run
again and again on several correct implementations, half of the runs beside
CPU hogs, must never lose a point.

  python3 -m staff.repeat_check [--runs 30] [--hogs 2] [--build DIR]   (.ci/run: --runs 6)

The implementations: the reference, and the correct variants of the known-bug
table (staff/mutants.py, "correct: ..."), each written differently where the
grading is most delicate (the ZeRO layer's buffers: a temporary moved or
copied into the shard, std::vector buffers, Eigen temporaries). Each run is what
`make test` runs after its build: every part's cases sharing one MPI job.
Runs take turns between the implementations; every other run has `--hogs`
busy processes beside it. It prints each run's total and time, and fails
(exit 1) on any run short of full marks, with the cases that failed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List, Tuple

from kit import parts as table
from kit.build import build as build_impl
from kit.paths import KIT_DIR, REFERENCE_DIR, build_dir
from staff.mutants import MUTANTS


def implementations(build: str, scratch: str) -> List[Tuple[str, str]]:
    """(name, test binary) for the reference and each correct variant."""
    found = [("reference", os.path.join(build, "reference", "kit_tests"))]
    for variant in (m for m in MUTANTS if not m.loses):
        impl = os.path.join(scratch, str(len(found)), "impl")
        os.makedirs(impl)
        for name in table.built_files():  # the extension parts' files too: the build links them
            shutil.copy(os.path.join(REFERENCE_DIR, name), impl)
        path = os.path.join(impl, variant.file)
        with open(path) as f:
            text = f.read()
        if variant.find not in text:
            raise SystemExit(f"repeat_check: the reference no longer holds the text of {variant.name!r}")
        with open(path, "w") as f:
            f.write(text.replace(variant.find, variant.replace, 1))
        binary = os.path.join(scratch, str(len(found)), "student", "kit_tests")
        if not build_impl(impl, binary, build)["linked"]:
            raise SystemExit(f"repeat_check: {variant.name!r} does not build")
        found.append((variant.name, binary))
    return found


def start_hogs(count: int) -> List[subprocess.Popen]:
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(count)]


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--hogs", type=int, default=2, help="busy processes beside every other run")
    ap.add_argument("--build", help="the CMake build directory (default: $KIT_BUILD or build/)")
    args = ap.parse_args(argv)
    build = build_dir(args.build)
    total = table.TOTAL_POINTS
    lost = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kit-repeat-") as scratch:
        impls = implementations(build, scratch)
        print(f"repeat_check: {args.runs} runs of the whole suite over {len(impls)} correct implementations, "
              f"every other one beside {args.hogs} CPU hogs", flush=True)
        for run in range(args.runs):
            name, binary = impls[run % len(impls)]
            loaded = run % 2 == 1 and args.hogs > 0
            hogs = start_hogs(args.hogs) if loaded else []
            begun = time.monotonic()
            try:
                proc = subprocess.run([sys.executable, "-m", "kit", "test", "--all", "--binary", binary, "--build", build],
                                      cwd=KIT_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      timeout=900)
            finally:
                for hog in hogs:
                    hog.kill()
                    hog.wait()
            found = re.search(r"^total: ([\d.]+) / (\d+) points", proc.stdout, re.M)
            got = found.group(1) if found else "no total"
            ok = found is not None and float(found.group(1)) == total
            print(f"  run {run + 1:2d}: {got} / {total}  {'beside hogs' if loaded else 'quiet      '}  "
                  f"{time.monotonic() - begun:5.1f} s  {name}", flush=True)
            if not ok:
                lost += 1
                print("\n".join("      " + line for line in proc.stdout.splitlines()
                                if line.lstrip().startswith(("FAIL", "!!")) or "gates the part" in line))
    print(f"repeat_check: {args.runs - lost} of {args.runs} runs at {total} / {total} "
          f"({time.monotonic() - started:.0f} s)")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
