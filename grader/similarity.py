"""Which handins of a graded class share code (grader/grade --similar):

  grader/grade --similar out/gradebook.csv [--similar-threshold PERCENT] [--jobs N]

Every pair of the class's handins is compared with sim_c++, the similarity
tester of Debian's `similarity-tester` package (Dick Grune's sim): it reads
C++ as tokens, so layout, comments, identifiers and the contents of
literals make no difference, and a copy with renamed variables is still a
copy. What every handin shares because the kit handed it out is left out
first: each line made only of runs of STUB_RUN tokens that the stubs hold
(a signature, whatever its parameters are called, the includes, the
namespace, the stub's throw) is blanked, line numbers kept, so only what
students wrote themselves is compared.

The handins are those the gradebook's results were graded from (each result
keeps its handin's path), read by the same bounded reader as grading
(kit/handin_reader.py): only the graded parts' files. One sim_c++ run over
the whole class finds each handin's main sources (a handin's text counts
towards the handin that holds it longest, so a class of 300 takes seconds
where comparing 44,850 pairs one by one, sim_c++ -e, took 4 minutes). A
handin whose code two others hold is tied to one of them only, so the
groups found are run again, one handin of each, until they stop joining;
every pair of a group of up to GROUP_COMPARED handins, and every pair a
run named at half the threshold or more, is then compared alone, for its
exact shares and the runs they share. A pair is listed when either handin
has the threshold's share of its own code in the other.

Beside the gradebook: <gradebook>.similar.csv (a row per pair, the highest
first: both shares, the functions and the lines they share) and
<gradebook>.similar.html (the same, to read). No grade changes: a high
share is a lead for a person to read both handins, not a verdict; two
correct solutions of a short function can look alike.
"""
import csv
import html
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from grader.gradebook import write_atomically
from grader.grades import NOT_A_HANDIN
from grader.rescore import results_of
from kit.handin_reader import read_handin
from kit import parts as table
from kit.paths import STUBS_DIR

SIM = "sim_c++"
THRESHOLD = 60.0  # percent of a handin's own code found in the other
INSTALL = "apt-get install similarity-tester (Debian and Ubuntu; .ci/run installs it)"
SIM_SECONDS = 600  # no sim run of an honest class comes near it
SHOWN = 20  # pairs printed; the files hold them all
GROUP_COMPARED = 16  # a group of handins sharing code up to this size has each of its pairs compared
MERGES = 4           # runs over the class that join groups of handins sharing code


@dataclass
class Handin:
    name: str                  # its file's name, as the gradebook's row
    text: str = ""             # what sim_c++ reads: its graded files, stub lines blanked
    where: List[Tuple[str, int, str]] = field(default_factory=list)  # per line: file, its line there, function


@dataclass
class Pair:
    a: str
    b: str
    a_in_b: float              # percent of a's own code (its tokens) found in b
    b_in_a: float
    runs: List[Tuple[str, str, int]] = field(default_factory=list)  # a's lines, b's lines, tokens
    functions: List[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return max(self.a_in_b, self.b_in_a)


LITERAL_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)
TOKEN = re.compile(r'[A-Za-z_]\w*|\d[\w.]*|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|::|->|[^\s\w]')
STUB_RUN = 8  # tokens in a row that a stub holds: what the stubs handed out, not what a student wrote


def tokens_by_line(text: str) -> List[List[str]]:
    """Each line's tokens, without comments and attributes ([[maybe_unused]]:
    the stubs carry it, solutions drop it)."""
    def out(m) -> str:
        kept = m.group(0)
        return kept if kept[0] in "\"'" else " " + "\n" * kept.count("\n")
    text = re.sub(r"\[\[[^\]\n]*\]\]", " ", LITERAL_OR_COMMENT.sub(out, text))
    return [TOKEN.findall(line) for line in text.split("\n")]


# What a name in the stubs' text is kept as, when it is matched: the words
# of the language, types (capitalised in the kit) and called functions keep
# their names; a variable's or a parameter's is any name, so that a handin
# that renames the stubs' parameters still has the stubs' signatures found.
KEYWORDS = {"const", "int", "bool", "double", "float", "void", "long", "char", "unsigned", "auto", "return",
            "namespace", "std", "static", "inline", "struct", "class", "template", "typename", "throw", "if",
            "else", "for", "while", "include", "size_t"}


def shaped(tokens: List[str]) -> List[str]:
    return ["ID" if re.match(r"[a-z_]", t) and t not in KEYWORDS and (i + 1 == len(tokens) or tokens[i + 1] != "(")
            else t for i, t in enumerate(tokens)]


def runs_of(lines: List[List[str]]) -> Set[Tuple[str, ...]]:
    flat = shaped([t for line in lines for t in line])
    return {tuple(flat[i:i + STUB_RUN]) for i in range(len(flat) - STUB_RUN + 1)}


def stub_runs() -> Set[Tuple[str, ...]]:
    """Every run of STUB_RUN tokens of the stubs: a handin's line made of
    them only is the stubs' text (a signature, the namespace, a throw)."""
    found: Set[Tuple[str, ...]] = set()
    for name in table.IMPL_FILES:
        try:
            with open(os.path.join(STUBS_DIR, name), encoding="utf-8", errors="replace") as f:
                found |= runs_of(tokens_by_line(f.read()))
        except OSError:
            continue
    return found


def stub_covered(lines: List[List[str]], stubs: Set[Tuple[str, ...]]) -> List[bool]:
    """For each line, whether every token of it lies in a run the stubs hold."""
    at = [n for n, line in enumerate(lines) for _ in line]
    flat = shaped([t for line in lines for t in line])
    covered = [False] * len(flat)
    for i in range(len(flat) - STUB_RUN + 1):
        if tuple(flat[i:i + STUB_RUN]) in stubs:
            covered[i:i + STUB_RUN] = [True] * STUB_RUN
    whole = [bool(line) for line in lines]
    for n, c in zip(at, covered):
        whole[n] = whole[n] and c
    return whole


STRINGS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
CALLED = re.compile(r"(~?[A-Za-z_]\w*)\s*\(")
NOT_NAMES = {"if", "for", "while", "switch", "return", "sizeof", "catch", "static_assert", "decltype", "alignof",
             "throw", "defined", "noexcept"}


def functions_by_line(text: str) -> List[str]:
    """For each line, the function whose definition holds it ("" outside
    any): enough to say which functions a shared run covers. Comments,
    literals and namespaces' braces are left out of the count."""
    out: List[str] = []
    stack: List[str] = []  # "ns" or "fn" for each open brace
    block_comment, pending, current = False, "", ""
    for raw in text.split("\n"):
        line = raw
        if block_comment:
            end = line.find("*/")
            line, block_comment = ("", True) if end < 0 else (line[end + 2:], False)
        line = STRINGS.sub('""', line)
        line = re.sub(r"/\*.*?\*/", " ", line)
        if "/*" in line:
            line, block_comment = line[:line.index("/*")], True
        line = line.split("//")[0]
        if "fn" not in stack and not line.lstrip().startswith("#"):
            named = [n for n in CALLED.findall(line) if n not in NOT_NAMES]
            if named:
                pending = named[0]
        closed = ""
        for ch in line:
            if ch == "{":
                inside = "fn" in stack
                stack.append("ns" if not inside and re.match(r"\s*(inline\s+)?namespace\b", line) else "fn")
                if not inside and stack[-1] == "fn":
                    current = pending
            elif ch == "}" and stack:
                stack.pop()
                if "fn" not in stack and current:
                    closed, current, pending = current, "", ""
        out.append(current or closed or ("" if "fn" in stack else pending))
    return out


def prepared(name: str, files: Dict[str, bytes], stubs: Set[Tuple[str, ...]]) -> Handin:
    """A handin's graded files one after another, as sim_c++ reads them:
    each line that is the stubs' text blanked, so the line numbers sim_c++
    gives point into the handin's own files."""
    h = Handin(name)
    lines: List[str] = []
    for f in table.IMPL_FILES:
        if f not in files:
            continue
        text = files[f].decode("utf-8", errors="replace").replace("\r\n", "\n")
        own = text.split("\n")
        stubbed = stub_covered(tokens_by_line(text), stubs)
        for i, (line, function, handed_out) in enumerate(zip(own, functions_by_line(text), stubbed)):
            lines.append("" if handed_out else line)
            h.where.append((f, i + 1, function))
    h.text = "\n".join(lines) + "\n"
    return h


def read_class(gradebook: str, jobs: int) -> Tuple[List[Handin], List[str]]:
    """The class's handins, each through the bounded reader, and what could
    not be compared (no file, no readable handin), with why."""
    stubs = stub_runs()
    wanted, skipped = [], []
    for _, state in results_of(gradebook):
        path = state.get("path", "")
        if state.get("status") == NOT_A_HANDIN:
            skipped.append(f"{state['handin']} (not a readable handin)")
        elif not path or not os.path.isfile(path):
            skipped.append(f"{state['handin']} (its file {path or '?'} is gone)")
        else:
            wanted.append((state["handin"], path))

    def one(entry: Tuple[str, str]) -> Tuple[str, Optional[Handin]]:
        name, path = entry
        read = read_handin(path)
        if not read.readable:
            return f"{name} ({read.why})", None
        return name, prepared(name, {f: b for f, b in read.files.items() if f in table.IMPL_FILES}, stubs)

    handins = []
    with ThreadPoolExecutor(max_workers=max(2, jobs)) as pool:
        for name, h in pool.map(one, wanted):
            if h is None:
                skipped.append(name)
            else:
                handins.append(h)
    return handins, skipped


def sim(args: List[str], cwd: str) -> str:
    proc = subprocess.run([SIM] + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=SIM_SECONDS)
    if proc.returncode != 0:
        raise RuntimeError(f"{SIM} {' '.join(args[:4])} ... failed (status {proc.returncode}): {proc.stdout[-500:]}")
    return proc.stdout


SHARE = re.compile(r"^(\S+) consists for (\d+) % of (\S+) material$", re.M)
RUN = re.compile(r"^(\S+): line (\d+)-(\d+)\s*\|(\S+): line (\d+)-(\d+)\s*\[(\d+)\]", re.M)


def shares(output: str) -> Dict[Tuple[str, str], int]:
    """sim_c++ -p's lines: (file, other) -> percent of file found in other (whole percents)."""
    return {(a, b): int(p) for a, p, b in SHARE.findall(output)}


def lines_said(h: Handin, first: int, last: int) -> Tuple[str, List[str]]:
    """A run's lines in the handin's own files ("func_impl.cpp:12-40"), and the functions they are in."""
    spans: Dict[str, List[int]] = {}
    functions: List[str] = []
    for n in range(first, min(last, len(h.where)) + 1):
        f, line, function = h.where[n - 1]
        spans.setdefault(f, []).append(line)
        if function and function not in functions:
            functions.append(function)
    return ", ".join(f"{f}:{min(ls)}-{max(ls)}" for f, ls in spans.items()), functions


TOKENS = re.compile(r"^File (\S+): (\d+) tokens", re.M)


def compared(a: Handin, b: Handin, fa: str, fb: str, scratch: str) -> Pair:
    """One pair alone: the runs they share (sim_c++ -a -n, each run listed
    from either side), and from them the share of each handin's tokens
    found in the other, to a tenth of a percent."""
    out = sim(["-a", "-n", fa, fb], scratch)
    tokens = {f: int(n) for f, n in TOKENS.findall(out)}
    found = {fa: 0, fb: 0}
    pair = Pair(a.name, b.name, 0.0, 0.0)
    for x, x1, x2, y, y1, y2, n in RUN.findall(out):
        if x == y:
            continue  # a handin repeating itself
        found[x] += int(n)
        if x != fa:
            continue  # the same run, told from b's side
        said_a, fn_a = lines_said(a, int(x1), int(x2))
        said_b, fn_b = lines_said(b, int(y1), int(y2))
        pair.runs.append((said_a, said_b, int(n)))
        pair.functions += [f for f in dict.fromkeys(fn_a + fn_b) if f not in pair.functions]
    pair.a_in_b, pair.b_in_a = (round(min(100.0, 100.0 * found[f] / tokens[f]), 1) if tokens.get(f) else 0.0
                                for f in (fa, fb))
    pair.runs.sort(key=lambda r: -r[2])
    return pair


def groups(pairs: Set[Tuple[str, str]]) -> List[Set[str]]:
    """The handins the pairs join, directly or through others."""
    found: List[Set[str]] = []
    for a, b in pairs:
        joined = [g for g in found if a in g or b in g]
        merged = {a, b}.union(*joined)
        found = [g for g in found if g not in joined] + [merged]
    return found


def similar_pairs(handins: List[Handin], threshold: float, scratch: str, jobs: int = 2) -> List[Pair]:
    """The pairs where either handin has `threshold` percent of its own code
    in the other, the highest first."""
    names = [f"h{i:05d}.cpp" for i in range(len(handins))]
    by_file = dict(zip(names, handins))
    for name, h in by_file.items():
        with open(os.path.join(scratch, name), "w", encoding="utf-8") as f:
            f.write(h.text)
    # One run over the class names each handin's main sources (half the
    # threshold there: a handin's text counts towards one source only). A
    # handin whose code two others hold is tied to one of them, so the groups
    # found are run again, one handin for each, until no group joins another.
    floor = ["-a", "-p", "-t", str(max(1, int(threshold / 2)))]
    candidates: Set[Tuple[str, str]] = set()
    ones = names
    for _ in range(MERGES):
        found = {tuple(sorted(k)) for k in shares(sim(floor + ones, scratch)) if k[0] != k[1]}
        if not found - candidates:
            break
        candidates |= found
        grouped = groups(candidates)
        ones = sorted([min(g) for g in grouped] + [n for n in names if not any(n in g for g in grouped)])
    # Within a small group every pair is compared alone; a large one (a
    # class built on one shared text) keeps the pairs the runs named.
    for group in groups(candidates):
        if len(group) <= GROUP_COMPARED:
            candidates |= {(x, y) for x in group for y in group if x < y}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        pairs = list(pool.map(lambda c: compared(by_file[c[0]], by_file[c[1]], c[0], c[1], scratch),
                              sorted(candidates)))
    return sorted((p for p in pairs if p.share >= threshold), key=lambda p: (-p.share, -min(p.a_in_b, p.b_in_a),
                                                                               p.a, p.b))


def write_outputs(gradebook: str, pairs: List[Pair], compared_count: int, threshold: float) -> Tuple[str, str]:
    stem = os.path.splitext(os.path.abspath(gradebook))[0]
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["handin_a", "handin_b", "percent", "a_in_b", "b_in_a", "functions", "lines"])
    for p in pairs:
        writer.writerow([p.a, p.b, f"{p.share:g}", f"{p.a_in_b:g}", f"{p.b_in_a:g}", " ".join(p.functions),
                         "; ".join(f"{x} = {y} ({t} tokens)" for x, y, t in p.runs)])
    write_atomically(stem + ".similar.csv", text.getvalue())
    rows = "".join(
        f"<tr><td>{html.escape(p.a)}</td><td>{html.escape(p.b)}</td><td>{p.share:g}%</td><td>{p.a_in_b:g}%</td>"
        f"<td>{p.b_in_a:g}%</td><td>{html.escape(', '.join(p.functions))}</td><td>"
        + "<br>".join(f"{html.escape(x)} = {html.escape(y)} ({t} tokens)" for x, y, t in p.runs)
        + "</td></tr>\n" for p in pairs)
    page = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Similar handins: "
            f"{html.escape(os.path.basename(gradebook))}</title>\n<style>body{{font-family:sans-serif}} "
            f"td,th{{border:1px solid #bbb;padding:4px;vertical-align:top}} table{{border-collapse:collapse}}"
            f"</style></head><body>\n<h1>Similar handins</h1>\n<p>{compared_count} handins compared with sim_c++, "
            f"the stubs' own lines left out; {len(pairs)} pair(s) where one handin has {threshold:g}% or more of its "
            f"own code in the other, the highest first. <em>a in b</em>: the share of a's code found in b. No grade "
            f"was changed: read both handins before you decide anything.</p>\n<table><tr><th>a</th><th>b</th>"
            f"<th>share</th><th>a in b</th><th>b in a</th><th>functions</th><th>lines shared (a = b)</th></tr>\n"
            f"{rows}</table></body></html>\n")
    write_atomically(stem + ".similar.html", page)
    return stem + ".similar.csv", stem + ".similar.html"


def similar(gradebook: str, threshold: float = THRESHOLD, jobs: int = 2) -> int:
    """grader/grade --similar: the class's similar pairs, listed and written
    beside the gradebook; no result, row or report changes."""
    started = time.monotonic()
    if shutil.which(SIM) is None:
        print(f"grade: --similar needs {SIM}, which is not installed: {INSTALL}", file=sys.stderr)
        return 2
    if not results_of(gradebook):
        print(f"grade: no results kept beside {gradebook} ({os.path.splitext(gradebook)[0]}.results/*.json): grade "
              "the class first (grader/grade --batch)", file=sys.stderr)
        return 2
    if not 0 < threshold <= 100:
        print(f"grade: --similar-threshold is a percent from 1 to 100, got {threshold:g}", file=sys.stderr)
        return 2
    handins, skipped = read_class(gradebook, jobs)
    with tempfile.TemporaryDirectory(prefix="kit-similar-") as scratch:
        pairs = similar_pairs(handins, threshold, scratch, jobs) if len(handins) > 1 else []
    written = write_outputs(gradebook, pairs, len(handins), threshold)
    for p in pairs[:SHOWN]:
        named = ", ".join(p.functions[:6]) + (f" and {len(p.functions) - 6} more" if len(p.functions) > 6 else "")
        print(f"  {p.share:5.1f}%  {p.a}  {p.b}   ({p.a_in_b:g}% of {p.a} in {p.b}, {p.b_in_a:g}% the other way)"
              + (f"; functions: {named}" if p.functions else ""))
    if len(pairs) > SHOWN:
        print(f"  ... {len(pairs) - SHOWN} more in {written[0]}")
    if skipped:
        print(f"grade: not compared: {', '.join(skipped)}")
    print(f"grade: {len(handins)} handins compared, {len(handins) * (len(handins) - 1) // 2} pairs; {len(pairs)} "
          f"share {threshold:g}% or more; {time.monotonic() - started:.1f} s. {written[0]}, {written[1]}; no grade "
          "changed")
    return 0

