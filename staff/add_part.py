"""Follows the recipe "Add a part" of docs/course-staff.md in a scratch copy of the kit, and
checks that the new part shows everywhere a part shows: `make test`'s
table, the stubs' message, the grader's report, the Autolab line, the
Gradescope JSON, and the handout cut. CTest runs it (staff/add_part).

  python3 -m staff.add_part [--keep DIR]

The toy part, part17_toy, sums a matrix over the ranks. It is an extension
part with everything a part can add: a student file, public and hidden
cases graded driven (its function runs in the student's process,
docs/driven-calls.md), a program, a command of `python3 -m kit` and a rule
of the judge's. A part is found by its key: the recipe adds new files and
one row of the table, and the check fails if it touched any other file
(RECIPE_FILES). Then the course turns it on in its one data file,
course.toml, as any course turns on an extension part; with it off, no
output shows it.
"""
import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from typing import List

from kit import parts as table
from kit.paths import KIT_DIR

KEY, POINTS, TITLE, SECTION, NUMBER = "part17_toy", 5, "toy sum", "Part 17", 17
ABOUT = "a toy sum over the ranks"  # an extension part's line in the handout's list of files
FILE = "toy_sum.cpp"  # the toy's student file
RULE_WORDS = "toy_sum moved"  # the toy's rule, in its own words (kit/rules/part17_toy.py)
# 1. the table row, before the line that ends the table
ROW = (f'    part("{KEY}", "{TITLE}", {POINTS}, [Run("Part17Toy.*", 2)], [4], ["{FILE}"],\n'
       f'         under("tests", "{KEY}", "test_part17_toy.cpp"), "{SECTION}", functions=["toy_sum"], driven=True,\n'
       f'         extension=True, about="{ABOUT}", traffic=True, rules=["{KEY}"],\n'
       f'         adds=Adds(served=under("tests", "{KEY}", "toy_served.cpp"),\n'
       f'                   programs=under("programs", "{KEY}", "toy_demo.cpp"),\n'
       f'                   hidden=under("grader/hidden", "{KEY}", "hidden_toy.cpp"), handout=texts("{KEY}"),\n'
       f'                   other=("kit/{KEY}.py", "kit/rules/{KEY}.py"),\n'
       f'                   commands=(("toy", "kit.{KEY}", "run the toy part\'s program on 2 ranks"),))),\n')
TABLE_END = "\n]\n# The table's own points"
DECLARATION = "namespace dtrain {\nMatrix toy_sum(const Matrix& x, Communicator& comm);  // (B, D) -> (B, D)\n}\n"
HEAD = '#include "comm.h"\n#include "not_implemented.h"\n#include "tensor.h"\n\n' + DECLARATION
# The cases call it as KIT_STUDENT_CALL: in one process (make test) the
# function itself; in the grader's driven harness a call of the student's
# process, which serves it (its served file).
CASE_HEAD = '#include "kit_test.h"\n#include "student_calls.h"\n' + HEAD.replace('#include "not_implemented.h"\n', "")
SOLUTION = ("\nnamespace dtrain {\nMatrix toy_sum(const Matrix& x, Communicator& comm) {\n"
            "  Matrix total(x.rows(), x.cols());\n  comm.allreduce(x, total, Op::Sum);\n"
            "  return total;\n}\n}  // namespace dtrain\n")
NEW_FILES = {
    # 2. the test file
    f"tests/{KEY}/test_part17_toy.cpp":
        "// Part 17, the toy part of the README's recipe. Two ranks.\n//   make test-part17\n"
        + CASE_HEAD + "\nusing namespace kit;\n\nTEST(Part17Toy, TwoRanksSumTheirRows) {\n"
        "  const Matrix got = KIT_STUDENT_CALL(toy_sum, arange(2, 2, 4.0 * rank()), world());\n"
        "  EXPECT_MATRIX_NEAR(got, mat(2, 2, {4, 6, 8, 10}));\n}\n\n"
        "TEST(Part17Toy, TheSumHasTheInputsShape) {\n"
        "  EXPECT_EQ(KIT_STUDENT_CALL(toy_sum, arange(3, 1), world()).rows(), 3);\n}\n",
    # ... and the student's process of the grader's driven mode serves it
    f"tests/{KEY}/toy_served.cpp":
        "// Part 17, the toy part: toy_sum as the student's process of the driven mode serves it.\n"
        "#include \"driven.h\"\n" + HEAD.replace('#include "not_implemented.h"\n', "") +
        "\nKIT_SERVED(\"toy_sum\", &dtrain::toy_sum);\n",
    # 3. the stub and the solution, a student file of its own
    f"student/{FILE}": "// Part 17, the toy part: sum a matrix over the ranks. You edit this file.\n" + HEAD +
        "\nnamespace dtrain {\nMatrix toy_sum([[maybe_unused]] const Matrix& x, [[maybe_unused]] Communicator& comm) {\n"
        f"  throw NotImplemented(\"toy_sum\", \"{SECTION}\");\n}}\n}}  // namespace dtrain\n",
    f"reference/{FILE}": "// Part 17, the toy part: the solution.\n" + HEAD + SOLUTION,
    # 4. a hidden case
    f"grader/hidden/{KEY}/hidden_toy.cpp":
        "// The toy part's hidden case: four ranks.\n" + CASE_HEAD + "\nusing namespace kit;\n\n"
        "TEST(HiddenPart17Toy, FourRanksSumTheirNumbers) {\n"
        "  const Matrix got = KIT_STUDENT_CALL(toy_sum, arange(1, 3, 10.0 * rank()), world());\n"
        "  EXPECT_MATRIX_NEAR(got, mat(1, 3, {60, 64, 68}));\n}\n",
    # 5. the handout's section
    f"handout/parts/{KEY}.md": f"## {SECTION} — {TITLE} ({POINTS} points)\n\n"
        f"Implement `toy_sum` in `{FILE}`: every rank passes a matrix and gets the sum "
        "over the ranks. Test it with `make test-part17`; `python3 -m kit toy` runs it in a program.\n",
    # 6. a program, built against each implementation as its file's name
    f"programs/{KEY}/toy_demo.cpp":
        "// toy_demo (the toy part of staff/add_part.py's recipe): each rank passes a row of\n"
        "// its rank + 1, and rank 0 prints the sum toy_sum returns.\n"
        "//   python3 -m kit toy\n"
        "#include <cstdio>\n\n#include \"program_main.h\"\n#include \"tensor.h\"\n\n" + DECLARATION +
        "\nint main(int argc, char** argv) {\n"
        "  return dtrain::program_main(\"toy_demo\", argc, argv, [](dtrain::Communicator& world, int, char**) {\n"
        "    const dtrain::Matrix sum = dtrain::toy_sum(dtrain::Matrix::Constant(1, 3, world.rank() + 1.0), world);\n"
        "    if (world.rank() == 0) std::printf(\"toy_sum over %d ranks: %g\\n\", world.size(), sum(0, 0));\n"
        "    return 0;\n  });\n}\n",
    # 7. its command, python3 -m kit toy (the row registers it)
    f"kit/{KEY}.py":
        '"""`python3 -m kit toy [--impl reference]`: the toy part\'s program on 2 ranks\n'
        '(staff/add_part.py\'s recipe)."""\n'
        "import argparse\nimport os\nimport subprocess\n\nfrom kit.paths import KITRUN, build_dir\n\n\n"
        "def main(argv) -> int:\n"
        '    ap = argparse.ArgumentParser(prog="python3 -m kit toy", description=__doc__)\n'
        '    ap.add_argument("--impl", choices=["student", "reference"], default="student")\n'
        "    args = ap.parse_args(argv)\n"
        '    return subprocess.run([KITRUN, "-n", "2", os.path.join(build_dir(), args.impl, "toy_demo")]).returncode\n',
    # 8. its rule of the judge's, which its row names
    f"kit/rules/{KEY}.py":
        '"""The toy part\'s rule (kit/rules/): toy_sum moves no more elements than the reference."""\n'
        "from typing import List\n\n\n"
        "def _moved(account) -> int:\n"
        '    return sum(count * times for (op, count, _ranks), times in account.items() if op == "allreduce")\n\n\n'
        "def problems(got, want) -> List[str]:\n"
        "    if _moved(got) <= _moved(want):\n        return []\n"
        f'    return [f"{RULE_WORDS} {{_moved(got)}} elements in its allreduces, where the reference moves "\n'
        '            f"{_moved(want)}: one allreduce of the matrix is the sum"]\n',
}
RECIPE_FILES = {"kit/part_table.py"} | set(NEW_FILES)
# Then the course turns the part on, in its one data file: the copy holds it, and grades it.
COURSE_FILE = "course.toml"
HELD_LINE = re.compile(r"^extension_parts = \[(.*)\]$", re.M)
GRADED_LINE = "extensions = []"
# A handin whose toy_sum gives the right sum but breaks the toy's rule.
RULE_BREAKER = SOLUTION.replace("  return total;", "  Matrix twice(x.rows(), x.cols());\n"
                                "  comm.allreduce(x, twice, Op::Sum);\n  return total;")
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
    table = os.path.join(kit, "kit", "part_table.py")
    with open(table) as f:
        text = f.read()
    if TABLE_END not in text:
        raise SystemExit(f"add_part: kit/part_table.py no longer ends its table with {TABLE_END!r}")
    with open(table, "w") as f:
        f.write(text.replace(TABLE_END, "\n" + ROW.rstrip("\n") + TABLE_END, 1))
    for path, content in NEW_FILES.items():
        os.makedirs(os.path.dirname(os.path.join(kit, path)), exist_ok=True)
        with open(os.path.join(kit, path), "x") as f:
            f.write(content)


def turn_on(kit: str) -> None:
    """The course's choice, in its data file: the copy holds the part, and grades it."""
    path = os.path.join(kit, COURSE_FILE)
    with open(path) as f:
        text = f.read()
    if not HELD_LINE.search(text) or f"\n{GRADED_LINE}\n" not in text:
        raise SystemExit(f"add_part: {COURSE_FILE} no longer has the lines {HELD_LINE.pattern!r} and {GRADED_LINE!r}")
    text = HELD_LINE.sub(lambda m: f'extension_parts = [{m.group(1)}, "{KEY}"]', text, count=1)
    with open(path, "w") as f:
        f.write(text.replace(f"\n{GRADED_LINE}\n", f"\nextensions = [\"{KEY}\"]\n"))


def in_copy(cmd: List[str], kit: str, timeout: float = 900, **env: str) -> subprocess.CompletedProcess:
    """Runs a command in the copy, which uses its own build (never $KIT_BUILD's), with `env` added. Each
    step's time is printed: the check is CI's longest, and its steps say where that goes."""
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=kit, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                          env=dict({k: v for k, v in os.environ.items() if k != "KIT_BUILD"}, **env))
    shown = " ".join(os.path.basename(c) if c == sys.executable else c for c in cmd)
    print(f"-- {' '.join(f'{k}={v}' for k, v in env.items())}{' ' if env else ''}{shown}: exit {proc.returncode} "
          f"in {time.monotonic() - started:.1f} s", flush=True)
    return proc


def make(kit: str, problems: List[str], *args: str) -> str:
    """The output of a make command in the copy; a failure is a problem."""
    proc = in_copy(["make", "--no-print-directory", *args], kit)
    if proc.returncode != 0:
        problems.append(f"make {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
    return proc.stdout


def checks(kit: str) -> List[str]:
    problems: List[str] = []
    total = table.TOTAL_POINTS + POINTS

    def expect(text: str, pattern: str, where: str) -> None:
        if not re.search(pattern, text, re.M):
            problems.append(f"{where}: no line matches {pattern!r}; the output ends:\n" +
                            "\n".join(text.strip().splitlines()[-12:]))

    def touched() -> set:
        return {line[3:] for line in git(kit, "status", "--porcelain", "--untracked-files=all").splitlines()}
    if touched() != RECIPE_FILES:
        problems.append(f"the recipe touched {sorted(touched())}, expected exactly {sorted(RECIPE_FILES)}")
    turn_on(kit)
    if touched() != RECIPE_FILES | {COURSE_FILE}:
        problems.append(f"turning the part on touched {sorted(touched() - RECIPE_FILES)}, not {COURSE_FILE} alone")
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
    stubs = make(kit, problems, f"test-part{NUMBER}")
    expect(stubs, rf"^{KEY}: 0 / {POINTS} points", f"make test-part{NUMBER} (stubs)")
    expect(stubs, rf"toy_sum is not implemented yet \(handout: {SECTION}\)", f"make test-part{NUMBER} (stubs)")
    # Its command runs its program (built against the solution too).
    demo = in_copy([sys.executable, "-m", "kit", "toy", "--impl", "reference"], kit)
    expect(demo.stdout, r"^toy_sum over 2 ranks: 3$", "python3 -m kit toy --impl reference")
    graded = make(kit, problems, "hidden-data")  # the judge's values for the new cases, then grade-reference
    expect(graded, rf"^{KEY}\s+{POINTS} / {POINTS}\s+3/3\s+{TITLE}$", "the grader's report (2 public + 1 hidden case)")
    autolab = json.loads(graded.strip().splitlines()[-1]) if graded.strip() else {}
    if autolab.get("scores", {}).get(KEY) != POINTS or autolab.get("scoreboard") != [float(total)]:
        problems.append(f"the Autolab line lacks {KEY} = {POINTS} or the total {total}: {autolab}")
    # Its rule: a handin whose sum is right but moves twice the elements loses the part, in the rule's words.
    breaker = os.path.join(kit, "rule-breaker.tar")
    with tarfile.open(os.path.join(kit, build_dir, "reference-handin.tar")) as tar, \
            tarfile.open(breaker, "w") as out:
        for member in tar.getmembers():
            data = tar.extractfile(member).read()
            if member.name.endswith(FILE):
                data = data.replace(SOLUTION.encode(), RULE_BREAKER.encode())
                member.size = len(data)
            out.addfile(member, io.BytesIO(data))
    broken = in_copy([sys.executable, "grader/grade", "--build", build_dir, breaker], kit)
    expect(broken.stdout, rf"^{KEY}\s+0 / {POINTS}\s", "the grader's report of a handin that breaks the rule")
    expect(broken.stdout, RULE_WORDS + r" 8 elements in its allreduces, where the reference moves 4",
           "the grader's report of a handin that breaks the rule")
    os.remove(breaker)
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
        if f"dtrain-kit/tests/{KEY}/test_part17_toy.cpp" not in names:
            problems.append(f"the handout lacks tests/{KEY}/test_part17_toy.cpp")
        if f"student/{FILE}\n" not in readme or f"- `student/{FILE}`: {SECTION}, {ABOUT}\n" not in readme:
            problems.append(f"the handout's list of files, or of what make handin packs, lacks student/{FILE}")
        if f"## {SECTION}" not in readme or "throw NotImplemented(\"toy_sum\"" not in stub:
            problems.append("the handout lacks the new section or the new stub")
        # Its row of the parts table and its total, made from the table (kit/handout_text.py).
        if f"| {NUMBER} | {KEY} | `toy_sum` | {POINTS} | 2 | `make test-part{NUMBER}` |" not in readme or \
                f"`total: X / {total} points`" not in readme or f"[{SECTION}](#" not in readme:
            problems.append("the handout's parts table, total or Contents lacks the new part")
        if any("/reference/" in n or "/staff/" in n for n in names):
            problems.append("the handout ships reference/ or staff/")
    check = in_copy([sys.executable, "-m", "kit", "check-handout"], kit)
    if check.returncode != 0:
        problems.append("kit check-handout fails:\n" + check.stdout[-2000:])
    # Off (the course file's choice, here for one command): no output shows it.
    off = in_copy(["make", "--no-print-directory", "test", "IMPL=reference"], kit, KIT_EXTENSIONS="0")
    expect(off.stdout, rf"^total: {table.TOTAL_POINTS} / {table.TOTAL_POINTS} points$", "make test with the part off")
    if KEY in off.stdout or "toy_sum" in off.stdout:
        problems.append(f"make test with the part off still shows it:\n{off.stdout[-1500:]}")
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
