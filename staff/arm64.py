"""The kit on aarch64 Linux (arm64 Linux machines, and the dev container on
an Apple Silicon Mac), shown on an x86-64 host under emulation.

  python3 -m staff.arm64 [--mutants all|none|WORDS]     (as root: make check-arm64)

Steps:
  tools      qemu-user-static, mmdebstrap and Debian's cross compiler
             (g++-aarch64-linux-gnu) on the host
  binfmt     the kernel runs aarch64 programs through qemu (binfmt_misc)
  root       a Debian 12 arm64 root holding setup.sh's packages, made once
             with mmdebstrap and kept outside any checkout, so that clones
             share it: ~/.cache/dtrain-kit/arm64-root, or $KIT_ARM64_ROOT.
             A root of its own: installing arm64 MPI beside the host's
             through multiarch replaces the host's
  build      the kit cross-compiled on the host against that root, in
             build-arm64/ (staff/arm64/toolchain.cmake): native speed
  portable   staff/portable.py on the aarch64 binaries: nothing beyond ARMv8.0-A
  reference  make test IMPL=reference's run, inside the root: 150/150
  stubs      the same for the stubs: 0, every case "not implemented"
  known bugs three collective-disagreement mutants (staff/mutants.py: a
             hang, a mismatched operation, a mismatched count), each built
             on the host and run inside the root
Every test binary runs as an aarch64 program under qemu; staff/arm64/inroot
is the door into the root.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from typing import List

from kit import parts as table
from kit.paths import KIT_DIR
from staff.mutants import MUTANTS
from staff.student_loop_as_user import StepFailed, expect

ROOT = os.environ.get("KIT_ARM64_ROOT") or os.path.expanduser("~/.cache/dtrain-kit/arm64-root")
BUILD = os.path.join(KIT_DIR, "build-arm64")
INROOT = os.path.join(KIT_DIR, "staff", "arm64", "inroot")
TOOLCHAIN = os.path.join(KIT_DIR, "staff", "arm64", "toolchain.cmake")
HOST_TOOLS = {"mmdebstrap": "mmdebstrap", "qemu-aarch64-static": "qemu-user-static",
              "update-binfmts": "binfmt-support", "aarch64-linux-gnu-g++": "g++-aarch64-linux-gnu"}
# Known bugs whose diagnosis is the kit's own machinery, which is what could
# differ between architectures: a hang and its roll-call (the watchdog), a
# mismatch of operations and one of counts (the ledger's agreement check).
# The other mutants test the cases' arithmetic, which is the same on both;
# under emulation each costs about 30 s, so CI runs these three
# (--mutants all runs every one).
DISAGREEMENT = ("one rank calls an extra allreduce", "one rank makes its two allreduces in swapped order",
                "one rank all-gathers one row fewer")


def run(cmd: List[str], timeout: float = 3600, env=None) -> str:
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                          env=env)
    return f"[exit {proc.returncode}]\n" + proc.stdout


def packages() -> List[str]:
    return subprocess.run([os.path.join(KIT_DIR, "setup.sh"), "--list"], check=True, capture_output=True,
                          text=True).stdout.split()


def step_tools() -> None:
    missing = [package for tool, package in HOST_TOOLS.items() if shutil.which(tool) is None]
    if missing:
        raise StepFailed(f"tools: missing on the host; apt-get install {' '.join(missing)}")
    print("  tools: ok")


def step_binfmt() -> None:
    if not os.path.exists("/proc/sys/fs/binfmt_misc/status"):
        run(["mount", "-t", "binfmt_misc", "binfmt_misc", "/proc/sys/fs/binfmt_misc"])
    run(["update-binfmts", "--enable", "qemu-aarch64"])
    try:
        with open("/proc/sys/fs/binfmt_misc/qemu-aarch64") as f:
            enabled = f.readline().strip() == "enabled"
    except OSError:
        enabled = False
    if not enabled:
        raise StepFailed("binfmt: qemu-aarch64 is not registered in /proc/sys/fs/binfmt_misc "
                         "(binfmt-support and qemu-user-static installed? may this container mount binfmt_misc?)")
    print("  binfmt: qemu-aarch64 enabled")


def remove_tree(path: str) -> None:
    """Removes a root made earlier, first unmounting whatever an interrupted
    mmdebstrap or inroot left mounted inside it (deepest first)."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    inside = sorted((p for p in points if p == path or p.startswith(path + "/")), key=len, reverse=True)
    for point in inside:
        subprocess.run(["umount", "--lazy", point], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):
        raise StepFailed(f"root: could not remove {path} (still mounted inside? see findmnt | grep {path})")


def step_root() -> None:
    wanted = " ".join(packages()) + "\n"
    marker = os.path.join(ROOT, ".kit-packages")
    try:
        with open(marker) as f:
            if f.read() == wanted:
                print(f"  root: {ROOT} (made earlier, same packages)")
                return
    except OSError:
        pass
    # The root is made beside its place and moved there whole, so that a run
    # killed halfway (mmdebstrap leaves /proc, /sys and /dev mounted in its
    # target when it is killed) never leaves a half-made root for the next.
    building = ROOT + ".new"
    for path in (ROOT, building):
        remove_tree(path)
    os.makedirs(os.path.dirname(ROOT), exist_ok=True)
    started = time.monotonic()
    out = run(["mmdebstrap", "--quiet", "--architectures=arm64", "--variant=apt",
               "--include=" + ",".join(wanted.split()), "bookworm", building])
    expect("root", out, r"^\[exit 0\]")
    with open(os.path.join(building, ".kit-packages"), "w") as f:
        f.write(wanted)
    os.rename(building, ROOT)
    print(f"  root: {ROOT} made in {time.monotonic() - started:.0f} s")


def step_build(jobs: int) -> None:
    started = time.monotonic()
    env = dict(os.environ, KIT_ARM64_ROOT=ROOT)
    if not os.path.isfile(os.path.join(BUILD, "CMakeCache.txt")):
        out = run(["cmake", "-S", KIT_DIR, "-B", BUILD, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                   f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}", f"-DKIT_ARM64_ROOT={ROOT}", "-DKIT_MPI=openmpi"], env=env)
        if not out.startswith("[exit 0]"):
            shutil.rmtree(BUILD, ignore_errors=True)  # no half-configured cache for the next run
        expect("configure", out, r"^\[exit 0\]")
    out = run(["cmake", "--build", BUILD, "-j", str(jobs)], env=env)
    expect("build", out, r"^\[exit 0\]")
    warnings = [line for line in out.splitlines() if "warning:" in line]
    if warnings:
        raise StepFailed("build: warnings:\n" + "\n".join(warnings[:20]))
    arch = run(["file", "-b", os.path.join(BUILD, "reference", "kit_tests")])
    print(f"  build: cross-compiled in {time.monotonic() - started:.0f} s: {arch.splitlines()[1][:60]}")


def step_portable() -> None:
    out = run([sys.executable, "-m", "staff.portable", "--build", BUILD])
    pattern = r"reference/kit_tests \(aarch64\): \d+ outline-atomics helper\(s\) with LSE instructions, 0 other .*"
    expect("portable", out, r"^\[exit 0\]", pattern)
    print(f"    {re.search(pattern, out).group(0)}")


def in_root(*cmd: str) -> str:
    return run([INROOT, *cmd], env=dict(os.environ, KIT_ARM64_ROOT=ROOT))


def step_suites() -> None:
    total = table.TOTAL_POINTS
    for impl, require, pattern in (("reference", "full", rf"^total: {total} / {total} points"),
                                   ("student", "stubs", rf"^total: 0 / {total} points")):
        started = time.monotonic()
        out = in_root("python3", "-m", "kit", "test", "--all", "--impl", impl, "--build", BUILD,
                      "--require", require)
        print("\n".join("    " + line for line in out.splitlines() if re.match(r"^(part\S+|total):", line)))
        expect(f"{impl} ({time.monotonic() - started:.0f} s, emulated)", out, r"^\[exit 0\]", pattern)


def step_mutants(which: str) -> None:
    if which == "none":
        print("  known bugs: not run (--mutants none)")
        return
    names = [m.name for m in MUTANTS] if which == "all" else \
        list(DISAGREEMENT) if which == "disagreement" else [m.name for m in MUTANTS if which in m.name]
    started = time.monotonic()
    out = run([sys.executable, "-m", "staff.mutants", "--build", BUILD, "--launcher", f"{INROOT} ", "--exact", *names],
              env=dict(os.environ, KIT_ARM64_ROOT=ROOT))
    print("\n".join("    " + line for line in out.splitlines()[1:]))
    expect(f"known bugs ({len(names)}, {time.monotonic() - started:.0f} s, emulated)", out, r"^\[exit 0\]",
           rf"^{len(names)} passed, 0 failed")


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mutants", default="disagreement",
                    help="which known bugs to run: disagreement (the default), all, none, or words of a name")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("check-arm64: run it as root (binfmt_misc, mmdebstrap and chroot need it)", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        step_tools()
        step_binfmt()
        step_root()
        step_build(args.jobs)
        step_portable()
        step_suites()
        step_mutants(args.mutants)
    except (StepFailed, subprocess.TimeoutExpired) as e:
        print(f"check-arm64: FAILED: {e}")
        return 1
    print(f"check-arm64: passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
