"""Where and as whom student code runs during grading (the threat model is in
grader/README.md, "Threat model").

As root (Gradescope, CI, a staff server), every compile and every test job
of a handin runs:
  - as an unprivileged user id of its own (61000 + worker slot by default,
    KIT_SANDBOX_UID to change; no passwd entry is needed), so it can write
    only its scratch run directory and signal only its own processes;
  - when the kernel allows it, in fresh mount and network namespaces, where
    the reference solution, the hidden cases, the kit's build tree and the
    autograder bundles are covered by empty read-only mounts and the only
    network is a loopback device;
  - under resource limits (below), with no core dumps;
and after every job each process of that user id is killed and each file it
left in the shared temporary directories is removed. Every job also dies
with the grader, even one killed with kill -9: its first process has the
kernel send it SIGKILL when the grader goes (PR_SET_PDEATHSIG), and with
namespaces everything the job started is in a PID namespace of its own,
which the kernel empties when its first process dies. A grader that claims
a slot first ends whatever an earlier, killed grader left of that slot.

Not root: the same limits, a scratch directory and sealed results, but the
code runs with the grader's own rights; the report says isolation is reduced.
"""
import fcntl
import functools
import os
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass
from typing import Dict, List, Tuple

from kit.processes import kill_all, processes

SANDBOX_UID_BASE = 61000
SLOTS = 16  # concurrent graders on one machine, each with a user id of its own

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
# World-writable places a job could leave files in.
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm")
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


@functools.lru_cache(maxsize=None)
def namespaces_work() -> bool:
    """Can this machine give a job its own mount, network and PID namespaces
    (and a loopback device, which mpirun's local daemon needs)?"""
    if os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("ip")):
        return False
    try:
        return subprocess.run(["unshare", "--mount", "--net", "--pid", "--ipc", "--mount-proc", "--fork", "--", "sh", "-c",
                               "ip link set lo up && mount -t tmpfs -o ro,size=4k none /mnt"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


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

    def __post_init__(self):
        self.root = os.geteuid() == 0
        base = int(os.environ.get("KIT_SANDBOX_UID", SANDBOX_UID_BASE))
        self._lock = None
        if self.root:
            self.slot = self._claim_slot(self.slot)
        self.uid = base + self.slot if self.root else os.geteuid()
        self.isolated_fs = self.root and namespaces_work()
        self.run_dir = os.path.join(self.scratch, "run")
        os.makedirs(self.run_dir, exist_ok=True)
        if self.root:
            os.chmod(self.scratch, 0o711)  # the sandbox user may pass through, not list
            os.chown(self.run_dir, self.uid, self.uid)
            os.chmod(self.run_dir, 0o700)
        # Every build tree of the kit, not only the one grading: a reference
        # binary holds the hidden expected values (build/ beside build-mpich/).
        builds = [os.path.join(self.kit_dir, n) for n in sorted(os.listdir(self.kit_dir))
                  if n.startswith("build") and os.path.isfile(os.path.join(self.kit_dir, n, "CMakeCache.txt"))]
        self.hidden_paths = [p for p in dict.fromkeys([os.path.join(self.kit_dir, "reference"),
                                                       os.path.join(self.kit_dir, "grader", "hidden"),
                                                       os.path.join(self.kit_dir, "dist"),
                                                       self.build_dir] + builds) if os.path.isdir(p)]

    def own_dir(self, name: str) -> str:
        """A new directory of the run directory that the sandbox user owns."""
        path = os.path.join(self.run_dir, name)
        os.makedirs(path)
        if self.root:
            os.chown(path, self.uid, self.uid)
        return path

    def _claim_slot(self, preferred: int) -> int:
        """A slot no other grader on this machine holds (a lock per slot):
        cleaning up kills every process of the slot's user, so two graders
        must never share one."""
        lock_dir = "/run/lock" if os.path.isdir("/run/lock") else "/tmp"
        for attempt in range(600):
            for slot in [preferred] + [s for s in range(SLOTS) if s != preferred]:
                handle = open(os.path.join(lock_dir, f"kit-grader-slot-{slot}.lock"), "a")
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    handle.close()
                    continue
                self._lock = handle
                self.slot, self.uid = slot, int(os.environ.get("KIT_SANDBOX_UID", SANDBOX_UID_BASE)) + slot
                self.clean_up()  # what a grader killed while it held this slot left behind
                return slot
            time.sleep(1)
        raise RuntimeError(f"all {SLOTS} sandbox slots stayed busy for 10 minutes")

    def release(self) -> None:
        self.clean_up()
        if self._lock:
            self._lock.close()
            self._lock = None

    # ---- what the report says about it ----

    def notes(self) -> List[str]:
        if not self.root:
            return ["isolation reduced: the grader is not root, so student code ran with the grader's own "
                    "user rights (resource limits, a scratch directory and sealed results still applied)"]
        if self.isolated_fs:
            return []
        exposed = [p for p in self.hidden_paths if _readable_by_others(p)]
        note = ("isolation reduced: no mount/network namespaces here, so student code ran as an unprivileged "
                "user without them")
        if exposed:
            note += "; readable by that user: " + ", ".join(exposed) + " (chmod o-rwx them to close this)"
        return [note]

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

    def prefix(self) -> List[str]:
        """Put before a command to run it in the sandbox."""
        # SIGKILL when the grader dies: no job outlives a killed grader.
        with_grader = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []
        limits = []
        if shutil.which("prlimit"):
            limits = ["prlimit", f"--cpu={LIMITS['cpu']}", f"--as={LIMITS['as']}", f"--fsize={LIMITS['fsize']}",
                      f"--core={LIMITS['core']}"] + ([f"--nproc={LIMITS['nproc']}"] if self.root else []) + ["--"]
        if not self.root:
            return with_grader + limits
        drop = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--no-new-privs",
                "--inh-caps=-all", "--"]
        if not self.isolated_fs:
            return with_grader + limits + drop
        covers = " && ".join(f"mount -t tmpfs -o ro,size=4k,mode=755 none '{p}'" for p in self.hidden_paths)
        script = "ip link set lo up && mount -t tmpfs -o size=64m,mode=1777 none /dev/shm"
        script += (" && " + covers if covers else "") + ' && exec "$@"'
        # --ipc: the job's System V objects end with its namespace.
        return (with_grader + ["unshare", "--mount", "--net", "--pid", "--ipc", "--mount-proc", "--fork", "--kill-child", "--",
                               "sh", "-c", script, "sandbox"] + limits + drop)

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
        objects (without namespaces, nothing else ends them). Root only:
        otherwise the user is the grader's own, and the job's session is all
        we end."""
        if not self.root:
            return
        kill_all(self._own_processes, rounds=200)
        for top in SHARED_TMP:
            self._remove_owned(top)
        for flag, ident in sysv_objects(self.uid):
            subprocess.run(["ipcrm", flag, str(ident)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _remove_owned(self, top: str) -> None:
        """Top-level entries only: the sticky temporary directories let a
        user create there, and nowhere below another user's directory."""
        try:
            entries = list(os.scandir(top))
        except OSError:
            return
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != self.uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue
