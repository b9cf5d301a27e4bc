"""Where and as whom student code runs during grading (the threat model is in
grader/README.md, "Threat model").

As root (Gradescope, CI, a staff server), every compile and every test job
of a handin runs:
  - as an unprivileged user id of its own (61000 + worker slot by default,
    KIT_SANDBOX_UID to change; no passwd entry is needed), so it can write
    only its scratch run directory and signal only its own processes; the
    scratch directory is open to root and that user alone, and its run
    directory is a tmpfs of bounded size;
  - when the kernel allows it, in fresh mount and network namespaces, where
    the reference solution, the hidden cases, the kit's build tree, the
    autograder bundles, the batch's handins and gradebook, other graders'
    scratch directories and people's homes are covered by empty read-only
    mounts, /tmp, /var/tmp, /dev/shm and /run/lock are private bounded
    tmpfs, and the only network is a loopback device;
  - under resource limits (below), with no core dumps;
and after every job each process of that user id is killed and each file it
left in the shared temporary directories is removed. Every job also dies
with the grader, even one killed with kill -9: its first process has the
kernel send it SIGKILL when the grader goes (PR_SET_PDEATHSIG), and with
namespaces everything the job started is in a PID namespace of its own,
which the kernel empties when its first process dies. A grader that claims
a slot first ends whatever an earlier, killed grader left of that slot.

Not root: the same limits, a scratch directory and the judge, but the
code runs with the grader's own rights; the report says isolation is reduced.
"""
import fcntl
import functools
import os
import resource
import shutil
import stat
import shlex
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from grader import cpu_share
from kit import parts as table
from kit.build import Ran, pch_dir, run_measured
from kit.paths import STUBS_DIR
from kit.processes import kill_all, processes

SANDBOX_UID_BASE = 61000
SLOTS = 16  # concurrent graders on one machine, each with a user id of its own
# Root's slot locks: a place no sandbox user can plant a FIFO or a symlink in.
LOCK_DIR = "/run/kit-grader"

# Per process (each rank, mpirun, the compiler). Generous for the real tests:
# the largest needs ~0.5 GiB of address space per rank; part 9's training
# case takes ~2 s of CPU.
LIMITS = {
    "cpu": 300,                   # seconds of CPU time
    "as": 3 << 29,                # bytes of address space (1.5 GiB)
    "nproc": 256,                 # processes and threads of the sandbox user (8 ranks use ~60)
    "fsize": 64 << 20,            # bytes in any one file written
    "core": 0,
}
# The per-file limit alone lets a job fill the disk with many files: what a
# grading writes in its run directory (objects, the job's own files) is a
# tmpfs of this size, and each private temporary place of a namespaced job
# another (MPI's shared memory lives in /dev/shm).
RUN_BYTES = 160 << 20
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
# System V IPC objects outlive the processes that made them (MPICH's shared
# memory can use them; so can a handin): each kind's table and ipcrm's flag.
SYSV_IPC = (("/proc/sysvipc/shm", "-m"), ("/proc/sysvipc/sem", "-s"), ("/proc/sysvipc/msg", "-q"))


def sysv_objects(uid: int) -> List[Tuple[str, int]]:
    """(ipcrm flag, id) of every System V IPC object that `uid` owns."""
    found = []
    for table, flag in SYSV_IPC:
        try:
            with open(table) as f:
                header, *rows = f.read().splitlines()
        except (OSError, ValueError):
            continue
        columns = header.split()
        for row in rows:
            fields = dict(zip(columns, row.split()))
            if fields.get("uid") == str(uid):
                found.append((flag, int(fields["shmid" if flag == "-m" else "semid" if flag == "-s" else "msqid"])))
    return found


def _mqueue_mount() -> Optional[str]:
    """Where this mount namespace shows its IPC namespace's POSIX message
    queues (Docker and Podman mount /dev/mqueue), or None."""
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields, _, rest = line.partition(" - ")
                if rest.split()[:1] == ["mqueue"]:
                    return fields.split()[4].replace("\\040", " ")
    except OSError:
        pass
    return None


def remove_mqueues(uid: int) -> List[str]:
    """Removes every POSIX message queue that `uid` owns, as root; returns
    their names. They outlive their processes like System V objects. Where
    no mqueue file system is mounted, one is mounted for the look in root's
    lock folder and unmounted again; where none can be, [] (the system-call
    filter refuses mq_open, the only way to make one)."""
    point, mounted = _mqueue_mount(), False
    if point is None:
        point = os.path.join(LOCK_DIR, "mqueue")
        try:
            os.close(_lock_dir())
            os.makedirs(point, 0o700, exist_ok=True)
            mounted = subprocess.run(["mount", "-t", "mqueue", "kit-mqueue", point], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, timeout=10).returncode == 0
        except (OSError, RuntimeError, subprocess.TimeoutExpired):
            return []
        if not mounted:
            return []
    removed = []
    try:
        for entry in os.scandir(point):
            try:
                if entry.stat(follow_symlinks=False).st_uid == uid:
                    os.unlink(entry.path)
                    removed.append(entry.name)
            except OSError:
                continue
    except OSError:
        pass
    finally:
        if mounted:
            subprocess.run(["umount", "-l", point], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
            try:
                os.rmdir(point)  # nothing of the look stays in root's lock folder
            except OSError:
                pass
    return removed


@functools.lru_cache(maxsize=None)
def namespaces_work() -> bool:
    """Can this machine give a job its own mount, network and PID namespaces
    (and a loopback device, which mpirun's local daemon needs)? The staff's
    KIT_SANDBOX_NAMESPACES=off says no, as a container that forbids them
    does, to check the grader there."""
    if os.environ.get("KIT_SANDBOX_NAMESPACES") == "off":
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
    if os.environ.get("KIT_SANDBOX_NAMESPACES") == "off" or os.geteuid() == 0 or not shutil.which("unshare"):
        return False
    try:
        return subprocess.run(USER_NAMESPACES + ["true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


_RLIMITS = {"cpu": resource.RLIMIT_CPU, "as": resource.RLIMIT_AS, "nproc": resource.RLIMIT_NPROC,
            "fsize": resource.RLIMIT_FSIZE, "core": resource.RLIMIT_CORE, "data": resource.RLIMIT_DATA,
            "stack": resource.RLIMIT_STACK}
# A test job's processes (the ranks, the launcher) also get the parts
# table's data and stack limits, set here outside the ranks: all of a
# rank's private memory, whatever route it was taken by (the main thread's
# stack is the one the data limit does not count). The compiler needs far more.
JOB_DATA_BYTES = table.RANK_DATA_LIMIT_MIB << 20
JOB_STACK_BYTES = table.RANK_STACK_LIMIT_MIB << 20


def _within_hard(name: str, value: int) -> int:
    """A limit no higher than the grader's own hard limit: a container's root
    may lack the right to raise one (Docker drops CAP_SYS_RESOURCE), and
    Autolab's autodriver sets 100 processes and 100 MB per file."""
    _, hard = resource.getrlimit(_RLIMITS[name])
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def _readable_by_others(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IROTH) and (bool(mode & stat.S_IXOTH) or not stat.S_ISDIR(mode))


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _lock_dir() -> int:
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
    dir_fd = _lock_dir()
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


@dataclass(eq=False)  # one per grading, kept in sets
class Sandbox:
    kit_dir: str
    build_dir: str
    scratch: str
    slot: int = 0
    private: Tuple[str, ...] = ()          # more places to cover: the batch's handins, the gradebook's folder
    cancel: Optional[threading.Event] = None  # set: stop waiting for a slot

    def __post_init__(self):
        self.root = os.geteuid() == 0
        self.base = int(os.environ.get("KIT_SANDBOX_UID", SANDBOX_UID_BASE))
        self._lock = None
        self.run_mounted = False
        self.scratch = os.path.realpath(self.scratch)
        if self.root:
            self.slot = self._claim_slot(self.slot)
        self.uid = self.base + self.slot if self.root else os.geteuid()
        self.cpu, self.cpu_why = None, ""
        self.user_ns = not self.root and user_namespaces_work()
        try:
            self.isolated_fs = self.root and namespaces_work()
            if self.root:
                self.cpu, self.cpu_why = cpu_share.slot_group(self.uid)
            self._make_dirs()
        except BaseException:
            self.release()
            raise
        # Every build tree of the kit, not only the one grading: a reference
        # binary holds the hidden expected values (build/ beside build-mpich/).
        builds = [os.path.join(self.kit_dir, n) for n in sorted(os.listdir(self.kit_dir))
                  if n.startswith("build") and os.path.isfile(os.path.join(self.kit_dir, n, "CMakeCache.txt"))]
        # Besides the solution and the hidden cases: what quotes them (the
        # staff's tools and their known bugs, the repository's history, CI).
        self.hidden_paths = [p for p in dict.fromkeys([os.path.join(self.kit_dir, "reference"),
                                                       os.path.join(self.kit_dir, "grader", "hidden"),
                                                       os.path.join(self.kit_dir, "dist"),
                                                       os.path.join(self.kit_dir, "staff"),
                                                       os.path.join(self.kit_dir, ".git"),
                                                       os.path.join(self.kit_dir, ".ci"),
                                                       self.build_dir] + builds) if os.path.isdir(p)]

    def _make_dirs(self) -> None:
        """The scratch directory's layout. Only root and this sandbox user
        may enter it (root:uid 0710), so neither another sandbox user nor
        anyone else reads a handin; the user writes only run/ (its files,
        bounded in all by a tmpfs) and the results file root made for it,
        whose directory it can't change: nothing root opens later is a name
        the job could have replaced."""
        self.run_dir = os.path.join(self.scratch, "run")
        self.results_dir = os.path.join(self.scratch, "results")   # the harness's results files
        self.src_dir = os.path.join(self.scratch, "src")           # the handed-in files, read-only to the user
        self.bin_dir = os.path.join(self.scratch, "bin")           # test binaries: run, not read
        self._stage = os.path.join(self.scratch, ".ns")            # a mount point while a namespace is set up
        for path in (self.run_dir, self.results_dir, self.src_dir, self.bin_dir, self._stage):
            os.mkdir(path, 0o700)
        if not self.root:
            return
        for path, mode in ((self.scratch, 0o710), (self.results_dir, 0o710), (self.src_dir, 0o750),
                           (self.bin_dir, 0o710)):
            os.chown(path, 0, self.uid)
            os.chmod(path, mode)
        received = os.path.join(self.scratch, "handin")
        if os.path.isdir(received):
            os.chmod(received, 0o700)
        options = f"size={RUN_BYTES},mode=0700,uid={self.uid},gid={self.uid},nosuid,nodev"
        try:
            mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, f"kit-run-{self.uid}", self.run_dir],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            mounted = False
        self.run_mounted = mounted
        if not mounted:
            os.chown(self.run_dir, self.uid, self.uid)

    def hand_over(self, received: str) -> str:
        """Copies the extracted files where the sandbox user compiles them
        from, readable and not writable by it; returns that directory."""
        for name in os.listdir(received):
            with open(os.path.join(received, name), "rb") as f:
                data = f.read()
            dest = os.path.join(self.src_dir, name)
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            if self.root:
                os.chown(dest, 0, self.uid)
        return self.src_dir

    def own_dir(self, name: str) -> str:
        """A new directory of the run directory that the sandbox user owns.
        Its name is fresh (no job could have planted it), and root reads
        what is in it only after commands that run no handin code (the
        compiler)."""
        path = tempfile.mkdtemp(prefix=name + "-", dir=self.run_dir)
        if self.root:
            os.chown(path, self.uid, self.uid)
        return path

    def _claim_slot(self, preferred: int) -> int:
        """A slot whose user no other grader on this machine holds (a lock
        per user id): cleaning up kills every process of the slot's user,
        so two graders must never share one."""
        for attempt in range(600):
            for slot in [preferred] + [s for s in range(SLOTS) if s != preferred]:
                handle = lock_uid(self.base + slot)
                if handle is None:
                    continue
                self._lock = handle
                self.slot, self.uid = slot, self.base + slot
                self.clean_up()  # what a grader killed while it held this user left behind
                self._drop_stale_mounts()
                return slot
            if self.cancel is not None and self.cancel.wait(1):
                raise RuntimeError("cancelled while waiting for a sandbox slot")
            if self.cancel is None:
                time.sleep(1)
        raise RuntimeError(f"all {SLOTS} sandbox slots stayed busy for 10 minutes")

    def _drop_stale_mounts(self) -> None:
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
            if source == [f"kit-run-{self.uid}"]:
                point = fields.split()[4].replace("\\040", " ")
                subprocess.run(["umount", "-l", point], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=30)
                parent = os.path.dirname(point)
                if os.path.basename(point) == "run" and os.path.basename(parent).startswith("kit-grade-"):
                    shutil.rmtree(parent, ignore_errors=True)

    def release(self) -> None:
        self.clean_up()
        cpu_share.remove(self.cpu)
        if self.run_mounted:
            for how in (["umount"], ["umount", "-l"]):
                try:
                    if subprocess.run(how + [self.run_dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      timeout=30).returncode == 0:
                        self.run_mounted = False
                        break
                except (OSError, subprocess.TimeoutExpired):
                    continue
        if self._lock:
            self._lock.close()
            self._lock = None

    # ---- what the report says about it ----

    def notes(self) -> List[str]:
        if not self.root:
            kernel = ("in IPC and PID namespaces of its own (a user namespace), so no System V object or message "
                      "queue outlived a job" if self.user_ns else
                      "without namespaces (no unprivileged user namespace could be made here), so only the "
                      "system-call filter kept it from leaving System V objects or message queues behind")
            return ["isolation reduced: the grader is not root, so student code ran with the grader's own "
                    f"user rights (resource limits, a scratch directory and the judge still applied), {kernel}"]
        unbounded = [] if self.run_mounted else [
            "disk use bounded per file only: no tmpfs could be mounted on the run directory here"]
        if self.cpu is None:
            unbounded.append(f"CPU shares: off ({self.cpu_why}): a handin's threads are bounded by its process "
                             "limit alone, not by an equal share beside the batch's other gradings")
        if self.isolated_fs:
            return unbounded
        exposed = [p for p in self.hidden_paths if _readable_by_others(p)]
        note = ("isolation reduced: no mount/network namespaces here, so student code ran as an unprivileged "
                "user without them")
        if exposed:
            note += "; readable by that user: " + ", ".join(exposed) + " (chmod o-rwx them to close this)"
        return [note] + unbounded

    def unreachable(self, paths: List[str]) -> List[str]:
        """The paths the sandbox user can't read (a kit under a 0700 home
        directory, say): the compiler and mpirun need them."""
        if not self.root:
            return []
        probe = " ; ".join(f"test -r '{p}' || echo '{p}'" for p in paths)
        proc = subprocess.run(self.prefix() + ["sh", "-c", probe], env=self.env(), cwd=self.run_dir,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        return [line for line in proc.stdout.decode(errors="replace").splitlines() if line in paths]

    # ---- how a command runs in it ----

    def env(self) -> Dict[str, str]:
        keep = {k: v for k, v in os.environ.items()
                if k in ("PATH", "LANG", "LC_ALL", "DTRAIN_DATA") or k.startswith("KIT_")}
        keep.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        keep.update(HOME=self.run_dir, TMPDIR=self.run_dir, DTRAIN_STDOUT_IS_TTY="0")
        return keep

    def prefix(self, job: bool = False, hide_kit: bool = False) -> List[str]:
        """Put before a command to run it in the sandbox; `job`: a test job's
        launcher, whose ranks also get the data limit; `hide_kit`: a compile,
        which sees of the kit only the precompiled header's directory (in a
        namespace: without one, the kit stays readable)."""
        # SIGKILL when the grader dies: no job outlives a killed grader.
        with_grader = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []
        limits = []
        if shutil.which("prlimit"):
            limit = {name: _within_hard(name, value) for name, value in LIMITS.items()}
            limits = ["prlimit", f"--cpu={limit['cpu']}", f"--as={limit['as']}", f"--fsize={limit['fsize']}",
                      f"--core={limit['core']}"] + ([f"--nproc={limit['nproc']}"] if self.root else [])
            if job:
                limits += [f"--data={_within_hard('data', JOB_DATA_BYTES)}",
                           f"--stack={_within_hard('stack', JOB_STACK_BYTES)}"]
            limits.append("--")
        if not self.root:
            return with_grader + (USER_NAMESPACES if self.user_ns else []) + limits
        with_grader = cpu_share.join_prefix(self.cpu) + with_grader
        drop = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--no-new-privs",
                "--inh-caps=-all", "--"]
        if not self.isolated_fs:
            return with_grader + limits + drop
        # --ipc: the job's System V objects end with its namespace.
        return (with_grader + ["unshare", "--mount", "--net", "--pid", "--ipc", "--mount-proc", "--fork", "--kill-child", "--",
                               "sh", "-c", self.namespace_script(hide_kit), "sandbox"] + limits + drop)

    def _keeps(self, hide_kit: bool = False) -> List[str]:
        """What the job must see of the host at its own path, whatever covers
        the places around it: the scratch directory (its run tmpfs apart, a
        mount of its own), the kit (not for a compile) and the data set."""
        kit = os.path.realpath(self.kit_dir)
        # A compile sees of the kit only the stubs, which stand in for a file that fails.
        keeps = [self.scratch] + ([self.run_dir] if self.run_mounted else []) + \
            ([os.path.realpath(STUBS_DIR)] if hide_kit else [kit])
        # The build's precompiled header (Eigen and the public headers, no
        # secret) halves each compile; the rest of the build stays covered.
        pch = pch_dir(self.build_dir)
        if pch and os.path.isdir(pch):
            keeps.append(os.path.realpath(pch))
        # The directories of the job's PATH (the compiler and mpirun, a fake
        # one of a test), the data set, and what the staff name in
        # KIT_SANDBOX_KEEP (a module MPI's prefix under /home, say).
        named = (os.environ.get("PATH", "").split(os.pathsep) + [os.environ.get("DTRAIN_DATA", "")]
                 + os.environ.get("KIT_SANDBOX_KEEP", "").split(os.pathsep))
        hidden = [os.path.realpath(h) for h in self.hidden_paths]
        for path in named:
            if os.path.isabs(path) and os.path.isdir(path):
                real = os.path.realpath(path)
                if real != "/" and not any(_under(real, h) for h in hidden) and real not in keeps and \
                        not (hide_kit and _under(real, kit)):
                    keeps.append(real)
        return keeps

    def _targets(self, hide_kit: bool = False) -> List[Tuple[str, str]]:
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
        covers = [os.path.realpath(p) for p in list(self.hidden_paths) + list(self.private) + list(PRIVATE_ROOTS)
                  + [os.path.dirname(self.scratch)] + tops + ([self.kit_dir] if hide_kit else [])]
        keeps = self._keeps(hide_kit)
        targets = dict(private)
        for c in covers:
            # A cover equal to something kept would only hide it and show it again.
            if c != "/" and os.path.isdir(c) and c not in keeps and c not in targets:
                targets[c] = "ro,size=64k,mode=755,nosuid,nodev"

        def shown(path: str) -> bool:  # not already hidden by a cover above it, or shown again by a keep
            return not any(_under(path, t) and t != path and
                           not any(_under(k, t) and k != t and _under(path, k) for k in keeps) for t in targets)

        return sorted(((t, o) for t, o in targets.items() if shown(t)), key=lambda to: to[0].count("/"))

    def namespace_script(self, hide_kit: bool = False) -> str:
        """The root shell, in the job's fresh namespaces, that mounts the
        targets before it drops to the sandbox user. A target holding a kept
        path is built at a staging point first (the kept paths bound into
        it at their own place), then moved over the target: the host's
        directory is never written."""
        q = shlex.quote
        lines = ["set -e", "umask 022", "ip link set lo up"]
        keeps = sorted(self._keeps(hide_kit), key=lambda k: k.count("/"))
        for target, options in self._targets(hide_kit):
            inside = [k for k in keeps if _under(k, target) and k != target]
            if not inside:
                lines.append(f"mount -t tmpfs -o {q(options)} kit-cover {q(target)}")
                continue
            writable = ",".join(o for o in options.split(",") if o != "ro")
            lines.append(f"mount -t tmpfs -o {q(writable)} kit-cover {q(self._stage)}")
            for k in inside:
                at = os.path.join(self._stage, os.path.relpath(k, target))
                lines += [f"mkdir -p {q(at)}", f"mount --bind {q(k)} {q(at)}"]
            if "ro" in options.split(","):
                lines.append(f"mount -o remount,ro {q(self._stage)}")
            lines.append(f"mount --move {q(self._stage)} {q(target)}")
        return "\n".join(lines) + '\nexec "$@"\n'

    def run(self, cmd: List[str], timeout: float) -> subprocess.CompletedProcess:
        """A short command (a compile) in the sandbox; output captured. The
        caller runs clean_up() once its batch of commands is done."""
        try:
            return subprocess.run(self.prefix() + cmd, env=self.env(), cwd=self.run_dir, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                                  start_new_session=True)
        except subprocess.TimeoutExpired:
            self.clean_up()
            raise

    def compile(self, cmd: List[str], timeout: float) -> Ran:
        """A compile in the sandbox, which sees of the kit only the build's
        precompiled header and the stubs (the public headers it reads are the
        grader's copy in the scratch directory); past `timeout` s only its own processes are
        ended, not a compile beside it. The CPU time it took is measured."""
        return run_measured(self.prefix(hide_kit=True) + cmd, timeout, env=self.env(), cwd=self.run_dir)

    # ---- afterwards ----

    def _own_processes(self) -> List[int]:
        def owned(status: str) -> bool:
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            if fields["State"].split()[0] == "Z":
                return False  # a zombie runs nothing; no kill hurries its reaper
            return int(fields["Uid"].split()[0]) == self.uid  # real uid, even for a non-dumpable process

        return processes(owned, "status")

    def clean_up(self) -> None:
        """Kills every process of the sandbox user (so nothing a job started,
        even one that left its session, survives it) and removes what the
        user left in the shared temporary directories and its System V IPC
        objects and POSIX message queues (without namespaces, nothing else ends
        them). Root only:
        otherwise the user is the grader's own, and the job's session is all
        we end."""
        if not self.root:
            return
        kill_all(self._own_processes, rounds=200)
        for top in SHARED_TMP:
            self._remove_owned(top)
        for flag, ident in sysv_objects(self.uid):
            try:
                subprocess.run(["ipcrm", flag, str(ident)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=10)
            except subprocess.TimeoutExpired:
                continue
        # In its namespaces a job's queues end with its IPC namespace; before
        # they are known (a slot just claimed), a killed grader's may be left.
        if not getattr(self, "isolated_fs", False):
            remove_mqueues(self.uid)

    def empty_run_dir(self) -> None:
        """Removes what the compile left in the run directory (objects, a
        killed compiler's temporary files) before the job runs: its tmpfs is
        memory, which the job's own share of the machine does not count."""
        self._remove_owned(self.run_dir, anyone=True)

    def _remove_owned(self, top: str, anyone: bool = False) -> None:
        """Top-level entries only, the sandbox user's (or `anyone`'s): the
        sticky temporary directories let a user create there, and nowhere
        below another user's directory."""
        try:
            entries = list(os.scandir(top))
        except OSError:
            return
        for entry in entries:
            try:
                if not anyone and entry.stat(follow_symlinks=False).st_uid != self.uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue
