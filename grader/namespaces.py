"""What a sandboxed job sees of the host: whether this machine gives a job
namespaces of its own, and, in them, which places are kept at their own
path and which are covered by empty tmpfs mounts (grader/sandbox.py puts
the build's sandbox_mounts, with the steps made here, before each command
of a grading run as root).
"""
import functools
import os
import shutil
import subprocess
from typing import List, Tuple

from kit.paths import STUBS_DIR
from kit.recipe import pch_dir
from kit import overrides

# Each private temporary place of a namespaced job is a tmpfs of its own, of
# this size (MPI's shared memory lives in /dev/shm); the run directory's is
# RUN_BYTES (grader/sandbox.py).
PRIVATE_TMP = {"/tmp": 24 << 20, "/var/tmp": 8 << 20, "/dev/shm": 64 << 20, "/run/lock": 1 << 20}
# World-writable places a job could leave files in (without namespaces).
SHARED_TMP = tuple(PRIVATE_TMP)
# Where the host keeps people's files, which no compiler or mpirun needs:
# covered in the namespace (the kit itself, if below one, stays visible),
# as is every top directory not in SYSTEM_TOPS.
PRIVATE_ROOTS = ("/root", "/home", "/srv", "/mnt", "/media", "/var/mail", "/var/spool", "/var/backups", "/var/log")
# Top directories of the system itself, left as they are: the compiler,
# mpirun and their libraries live there.
SYSTEM_TOPS = {"usr", "etc", "lib", "lib32", "lib64", "libx32", "bin", "sbin", "opt", "var", "nix", "snap", "proc",
               "sys", "dev", "run", "tmp", "boot"}


@functools.lru_cache(maxsize=None)
def namespaces_work() -> bool:
    """Can this machine give a job its own mount, network and PID namespaces
    (and a loopback device, which mpirun's local daemon needs)? The staff's
    KIT_SANDBOX_NAMESPACES=off says no, as a container that forbids them
    does, to check the grader there."""
    if overrides.SANDBOX_NAMESPACES_OFF:
        return False
    if os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("ip")):
        return False
    try:
        return subprocess.run(["unshare", "--mount", "--net", "--pid", "--ipc", "--mount-proc", "--fork", "--", "sh", "-c",
                               "ip link set lo up && mount -t tmpfs -o ro,size=4k none /mnt"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# A grader that is not root runs its jobs with its own rights, but where the
# kernel lets anyone make a user namespace, in IPC, PID and mount namespaces
# of their own: the System V objects and POSIX message queues a job leaves
# end with its IPC namespace, and its processes with its PID namespace.
USER_NAMESPACES = ["unshare", "--user", "--map-current-user", "--ipc", "--pid", "--fork", "--mount", "--mount-proc",
                   "--kill-child", "--"]


@functools.lru_cache(maxsize=None)
def user_namespaces_work() -> bool:
    """Can this grader, not root, put a job in USER_NAMESPACES? Not where the
    kernel forbids unprivileged user namespaces (a sysctl, AppArmor, a
    container's seccomp profile), nor with the staff's KIT_SANDBOX_NAMESPACES=off."""
    if overrides.SANDBOX_NAMESPACES_OFF or os.geteuid() == 0 or not shutil.which("unshare"):
        return False
    try:
        return subprocess.run(USER_NAMESPACES + ["true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def kept_paths(box, hide_kit: bool = False) -> List[str]:
    """What the job of sandbox `box` (grader/sandbox.py) must see of the
    host at its own path, whatever covers the places around it: the scratch
    directory (its run tmpfs apart, a mount of its own), the kit (not for a
    compile) and the data set."""
    kit = os.path.realpath(box.kit_dir)
    # A compile sees of the kit only the stubs, which stand in for a file that fails.
    keeps = [box.scratch] + ([box.run_dir] if box.run_mounted else []) + \
        ([os.path.realpath(STUBS_DIR)] if hide_kit else [kit])
    # The build's precompiled header (Eigen and the public headers, no
    # secret) halves each compile; the rest of the build stays covered.
    pch = pch_dir(box.build_dir)
    if pch and os.path.isdir(pch):
        keeps.append(os.path.realpath(pch))
    # The directories of the job's PATH (the compiler and mpirun, a fake
    # one of a test), the data set, and what the staff name in
    # KIT_SANDBOX_KEEP (a module MPI's prefix under /home, say).
    named = (os.environ.get("PATH", "").split(os.pathsep) + [overrides.DATA_DIR or ""]
             + overrides.SANDBOX_KEEP)
    hidden = [os.path.realpath(h) for h in box.hidden_paths]
    for path in named:
        if os.path.isabs(path) and os.path.isdir(path):
            real = os.path.realpath(path)
            if real != "/" and not any(under(real, h) for h in hidden) and real not in keeps and \
                    not (hide_kit and under(real, kit)):
                keeps.append(real)
    return keeps


def mount_targets(box, hide_kit: bool = False) -> List[Tuple[str, str]]:
    """(mount point, tmpfs options) of every place the job gets an empty
    one of: a private, bounded, writable one for each shared temporary
    directory; an empty read-only cover over the hidden material, the
    batch's handins and gradebook, the folder holding the scratch
    directory (another grader's scratch, too), people's homes, and
    everything beside the kit in its top directory (/work/other-kit)."""
    private = {os.path.realpath(t): f"size={n},mode=1777,nosuid,nodev" for t, n in PRIVATE_TMP.items()
               if os.path.isdir(t)}
    # Every top directory that is not the system's (/work, /home, /srv, ...):
    # the kit and the scratch directory below one are kept, the rest hidden.
    tops = ["/" + d for d in sorted(os.listdir("/")) if d not in SYSTEM_TOPS and os.path.isdir("/" + d)
            and not os.path.islink("/" + d)]
    covers = [os.path.realpath(p) for p in list(box.hidden_paths) + list(box.private) + list(PRIVATE_ROOTS)
              + [os.path.dirname(box.scratch)] + tops + ([box.kit_dir] if hide_kit else [])]
    keeps = kept_paths(box, hide_kit)
    targets = dict(private)
    for c in covers:
        # A cover equal to something kept would only hide it and show it again.
        if c != "/" and os.path.isdir(c) and c not in keeps and c not in targets:
            targets[c] = "ro,size=64k,mode=755,nosuid,nodev"

    def shown(path: str) -> bool:  # not already hidden by a cover above it, or shown again by a keep
        return not any(under(path, t) and t != path and
                       not any(under(k, t) and k != t and under(path, k) for k in keeps) for t in targets)

    return sorted(((t, o) for t, o in targets.items() if shown(t)), key=lambda to: to[0].count("/"))


def namespace_steps(box, hide_kit: bool = False) -> List[str]:
    """The steps of tools/sandbox_mounts, run as root in the job's fresh
    namespaces before it drops to the sandbox user: the loopback up, then
    each target's mount. A target holding a kept path is built at a staging
    point first (the kept paths bound into it at their own place), then
    moved over the target: the host's directory is never written."""
    steps = ["lo"]
    keeps = sorted(kept_paths(box, hide_kit), key=lambda k: k.count("/"))
    for target, options in mount_targets(box, hide_kit):
        inside = [k for k in keeps if under(k, target) and k != target]
        if not inside:
            steps += ["tmpfs", options, target]
            continue
        writable = ",".join(o for o in options.split(",") if o != "ro")
        steps += ["tmpfs", writable, box.stage_point]
        for k in inside:
            at = os.path.join(box.stage_point, os.path.relpath(k, target))
            steps += ["mkdir", at, "bind", k, at]
        if "ro" in options.split(","):
            steps += ["remount-ro", writable, box.stage_point]
        steps += ["move", box.stage_point, target]
    return steps
