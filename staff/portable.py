"""Do the kit's binaries run on any host of their architecture? Disassembles
them and finds every instruction beyond the architecture's baseline outside
the code that only runs after a check of the CPU.

  python3 -m staff.portable [--build build]

x86-64: the baseline is SSE2. An instruction is beyond it when it is VEX or
EVEX encoded (an AVX mnemonic: v..., or a ymm/zmm/k register), or belongs to
SSE3 up to SSE4.2, BMI, POPCNT/LZCNT or MOVBE. Only the GEMM kernels that
framework/model/gemm.cpp dispatches may hold them: `kit_gemm_avx2`,
`kit_gemm_avx512`, and the Eigen instances in their private namespaces
(kit_eigen_avx2::, kit_eigen_avx512::). There must be some, which shows the
scan sees them.
aarch64: the baseline is ARMv8.0-A, NEON included. Beyond it are SVE (z and
p registers), the dot-product instructions and the LSE atomics, which only
GCC's outline-atomics helpers (`__aarch64_ldadd4_acq_rel`, ...) may hold:
they check the CPU first. The kit has one GEMM kernel there, so none are
expected.
It prints per binary the dispatched functions with such instructions and
every other one, which fails the check (exit 1).
"""
import argparse
import os
import re
import subprocess
import sys
from typing import Dict, List, Tuple

from kit.paths import build_dir

BINARIES = ["gemm_peak", "mpi_demo", "reference/unified_train", "reference/zero_dp_train", "reference/kit_tests",
            "student/kit_tests"]
# ELF e_machine values (elf.h), the two architectures the kit builds for.
EM_X86_64, EM_AARCH64 = 62, 183
X86_DISPATCHED = re.compile(r"kit_gemm_avx(2|512)\b|kit_eigen_avx(2|512)::")
ARM_DISPATCHED = re.compile(r"^__aarch64_(cas|swp|ldadd|ldclr|ldeor|ldset)\d")
# Mnemonics of the extensions after SSE2 that do not start with v (AVX's do).
LATER_SSE = set("""
addsubpd addsubps haddpd haddps hsubpd hsubps lddqu movddup movshdup movsldup monitor mwait
pabsb pabsd pabsw palignr phaddd phaddsw phaddw phsubd phsubsw phsubw pmaddubsw pmulhrsw pshufb psignb psignd psignw
blendpd blendps blendvpd blendvps dppd dpps extractps insertps movntdqa mpsadbw packusdw pblendvb pblendw pcmpeqq
pextrb pextrd pextrq phminposuw pinsrb pinsrd pinsrq pmaxsb pmaxsd pmaxud pmaxuw pminsb pminsd pminud pminuw
pmovsxbd pmovsxbq pmovsxbw pmovsxdq pmovsxwd pmovsxwq pmovzxbd pmovzxbq pmovzxbw pmovzxdq pmovzxwd pmovzxwq
pmuldq pmulld ptest roundpd roundps roundsd roundss
crc32 pcmpestri pcmpestrm pcmpistri pcmpistrm pcmpgtq popcnt lzcnt tzcnt movbe
andn bextr blsi blsmsk blsr bzhi mulx pdep pext rorx sarx shlx shrx
""".split())
WIDE_REGISTER = re.compile(r"%(ymm|zmm)\d+|%k[0-7]\b")
# ARMv8.1+ atomics (with their acquire/release forms), and the dot products.
LSE = re.compile(r"^(cas|casp|swp|ldadd|ldclr|ldeor|ldset|ldsmax|ldsmin|ldumax|ldumin|stadd|stclr|steor|stset)"
                 r"(a|l|al)?(b|h)?$")
SVE_REGISTER = re.compile(r"\bz([0-9]|[12][0-9]|3[01])\.[bhsdq]\b|\bp([0-9]|1[0-5])/[zm]\b")


def machine(path: str) -> int:
    """The ELF file's architecture (e_machine)."""
    with open(path, "rb") as f:
        header = f.read(20)
    return int.from_bytes(header[18:20], "little")


def beyond_baseline(mnemonic: str, operands: str, arch: int = EM_X86_64) -> bool:
    if arch == EM_AARCH64:
        return bool(LSE.match(mnemonic)) or mnemonic in ("sdot", "udot") or bool(SVE_REGISTER.search(operands))
    if mnemonic.startswith("v") and mnemonic not in ("verr", "verw"):
        return True
    return mnemonic in LATER_SSE or bool(WIDE_REGISTER.search(operands))


def objdump(arch: int) -> str:
    """The disassembler for `arch`: the host's own, or binutils' cross one."""
    if arch == EM_AARCH64 and os.uname().machine != "aarch64":
        return "aarch64-linux-gnu-objdump"
    return "objdump"


def scan(path: str) -> Tuple[Dict[str, List[str]], bool]:
    """Function name -> its instructions beyond the baseline (first few); and
    whether the binary links the GEMM kernels at all (mpi_demo does not)."""
    arch = machine(path)
    out = subprocess.run([objdump(arch), "-d", "-C", "--no-show-raw-insn", path], check=True,
                         capture_output=True, text=True).stdout
    has_kernels = "<kit_gemm_generic(" in out
    found: Dict[str, List[str]] = {}
    function = "?"
    for line in out.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if header:
            function = header.group(1)
            continue
        insn = re.match(r"^\s+[0-9a-f]+:\s+(\S+)\s*(.*)$", line)
        if insn and beyond_baseline(insn.group(1), insn.group(2), arch):
            found.setdefault(function, [])
            if len(found[function]) < 3:
                found[function].append(f"{insn.group(1)} {insn.group(2)}".strip())
    return found, has_kernels


def check(build: str) -> Tuple[List[str], bool]:
    lines, ok = [], True
    for name in BINARIES:
        path = os.path.join(build, name)
        if not os.path.exists(path):
            continue
        arch = machine(path)
        found, has_kernels = scan(path)
        dispatched_re = ARM_DISPATCHED if arch == EM_AARCH64 else X86_DISPATCHED
        dispatched = [f for f in found if dispatched_re.search(f)]
        others = [f for f in found if not dispatched_re.search(f)]
        if arch == EM_AARCH64:
            lines.append(f"{name} (aarch64): {len(dispatched)} outline-atomics helper(s) with LSE instructions, "
                         f"{len(others)} other function(s) beyond ARMv8.0-A (NEON is in the baseline)")
        else:
            lines.append(f"{name} (x86-64): {len(dispatched)} dispatched function(s) with AVX/AVX-512 instructions, "
                         f"{len(others)} other function(s) beyond x86-64")
            if has_kernels and not dispatched:
                ok = False
                lines.append("  no dispatched kernel found: the scan sees nothing, or the kernels are missing")
        for f in others:
            ok = False
            lines.append(f"  NOT PORTABLE: {f[:150]}: {'; '.join(found[f])}")
    if not lines:
        return [f"portable: no kit binaries under {build}; run `make build`"], False
    return lines, ok


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="the CMake build directory (default: $KIT_BUILD or build/)")
    args = ap.parse_args(argv)
    lines, ok = check(build_dir(args.build))
    print("\n".join(lines))
    print("portable: every instruction beyond the baseline is behind a check of the CPU" if ok else "portable: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
