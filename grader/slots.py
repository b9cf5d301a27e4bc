"""The sandbox users' slots: each concurrent grader on a machine holds one
user id, by a lock file in a folder only root can write (grader/sandbox.py
claims its slot here).
"""
import fcntl
import os
import shutil
import stat
import subprocess
import time

from kit import overrides

SANDBOX_UID_BASE = 61000
SLOTS = 16  # concurrent graders on one machine, each with a user id of its own
# In a container, one of CONTAINER_RANGES ranges of SLOTS uids above the
# machine's own (below). They end at 65095: a rootless container (a user
# namespace) maps only the uids under 65536.
CONTAINER_UID_BASE = SANDBOX_UID_BASE + SLOTS
CONTAINER_RANGES = 255
# The kernel's first PID namespace (PROC_PID_INIT_INO): a grader in it has
# the machine to itself, not a container's share of it.
INITIAL_PID_NAMESPACE = 0xEFFFFFFC
# Root's slot locks: a place no sandbox user can plant a FIFO or a symlink in.
LOCK_DIR = "/run/kit-grader"


def lock_dir() -> int:
    """An fd of LOCK_DIR, made root's own (0700) if missing; refused if it is
    a symlink, not a directory, or open to anyone but root."""
    try:
        os.mkdir(LOCK_DIR, 0o700)
    except FileExistsError:
        pass
    fd = os.open(LOCK_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if st.st_uid != 0 or st.st_mode & 0o077:
        os.close(fd)
        raise RuntimeError(f"{LOCK_DIR} is not root's own 0700 directory (owner {st.st_uid}, mode "
                           f"{stat.filemode(st.st_mode)}): remove it, the grader makes it")
    return fd


def lock_uid(uid: int):
    """The lock of sandbox user `uid`, held (an open file), or None if another
    grader holds it. Named by the uid, not the slot: two graders whose
    KIT_SANDBOX_UID ranges overlap still never share a user."""
    dir_fd = lock_dir()
    try:
        fd = os.open(f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     0o600, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != 0:
        os.close(fd)
        raise RuntimeError(f"{LOCK_DIR}/uid-{uid}.lock is not root's regular file")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def uid_base() -> int:
    """The sandbox users' first uid: KIT_SANDBOX_UID's, else SANDBOX_UID_BASE
    on a machine of its own. A container (Docker's, podman's: a PID namespace
    of its own) shares the host's user ids but has a lock folder of its own,
    and the kernel counts a user's processes against its limit (RLIMIT_NPROC,
    the sandbox's "nproc") across every container: two gradings in two
    containers on one host as the same user would share that limit, and the
    one starting its ranks then could not fork (seen when the platforms'
    check graded side by side: Autolab's ranks did not start in 30 s). So a
    container's range is its PID namespace's: the kernel numbers the
    namespaces that exist at once one after another, so containers running
    side by side fall in different ranges."""
    if overrides.SANDBOX_UID:
        return int(overrides.SANDBOX_UID)
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return SANDBOX_UID_BASE
    if namespace == INITIAL_PID_NAMESPACE:
        return SANDBOX_UID_BASE
    return CONTAINER_UID_BASE + SLOTS * (namespace % CONTAINER_RANGES)


def claim_slot(box, preferred: int) -> int:
    """A slot for sandbox `box` (grader/sandbox.py) whose user no other
    grader on this machine holds (a lock per user id): cleaning up kills
    every process of the slot's user, so two graders must never share one."""
    for attempt in range(600):
        for slot in [preferred] + [s for s in range(SLOTS) if s != preferred]:
            handle = lock_uid(box.base + slot)
            if handle is None:
                continue
            box.slot_lock = handle
            box.slot, box.uid = slot, box.base + slot
            box.clean_up()  # what a grader killed while it held this user left behind
            drop_stale_mounts(box.uid)
            return slot
        if box.cancel is not None and box.cancel.wait(1):
            raise RuntimeError("cancelled while waiting for a sandbox slot")
        if box.cancel is None:
            time.sleep(1)
    raise RuntimeError(f"all {SLOTS} sandbox slots stayed busy for 10 minutes")


def drop_stale_mounts(uid: int) -> None:
    """The run tmpfs of a grader of this user that was killed (kill -9)
    before it could unmount it: we hold the user's lock, so it is no
    one's now."""
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return
    for line in lines:
        fields, _, rest = line.partition(" - ")
        source = rest.split()[1:2]
        if source == [f"kit-run-{uid}"]:
            point = fields.split()[4].replace("\\040", " ")
            subprocess.run(["umount", "-l", point], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=30)
            parent = os.path.dirname(point)
            if os.path.basename(point) == "run" and os.path.basename(parent).startswith("kit-grade-"):
                shutil.rmtree(parent, ignore_errors=True)
