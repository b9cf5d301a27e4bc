"""Each fact both languages use has one source, kit/facts.py (the runs' rank
counts: kit/part_table.py): the C++ header generated from it gives the same
numbers and names as the Python, the kit's Python takes them from it, and
no file of the kit writes one of them again.

  /usr/bin/python3 -m pytest staff/tests/test_facts.py -p no:cacheprovider -q

The search reads the kit's code with its comments and docstrings left out,
and leaves out the case files (tests/test_*.cpp, grader/hidden/, the Python
tests): a case states what it expects in its own numbers, never from the
code it checks. The rank counts' search reads the case files too.
"""
import ast
import io
import os
import re
import shutil
import subprocess
import tokenize

from kit import build, explore, facts, host_limits, records, timeline
from kit import parts as table
from grader import sandbox

KIT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOME = "kit/facts.py"
RING_CHECKS = "ring_checks.h"  # Part 11's checks, wherever its files sit
RING_FORMULAS = "kit/ring.py"  # Part 11's byte formulas (its row's Adds.facts)
CODE = (".py", ".cpp", ".h", ".hpp", ".cc", ".cmake", ".mk")

# A fact written again: what its literal looks like in code, and the files
# allowed to hold it (its home).
OPS = "|".join(facts.OPERATIONS)
WRITTEN_AGAIN = {
    "the model's sizes": (r"\b784\b", {HOME}),
    "the trainers' batch": (r"(?i)batch[\w\"']*\s*[=,:]\s*60\b", {HOME}),
    "the record cap": (r"(?i)\bk?_?max_?(values|elements)\w*\s*=\s*\d", {HOME}),
    "the per-file limit": (r"(?i)\b(max_object_bytes|binary_mib|file_limit_bytes)\s*=\s*\d|[\"']fsize[\"']\s*:\s*\d",
                           {HOME}),
    "the memory limits": (r"(?i)(heap_budget|data_limit|stack_limit|thread_stack)\w*\s*=\s*\d", {"kit/limits.py"}),
    # (n-1) times a buffer's bytes, or a block count times 8 bytes. Part
    # 11's own formulas are its module's (kit/ring.py, which the header
    # takes them from); its checks keep their own words, which a failure
    # shows, and check them against kit_facts.h's on every case (ring_checks.h).
    "the communication volumes": (r"\bn\)?\s*-\s*1\s*\)\s*\*[^;\n]*(\b8\b|sizeof\(double\)|\bbytes\b|\bbuffer\b|\bb\b)"
                                  r"|\*\s*8\s*//\s*n\b", {HOME, RING_FORMULAS, RING_CHECKS}),
    # Three of the ledger's operations, quoted, in one list: a list of them.
    # kit/timeline.py's colours name every operation, and Part 11's check the
    # point-to-point calls in the words a failure shows: both checked below.
    "the operation names": (r"(?:[\"'](?:%s)[\"'][^\n]*){3}" % OPS, {HOME, "kit/timeline.py", RING_CHECKS}),
}
# A suite named for its rank count, defined by a macro call of its own: the
# parts table's runs, written again (KIT_SUITES_<stem> lists them).
SUITE_BY_HAND = re.compile(r"^[ \t]*[A-Z_]+\(\s*(?:Hidden)?Part\d+[A-Za-z]+\d+\s*\)\s*$", re.M)


def kit_files(root):
    listed = subprocess.run(["git", "-C", root, "ls-files"], stdout=subprocess.PIPE, text=True, check=True).stdout
    names = [n for n in listed.splitlines() if os.path.isfile(os.path.join(root, n))]
    return [n for n in names if n.endswith(CODE) or os.path.basename(n) in ("CMakeLists.txt", "Makefile")]


def case_file(name):
    base = os.path.basename(name)
    parts = name.split("/")
    return (base.startswith(("test_", "hidden_")) or "hidden" in parts[:-1]
            or ("tests" in parts[1:-1]) or (parts[0] in ("grader", "staff", "kit") and "tests" in parts))


def without_comments(name, text):
    """The code alone: C++ without // and /* */ comments, Python without
    comments and docstrings (strings stay: a label can write a fact too)."""
    if name.endswith(".py"):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return text
        lines = text.splitlines(keepends=True)
        drop = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                    and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                drop.update(range(body[0].lineno - 1, body[0].end_lineno))
        comments = {}
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0] - 1] = tok.start[1]
        return "".join("\n" if i in drop else (line[:comments[i]] + "\n" if i in comments else line)
                       for i, line in enumerate(lines))
    if name.endswith((".cmake", ".mk")) or os.path.basename(name) in ("CMakeLists.txt", "Makefile"):
        return re.sub(r"#[^\n]*", "", text)
    out, i, n, quote = [], 0, len(text), None
    while i < n:
        c = text[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
            out.append(c)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            out.append("\n" * text.count("\n", i, end if end >= 0 else n))
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def written_again(root):
    """(fact, file, line) for each fact written outside its home."""
    found = []
    for name in kit_files(root):
        with open(os.path.join(root, name), errors="replace") as f:
            text = f.read()
        code = without_comments(name, text)
        for fact, (pattern, homes) in WRITTEN_AGAIN.items():
            if name in homes or os.path.basename(name) in homes or case_file(name):
                continue
            for m in re.finditer(pattern, code):
                found.append((fact, name, code.count("\n", 0, m.start()) + 1))
        if name.endswith((".cpp", ".h")):
            for m in SUITE_BY_HAND.finditer(code):
                found.append(("the runs' rank counts", name, code.count("\n", 0, m.start()) + 1))
    return found


def test_no_fact_is_written_again():
    assert written_again(KIT) == []


def test_the_search_finds_a_fact_written_again(tmp_path):
    """The search is no formality: each kind of copy the kit once held is found."""
    copies = {
        "framework/layers.h": "constexpr int kFeatures = 784, kHidden = 256;  // 784 in a comment is fine\n",
        "framework/training_loop.h": "  int global_batch = 60;\n",
        "tests/observations.cpp": "constexpr long kMaxElements = 256;\n",
        "grader/sandbox.py": '"""784 in a docstring is fine"""\nLIMITS = {\n    "fsize": 64 << 20,\n}\n',
        "kit/host_limits.py": "BINARY_MIB = 64  # 784\nCACHED_OBJECT_BYTES = 8 << 20\n",
        "staff/bench.py": "def fc_gflop(samples: int, din: int = 784, hidden: int = 256) -> float:\n",
        "kit/mine.py": "RANK_HEAP_BUDGET_MIB = 64\n",
        "framework/comm.cpp": "  return passes * (static_cast<std::uint64_t>(n) - 1) * bytes / n;\n",
        "programs/ring_timing.cpp": "    const std::uint64_t low = 2 * (n - 1) * (length / n) * 8;\n",
        "kit/explore.py": "    exact = 2 * (n - 1) * b // n\n    low = passes * (n - 1) * elements * 8 // n\n",
        "kit/records.py": 'CALLS = ("send", "recv", "sendrecv", "allreduce")\n',
        "framework/ledger.h": 'inline constexpr const char* kOpNames[] = {"", "allreduce", "allgather", "split"};\n',
        "grader/hidden/hidden_ring.cpp": "KIT_HIDDEN_RING_CASES(HiddenPart11Ring3)\n",
    }
    for name, text in copies.items():
        os.makedirs(tmp_path / os.path.dirname(name), exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    found = {(fact, name) for fact, name, _ in written_again(str(tmp_path))}
    assert found == {
        ("the model's sizes", "framework/layers.h"), ("the model's sizes", "staff/bench.py"),
        ("the trainers' batch", "framework/training_loop.h"),
        ("the record cap", "tests/observations.cpp"), ("the per-file limit", "grader/sandbox.py"),
        ("the per-file limit", "kit/host_limits.py"), ("the memory limits", "kit/mine.py"),
        ("the communication volumes", "framework/comm.cpp"), ("the communication volumes", "programs/ring_timing.cpp"),
        ("the communication volumes", "kit/explore.py"), ("the operation names", "kit/records.py"),
        ("the operation names", "framework/ledger.h"), ("the runs' rank counts", "grader/hidden/hidden_ring.cpp"),
    }


RING_HELD = "part11_ring" in table.CONFIGURATION.held
# The generated header, compiled: its numbers against the Python's.
PROBE = r"""
#include <cstdio>
#include <initializer_list>
#include "kit_facts.h"
using namespace dtrain::facts;
#ifdef KIT_HOLDS_RING
using namespace dtrain::facts::ring;  // Part 11's formulas (kit/ring.py)
#endif
int main() {
  std::printf("sizes %d %d %d %d %ld\n", kFeatures, kHidden, kClasses, kGlobalBatch, kMaxValuesPerRecord);
  std::printf("side %ld %s %s %s %s %s %s %d %ld %ld\n", kSideUnreadKib, kMarkReturned, kMarkHeld, kMarkStartedIn,
              kMarkWaitedIn, kMarkTestedRunningIn, kMarkSeparator, kMostOpenCalls, kMostTestsCounted, kMostCallArgument);
  for (int code = 1; code < static_cast<int>(sizeof kOpNames / sizeof *kOpNames); ++code)
    std::printf("op %d %s %d %d\n", code, kOpNames[code], is_point_to_point(code), is_collective(code));
  for (int ranks : {1, 4, 8})
    for (int runnable : {0, 3, 10, 40})
      for (double cpus : {0.5, 2.0}) std::printf("share %d %d %g %.6f\n", ranks, runnable, cpus, time_share(ranks, 2, runnable, cpus));
  long lengths[] = {0, 1, 2, 3, 7, 8, 9, 1000, 4097, 200960};
  for (int n : {1, 2, 3, 4, 5, 8, 16})
    for (long e : lengths) {
      std::printf("ring %ld %d %llu %llu", e, n, (unsigned long long)ring_bytes(e, n, 1),
                  (unsigned long long)ring_bytes(e, n, 2));
#ifdef KIT_HOLDS_RING
      std::printf(" %llu %llu", (unsigned long long)ring_allreduce_low(e, n), (unsigned long long)ring_allreduce_high(e, n));
      for (int r : {0, 1}) std::printf(" %llu", (unsigned long long)naive_allreduce_bytes(e, n, r));
#endif
      std::printf("\n");
    }
}
"""


def python_probe():
    lines = [f"sizes {facts.FEATURES} {facts.HIDDEN} {facts.CLASSES} {facts.GLOBAL_BATCH} "
             f"{facts.MAX_VALUES_PER_RECORD}",
             f"side {facts.SIDE_UNREAD_KIB} {' '.join(facts.CALL_MARKS)} {facts.MARK_SEPARATOR} "
             f"{facts.MOST_OPEN_CALLS} {facts.MOST_TESTS_COUNTED} {facts.MOST_CALL_ARGUMENT}"]
    lines += [f"op {code} {op} {int(op in facts.POINT_TO_POINT)} {int(op in facts.COLLECTIVES)}"
              for code, op in enumerate(facts.OPERATIONS, 1)]
    lines += [f"share {ranks} {runnable} {cpus:g} {facts.time_share(ranks, 2, runnable, cpus):.6f}"
              for ranks in (1, 4, 8) for runnable in (0, 3, 10, 40) for cpus in (0.5, 2.0)]
    for n in (1, 2, 3, 4, 5, 8, 16):
        for e in (0, 1, 2, 3, 7, 8, 9, 1000, 4097, 200960):
            line = f"ring {e} {n} {facts.ring_bytes(e, n, 1)} {facts.ring_bytes(e, n, 2)}"
            if RING_HELD:  # Part 11's formulas, its own (kit/ring.py), in the header where the copy holds it
                from kit import ring
                bounds = ring.ring_allreduce_bounds(e, n)
                line += (f" {bounds['low']} {bounds['high']} {ring.naive_allreduce_bytes(e, n, 0)} "
                         f"{ring.naive_allreduce_bytes(e, n, 1)}")
            lines.append(line)
    return lines


def test_the_header_gives_the_pythons_numbers(tmp_path):
    compiler = shutil.which("c++") or shutil.which("g++")
    assert compiler, "no C++ compiler: the kit's build needs one (./setup.sh)"
    (tmp_path / "kit_facts.h").write_text(facts.cpp_text())
    (tmp_path / "probe.cpp").write_text(PROBE)
    subprocess.run([compiler, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I", str(tmp_path), "-o",
                    str(tmp_path / "probe"), str(tmp_path / "probe.cpp")] + (["-DKIT_HOLDS_RING"] if RING_HELD else []),
                   check=True)
    got = subprocess.run([str(tmp_path / "probe")], stdout=subprocess.PIPE, text=True, check=True).stdout
    assert got.splitlines() == python_probe()


def test_the_header_lists_each_runs_suite():
    text = facts.cpp_text()
    runs = [r for p in table.ALL_PARTS for r in p.runs]
    named = facts.suites_by_ranks(runs)
    assert "Part11Ring" in named and "HiddenPart13Ddp" in named
    for stem, suites in named.items():
        line = next(line for line in text.splitlines() if line.startswith(f"#define KIT_SUITES_{stem}("))
        assert re.findall(r"CASES\((\w+)\)", line) == suites
        assert [f"{s}.*" for s in suites] == [r.filter for r in runs if r.filter in {f"{s}.*" for s in suites}]


def test_the_header_is_written_only_when_it_changes(tmp_path):
    header = tmp_path / "kit_facts.h"
    assert facts.main(["--cpp", str(header)]) == 0
    os.utime(header, (1, 1))
    assert facts.main(["--cpp", str(header)]) == 0
    assert os.stat(header).st_mtime == 1, "an unchanged header keeps its time, so that nothing rebuilds"


def test_the_kits_python_takes_its_facts_from_one_place():
    assert (explore.FEATURES, explore.HIDDEN, explore.CLASSES) == (facts.FEATURES, facts.HIDDEN, facts.CLASSES)
    assert explore.GLOBAL_BATCH == facts.GLOBAL_BATCH
    assert explore.ring(4, 1000, 2) == facts.ring_bytes(1000, 4, 2)
    assert records.MAX_VALUES_PER_RECORD == facts.MAX_VALUES_PER_RECORD
    assert records.CALLS == facts.OPERATIONS and records.POINT_TO_POINT == facts.POINT_TO_POINT
    assert set(timeline.OP_COLORS) == set(facts.OPERATIONS), "the trace draws each of the ledger's operations"


def test_part11s_checks_name_the_point_to_point_calls():
    held = "part11_ring" in table.CONFIGURATION.held
    checks = [n for n in kit_files(KIT) if os.path.basename(n) == RING_CHECKS]
    assert len(checks) == int(held), f"{RING_CHECKS} is where this copy holds Part 11, and only there"
    for name in checks:
        with open(os.path.join(KIT, name)) as f:
            check = re.search(r"EXPECT_TRUE\((kind == [^)]*)\)", f.read())
        assert check and set(re.findall(r'kind == "(\w+)"', check.group(1))) == set(facts.POINT_TO_POINT), \
            f"{name} allows other calls than the ledger's point-to-point ones"
    assert sandbox.LIMITS["fsize"] == build.MAX_OBJECT_BYTES == host_limits.BINARY_MIB << 20 == facts.FILE_LIMIT_BYTES

