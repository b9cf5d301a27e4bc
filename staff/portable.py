"""Do the kit's binaries run on any x86-64 host? Disassembles them and finds
every instruction beyond the x86-64 baseline (SSE2), outside the GEMM
kernels that framework/gemm.cpp only calls when the CPU has them.

  python3 -m staff.portable [--build build]

An instruction counts as beyond the baseline when it is VEX or EVEX encoded
(an AVX mnemonic: v..., or a ymm/zmm/k register), or belongs to SSE3 up to
SSE4.2, BMI, POPCNT/LZCNT or MOVBE. A function may hold them only if it is a
dispatched kernel: `kit_gemm_avx2`, `kit_gemm_avx512`, or an Eigen instance
in their private namespaces (kit_eigen_avx2::, kit_eigen_avx512::). It
prints, per binary, the dispatched functions with such instructions (there
must be some: that shows the scan sees them) and every other one, which
fails the check (exit 1).
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
DISPATCHED = re.compile(r"kit_gemm_avx(2|512)\b|kit_eigen_avx(2|512)::")
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


def beyond_baseline(mnemonic: str, operands: str) -> bool:
    if mnemonic.startswith("v") and mnemonic not in ("verr", "verw"):
        return True
    return mnemonic in LATER_SSE or bool(WIDE_REGISTER.search(operands))


def scan(path: str) -> Tuple[Dict[str, List[str]], bool]:
    """Function name -> its instructions beyond the baseline (first few); and
    whether the binary links the GEMM kernels at all (mpi_demo does not)."""
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", path], check=True,
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
        if insn and beyond_baseline(insn.group(1), insn.group(2)):
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
        found, has_kernels = scan(path)
        dispatched = [f for f in found if DISPATCHED.search(f)]
        others = [f for f in found if not DISPATCHED.search(f)]
        lines.append(f"{name}: {len(dispatched)} dispatched function(s) with AVX/AVX-512 instructions, "
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
    print("portable: every instruction beyond x86-64 is in a dispatched kernel" if ok else "portable: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
