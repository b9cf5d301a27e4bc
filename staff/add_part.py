"""Follows the recipe "Add a part" of docs/course-staff.md in a scratch copy of the kit, and
checks that the new part shows everywhere a part shows: `make test`'s
table, the stubs' message, the grader's report, the Autolab line, the
Gradescope JSON, and the handout cut. CTest runs it (staff/add_part).

  python3 -m staff.add_part [--keep DIR]

The toy part, part14, sums a matrix over the ranks, and is graded driven,
as every part of the table is: its function runs in the student's process
(docs/driven-calls.md). A part is found by its key: the recipe adds new
files (its test, the file that serves its function, hidden cases and
handout section under its key, its stub and solution in a student file of
its own) and one row of the table, and the check fails if it touched any
other file (RECIPE_FILES). The grader's report then runs its cases driven.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from typing import List

from kit.parts import TOTAL_POINTS
from kit.paths import KIT_DIR

KEY, POINTS, TITLE, SECTION = "part14", 5, "toy sum", "Part 14"
FILE = "toy_sum.cpp"  # the toy's student file
# 1. the table row, before the line that ends the table
ROW = (f'    part("{KEY}", "{TITLE}", {POINTS}, [Run("Part14Toy.*", 2)], [4], ["{FILE}"],\n'
       f'         under("tests", "{KEY}", "test_part14_toy.cpp"), "{SECTION}", functions=["toy_sum"], driven=True,\n'
       f'         adds=Adds(served=under("tests", "{KEY}", "toy_served.cpp"),\n'
       f'                   hidden=under("grader/hidden", "{KEY}", "hidden_toy.cpp"), handout=texts("{KEY}"))),\n')
TABLE_END = "\n]\n# The table's own points"
DECLARATION = "namespace dtrain {\nMatrix toy_sum(const Matrix& x, Communicator& comm);  // (B, D) -> (B, D)\n}\n"
HEAD = '#include "comm.h"\n#include "not_implemented.h"\n#include "tensor.h"\n\n' + DECLARATION
# The cases call it as KIT_STUDENT_CALL: in one process (make test) the
# function itself; in the grader's driven harness a call of the student's
# process, which serves it (its served file).
CASE_HEAD = '#include "kit_test.h"\n#include "student_calls.h"\n' + HEAD.replace('#include "not_implemented.h"\n', "")
NEW_FILES = {
    # 2. the test file
    f"tests/{KEY}/test_part14_toy.cpp":
        "// Part 14, the toy part of the README's recipe. Two ranks.\n//   make test-part14\n"
        + CASE_HEAD + "\nusing namespace kit;\n\nTEST(Part14Toy, TwoRanksSumTheirRows) {\n"
        "  const Matrix got = KIT_STUDENT_CALL(toy_sum, arange(2, 2, 4.0 * rank()), world());\n"
        "  EXPECT_MATRIX_NEAR(got, mat(2, 2, {4, 6, 8, 10}));\n}\n\n"
        "TEST(Part14Toy, TheSumHasTheInputsShape) {\n"
        "  EXPECT_EQ(KIT_STUDENT_CALL(toy_sum, arange(3, 1), world()).rows(), 3);\n}\n",
    # ... and the student's process of the grader's driven mode serves it
    f"tests/{KEY}/toy_served.cpp":
        "// Part 14, the toy part: toy_sum as the student's process of the driven mode serves it.\n"
        "#include \"driven.h\"\n" + HEAD.replace('#include "not_implemented.h"\n', "") +
        "\nKIT_SERVED(\"toy_sum\", &dtrain::toy_sum);\n",
    # 3. the stub and the solution, a student file of its own
    f"student/{FILE}": "// Part 14, the toy part: sum a matrix over the ranks. You edit this file.\n" + HEAD +
        "\nnamespace dtrain {\nMatrix toy_sum([[maybe_unused]] const Matrix& x, [[maybe_unused]] Communicator& comm) {\n"
        f"  throw NotImplemented(\"toy_sum\", \"{SECTION}\");\n}}\n}}  // namespace dtrain\n",
    f"reference/{FILE}": "// Part 14, the toy part: the solution.\n" + HEAD +
        "\nnamespace dtrain {\nMatrix toy_sum(const Matrix& x, Communicator& comm) {\n"
        "  Matrix total(x.rows(), x.cols());\n  comm.allreduce(x, total, Op::Sum);\n"
        "  return total;\n}\n}  // namespace dtrain\n",
    # 4. a hidden case
    f"grader/hidden/{KEY}/hidden_toy.cpp":
        "// The toy part's hidden case: four ranks.\n" + CASE_HEAD + "\nusing namespace kit;\n\n"
        "TEST(HiddenPart14Toy, FourRanksSumTheirNumbers) {\n"
        "  const Matrix got = KIT_STUDENT_CALL(toy_sum, arange(1, 3, 10.0 * rank()), world());\n"
        "  EXPECT_MATRIX_NEAR(got, mat(1, 3, {60, 64, 68}));\n}\n",
    # 5. the handout's section
    f"handout/parts/{KEY}.md": f"## {SECTION} — {TITLE} ({POINTS} points)\n\n"
        f"Implement `toy_sum` in `{FILE}`: every rank passes a matrix and gets the sum "
        "over the ranks. Test it with `make test-part14`.\n",
}
RECIPE_FILES = {"kit/parts.py"} | set(NEW_FILES)
SKIPPED = {".git", "build", "dist", "__pycache__", "handin.tar"}


def copy_kit(dest: str) -> None:
    def ignore(_dir, names):
        # build-mpich/ too: every build directory belongs to its own kit copy
        return [n for n in names if n in SKIPPED or n.startswith("build-") or n.endswith(".pyc")]
    shutil.copytree(KIT_DIR, dest, ignore=ignore, symlinks=True)


def git(kit: str, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=kit", "-c", "user.email=kit@localhost", *args], cwd=kit,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=True).stdout


def follow_recipe(kit: str) -> None:
    table = os.path.join(kit, "kit", "parts.py")
    with open(table) as f:
        text = f.read()
    if TABLE_END not in text:
        raise SystemExit(f"add_part: kit/parts.py no longer ends its table with {TABLE_END!r}")
    with open(table, "w") as f:
        f.write(text.replace(TABLE_END, "\n" + ROW.rstrip("\n") + TABLE_END, 1))
    for path, content in NEW_FILES.items():
        os.makedirs(os.path.dirname(os.path.join(kit, path)), exist_ok=True)
        with open(os.path.join(kit, path), "x") as f:
            f.write(content)


def in_copy(cmd: List[str], kit: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Runs a command in the copy, which uses its own build (never $KIT_BUILD's)."""
    return subprocess.run(cmd, cwd=kit, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                          env={k: v for k, v in os.environ.items() if k != "KIT_BUILD"})


def make(kit: str, problems: List[str], *args: str) -> str:
    """The output of a make command in the copy; a failure is a problem."""
    proc = in_copy(["make", "--no-print-directory", *args], kit)
    print(f"-- make {' '.join(args)}: exit {proc.returncode}", flush=True)
    if proc.returncode != 0:
        problems.append(f"make {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
    return proc.stdout


def checks(kit: str) -> List[str]:
    problems: List[str] = []
    total = TOTAL_POINTS + POINTS

    def expect(text: str, pattern: str, where: str) -> None:
        if not re.search(pattern, text, re.M):
            problems.append(f"{where}: no line matches {pattern!r}; the output ends:\n" +
                            "\n".join(text.strip().splitlines()[-12:]))

    touched = {line[3:] for line in git(kit, "status", "--porcelain", "--untracked-files=all").splitlines()}
    if touched != RECIPE_FILES:
        problems.append(f"the recipe touched {sorted(touched)}, expected exactly {sorted(RECIPE_FILES)}")
    built = len(problems)
    make(kit, problems, "build")  # build/, or build-mpich/ under MPI=mpich
    if len(problems) > built:
        return problems
    build_dir = next((b for b in ("build", "build-mpich") if os.path.isdir(os.path.join(kit, b))), "build")
    with open(os.path.join(kit, build_dir, "generated", "parts.cmake")) as f:
        driven = next((line for line in f if line.startswith("set(KIT_DRIVEN_PARTS ")), "")
    if f" {KEY})" not in driven and f" {KEY} " not in driven:
        problems.append(f"the driven harness does not grade {KEY}: {driven.strip() or 'no KIT_DRIVEN_PARTS line'}")
    solved = make(kit, problems, "test", "IMPL=reference")
    expect(solved, rf"^{KEY}: {POINTS} / {POINTS} points", "make test IMPL=reference")
    expect(solved, rf"^total: {total} / {total} points$", "make test IMPL=reference")
    stubs = make(kit, problems, "test-part14")
    expect(stubs, rf"^{KEY}: 0 / {POINTS} points", "make test-part14 (stubs)")
    expect(stubs, r"toy_sum is not implemented yet \(handout: Part 14\)", "make test-part14 (stubs)")
    graded = make(kit, problems, "hidden-data")  # the judge's values for the new cases, then grade-reference
    expect(graded, rf"^{KEY}\s+{POINTS} / {POINTS}\s+3/3\s+{TITLE}$", "the grader's report (2 public + 1 hidden case)")
    autolab = json.loads(graded.strip().splitlines()[-1]) if graded.strip() else {}
    if autolab.get("scores", {}).get(KEY) != POINTS or autolab.get("scoreboard") != [float(total)]:
        problems.append(f"the Autolab line lacks {KEY} = {POINTS} or the total {total}: {autolab}")
    results = os.path.join(kit, "gradescope.json")
    in_copy([sys.executable, "grader/grade", "--build", build_dir, os.path.join(build_dir, "reference-handin.tar"),
             "--gradescope", results], kit)
    try:
        with open(results) as f:
            tests = {t["name"]: t for t in json.load(f)["tests"]}
        if tests.get(f"{KEY}: {TITLE}", {}).get("score") != POINTS:
            problems.append(f"Gradescope's results.json has no test '{KEY}: {TITLE}' scoring {POINTS}")
    except (OSError, ValueError, KeyError) as e:
        problems.append(f"Gradescope's results.json is missing or malformed: {e}")
    out = in_copy([sys.executable, "-m", "staff.dist", "handout", "--no-verify"], kit)
    if out.returncode != 0:
        problems.append("the handout cut failed:\n" + out.stdout[-2000:])
    else:
        with tarfile.open(os.path.join(kit, "dist", "handout.tar.gz")) as tar:
            names = tar.getnames()
            readme = tar.extractfile("dtrain-kit/README.md").read().decode()
            stub = tar.extractfile(f"dtrain-kit/student/{FILE}").read().decode()
        if f"dtrain-kit/tests/{KEY}/test_part14_toy.cpp" not in names:
            problems.append(f"the handout lacks tests/{KEY}/test_part14_toy.cpp")
        if f"student/{FILE}\n" not in readme or f"| `student/{FILE}` | 14 |" not in readme:
            problems.append(f"the handout's list of files, or of what make handin packs, lacks student/{FILE}")
        if f"## {SECTION}" not in readme or "throw NotImplemented(\"toy_sum\"" not in stub:
            problems.append("the handout lacks the new section or the new stub")
        # Its row of the parts table and its total, made from the table (kit/handout_text.py).
        if f"| 14 | {KEY} | `toy_sum` | {POINTS} | 2 | `make test-part14` |" not in readme or \
                f"`total: X / {total} points`" not in readme or f"[{SECTION}](#" not in readme:
            problems.append("the handout's parts table, total or Contents lacks the new part")
        if any("/reference/" in n or "/staff/" in n for n in names):
            problems.append("the handout ships reference/ or staff/")
    check = in_copy([sys.executable, "-m", "kit", "check-handout"], kit)
    if check.returncode != 0:
        problems.append("kit check-handout fails:\n" + check.stdout[-2000:])
    return problems


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m staff.add_part", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", metavar="DIR", help="copy the scratch kit here afterwards")
    args = ap.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="kit-add-part-")
    os.chmod(scratch, 0o755)  # the grader's sandbox user must reach the copy
    kit = os.path.join(scratch, "kit")
    try:
        copy_kit(kit)
        git(kit, "init", "-q")
        git(kit, "add", "-A")
        git(kit, "commit", "-qm", "before the recipe")
        follow_recipe(kit)
        problems = checks(kit)
    finally:
        if args.keep:
            shutil.copytree(kit, args.keep, dirs_exist_ok=True, symlinks=True)
        shutil.rmtree(scratch, ignore_errors=True)
    for p in problems:
        print(f"add_part: {p}")
    print(f"add_part: {'the new part shows everywhere' if not problems else 'FAILED'}")
    print(f"{0 if problems else 1} passed, {1 if problems else 0} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
