"""The link check: what the grader refuses, read from each compiled student
object rather than from its text.

  python3 -m kit link-check OBJECT.o ...        (prints the refusals; exit 1 if any)

A list of forbidden identifiers can always be walked around (a name behind
`extern "C"`, `(system)(...)`, `auto f = &std::system`, `not fork()`, an
unlisted libc function); what an object can reach can't: it is the
symbols it leaves undefined, and those are matched against an ALLOWLIST
(kit/link_allowlist.txt, and kit/allowlist/KEY.txt of each extension part
held): the public API of the headers student files include
(framework/include/), and a vetted set of C and C++ runtime functions. An object
passes only if:

  1. every undefined symbol it references is on the allowlist, and every
     global symbol it defines is a C++ name outside the libraries'
     namespaces and not one the framework or the tests define (a definition
     would replace theirs: the framework is an archive);
  2. it has no static initializers (.init_array, .ctors, .preinit_array,
     .fini_array), except the one <iostream> emits under GCC 12 (below);
  3. its static and thread-local storage (writable sections, TLS, common
     symbols) is at most STATIC_LIMIT bytes: a layer can't keep its full
     weight there between calls, where the heap watch doesn't look; its
     read-only data (every allocated section neither writable nor code) at
     most READ_ONLY_LIMIT, and no section of any kind over SECTION_LIMIT;
  4. it holds no system-call instruction (syscall, sysenter, int $0x80 on
     x86-64; svc, hvc, smc on aarch64).

Only undefined references matter: template instantiations and inline
functions the object defines itself (weak, COMDAT) are its own code, and
whatever they call is again an undefined reference of this object.

<iostream>: GCC 12 gives every file that includes it a static
`std::ios_base::Init` object, so an init function runs before main. It is
accepted when that function references nothing but ios_base::Init's
constructor and destructor, __cxa_atexit, __dso_handle and the object's own
zero-initialized (.bss) data: such code can call nothing else, and a
function pointer it could call through would need a relocation to that
function, so any other dynamic initializer of the file (they all share the
one init function) makes the object refused.

Objects are read by kit/elf.py (sections, symbols, relocations, archive
members; addr2line and objdump where the bytes alone can't say), and the
allowlist and the names by kit/link_allowlist.py (c++filt demangles).
"""
import hashlib
import json
import os
import struct
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from kit import findings_cache
from kit.link_allowlist import Allowlist, allowlist_paths, demangle, entity, load_allowlist
from kit.elf import (SHF_ALLOC, SHF_EXECINSTR, SHF_TLS, SHF_WRITE, SHN_COMMON, SHN_UNDEF, SHT_FINI_ARRAY,
                     SHT_INIT_ARRAY, SHT_NOBITS, SHT_PREINIT_ARRAY, STB_GLOBAL, STB_LOCAL, STT_COMMON, STT_FILE,
                     STT_FUNC, STT_GNU_IFUNC, STT_OBJECT, STT_SECTION, STT_TLS, STV_HIDDEN, Elf, NotAnObject, Symbol,
                     archive_members, code_sections, globals_of, lines_of, read_elf, read_file,
                     syscall_instructions)
from kit.recipe import NotBuilt, recipe
from kit.report import check_command
from kit import overrides

STATIC_LIMIT = 64 * 1024
# Read-only data (constants, string literals, tables; honest objects hold
# under 10 KB) and any one section (code, debug information; honest ones are
# under 0.5 MB): objects are cached by content, and two 60 MiB constant
# arrays would add 127 MB to the cache for each handin that holds them.
READ_ONLY_LIMIT = 1024 * 1024
SECTION_LIMIT = 4 * 1024 * 1024
# What a cached finding depends on besides the object and the allowlist's
# files: a change to any of them misses the cache.
RULE_FILES = [os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
              for name in ("link_check.py", "elf.py", "link_allowlist.py")]

# What the <iostream> initializer may reference (mangled: c++filt is not needed to see them).
IOSTREAM_INIT = {"_ZNSt8ios_base4InitC1Ev", "_ZNSt8ios_base4InitD1Ev", "__cxa_atexit", "__dso_handle"}
# The C library's variables a global of that name would replace (the rest start with _).
C_LIBRARY_DATA = {"environ", "optarg", "optind", "opterr", "optopt", "stdin", "stdout", "stderr", "errno", "h_errno",
                  "program_invocation_name", "program_invocation_short_name", "daylight", "timezone", "tzname",
                  "signgam", "sys_errlist", "sys_nerr"}
# Library namespaces a student file may not define symbols in (they would replace the library's).
LIBRARY_NAMESPACES = ("std::", "__gnu_cxx::", "__cxxabiv1::", "__gnu_debug::", "testing::", "harness::", "kit::",
                      "Eigen::", "operator new", "operator delete")


@dataclass
class Refusal:
    line: int       # 0 when not known
    rule: str       # symbol | definition | initializer | storage | read-only | section | asm | object
    message: str


def defined_elsewhere(how: Optional[Dict]) -> Set[str]:
    """Global symbols the framework, the tests and the other static inputs
    of the link define (a student definition of one would replace it)."""
    if not how:
        return set()
    # Kept in the build, by the inputs' sizes and times: a grading reads the
    # framework's sixty objects once per build, not once per handin.
    inputs = [p for p in how.get("link_inputs", []) if p.endswith((".o", ".a"))]
    stamp = []
    for path in inputs:
        try:
            st = os.stat(path)
            stamp.append([path, st.st_size, st.st_mtime_ns])
        except OSError:
            stamp.append([path, 0, 0])
    cache_path = os.path.join(how["cache_dir"], "defined_elsewhere.json") if how.get("cache_dir") else None
    if cache_path:
        kept = findings_cache.load(cache_path)
        if kept.get("stamp") == stamp and isinstance(kept.get("names"), list):
            return set(kept["names"])
    names: Set[str] = set()
    for path in inputs:
        if path.endswith(".o"):
            names |= globals_of(path, read_file(path))
        else:
            for member_name, member in archive_members(path):
                names |= globals_of(member_name, member)
    if cache_path:
        os.makedirs(os.path.dirname(cache_path), exist_ok=True)
        findings_cache.save(cache_path, {"stamp": stamp, "names": sorted(names)})
    return names


def check_object(path: str, source: str, allowlist: Optional[Allowlist] = None, how: Optional[Dict] = None,
                 elsewhere: Optional[Set[str]] = None) -> List[Refusal]:
    """Why the grader refuses this object of student file `source`; [] if it passes."""
    allowlist = allowlist or load_allowlist()
    name = os.path.basename(source)
    try:
        elf = read_elf(read_file(path))
    except (NotAnObject, struct.error, ValueError, IndexError) as e:
        return [Refusal(0, "object", f"{name}: its object can't be read ({e})")]
    syms = elf.symbols
    refusals: List[Refusal] = []
    wanted = {s.name for s in syms if s.name and s.type not in (STT_SECTION, STT_FILE)}
    plain = demangle(wanted)

    # 1. Undefined references outside the allowlist; where each is first used.
    undefined = {i: s for i, s in enumerate(syms) if s.shndx == SHN_UNDEF and s.name and s.bind != STB_LOCAL}
    bad = {i: s for i, s in undefined.items() if allowlist.group_of(entity(plain.get(s.name, s.name))) is None}
    places: Dict[str, Tuple[int, int]] = {}
    code = {s.index for s in code_sections(elf)}
    for section, rows in sorted(elf.relocs.items()):
        if section not in code:
            continue
        for r in rows:
            if r.symbol in bad and syms[r.symbol].name not in places:
                places[syms[r.symbol].name] = (section, r.offset)
    lines = lines_of(path, elf, places, source) if bad else {}
    for s in sorted(bad.values(), key=lambda s: (lines.get(s.name, 1 << 30), s.name)):
        shown = plain.get(s.name, s.name)
        refusals.append(Refusal(lines.get(s.name, 0), "symbol",
                                f"uses {shown}, which student code may not call or reference"))

    # 1b. Definitions that would replace someone else's.
    elsewhere = elsewhere if elsewhere is not None else defined_elsewhere(how)
    for s in syms:
        if s.shndx == SHN_UNDEF or s.bind == STB_LOCAL or s.type in (STT_SECTION, STT_FILE) or not s.name:
            continue
        shown = entity(plain.get(s.name, s.name))
        if s.type == STT_GNU_IFUNC:
            why = "an indirect function, whose resolver runs before main"
        elif s.name.startswith("DW.ref.") and s.other & 3 == STV_HIDDEN:
            continue  # the compiler's own pointer to the personality routine, shared by the program's objects
        elif not s.name.startswith("_Z") and (s.type != STT_OBJECT or s.name.startswith("_") or
                                              s.name in C_LIBRARY_DATA or s.name in elsewhere):
            # A C++ function always has a mangled name; a plain one is extern "C".
            # Variables of the global namespace are not mangled: only the C
            # library's and the kit's are refused.
            why = "a C name (extern \"C\"), which would replace the C library's or the kit's"
        elif s.bind == STB_GLOBAL and shown.startswith(LIBRARY_NAMESPACES):
            why = "a name of a library's namespace, which would replace the library's"
        elif s.bind == STB_GLOBAL and s.name in elsewhere:
            why = "a name the framework or the tests define, which would replace theirs"
        else:
            continue
        refusals.append(Refusal(0, "definition", f"defines {shown}: {why}"))

    # 2. Static initializers.
    refusals += initializer_refusals(elf, plain, name)

    # 3. Static and thread-local storage.
    storage = [s for s in elf.sections if s.flags & SHF_ALLOC and (s.flags & SHF_WRITE or s.flags & SHF_TLS)
               and s.type not in (SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY)]
    total = sum(s.size for s in storage) + sum(s.size for s in syms if s.shndx == SHN_COMMON)
    if total > STATIC_LIMIT:
        in_storage = {s.index for s in storage}
        biggest = sorted((s for s in syms if (s.shndx in in_storage or s.shndx == SHN_COMMON)
                          and s.type in (STT_OBJECT, STT_TLS, STT_COMMON) and s.size),
                         key=lambda s: -s.size)[:3]
        named = ", ".join(f"{plain.get(s.name, s.name)} ({s.size} bytes)" for s in biggest)
        refusals.append(Refusal(0, "storage",
                                f"holds {total} bytes of static or thread-local storage (globals, statics, "
                                f"thread_local), over the {STATIC_LIMIT // 1024} KiB limit" +
                                (f": {named}" if named else "") + "; keep large data in the heap (std::vector, "
                                                                   "Eigen), allocated inside the call"))

    # 3b. Read-only data, and any section's size, whatever its name.
    read_only = [s for s in elf.sections if s.flags & SHF_ALLOC and not s.flags & (SHF_WRITE | SHF_EXECINSTR | SHF_TLS)]
    total = sum(s.size for s in read_only)
    if total > READ_ONLY_LIMIT:
        in_read_only = {s.index for s in read_only}
        biggest = sorted((s for s in syms if s.shndx in in_read_only and s.type == STT_OBJECT and s.size),
                         key=lambda s: -s.size)[:3]
        named = ", ".join(f"{plain.get(s.name, s.name)} ({s.size} bytes)" for s in biggest)
        refusals.append(Refusal(0, "read-only", f"holds {total} bytes of read-only data (constants, string "
                                                f"literals, tables), over the {READ_ONLY_LIMIT // 1024} KiB limit" +
                                (f": {named}" if named else "")))
    for s in elf.sections:
        if s.size > SECTION_LIMIT:
            refusals.append(Refusal(0, "section", f"its section {s.name} holds {s.size} bytes, over the "
                                                  f"{SECTION_LIMIT // 1024} KiB a section of an object may hold"))

    # 4. System calls by hand.
    for insn in syscall_instructions(path, elf):
        refusals.append(Refusal(0, "asm", f"contains the instruction {insn}: student code may not make system "
                                          "calls itself"))
    return refusals


def initializer_refusals(elf: Elf, plain: Dict[str, str], name: str) -> List[Refusal]:
    syms = elf.symbols
    refusals: List[Refusal] = []
    advice = ("a global or static object with a constructor (or a non-constant initializer) runs code before "
              "main; make it constexpr, a plain constant, or a static inside a function")
    for s in elf.sections:
        kind = s.type in (SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY) or \
            s.name.startswith((".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors"))
        if not kind or not s.size:
            continue
        rows = elf.relocs.get(s.index, [])
        if s.type != SHT_INIT_ARRAY and not s.name.startswith(".init_array") or not rows or \
                len(rows) != s.size // 8:
            refusals.append(Refusal(0, "initializer", f"has a {s.name} section: {advice}"))
            continue
        for r in rows:
            problem = _init_function_problem(elf, syms[r.symbol], r.addend, plain)
            if problem:
                refusals.append(Refusal(0, "initializer", f"has a static initializer ({problem}): {advice}"))
    return refusals


def _init_function_problem(elf: Elf, target: Symbol, addend: int, plain: Dict[str, str]) -> Optional[str]:
    """None if the init function at target+addend is <iostream>'s own and nothing more."""
    syms = elf.symbols
    if target.shndx in (SHN_UNDEF,) or target.shndx >= len(elf.sections):
        return "it calls code outside the file"
    section, start = target.shndx, target.value + addend
    func = next((s for s in syms if s.shndx == section and s.type == STT_FUNC and s.value == start), None)
    if func is None or not func.size:
        return "its code can't be told apart"
    calls_init = False
    for r in elf.relocs.get(section, []):
        if not start <= r.offset < start + func.size:
            continue
        ref = syms[r.symbol]
        if ref.name in IOSTREAM_INIT:
            calls_init |= ref.name == "_ZNSt8ios_base4InitC1Ev"
            continue
        if ref.bind == STB_LOCAL and ref.type in (STT_SECTION, STT_OBJECT) and 0 < ref.shndx < len(elf.sections) \
                and elf.sections[ref.shndx].type == SHT_NOBITS and not elf.sections[ref.shndx].flags & SHF_TLS:
            continue  # the file's own zero-initialized data, std::__ioinit among it
        shown = plain.get(ref.name, ref.name) or elf.sections[ref.shndx].name if ref.shndx < len(elf.sections) \
            else ref.name
        return f"it uses {shown} before main"
    return None if calls_init else "code before main that is not <iostream>'s"


# ---- the kit's uses ----

def enforced() -> bool:
    """KIT_STATIC_CHECKS=warn (staff only: the hostile gallery tests the
    run-time defences behind these checks) reports refusals without acting on them."""
    return not overrides.STATIC_CHECKS_WARN


def findings(obj: str, source: str, how: Optional[Dict] = None, elsewhere: Optional[Set[str]] = None) -> List[str]:
    """The refusals of one object as "file:line: fail: message" lines, as
    kit/static_checks.py writes its findings."""
    allowlist = load_allowlist()
    name = os.path.basename(source)
    out = []
    told = False
    for r in check_object(obj, source, allowlist, how, elsewhere):
        message = r.message
        if r.rule == "symbol" and not told:  # once per file: the list is long
            message += f" (allowed: {allowlist.summary()}; handout: Integrity)"
            told = True
        out.append(f"{name}:{r.line}: fail: {message}")
    return out


def explain(found: List[str]) -> str:
    return "refused by the link check (graded as the stub):\n" + "\n".join(found)


def object_findings(impl_dir: str, build: str, files: List[str],
                    cache_path: Optional[str] = None) -> Dict[str, List[str]]:
    """`make test`: the link check of the objects CMake built from the
    student files (kit_tests_student is built first), cached by content."""
    try:
        with open(os.path.join(build, "compile_commands.json")) as f:
            commands = json.load(f)
        how = recipe(build)
    except (OSError, ValueError, NotBuilt):  # a build not made yet: nothing to say
        return {}
    objects: Dict[str, str] = {}
    for c in commands:
        src = os.path.realpath(c["file"])
        if os.path.dirname(src) != os.path.realpath(impl_dir) or os.path.basename(src) not in files:
            continue
        args = c.get("arguments") or c["command"].split()
        if "-o" in args:
            objects[os.path.basename(src)] = os.path.join(c["directory"], args[args.index("-o") + 1])
    cache_path = cache_path or os.path.join(build, "link_check_cache.json")
    cache = findings_cache.load(cache_path)
    rules = b""
    for rule_file in RULE_FILES + allowlist_paths():
        with open(rule_file, "rb") as f:
            rules += f.read()
    found: Dict[str, List[str]] = {}
    elsewhere = None
    for name, obj in objects.items():
        data = read_file(obj)
        if not data:
            continue
        key = hashlib.sha256(data + rules).hexdigest()
        if key not in cache:
            if elsewhere is None:
                elsewhere = defined_elsewhere(how)
            cache[key] = findings(obj, os.path.join(impl_dir, name), how, elsewhere)
        found[name] = cache[key]
    findings_cache.save(cache_path, cache)
    return found


def main(argv: List[str]) -> int:
    def lines(args: List[str]):
        for arg in args:
            obj, _, source = arg.partition("=")
            for line in findings(obj, source or os.path.splitext(obj)[0]):
                yield line, True
    return check_command(argv, "usage: python3 -m kit link-check OBJECT.o[=SOURCE.cpp] ...", lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
