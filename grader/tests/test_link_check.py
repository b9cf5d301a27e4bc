"""The link check (kit/link_check.py) on objects compiled with the kit's own
flags: correct code passes, each known bypass of the identifier rules is
refused naming what it uses.

  python3 -m pytest grader/tests/test_link_check.py -q      (after `make build`)

Correct code: the reference, the stubs, every variant of staff/mutants.py
(the correct ones, and the known bugs, which must lose only their parts),
and link_check/honest_*.cpp (the standard library's
containers, printing with <iostream>, exceptions, Eigen, statics). Bypasses:
link_check/bypass_*.cpp, each naming with `// refused: TEXT` what its
refusal must say. The aarch64 paths are checked on a hand-made object (no
cross compiler is needed).
"""
import glob
import hashlib
import os
import struct

import pytest

from conftest import BUILD, KIT
from grader.gradebook import write_atomically
from kit import link_check
from kit.build import compile_one
from kit.link_allowlist import load_allowlist
from kit import parts as table
from kit.recipe import recipe
from staff.mutants import MUTANTS

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "link_check")
HONEST = sorted(glob.glob(os.path.join(HERE, "honest_*.cpp")))
BYPASSES = sorted(glob.glob(os.path.join(HERE, "bypass_*.cpp")))
# Every known bug too: each must lose points only where its bug is, so none
# may be refused (a refused file would lose all of its file's parts).
CORRECT_MUTANTS = MUTANTS


@pytest.fixture(scope="module")
def how():
    return recipe(BUILD)


@pytest.fixture(scope="module")
def elsewhere(how):
    return link_check.defined_elsewhere(how)


def refusals(how, elsewhere, source: str, tmp_path, name: str = "") -> list:
    """The link check's findings on `source`, compiled through the compiler
    cache as the known-bug checks are (staff/mutants.py): from a copy at a
    path that its text names (BUILD/link_check/DIGEST/FILE), the same in
    every clone, so a clean clone compiles none of these files again."""
    with open(source, newline="") as f:
        text = f.read()
    copy = os.path.join(BUILD, "link_check", hashlib.sha256(text.encode()).hexdigest()[:16], os.path.basename(source))
    if not os.path.exists(copy):
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        write_atomically(copy, text)  # whole, even beside another run of the same check
    obj = str(tmp_path / (os.path.basename(source) + ".o"))
    errors = compile_one(how, copy, obj, compiler_cache=True)
    assert errors is None, f"{source} does not compile:\n{errors}"
    return link_check.findings(obj, name or source, how, elsewhere)


def test_allowlist_reads(how):
    allowlist = load_allowlist()
    assert allowlist.group_of("operator new(unsigned long)")
    assert allowlist.group_of("system") is None
    assert allowlist.group_of("dtrain::Communicator::all_reduce_raw(double const*, double*, long, dtrain::Op)") is None


@pytest.mark.parametrize("impl", ["reference", "student"])
@pytest.mark.parametrize("name", table.IMPL_FILES)
def test_the_reference_and_the_stubs_pass(impl, name, how, elsewhere, tmp_path):
    assert refusals(how, elsewhere, os.path.join(KIT, impl, name), tmp_path) == []


@pytest.mark.parametrize("mutant", CORRECT_MUTANTS, ids=[m.name for m in CORRECT_MUTANTS])
def test_correct_variants_and_known_bugs_pass(mutant, how, elsewhere, tmp_path):
    """The known bugs included: the weight cached in a function-local
    static or a shared_ptr is the heap watch's to catch (in part 8's
    forward alone), not the link check's."""
    with open(os.path.join(KIT, "reference", mutant.file)) as f:
        text = f.read()
    assert mutant.find in text
    path = tmp_path / mutant.file
    path.write_text(text.replace(mutant.find, mutant.replace, 1))
    assert refusals(how, elsewhere, str(path), tmp_path) == []


@pytest.mark.parametrize("source", HONEST, ids=[os.path.basename(p) for p in HONEST])
def test_honest_constructs_pass(source, how, elsewhere, tmp_path):
    assert refusals(how, elsewhere, source, tmp_path) == []


@pytest.mark.parametrize("source", BYPASSES, ids=[os.path.basename(p) for p in BYPASSES])
def test_bypasses_are_refused(source, how, elsewhere, tmp_path):
    with open(source) as f:
        text = f.read()
    expected = [line.split("// refused: ", 1)[1].strip() for line in text.splitlines() if "// refused: " in line]
    assert expected, f"{source} names no refusal"
    found = refusals(how, elsewhere, source, tmp_path, name="zero_dp_stage3.cpp")
    joined = "\n".join(found)
    for text_ in expected:
        assert text_ in joined, f"{os.path.basename(source)}: no refusal says {text_!r}:\n{joined}"
    assert all(line.startswith("zero_dp_stage3.cpp:") and ": fail: " in line for line in found)


def test_a_refusal_names_the_line(how, elsewhere, tmp_path):
    source = tmp_path / "zero_dp_stage3.cpp"
    source.write_text("#include <unistd.h>\n\nnamespace dtrain {\n\nvoid* grow(long n) {\n"
                      "  return sbrk(n);\n}\n\n}  // namespace dtrain\n")
    found = refusals(how, elsewhere, str(source), tmp_path)
    assert found, "sbrk passed"
    assert found[0].startswith("zero_dp_stage3.cpp:6: fail: uses sbrk, which student code may not call"), found


def test_a_second_static_initializer_beside_iostreams_is_refused(how, elsewhere, tmp_path):
    source = tmp_path / "func_impl.cpp"
    source.write_text("#include <iostream>\n#include <string>\nstd::string kName = std::to_string(42);\n"
                      "const std::string& name() { std::cout << kName; return kName; }\n")
    found = refusals(how, elsewhere, str(source), tmp_path)
    assert any("static initializer" in f for f in found), found


# ---- aarch64, on a hand-made object ----

def aarch64_object(words, undefined, bss_size=0) -> bytes:
    """A relocatable aarch64 object: .text holding `words`, each undefined
    symbol called (R_AARCH64_CALL26) from the word after the first, and a .bss."""
    shstr = b"\0.text\0.rela.text\0.symtab\0.strtab\0.shstrtab\0.bss\0"
    names = (".text", ".rela.text", ".symtab", ".strtab", ".shstrtab", ".bss")
    off = {n: shstr.index(n.encode() + b"\0") for n in names}
    strtab = b"\0" + b"".join(n.encode() + b"\0" for n in undefined) + b"_ZN6dtrain1fEv\0"
    text = b"".join(struct.pack("<I", w) for w in words)
    symbols = [struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0)]
    at = 1
    for n in undefined:
        symbols.append(struct.pack("<IBBHQQ", at, (1 << 4) | 0, 0, 0, 0, 0))
        at += len(n) + 1
    symbols.append(struct.pack("<IBBHQQ", at, (1 << 4) | 2, 0, 1, 0, len(text)))
    symtab = b"".join(symbols)
    rela = b"".join(struct.pack("<QQq", 4 * (i + 1), ((i + 1) << 32) | 283, 0) for i in range(len(undefined)))
    body = b""
    layout = {}
    for name, data in ((".text", text), (".rela.text", rela), (".symtab", symtab), (".strtab", strtab),
                       (".shstrtab", shstr)):
        layout[name] = (64 + len(body), len(data))
        body += data + b"\0" * (-len(data) % 8)
    shoff = 64 + len(body)

    def sh(name, type_, flags, where, link=0, info=0, entsize=0, size=None):
        offset, length = layout.get(where, (0, 0))
        return struct.pack("<IIQQQQIIQQ", off[name], type_, flags, 0, offset, length if size is None else size,
                           link, info, 8, entsize)

    headers = [b"\0" * 64, sh(".text", 1, 6, ".text"), sh(".rela.text", 4, 0x40, ".rela.text", 3, 1, 24),
               sh(".symtab", 2, 0, ".symtab", 4, 1, 24), sh(".strtab", 3, 0, ".strtab"),
               sh(".shstrtab", 3, 0, ".shstrtab"), sh(".bss", 8, 3, "", size=bss_size)]
    ident = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    header = ident + struct.pack("<HHIQQQIHHHHHH", 1, 183, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(headers), 5)
    return header + body + b"".join(headers)


def test_aarch64_objects(tmp_path):
    ret, svc, bl = 0xD65F03C0, 0xD4000001 | (0 << 5), 0x94000000
    clean = tmp_path / "clean.o"
    clean.write_bytes(aarch64_object([ret, bl, bl], ["memcpy", "_Znwm"]))
    assert link_check.findings(str(clean), "ring_collectives.cpp", elsewhere=set()) == []
    bad = tmp_path / "bad.o"
    bad.write_bytes(aarch64_object([svc, bl, ret], ["sbrk"], bss_size=1 << 20))
    found = "\n".join(link_check.findings(str(bad), "ring_collectives.cpp", elsewhere=set()))
    assert "uses sbrk, which student code may not call" in found
    assert "contains the instruction svc" in found
    assert "1048576 bytes of static or thread-local storage" in found
