"""Where and as whom student code runs during grading (the threat model is in
grader/README.md, "Threat model").

As root (Gradescope, CI, a staff server), every compile and every test job
of a handin runs:
  - as an unprivileged user id of its own (61000 + worker slot by default,
    in a container a range of its own, KIT_SANDBOX_UID to change; no passwd
    entry is needed: grader/slots.py, uid_base), so it can write
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

Here: the limits and the sandbox of one grading. Which user id a grader
holds is slots.py's; what a job sees of the host, namespaces.py's; what
outlives a job's processes (IPC objects), leftovers.py's.
"""
import os
import resource
import shutil
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from grader import cpu_share
from grader.leftovers import remove_mqueues, sysv_objects
from grader.namespaces import SHARED_TMP, USER_NAMESPACES, namespace_steps, namespaces_work, user_namespaces_work
from grader.slots import claim_slot, uid_base
from kit import limits
from kit.measured import Ran, run_measured
from kit.facts import FILE_LIMIT_BYTES
from kit.processes import kill_all, processes

# Per process (each rank, mpirun, the compiler). Generous for the real tests:
# the largest needs ~0.5 GiB of address space per rank; part 9's training
# case takes ~2 s of CPU.
LIMITS = {
    "cpu": 300,                   # seconds of CPU time
    "as": 3 << 29,                # bytes of address space (1.5 GiB)
    "nproc": 256,                 # processes and threads of the sandbox user (8 ranks use ~60)
    "fsize": FILE_LIMIT_BYTES,    # bytes in any one file written
    "core": 0,
}
# The per-file limit alone lets a job fill the disk with many files: what a
# grading writes in its run directory (objects, the job's own files) is a
# tmpfs of this size, and each private temporary place of a namespaced job
# another (MPI's shared memory lives in /dev/shm).
RUN_BYTES = 160 << 20


_RLIMITS = {"cpu": resource.RLIMIT_CPU, "as": resource.RLIMIT_AS, "nproc": resource.RLIMIT_NPROC,
            "fsize": resource.RLIMIT_FSIZE, "core": resource.RLIMIT_CORE, "data": resource.RLIMIT_DATA,
            "stack": resource.RLIMIT_STACK}
# A test job's processes (the ranks, the launcher) also get the parts
# table's data and stack limits, set here outside the ranks: all of a
# rank's private memory, whatever route it was taken by (the main thread's
# stack is the one the data limit does not count). The compiler needs far more.
JOB_DATA_BYTES = limits.RANK_DATA_LIMIT_MIB << 20
JOB_STACK_BYTES = limits.RANK_STACK_LIMIT_MIB << 20


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
        self.base = uid_base()
        self.slot_lock = None
        self.run_mounted = False
        self.scratch = os.path.realpath(self.scratch)
        if self.root:
            self.slot = claim_slot(self, self.slot)
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
        self.stage_point = os.path.join(self.scratch, ".ns")       # a mount point while a namespace is set up
        for path in (self.run_dir, self.results_dir, self.src_dir, self.bin_dir, self.stage_point):
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
        if self.slot_lock:
            self.slot_lock.close()
            self.slot_lock = None

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
                      f"--core={limit['core']}"] + ([f"--nproc={limit['nproc']}"] if self.root or self.user_ns else [])
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
                               self.mounter()] + namespace_steps(self, hide_kit) + ["--"] + limits + drop)

    def mounter(self) -> str:
        """The build's tools/sandbox_mounts, which makes a job's mounts."""
        path = os.path.join(self.build_dir, "sandbox_mounts")
        if not os.access(path, os.X_OK):
            raise RuntimeError(f"{self.build_dir} has no sandbox_mounts, the sandbox's mounts: run make build")
        return path

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

    def compile(self, cmd: List[str], timeout: float, stall: Optional[float] = None,
                cpu_limit: Optional[float] = None) -> Ran:
        """A compile in the sandbox, which sees of the kit only the build's
        precompiled header and the stubs (the public headers it reads are the
        grader's copy in the scratch directory); past `timeout` s, or `stall` s
        without CPU, or once it took `cpu_limit` s of CPU, only its own
        processes are ended, not a compile beside it. The CPU time it took
        is measured."""
        return run_measured(self.prefix(hide_kit=True) + cmd, timeout, stall=stall, cpu_limit=cpu_limit,
                            env=self.env(), cwd=self.run_dir)

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
