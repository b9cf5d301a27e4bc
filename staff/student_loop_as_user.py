"""The student's loop on a clean clone, as an unprivileged user, with the
packages already installed: what a student on a shared machine does.

  python3 -m staff.student_loop_as_user [--user kitstudent]     (as root; CI runs it)

Steps, each checked against what it promises, not only its exit status:
  clone        `git clone` of this kit's last commit into the user's home
  first try    make test-part1 on the stubs: 0 points, "not implemented"
  solve        the reference's three files copied into student/
  part1        make test-part1: 10/10
  all parts    make test: 150/150
  train        make train: a test accuracy
  handin       make handin: handin.tar written
  prefix       Eigen copied under the user's home and found there through
               CMAKE_PREFIX_PATH (README: "Without root"), configure only
The user is made if missing (useradd) and keeps nothing of root's but a
copy of its compiler cache (ccache, when installed): the kit that root's
stages compiled is then not compiled again, and what is compiled is the
same (ccache keys an object by everything that goes into it).
"""
import argparse
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from typing import List

from kit import parts as table
from kit.paths import KIT_DIR

EIGEN_SOURCES = ("/usr/include/eigen3", "/usr/share/eigen3/cmake")


class StepFailed(Exception):
    pass


def as_user(user: pwd.struct_passwd, cmd: List[str], cwd: str, timeout: float = 900) -> str:
    env = {"HOME": user.pw_dir, "USER": user.pw_name, "LOGNAME": user.pw_name, "LANG": "C.UTF-8",
           "PATH": "/usr/local/bin:/usr/bin:/bin"}
    proc = subprocess.run(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", "--"] + cmd,
                          cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    return f"[exit {proc.returncode}]\n" + proc.stdout


def unprivileged_user(name: str) -> pwd.struct_passwd:
    """The user `name`, made (useradd) if missing."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
        return pwd.getpwnam(name)


def seed_compiler_cache(user: pwd.struct_passwd) -> None:
    """The user's ccache starts as a copy of the caller's, owned by the user."""
    if shutil.which("ccache") is None:
        return
    source = subprocess.run(["ccache", "-k", "cache_dir"], capture_output=True, text=True).stdout.strip()
    if not os.path.isdir(source):
        return
    cache = os.path.join(user.pw_dir, ".cache")
    target = os.path.join(cache, "ccache")
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True)
    subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", cache], check=True)


def expect(step: str, out: str, *patterns: str) -> None:
    for pattern in patterns:
        if not re.search(pattern, out, re.M):
            tail = "\n".join(out.splitlines()[-25:])
            raise StepFailed(f"{step}: expected /{pattern}/ in its output:\n{tail}")
    print(f"  {step}: ok")


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--user", default="kitstudent")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("student_loop_as_user: run it as root (it makes the user and switches to it)", file=sys.stderr)
        return 2
    user = unprivileged_user(args.user)
    home = user.pw_dir
    clone = os.path.join(home, "kit")
    total = table.TOTAL_POINTS
    part1 = next(p.points for p in table.PARTS if p.key == "part1")
    try:
        shutil.rmtree(clone, ignore_errors=True)
        os.makedirs(home, exist_ok=True)
        os.chown(home, user.pw_uid, user.pw_gid)
        seed_compiler_cache(user)
        # The clone is made by the user, from a readable snapshot of this kit's last commit.
        with tempfile.TemporaryDirectory(prefix="kit-bundle-") as tmp:
            bundle = os.path.join(tmp, "kit.bundle")
            subprocess.run(["git", "-C", KIT_DIR, "bundle", "create", bundle, "HEAD"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            os.chmod(tmp, 0o755)
            os.chmod(bundle, 0o644)
            out = as_user(user, ["git", "clone", "-q", bundle, clone], home)
            expect("clone", out, r"^\[exit 0\]")
        out = as_user(user, ["make", "test-part1"], clone)
        expect("first try (stubs)", out, rf"^part1: 0 / {part1} points", r"not implemented yet")
        for name in table.IMPL_FILES:
            out = as_user(user, ["cp", os.path.join(clone, "reference", name), os.path.join(clone, "student", name)],
                          clone)
            expect(f"solve {name}", out, r"^\[exit 0\]")
        expect("part1", as_user(user, ["make", "test-part1"], clone), rf"^part1: {part1} / {part1} points")
        expect("all parts", as_user(user, ["make", "test"], clone), rf"^total: {total} / {total} points")
        expect("train", as_user(user, ["make", "train", "TRAIN_ARGS=--num_train_samples 6000"], clone),
               r"^\[exit 0\]", r"^Test Acc: 0\.\d+")
        out = as_user(user, ["make", "handin"], clone)
        expect("handin", out, r"^\[exit 0\]")
        if not os.path.isfile(os.path.join(clone, "handin.tar")):
            raise StepFailed("handin: no handin.tar in the clone")
        prefix = os.path.join(home, "opt", "eigen")
        for source in EIGEN_SOURCES:
            out = as_user(user, ["mkdir", "-p", prefix + os.path.dirname(source)], home)
            out = as_user(user, ["cp", "-r", source, prefix + os.path.dirname(source)], home)
            expect(f"prefix: copy {source}", out, r"^\[exit 0\]")
        out = as_user(user, ["cmake", "-S", clone, "-B", os.path.join(home, "build-prefix"),
                             f"-DCMAKE_PREFIX_PATH={prefix}/usr"], home)
        expect("prefix", out, r"^\[exit 0\]")
        with open(os.path.join(home, "build-prefix", "CMakeCache.txt")) as f:
            found = re.search(r"^Eigen3_DIR:PATH=(.*)$", f.read(), re.M)
        if not found or not found.group(1).startswith(prefix):
            raise StepFailed(f"prefix: Eigen was found at {found.group(1) if found else 'nowhere'}, not under {prefix}")
        print(f"  prefix: Eigen found at {found.group(1)}")
    except (StepFailed, subprocess.TimeoutExpired) as e:
        print(f"student_loop_as_user: FAILED: {e}")
        return 1
    print(f"student_loop_as_user: passed as {args.user} (uid {user.pw_uid}): stubs 0, the loop to "
          f"{total}/{total}, train, handin, Eigen from a user prefix")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
