"""Static checks on the three student files, before anything is compiled.

  python3 -m kit static-check student/*.cpp    (prints the findings; `make handin` runs it too)

Each file is run through the compiler's preprocessor with the kit's own
flags, so a macro can't hide a name and a comment can't trigger a rule; the
tokens of the file itself (not of the headers it includes) are then matched
against RULES, skipping string and character literals. The preprocessor's
line markers say which files the student's file includes.

These rules no longer guard the grade alone: a list of identifiers can be
walked around (a mangled name behind extern "C", `(system)(...)`, `not
fork()`, a libc function the list lacks), so what refuses a file for good
is the link check of its compiled object (kit/link_check.py: an allowlist
of the symbols it may use, no static initializers, little static storage,
no system-call instructions). These rules stay as the early, friendly
message: they name the line in the student's own words, before anything
is compiled.

A "fail" finding means the file is not compiled: it is graded as its stub,
and the report names the rule and the line. A "warn" finding is reported
and costs nothing by itself. `make test` shows the same findings before its
cases (static_findings, cached by content; refusal_warning).
"""
import hashlib
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple

from kit import findings_cache
from kit.build import compile_limits
from kit import parts as table
from kit.paths import FRAMEWORK_DIR, build_dir
from kit.recipe import recipe
from kit.report import check_command
# Framework headers that only the kit's own programs and tests may use.
KIT_INTERNAL_HEADERS = {"call_context.h", "comm_internal.h", "comm_link.h", "comm_runtime.h", "comm_side_mpi.h",
                        "comm_side_ops.h", "idx_format.h", "layer_profiler.h", "ledger.h", "memory_tracker.h",
                        "student_calls.h", "traffic.h"}


@dataclass(frozen=True)
class Rule:
    key: str
    severity: str        # fail | warn
    why: str             # the report's explanation
    names: frozenset     # identifiers that trigger it
    prefixes: Tuple[str, ...] = ()


def _rule(key, severity, why, names=(), prefixes=()):
    return Rule(key, severity, why, frozenset(names), tuple(prefixes))


RULES: List[Rule] = [
    _rule("mpi", "fail", "MPI is used only through dtrain::Communicator", prefixes=("MPI_", "PMPI_", "OMPI_")),
    _rule("process", "fail", "starting or signalling processes is not allowed",
          ["system", "fork", "vfork", "clone", "clone3", "execl", "execlp", "execle", "execv", "execvp", "execvpe",
           "execve", "execveat", "fexecve", "popen", "posix_spawn", "posix_spawnp", "syscall", "ptrace", "kill",
           "daemon", "setsid", "dlopen", "dlsym", "prctl", "unshare", "setuid", "setrlimit"]),
    _rule("files", "fail", "file access is not allowed",
          ["fopen", "freopen", "fdopen", "open", "openat", "creat", "ofstream", "ifstream", "fstream", "filebuf",
           "basic_ofstream", "basic_ifstream", "basic_fstream", "filesystem", "unlink", "rename",
           "mkdir", "rmdir", "truncate", "ftruncate", "mmap", "dup2", "dup", "write", "pwrite", "read", "pread",
           "opendir", "readlink", "symlink", "link", "chmod", "chown"]),
    _rule("environment", "fail", "reading or changing the environment is not allowed",
          ["getenv", "secure_getenv", "setenv", "putenv", "unsetenv", "clearenv", "environ", "__environ"]),
    _rule("asm", "fail", "inline assembly is not allowed", ["asm", "__asm", "__asm__"]),
    _rule("gtest", "fail", "the code under test may not touch the test framework",
          ["gtest", "testing", "harness", "RUN_ALL_TESTS", "UnitTest", "CommAccess", "MpiSession", "seal_record",
           "mallinfo", "mallinfo2", "StudentScope", "ledger"]),
    _rule("early-exit", "warn", "ending the process from library code fails the case it happens in",
          ["exit", "_exit", "_Exit", "quick_exit", "abort", "raise", "signal", "sigaction", "terminate"]),
]
# Names of these rules that are common words count only when called: f(...).
CALLS_ONLY = {"system", "kill", "link", "open", "read", "write", "dup", "creat", "truncate", "mkdir", "rmdir",
              "daemon", "clone", "raise", "signal", "exit", "abort", "terminate"}
# Attributes that run code before main, or replace other definitions.
FORBIDDEN_ATTRIBUTES = {"constructor", "destructor", "init_priority", "section", "alias", "ifunc", "weakref",
                        "weak", "used", "naked"}


@dataclass
class Finding:
    file: str
    line: int
    rule: str
    severity: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.severity}: {self.message}"


TOKEN = re.compile(r"""
    (?P<raw>R"(?P<delim>[^ ()\\\t\n]{0,16})\((?:.|\n)*?\)(?P=delim)")
  | (?P<string>(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*")
  | (?P<number>\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*)
  | (?P<char>(?:u8|u|U|L)?'(?:\\.|[^'\\\n])*')
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<punct>\[\[|\]\]|::|[^\sA-Za-z_0-9])
  | (?P<space>\s+)
""", re.VERBOSE)
MARKER = re.compile(r'^# (\d+) "((?:\\.|[^"\\])*)"((?: \d)*)$')


def tokens(text: str) -> Iterator[Tuple[str, str, int]]:
    """(kind, text, line offset) of each token; literals are one token each."""
    pos, line = 0, 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            pos += 1
            continue
        kind = m.lastgroup if m.lastgroup != "delim" else "raw"
        if kind != "space":
            yield kind, m.group(), line
        line += m.group().count("\n")
        pos = m.end()


def own_lines(preprocessed: str, source: str) -> Tuple[List[Tuple[int, str]], List[Tuple[int, str]], List[int]]:
    """Splits the preprocessor's output into the lines that belong to `source`
    (line number, text), the files `source` includes directly (line, path),
    and the lines where a #line directive pretends to be another file."""
    source = os.path.realpath(source)
    mine: List[Tuple[int, str]] = []
    includes: List[Tuple[int, str]] = []
    spoofed: List[int] = []
    stack: List[str] = []
    current, line_no = "", 0
    resolved_of: Dict[str, str] = {}  # Eigen's headers leave thousands of markers naming a few hundred files
    for raw in preprocessed.split("\n"):
        m = MARKER.match(raw) if raw.startswith("# ") else None
        if m:
            path = m.group(2).encode().decode("unicode_escape")
            flags = set(m.group(3).split())
            resolved = resolved_of.get(path)
            if resolved is None:
                resolved = resolved_of[path] = os.path.realpath(path) if not path.startswith("<") else path
            if "1" in flags:
                if current == source:
                    includes.append((line_no, resolved))
                stack.append(current)
            elif "2" in flags:
                if stack:
                    stack.pop()
            elif current == source and resolved != source and not path.startswith("<"):
                spoofed.append(line_no)
            current, line_no = resolved, int(m.group(1))
            continue
        if current == source:
            mine.append((line_no, raw))
        line_no += 1
    return mine, includes, spoofed


def system_include_dirs(flags: List[str]) -> List[str]:
    dirs = [flags[i + 1] for i, f in enumerate(flags[:-1]) if f == "-isystem"]
    try:
        out = subprocess.run(["cpp", "-xc++", "-v", "/dev/null", "-o", "/dev/null"], stderr=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, timeout=30).stderr.decode(errors="replace")
        take = False
        for line in out.splitlines():
            if line.startswith("#include <...> search starts here"):
                take = True
            elif line.startswith("End of search list"):
                take = False
            elif take:
                dirs.append(line.strip())
    except (OSError, subprocess.TimeoutExpired):
        dirs += ["/usr/include", "/usr/local/include", "/usr/lib/gcc"]
    return [os.path.realpath(d) for d in dirs]


def include_findings(name: str, includes: List[Tuple[int, str]], system_dirs: List[str],
                     framework_dirs: List[str]) -> List[Finding]:
    found = []
    for line, path in includes:
        base = os.path.basename(path)
        under = lambda d: path == d or path.startswith(d.rstrip("/") + "/")  # noqa: E731
        if base.startswith("mpi") or "openmpi" in path:
            found.append(Finding(name, line, "mpi", "fail", f"includes {base}: MPI is used only through "
                                                            "dtrain::Communicator"))
        elif "gtest" in path or "gmock" in path:
            found.append(Finding(name, line, "gtest", "fail", f"includes {base}: the code under test may not "
                                                              "touch the test framework"))
        elif any(under(d) for d in framework_dirs):
            if base in KIT_INTERNAL_HEADERS:
                found.append(Finding(name, line, "include", "fail", f"includes {base}, which is internal to the kit"))
        elif not any(under(d) for d in system_dirs):
            found.append(Finding(name, line, "include", "fail",
                                 f"includes {path}: only standard headers and the framework's may be included"))
    return found


# An include directive as the preprocessor reads it: '#' (or its digraph
# '%:'), then include, include_next or import, after any spaces and comments.
_DIRECTIVE = re.compile(r"^\s*(?:#|%:)\s*(?:/\*.*?\*/\s*)*(include_next|include|import)\b\s*(?:/\*.*?\*/\s*)*(.?)(.*)$")


def include_text_findings(name: str, text: str) -> List[Finding]:
    """The includes the preprocessor must never open, found in the file's
    text before it runs: a name that is absolute or climbs out (`..`) can
    reach what is no header at all (`#include "/dev/zero"` reads for ever,
    a FIFO waits for ever), and an include named by a macro can't be told
    from one. Only the standard headers, the public headers and the
    student's own files are reachable by a plain name."""
    found = []
    joined = re.sub(r"\\\r?\n", "", text)  # line splices, as the preprocessor joins them
    for line_no, line in enumerate(joined.splitlines(), 1):
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        opener, rest = m.group(2), m.group(3)
        closer = {"<": ">", '"': '"'}.get(opener)
        target = rest.split(closer, 1)[0] if closer and closer in rest else None
        if target is None:
            found.append(Finding(name, line_no, "include", "fail", "an #include must name its header in quotes or "
                                                                   "angle brackets, not through a macro"))
        elif target.startswith("/") or ".." in target.replace("\\", "/").split("/"):
            found.append(Finding(name, line_no, "include", "fail", f"includes {target!r}: only standard headers, "
                                 "the public headers and your own files may be included, by their plain names"))
    return found


def token_findings(name: str, mine: List[Tuple[int, str]]) -> List[Finding]:
    found: List[Finding] = []
    by_name: Dict[str, Rule] = {n: r for r in RULES for n in r.names}
    seen: Set[Tuple[str, str]] = set()
    # Join the file's lines so literals and attributes spanning lines lex whole.
    starts = [line_no for line_no, _ in mine]
    toks = list(tokens("\n".join(raw for _, raw in mine)))
    line_of = lambda offset: starts[min(offset, len(starts) - 1)] if starts else 0  # noqa: E731

    def report(rule_key: str, severity: str, what: str, message: str, offset: int) -> None:
        if (rule_key, what) not in seen:
            seen.add((rule_key, what))
            found.append(Finding(name, line_of(offset), rule_key, severity, message))

    depth_attr = 0  # >0 inside __attribute__((...)) or [[...]]
    paren_depth = 0
    for i, (kind, text_, offset) in enumerate(toks):
        if kind != "ident" and kind != "punct":
            continue
        if kind == "punct":
            if depth_attr and text_ == "(":
                paren_depth += 1
            elif depth_attr and text_ == ")":
                paren_depth -= 1
                if paren_depth == 0 and depth_attr == 1:
                    depth_attr = 0
            elif text_ == "[[":
                depth_attr = 2
            elif text_ == "]]" and depth_attr == 2:
                depth_attr = 0
            continue
        if text_ in ("__attribute__", "__attribute", "__declspec"):
            depth_attr, paren_depth = 1, 0
            continue
        if depth_attr and text_.strip("_") in FORBIDDEN_ATTRIBUTES:
            report("attribute", "fail", text_, f"attribute '{text_.strip('_')}': code that runs before main or "
                                               "replaces other definitions is not allowed", offset)
            continue
        rule = by_name.get(text_) or next((r for r in RULES if r.prefixes and text_.startswith(r.prefixes)), None)
        if rule:
            # A member access (x.read, p->write) is the student's own method, not the C function.
            prev = toks[i - 1][1] if i else ""
            following = toks[i + 1][1] if i + 1 < len(toks) else ""
            if prev in (".", ">") and rule.key in ("files", "process"):
                continue
            if text_ in CALLS_ONLY and following != "(":
                continue
            if following == "(" and toks[i - 1][0] == "ident" and prev not in ("return", "throw", "else", "do"):
                continue  # declaring a function of that name, e.g. a method int read(...)
            report(rule.key, rule.severity, text_, f"'{text_}': {rule.why}", offset)
    return found


def check_file(path: str, flags: List[str], runner=None, system_dirs: Optional[List[str]] = None,
               name: Optional[str] = None, pch_flags: Optional[List[str]] = None) -> List[Finding]:
    """Findings for one file. `flags` are the kit's compile flags;
    `runner(cmd, timeout) -> (status, output)` runs the preprocessor.
    `pch_flags`: the build's precompiled header, which spares the
    preprocessor Eigen's headers (only the file's own lines are checked,
    and its macros are the same)."""
    name = name or os.path.basename(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            refused = include_text_findings(name, f.read())
    except OSError:
        refused = []  # the compiler will report the error itself
    if refused:
        return refused  # the preprocessor must not open them
    # -fno-working-directory: with -g (the student files have line tables)
    # the preprocessor would add a marker naming the directory, not a file.
    pch = (pch_flags + ["-fpch-preprocess"]) if pch_flags else []
    cmd = compile_limits(60) + (["cpp" if not flags else flags[0]] + flags[1:] + pch +
                                ["-E", "-fno-working-directory", "-x", "c++", path, "-o", "-"])
    if runner is None:
        def runner(c, timeout):
            p = subprocess.run(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
            return p.returncode, p.stdout.decode("utf-8", errors="replace")
    try:
        status, output = runner(cmd, 60)
    except subprocess.TimeoutExpired:
        return [Finding(name, 0, "preprocess", "fail", "the preprocessor did not finish within 60 s")]
    if status != 0:
        return []  # the compiler will report the error itself
    mine, includes, spoofed = own_lines(output, path)
    # The framework is what the kit's flags put on the include path (-I), wherever the build was made.
    framework_dirs = [os.path.realpath(f[2:]) for f in flags if f.startswith("-I") and len(f) > 2]
    framework_dirs += [os.path.realpath(FRAMEWORK_DIR)]
    findings = include_findings(name, includes, system_dirs if system_dirs is not None else system_include_dirs(flags),
                                framework_dirs)
    findings += [Finding(name, line, "line-directive", "fail",
                         "a #line directive that names another file is not allowed") for line in spoofed]
    return findings + token_findings(name, mine)



def check_files(paths: List[str], build: str, runner=None, pch: Optional[bool] = None,
                workers: Optional[int] = None) -> Dict[str, List[Finding]]:
    """Findings per file, with the build's compile flags (`make handin`,
    `make test-partN` and the grader all check this way). `pch`: whether
    the preprocessor may read the build's precompiled header (default: when
    it runs outside a sandbox); `workers`: preprocessors at once."""
    how = recipe(build)
    flags = [how["compiler"]] + how["compile_flags"]
    dirs = system_include_dirs(flags)
    use_pch = pch if pch is not None else runner is None
    pch_flags = how.get("pch_flags") if use_pch else None
    # Each file's preprocessor runs in a sandbox command of its own: side by side.
    with ThreadPoolExecutor(max_workers=max(1, min(len(paths), workers or os.cpu_count() or 2))) as pool:
        found = pool.map(lambda path: check_file(path, flags, runner=runner, system_dirs=dirs, pch_flags=pch_flags),
                         paths)
        return dict(zip(paths, found))


def static_findings(impl_dir: str, chosen: List[table.Part], build: str,
                    cache_path: Optional[str] = None) -> Dict[str, List[str]]:
    """The grader's static findings for the student files the chosen parts
    use, as "fail: ..." / "warn: ..." lines per file; cached by content (in
    the build unless told), so only an edited file is checked again."""
    files = sorted({f for p in chosen for f in p.files})
    cache_path = cache_path or os.path.join(build, "static_checks_cache.json")
    cache = findings_cache.load(cache_path)
    how = recipe(build)
    # The rules and the flags decide the findings as much as the file does.
    with open(__file__, "rb") as f:
        rules = f.read()
    header_digest = how["header_digest"] + hashlib.sha256(rules + " ".join(how["compile_flags"]).encode()).hexdigest()
    found: Dict[str, List[str]] = {}
    todo = []
    for name in files:
        path = os.path.join(impl_dir, name)
        try:
            with open(path, "rb") as f:
                key = hashlib.sha256(f.read() + header_digest.encode()).hexdigest()
        except OSError:
            continue
        if key in cache:
            found[name] = cache[key]
        else:
            todo.append((name, path, key))
    if todo:
        for (name, path, key), findings in zip(todo, check_files([p for _, p, _ in todo], build).values()):
            found[name] = cache[key] = [str(f) for f in findings]
        findings_cache.save(cache_path, cache)
    return found


def refusal_warning(found: Dict[str, List[str]]) -> List[str]:
    """Loud lines for each file the grader would refuse (and grade as its stub)."""
    lines = []
    for name, findings in found.items():
        fails = [f for f in findings if ": fail: " in f]
        if not fails:
            continue
        keys = [p.key for p in table.PARTS if name in p.files]
        lines.append(f"!! THE GRADER WOULD REFUSE student/{name}: it grades it as the stub, so "
                     f"{', '.join(keys)} would score 0, whatever these tests say:")
        lines += [f"!!   {f}" for f in fails]
        lines.append("!! (make handin refuses to pack it; the handout's Integrity section lists the rules)")
    return lines


def main(argv: List[str]) -> int:
    """Prints the findings of each file named; exit 1 if any would be refused."""
    def lines(files: List[str]):
        for findings in check_files(files, build_dir()).values():
            for f in findings:
                yield f, f.severity == "fail"
    return check_command(argv, "usage: python3 -m kit static-check FILE.cpp ...   (uses $KIT_BUILD or build/ for the flags)",
                         lines)
