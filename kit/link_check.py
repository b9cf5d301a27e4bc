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

Objects are ELF64 little-endian (x86-64 or aarch64, the kit cross-builds for
arm64), read here with the standard library; c++filt demangles, objdump
disassembles x86-64 code, and addr2line finds the line that uses a refused
symbol from the object's line table (student objects are built with -g1).
"""
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

from kit import findings_cache
from kit.parts import built_parts
from kit.paths import KIT_DIR
from kit.report import check_command

ALLOWLIST_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "link_allowlist.txt")
STATIC_LIMIT = 64 * 1024
# Read-only data (constants, string literals, tables; honest objects hold
# under 10 KB) and any one section (code, debug information; honest ones are
# under 0.5 MB): objects are cached by content, and two 60 MiB constant
# arrays would add 127 MB to the cache for each handin that holds them.
READ_ONLY_LIMIT = 1024 * 1024
SECTION_LIMIT = 4 * 1024 * 1024

EM_X86_64, EM_AARCH64 = 62, 183
SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 2, 4, 8, 9
SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY, SHT_SYMTAB_SHNDX = 14, 15, 16, 18
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_TLS = 0x1, 0x2, 0x4, 0x400
STB_LOCAL, STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 0, 1, 2, 10
STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE, STT_COMMON, STT_TLS, STT_GNU_IFUNC = 1, 2, 3, 4, 5, 6, 10
SHN_UNDEF, SHN_COMMON, SHN_XINDEX = 0, 0xFFF2, 0xFFFF
STV_HIDDEN = 2

# What the <iostream> initializer may reference (mangled: c++filt is not needed to see them).
IOSTREAM_INIT = {"_ZNSt8ios_base4InitC1Ev", "_ZNSt8ios_base4InitD1Ev", "__cxa_atexit", "__dso_handle"}
# The C library's variables a global of that name would replace (the rest start with _).
C_LIBRARY_DATA = {"environ", "optarg", "optind", "opterr", "optopt", "stdin", "stdout", "stderr", "errno", "h_errno",
                  "program_invocation_name", "program_invocation_short_name", "daylight", "timezone", "tzname",
                  "signgam", "sys_errlist", "sys_nerr"}
# Library namespaces a student file may not define symbols in (they would replace the library's).
LIBRARY_NAMESPACES = ("std::", "__gnu_cxx::", "__cxxabiv1::", "__gnu_debug::", "testing::", "harness::", "kit::",
                      "Eigen::", "operator new", "operator delete")


class NotAnObject(Exception):
    pass


@dataclass
class Section:
    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


@dataclass
class Symbol:
    name: str
    value: int
    size: int
    bind: int
    type: int
    shndx: int
    other: int = 0


@dataclass
class Reloc:
    offset: int
    symbol: int
    type: int
    addend: int


@dataclass
class Elf:
    machine: int
    data: bytes
    sections: List[Section]
    symbols: List[Symbol]
    relocs: Dict[int, List[Reloc]] = field(default_factory=dict)  # section index -> its relocations

    def contents(self, s: Section) -> bytes:
        return b"" if s.type == SHT_NOBITS else self.data[s.offset:s.offset + s.size]


def read_elf(data: bytes) -> Elf:
    """The sections, the symbol table and the relocations of an ELF64
    little-endian relocatable object."""
    if data[:4] != b"\x7fELF" or len(data) < 64:
        raise NotAnObject("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise NotAnObject("not a 64-bit little-endian ELF object")
    (e_type, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, shstrndx) = struct.unpack_from(
        "<HHIQQQIHHHHHH", data, 16)
    if e_type != 1:
        raise NotAnObject("not a relocatable object")
    if machine not in (EM_X86_64, EM_AARCH64):
        raise NotAnObject(f"an object for machine {machine}, neither x86-64 nor aarch64")

    def header(i: int) -> Tuple:
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)

    first = header(0)
    shnum = shnum or first[5]       # more than 0xff00 sections: the count is in section 0
    if shstrndx == SHN_XINDEX:
        shstrndx = first[6]
    raw = [header(i) for i in range(shnum)]
    strtab_of = raw[shstrndx]

    def string(table_offset: int, at: int) -> str:
        end = data.index(b"\0", table_offset + at)
        return data[table_offset + at:end].decode("utf-8", errors="replace")

    sections = [Section(i, string(strtab_of[4], h[0]), h[1], h[2], h[4], h[5], h[6], h[7], h[9])
                for i, h in enumerate(raw)]
    elf = Elf(machine, data, sections, [])
    symtab = next((s for s in sections if s.type == SHT_SYMTAB), None)
    if symtab is None:
        return elf
    xindex = next((s for s in sections if s.type == SHT_SYMTAB_SHNDX and s.link == symtab.index), None)
    names_at = sections[symtab.link].offset
    for i in range(symtab.size // 24):
        st_name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, symtab.offset + i * 24)
        if shndx == SHN_XINDEX and xindex is not None:
            shndx = struct.unpack_from("<I", data, xindex.offset + 4 * i)[0]
        elf.symbols.append(Symbol(string(names_at, st_name), value, size, info >> 4, info & 0xF, shndx, other))
    for s in sections:
        if s.type in (SHT_RELA, SHT_REL) and s.link == symtab.index:
            step = 24 if s.type == SHT_RELA else 16
            rows = []
            for at in range(s.offset, s.offset + s.size - step + 1, step):
                if s.type == SHT_RELA:
                    offset, info, addend = struct.unpack_from("<QQq", data, at)
                else:
                    (offset, info), addend = struct.unpack_from("<QQ", data, at), 0
                rows.append(Reloc(offset, info >> 32, info & 0xFFFFFFFF, addend))
            elf.relocs.setdefault(s.info, []).extend(rows)
    return elf


# ---- the allowlist ----

@dataclass
class Allowlist:
    """Patterns over symbols, by group. A pattern is a demangled entity (the
    return type of a function template dropped) where `*` matches anything;
    a pattern written `re:...` is a regular expression matched whole."""
    groups: List[Tuple[str, List[str]]]
    _compiled: List[Tuple[str, "re.Pattern"]] = field(default_factory=list)

    def __post_init__(self):
        for group, patterns in self.groups:
            for p in patterns:
                text = p[3:] if p.startswith("re:") else ".*".join(re.escape(part) for part in p.split("*"))
                self._compiled.append((group, re.compile(text + r"\Z")))

    def group_of(self, entity: str) -> Optional[str]:
        return next((g for g, rx in self._compiled if rx.match(entity)), None)

    def summary(self) -> str:
        return "; ".join(g for g, _ in self.groups)


def allowlist_paths() -> List[str]:
    """The core list, then the lines of each extension part this copy holds
    (kit/allowlist/KEY.txt, named by its row of kit/parts.py)."""
    return [ALLOWLIST_PATH] + [os.path.join(KIT_DIR, p.adds.allowlist) for p in built_parts() if p.adds.allowlist]


def load_allowlist(paths: Optional[List[str]] = None) -> Allowlist:
    """The groups of every file of `paths` (default: allowlist_paths()); a
    group a later file names again gains its patterns."""
    groups: Dict[str, List[str]] = {}
    for path in paths or allowlist_paths():
        group = None
        with open(path) as f:
            for raw in f:
                line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("re:") else raw.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("[") and line.endswith("]"):
                    group = groups.setdefault(line[1:-1], [])
                elif group is not None:
                    group.append(line)
                else:
                    raise ValueError(f"{path}: a pattern before the first [group]: {line}")
    return Allowlist(list(groups.items()))


# ---- names ----

# Longest first: "operator>><char>" is operator>> and its template arguments.
OPERATORS = sorted((">>= <<= <=> ->* << >> <= >= == != && || ++ -- += -= *= /= %= &= |= ^= -> "
                    "+ - * / % ^ & | ~ ! = < > ,").split(), key=len, reverse=True)
SPECIAL_PREFIXES = ("typeinfo name for ", "typeinfo for ", "vtable for ", "VTT for ", "construction vtable for ",
                    "guard variable for ", "TLS init function for ", "TLS wrapper function for ",
                    "non-virtual thunk to ", "virtual thunk to ", "covariant return thunk to ",
                    "reference temporary #0 for ")


def entity(demangled: str) -> str:
    """The demangled name without a function template's leading return type:
    what a pattern is matched against ("std::basic_ostream<...>& std::operator<< <...>(...)"
    becomes "std::operator<< <...>(...)")."""
    prefix = next((p for p in SPECIAL_PREFIXES if demangled.startswith(p)), "")
    text = demangled[len(prefix):]
    depth, last_space, i = 0, -1, 0
    while i < len(text):
        if text.startswith("operator", i) and (i == 0 or text[i - 1] in ": "):
            j = i + len("operator")
            if text.startswith(("()", "[]"), j):
                j += 2
            elif j < len(text) and text[j] == " ":   # new, delete, conversions: up to the parameters
                while j < len(text) and text[j] not in "(<":
                    j += 1
            else:
                j += next((len(o) for o in OPERATORS if text.startswith(o, j)), 0)
            if text.startswith(" <", j):
                j += 1
            i = j
            continue
        c = text[i]
        if c in "<{[":
            depth += 1
        elif c in ">}]":
            depth -= 1
        elif c == " " and depth == 0:
            last_space = i
        elif c == "(" and depth == 0:
            break
        i += 1
    if last_space >= 0:  # only a function template's return type stands before its name
        text = text[last_space + 1:]
    return prefix + text


def demangle(names: Iterable[str]) -> Dict[str, str]:
    names = list(dict.fromkeys(names))
    if not names:
        return {}
    try:
        proc = subprocess.run(["c++filt"], input="\n".join(names) + "\n", stdout=subprocess.PIPE, text=True,
                              timeout=60)
        out = proc.stdout.split("\n")
        if len(out) >= len(names):
            return dict(zip(names, out))
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {n: n for n in names}


# ---- lines ----

def tool(name: str, machine: int) -> Optional[str]:
    """binutils for the object's machine: the cross tools for aarch64 objects on another host."""
    cross = {EM_AARCH64: "aarch64-linux-gnu-", EM_X86_64: "x86_64-linux-gnu-"}[machine]
    native = os.uname().machine == {EM_AARCH64: "aarch64", EM_X86_64: "x86_64"}[machine]
    return shutil.which(cross + name) or (shutil.which(name) if native else None)


def lines_of(path: str, elf: Elf, places: Dict[str, Tuple[int, int]], source: str) -> Dict[str, int]:
    """symbol -> the line of `source` that uses it first, from the line table
    (inlined code is traced back to the student's own line)."""
    addr2line = tool("addr2line", elf.machine)
    if not addr2line:
        return {}
    by_section: Dict[int, List[Tuple[str, int]]] = {}
    for name, (section, offset) in places.items():
        by_section.setdefault(section, []).append((name, offset))
    found: Dict[str, int] = {}
    base = os.path.basename(source)
    for section, wanted in by_section.items():
        try:
            proc = subprocess.run([addr2line, "-a", "-i", "-e", path, "-j", elf.sections[section].name] +
                                  [hex(off) for _, off in wanted],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        # -a starts each address's group with the address; -i adds the
        # places it was inlined into, innermost first: the student's line is
        # the last one in their file.
        groups: List[List[str]] = []
        for line in proc.stdout.splitlines():
            if line.startswith("0x"):
                groups.append([])
            elif groups:
                groups[-1].append(line)
        for (name, _), group in zip(wanted, groups):
            mine = [m.group(1) for m in (re.match(r"(?:.*/)?" + re.escape(base) + r":(\d+)", l) for l in group) if m]
            if mine:
                found[name] = int(mine[-1])
    return found


# ---- the checks ----

@dataclass
class Refusal:
    line: int       # 0 when not known
    rule: str       # symbol | definition | initializer | storage | read-only | section | asm | object
    message: str


def _code_sections(elf: Elf) -> List[Section]:
    return [s for s in elf.sections if s.flags & SHF_EXECINSTR and s.type != SHT_NOBITS and s.size]


def syscall_instructions(path: str, elf: Elf) -> List[str]:
    """Names of the system-call instructions in the object's code."""
    found: Set[str] = set()
    if elf.machine == EM_AARCH64:
        names = {0xD4000001: "svc", 0xD4000002: "hvc", 0xD4000003: "smc"}
        for s in _code_sections(elf):
            code = elf.contents(s)
            for (word,) in struct.iter_unpack("<I", code[:len(code) // 4 * 4]):
                kind = names.get(word & 0xFFE0001F)
                if kind:
                    found.add(kind)
        return sorted(found)
    # x86-64's instructions have no fixed width: only a disassembly says
    # whether the bytes 0f 05 are an instruction. Skip it when they are nowhere.
    patterns = (b"\x0f\x05", b"\x0f\x34", b"\xcd\x80", b"\x0f\x07")
    if not any(p in elf.contents(s) for s in _code_sections(elf) for p in patterns):
        return []
    objdump = tool("objdump", elf.machine)
    if not objdump:
        return ["syscall (no objdump here to tell code from data; refused to be safe)"]
    proc = subprocess.run([objdump, "-d", "--no-show-raw-insn", path], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, timeout=120)
    for line in proc.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            insn = parts[1].split()
            if insn and insn[0] in ("syscall", "sysenter", "sysret", "sysexit"):
                found.add(insn[0])
            elif insn and insn[0] == "int" and len(insn) > 1 and insn[1] == "$0x80":
                found.add("int $0x80")
    return sorted(found)


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
            names |= _globals_of(path, _read(path))
        else:
            for member_name, member in _archive_members(path):
                names |= _globals_of(member_name, member)
    if cache_path:
        os.makedirs(os.path.dirname(cache_path), exist_ok=True)
        findings_cache.save(cache_path, {"stamp": stamp, "names": sorted(names)})
    return names


_GLOBALS_CACHE: Dict[Tuple[str, int, int], Set[str]] = {}


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _globals_of(name: str, data: bytes) -> Set[str]:
    key = (name, len(data), hash(data[:4096]))
    if key not in _GLOBALS_CACHE:
        try:
            elf = read_elf(data)
            _GLOBALS_CACHE[key] = {s.name for s in elf.symbols if s.shndx != SHN_UNDEF and s.bind != STB_LOCAL
                                   and s.type not in (STT_SECTION, STT_FILE)}
        except (NotAnObject, struct.error, ValueError, IndexError):
            _GLOBALS_CACHE[key] = set()
    return _GLOBALS_CACHE[key]


def _archive_members(path: str) -> List[Tuple[str, bytes]]:
    data = _read(path)
    if not data.startswith(b"!<arch>\n"):
        return []
    members, at = [], 8
    while at + 60 <= len(data):
        head = data[at:at + 60]
        name, size = head[:16].decode(errors="replace").strip(), int(head[48:58].decode().strip() or 0)
        body = data[at + 60:at + 60 + size]
        if name not in ("/", "//", "/SYM64/"):
            members.append((f"{path}({name})", body))
        at += 60 + size + (size & 1)
    return members


def check_object(path: str, source: str, allowlist: Optional[Allowlist] = None, how: Optional[Dict] = None,
                 elsewhere: Optional[Set[str]] = None) -> List[Refusal]:
    """Why the grader refuses this object of student file `source`; [] if it passes."""
    allowlist = allowlist or load_allowlist()
    name = os.path.basename(source)
    try:
        elf = read_elf(_read(path))
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
    code = {s.index for s in _code_sections(elf)}
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
    return os.environ.get("KIT_STATIC_CHECKS") != "warn"


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
    from kit.build import NotBuilt, recipe  # kit.build imports this module
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
    with open(__file__, "rb") as f:
        rules = f.read()
    for path in allowlist_paths():
        with open(path, "rb") as f:
            rules += f.read()
    found: Dict[str, List[str]] = {}
    elsewhere = None
    for name, obj in objects.items():
        data = _read(obj)
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
