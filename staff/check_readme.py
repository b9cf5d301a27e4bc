"""Runs every command of the top-level README.md and of docs/*.md, so that
none can rot.

  python3 -m staff.check_readme            (CI runs it from .ci/run, before make check)

Every line of a ```sh block is a command, run once however many documents
show it; `# ...` comments are dropped. Three exceptions, all printed:
  - `make check` and `make check-platforms` are stages of .ci/run of their
    own, so they are not run twice (a command skipped so must be in .ci/run);
  - the student loop runs on the solution (IMPL=reference is appended to a
    make command that builds on student/), since the stubs are meant to fail;
  - `make bench` runs with BENCH_ARGS=--quick (one run each, 8,000 samples).
Where the README promises a result (150/150), the output must show it.
The grading commands need handins: `make handin` (run first, as written)
writes handin.tar, and handins/ is filled with a copy of it. Whatever the
commands write at the top of the kit (handin.tar, handins/, out/,
results.json) is removed afterwards.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

from kit import parts as table
from kit.paths import KIT_DIR as KIT

STUDENT_TARGETS = ("test", "mpi-demo", "train", "explore", "trace")  # test-partN, train-zero too
LEFTOVERS = ("handin.tar", "handins", "out", "results.json")
SKIPPED = {"make check": "CI runs it next", "make check-platforms": ".ci/run runs it as a stage of its own"}
CI_SCRIPT = os.path.join(".ci", "run")
# What a command's output must show, where the README promises a result
# (a command can exit 0 and still do the wrong thing).
def promised():
    total, first = table.TOTAL_POINTS, table.PARTS[0]
    return {
        "make grade-reference": rf"^total\s+{total} / {total}$",
        f"make test-{first.key}": rf"^{first.key}: {first.points} / {first.points} points",
        "make test": rf"^total: {total} / {total} points$",
    }


def commands(readme: str):
    in_block = False
    with open(readme) as f:
        for line in f:
            if line.lstrip().startswith("```"):  # a list item's block is indented
                in_block = line.strip() == "```sh"
                continue
            if in_block:
                command = re.sub(r"\s+#.*$", "", line).strip()
                if command and not command.startswith("#"):
                    yield command


def adjusted(command: str) -> str:
    words = command.split()
    target = words[words.index("make") + 1] if "make" in words[:-1] else ""
    if target.startswith(STUDENT_TARGETS) and "IMPL=" not in command:
        return command + " IMPL=reference"
    if target == "bench":
        return command + " BENCH_ARGS=--quick"  # the full run takes minutes; CI checks that it works
    return command


def documents():
    """The README, then docs/ in name order."""
    docs = os.path.join(KIT, "docs")
    return [os.path.join(KIT, "README.md")] + sorted(
        os.path.join(docs, n) for n in (os.listdir(docs) if os.path.isdir(docs) else []) if n.endswith(".md"))


def main(argv) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    ran, failed = 0, []
    env = dict(os.environ, CI=os.environ.get("CI", "true"))
    with open(os.path.join(KIT, CI_SCRIPT)) as f:
        ci = f.read()
    seen = set()
    try:
        for command in (c for doc in documents() for c in commands(doc)):
            if command in seen:
                print(f"-- ran already: {command}", flush=True)
                continue
            seen.add(command)
            tail = command.split("&&")[-1].strip()
            if tail in SKIPPED:
                if not re.search(rf"^\s*{re.escape(tail)}\s*$", ci, re.MULTILINE):
                    failed.append(command)
                    print(f"-- not run and not in {CI_SCRIPT}: {command}")
                    continue
                print(f"-- skipped: {command}   ({SKIPPED[tail]})", flush=True)
                continue
            if "handins/" in command and os.path.isfile(os.path.join(KIT, "handin.tar")):
                os.makedirs(os.path.join(KIT, "handins"), exist_ok=True)
                shutil.copy(os.path.join(KIT, "handin.tar"), os.path.join(KIT, "handins", "alice.tar"))
            actual = adjusted(command)
            print(f"-- {actual}", flush=True)
            started = time.monotonic()
            proc = subprocess.run(actual, shell=True, cwd=KIT, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
            ran += 1
            lines = proc.stdout.rstrip().splitlines()
            print("\n".join("   " + line for line in lines[-4:]))
            print(f"   (exit {proc.returncode}, {time.monotonic() - started:.1f} s)", flush=True)
            promise = promised().get(re.sub(r"\s+MPI=\S+", "", tail))  # the same promise under either MPI
            broken = promise is not None and not re.search(promise, proc.stdout, re.MULTILINE)
            if broken:
                print(f"   the output lacks a line matching {promise!r}")
            if broken or proc.returncode != 0:
                failed.append(command)
                print("\n".join(lines[-40:]))
    finally:
        for name in LEFTOVERS:
            path = os.path.join(KIT, name)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.unlink(path)
    print(f"check_readme: {ran} commands of the README and docs/ ran, {len(failed)} failed"
          + (": " + "; ".join(failed) if failed else ""))
    return 1 if failed or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
