"""Reading compiled objects for the link check (kit/link_check.py): an
ELF64 little-endian relocatable object's sections, symbols and relocations,
an archive's members, and what binutils add where the bytes alone can't
say: the source line that uses a symbol (addr2line, from the line table;
student objects are built with -g1) and the system-call instructions in the
code (objdump disassembles x86-64, whose instructions have no fixed width).

Objects are x86-64 or aarch64 (the kit cross-builds for arm64), read here
with the standard library; the cross binutils read an object of the other
machine.
"""
import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

EM_X86_64, EM_AARCH64 = 62, 183
SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 2, 4, 8, 9
SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY, SHT_SYMTAB_SHNDX = 14, 15, 16, 18
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_TLS = 0x1, 0x2, 0x4, 0x400
STB_LOCAL, STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 0, 1, 2, 10
STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE, STT_COMMON, STT_TLS, STT_GNU_IFUNC = 1, 2, 3, 4, 5, 6, 10
SHN_UNDEF, SHN_COMMON, SHN_XINDEX = 0, 0xFFF2, 0xFFFF
STV_HIDDEN = 2


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


def code_sections(elf: Elf) -> List[Section]:
    """The sections that hold code."""
    return [s for s in elf.sections if s.flags & SHF_EXECINSTR and s.type != SHT_NOBITS and s.size]


def syscall_instructions(path: str, elf: Elf) -> List[str]:
    """Names of the system-call instructions in the object's code."""
    found: Set[str] = set()
    if elf.machine == EM_AARCH64:
        names = {0xD4000001: "svc", 0xD4000002: "hvc", 0xD4000003: "smc"}
        for s in code_sections(elf):
            code = elf.contents(s)
            for (word,) in struct.iter_unpack("<I", code[:len(code) // 4 * 4]):
                kind = names.get(word & 0xFFE0001F)
                if kind:
                    found.add(kind)
        return sorted(found)
    # x86-64's instructions have no fixed width: only a disassembly says
    # whether the bytes 0f 05 are an instruction. Skip it when they are nowhere.
    patterns = (b"\x0f\x05", b"\x0f\x34", b"\xcd\x80", b"\x0f\x07")
    if not any(p in elf.contents(s) for s in code_sections(elf) for p in patterns):
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


_GLOBALS_CACHE: Dict[Tuple[str, int, int], Set[str]] = {}


def read_file(path: str) -> bytes:
    """The file's bytes; none if it can't be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def globals_of(name: str, data: bytes) -> Set[str]:
    """The global symbols an object defines; none if it is no object."""
    key = (name, len(data), hash(data[:4096]))
    if key not in _GLOBALS_CACHE:
        try:
            elf = read_elf(data)
            _GLOBALS_CACHE[key] = {s.name for s in elf.symbols if s.shndx != SHN_UNDEF and s.bind != STB_LOCAL
                                   and s.type not in (STT_SECTION, STT_FILE)}
        except (NotAnObject, struct.error, ValueError, IndexError):
            _GLOBALS_CACHE[key] = set()
    return _GLOBALS_CACHE[key]


def archive_members(path: str) -> List[Tuple[str, bytes]]:
    """("ARCHIVE(member)", its bytes) of each member of a static library."""
    data = read_file(path)
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
