"""The dev container (Containerfile, .devcontainer/) built with podman and
used as a student would: the checkout bind-mounted, edits made on the host,
everything run inside as the non-root user whose uid is the host user's.

  python3 -m staff.container [--arch arm64] [--user kitdev]     (as root: make check-container)

Steps, each checked against what it promises:
  base         a Debian 12 image made here (mmdebstrap | podman import), kept
               as localhost/debian:bookworm[-ARCH]: no registry is reachable
  image        podman build of the Containerfile, USER_UID = the host user's
  checkout     the kit's working tree copied into the host user's home
  first try    make test-part1 in the container: the stubs, 0 points
  host edit    the reference's split_data copied into student/ on the host
  part1        make test-part1 in the container: now full points
  reference    make test IMPL=reference: 150/150
  handin       make handin: handin.tar in the checkout, owned by the host user
The build lives in a podman volume, not in the bind mount. Podman runs with
Debian's runc and explicit ulimits (crun fails on this kind of host).
With --arch arm64 the image is built and run under qemu (binfmt_misc), as a
Mac with Apple Silicon would build it; only `base`, `image` and a smoke
test of the toolchain run then (an emulated build of the kit takes long).
"""
import argparse
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
from typing import List

from kit import parts as table
from kit.paths import KIT_DIR
from staff.student_loop_as_user import StepFailed, as_user, expect, unprivileged_user

PODMAN = ["podman", "--runtime", "runc"]
LIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"]
HOST_USER = "kitdev"  # the host user of the check, unless --user names another


def run(cmd: List[str], timeout: float = 1800, stdin=None) -> str:
    proc = subprocess.run(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    return f"[exit {proc.returncode}]\n" + proc.stdout


def require_podman(command: str) -> None:
    """Exits with status 2, saying why, unless podman can be used here: root, and its tools."""
    missing = [tool for tool in ("podman", "runc", "mmdebstrap") if shutil.which(tool) is None]
    if os.geteuid() != 0:
        why = "run it as root (podman builds and runs rootful here)"
    elif missing:
        why = f"{', '.join(missing)} missing: apt-get install podman runc mmdebstrap"
    else:
        return
    print(f"{command}: {why}", file=sys.stderr)
    raise SystemExit(2)


def image_exists(name: str) -> bool:
    return subprocess.run(PODMAN + ["image", "exists", name]).returncode == 0


def make_base(arch: str) -> str:
    """A minimal Debian 12 image for `arch`, made locally once."""
    name = "localhost/debian:bookworm" + ("" if arch == "amd64" else f"-{arch}")
    if image_exists(name):
        print(f"  base: {name} (made earlier)")
        return name
    started = time.monotonic()
    tar = subprocess.Popen(["mmdebstrap", "--quiet", "--variant=minbase", f"--architectures={arch}", "bookworm", "-"],
                           stdout=subprocess.PIPE)
    # The image says which architecture it is for; podman would otherwise
    # record the host's, and a build for another one would try a registry.
    out = run(PODMAN + ["import", f"--arch={arch}", "-", name], stdin=tar.stdout)
    tar.stdout.close()
    if tar.wait() != 0:
        raise StepFailed("base: mmdebstrap failed (is the Debian mirror reachable? is qemu-user-static "
                         "registered for a foreign --arch?)")
    expect("base", out, r"^\[exit 0\]")
    print(f"  base: {name} made in {time.monotonic() - started:.0f} s")
    return name


def build_image(base: str, arch: str, uid: int, gid: int) -> str:
    name = f"localhost/dtrain-kit:check-{arch}"
    started = time.monotonic()
    out = run(PODMAN + ["build", *LIMITS, f"--arch={arch}", "--build-arg", f"BASE={base}", "--build-arg",
                        f"USER_UID={uid}", "--build-arg", f"USER_GID={gid}", "-t", name, "-f",
                        os.path.join(KIT_DIR, "Containerfile"), KIT_DIR], timeout=3600)
    expect("image", out, r"^\[exit 0\]")
    print(f"  image: {name} built in {time.monotonic() - started:.0f} s")
    return name


def copy_checkout(user: pwd.struct_passwd, dest: str) -> None:
    """The kit's files as git sees them (tracked, and new ones not ignored),
    so what is checked is the working tree, copied by the host user."""
    names = subprocess.run(["git", "-C", KIT_DIR, "ls-files", "-co", "--exclude-standard", "-z"], check=True,
                           capture_output=True).stdout.decode().split("\0")
    shutil.rmtree(dest, ignore_errors=True)
    for name in filter(None, names):
        source = os.path.join(KIT_DIR, name)
        if not os.path.exists(source):
            continue  # deleted in the working tree
        target = os.path.join(dest, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(source, target)
    subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", dest], check=True)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="amd64", choices=["amd64", "arm64"])
    ap.add_argument("--user", default=HOST_USER, help="the host user whose checkout is bind-mounted")
    args = ap.parse_args(argv)
    require_podman("check-container")
    user = unprivileged_user(args.user)
    checkout = os.path.join(user.pw_dir, "kit")
    volume = f"dtrain-kit-check-{args.arch}"
    total = table.TOTAL_POINTS
    part1 = next(p.points for p in table.PARTS if p.key == "part1")
    started = time.monotonic()
    try:
        base = make_base(args.arch)
        image = build_image(base, args.arch, user.pw_uid, user.pw_gid)

        def inside(*cmd: str, timeout: float = 1800) -> str:
            return run(PODMAN + ["run", "--rm", *LIMITS, f"--arch={args.arch}", "--shm-size=1g", "--network=none",
                                 "-v", f"{checkout}:/workspaces/kit", "-v", f"{volume}:/home/student/build",
                                 image, *cmd], timeout=timeout)

        if args.arch != "amd64":
            out = inside("bash", "-c", "uname -m && g++ --version | head -1 && mpicxx.openmpi --showme:version")
            expect("toolchain (emulated)", out, r"^\[exit 0\]", r"^aarch64$", r"Open MPI")
            print(f"check-container: passed for {args.arch} in {time.monotonic() - started:.0f} s (image and toolchain)")
            return 0
        copy_checkout(user, checkout)
        print(f"  checkout: {checkout}, owned by {args.user} (uid {user.pw_uid})")
        run(PODMAN + ["volume", "rm", "-f", volume])
        loop_started = time.monotonic()
        def step(name: str, pattern: str, *cmd: str, also: tuple = ()) -> None:
            begun = time.monotonic()
            out = inside(*cmd)
            expect(name, out, pattern, *also)
            found = re.search(pattern, out, re.M)
            print(f"    `{' '.join(cmd)}` in {time.monotonic() - begun:.1f} s: {found.group(0) if found else ''}")

        step("first try (stubs, with the build)", rf"^part1: 0 / {part1} points.*", "make", "test-part1",
             also=(r"not implemented yet",))
        solved = os.path.join(checkout, "student", table.SPLIT)
        out = as_user(user, ["cp", os.path.join(checkout, "reference", table.SPLIT), solved], checkout)
        expect("host edit", out, r"^\[exit 0\]")
        step("part1 after the host edit", rf"^part1: {part1} / {part1} points.*", "make", "test-part1")
        step("reference", rf"^total: {total} / {total} points", "make", "test", "IMPL=reference")
        step("handin", r"^\[exit 0\]", "make", "handin")
        handin = os.path.join(checkout, "handin.tar")
        if not os.path.isfile(handin):
            raise StepFailed("handin: no handin.tar in the bind-mounted checkout")
        owner = os.stat(handin).st_uid
        if owner != user.pw_uid:
            raise StepFailed(f"handin: handin.tar belongs to uid {owner}, not the host user's {user.pw_uid}")
        if os.path.exists(os.path.join(checkout, "build")):
            raise StepFailed("the build went into the bind mount (checkout/build), not the volume")
        print(f"  handin: {handin}, owned by {args.user}")
        print(f"check-container: passed in {time.monotonic() - started:.0f} s "
              f"(the student loop in the container: {time.monotonic() - loop_started:.0f} s)")
        return 0
    except (StepFailed, subprocess.TimeoutExpired) as e:
        print(f"check-container: FAILED: {e}")
        return 1
    finally:
        run(PODMAN + ["volume", "rm", "-f", volume])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
