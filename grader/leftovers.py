"""What a sandbox user can leave behind that outlives its processes:
System V IPC objects and POSIX message queues (grader/sandbox.py removes
them after every job when no IPC namespace ends them).
"""
import os
import subprocess
from typing import List, Optional, Tuple

from grader.slots import LOCK_DIR, lock_dir

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


MQUEUE_LOOK = "mqueue-"  # remove_mqueues's mount point in the lock folder, by slot uid, while it looks


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
    filter refuses mq_open, the only way to make one). The look's folder is
    the slot's (its uid's): two graders at once never mount, unmount or
    remove each other's."""
    point, mounted = _mqueue_mount(), False
    if point is None:
        point = os.path.join(LOCK_DIR, f"{MQUEUE_LOOK}{uid}")
        try:
            os.close(lock_dir())
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
