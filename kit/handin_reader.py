"""Reads a handin's tar archive in a child process of its own, bounded, so
that no handin's bytes can cost the grader more than an honest handin does.

  python3 -m kit.handin_reader HANDIN.tar      (prints what it read, as JSON)

A handin is hostile input: a 16 KB bzip2 tar can expand to 16 GiB of zeros,
hold a million empty members, or carry an xz stream cut short. The child
(read_handin starts it) reads the members once, forward, through a counter
of decompressed bytes, under limits on its address space and CPU time and a
wall-clock timeout; it hands back the few accepted files' bytes, what it
refused, and the content key a batch resumes by. Whatever goes wrong in it
(a corrupt stream, a limit reached, a crash) makes the handin "not
readable", for that handin alone, with a plain reason.

The grader's extract step (grader/staging.py), a batch's content key
(grader/batches.py) and `make handin`'s own check of what it wrote
(kit/handin.py) all read a handin through read_handin.
"""
import base64
import hashlib
import json
import os
import posixpath
import resource
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from kit import parts as table

MAX_MEMBER_BYTES = 1 << 20        # one accepted file
MAX_MEMBERS = 200                 # members looked at; the rest are ignored
MAX_STREAM_BYTES = 32 << 20       # the tar stream, decompressed: an honest handin holds a few hundred KB
CHILD_MEMORY_BYTES = 384 << 20    # the child's address space (Python, a decompressor, the members)
CHILD_CPU_SECONDS = 4             # what the child may compute; the stream cap keeps it far below
WALL_SECONDS = 20                 # a child that has not finished by then is killed...
BUSY_GRACE_SECONDS = 60           # ...unless it has hardly run: a paused or crowded host gets this long more
MAX_NAME_SHOWN = 120              # characters of a member's name a report quotes



def accepted() -> tuple:
    """The members a handin may hold: the course's student files and the feedback."""
    return tuple(table.IMPL_FILES) + ("feedback.txt",)


TOO_MANY = f"more than {MAX_MEMBERS} members: the rest are ignored"

# Compressed streams by their first bytes, as tarfile's "r:*" knows them.
MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"))


class OverCap(Exception):
    """The stream holds more than a handin may."""


@dataclass
class HandinRead:
    """What reading a handin gave. readable False: `why` says in plain words."""
    readable: bool
    why: str = ""
    files: Dict[str, bytes] = field(default_factory=dict)  # accepted base name -> bytes (the last copy)
    members: List[Dict] = field(default_factory=list)       # each accepted member: name, size
    rejected: List[str] = field(default_factory=list)       # members refused, and why
    notes: List[str] = field(default_factory=list)          # members ignored, doubled
    key: str = ""                                           # the content key (batches.py)
    grader_fault: str = ""                                  # set: the reading failed for the host's sake


class Counted:
    """A forward-only file over the (decompressed) tar stream that counts
    what it hands out and refuses past MAX_STREAM_BYTES: skipping a member
    costs its decompression too, so skips are reads."""

    def __init__(self, stream, cap: int = MAX_STREAM_BYTES):
        self.stream, self.cap, self.pos = stream, cap, 0

    def read(self, size: int = -1) -> bytes:
        want = self.cap + 1 - self.pos if size is None or size < 0 else min(size, self.cap + 1 - self.pos)
        data = self.stream.read(max(0, want))
        self.pos += len(data)
        if self.pos > self.cap:
            raise OverCap()
        return data

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset if whence == 0 else self.pos + offset
        if target < self.pos:
            raise OSError("a handin's tar stream is read forward only")
        while self.pos < target:
            if not self.read(min(target - self.pos, 1 << 20)):
                break
        return self.pos


def shown(name: str) -> str:
    clean = "".join(c if c.isprintable() else "?" for c in name)
    return clean if len(clean) <= MAX_NAME_SHOWN else clean[:MAX_NAME_SHOWN] + "..."


def refusal(member) -> Optional[str]:
    """Why a member may not be extracted, or None."""
    parts = member.name.replace("\\", "/").split("/")
    if member.name.startswith("/"):
        return "absolute path"
    if ".." in parts:
        return "path with '..'"
    if member.issym() or member.islnk():
        return "link"
    if member.ischr() or member.isblk() or member.isfifo():
        return "device or pipe"
    if not member.isfile() and not member.isdir():
        return "not a regular file"
    return None


def content_key(files: Dict[str, bytes], rejected: List[str], notes: List[str]) -> str:
    """The hash of what grading reads from a handin: its accepted files by
    name, and what was refused or ignored (the report says it)."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    for line in rejected + notes:
        digest.update(line.encode() + b"\n")
    return digest.hexdigest()[:16]


def unreadable_key(path: str) -> str:
    """The key of a file that is no readable handin: its bytes (at most the
    first 64 MiB, and its size), read here, in chunks."""
    digest = hashlib.sha256(b"not a readable handin\0")
    try:  # never blocks: a FIFO is no handin, and its key is its kind
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as f:
            st = os.fstat(f.fileno())
            digest.update(f"{stat.S_IFMT(st.st_mode)} {st.st_size}\0".encode())
            for _ in range(64 if stat.S_ISREG(st.st_mode) else 0):
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                digest.update(chunk)
    except OSError as e:
        digest.update(str(e.errno).encode())
    return digest.hexdigest()[:16]


def read_members(path: str) -> HandinRead:
    """The child's work: every member, once, forward (tarfile's stream mode)."""
    import bz2
    import gzip
    import lzma
    import tarfile
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        return HandinRead(False, f"it can't be opened ({e.strerror})")
    raw = os.fdopen(fd, "rb")
    kind = "tar"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return HandinRead(False, "it is not a regular file")
        head = raw.read(8)
        raw.seek(0)
        kind = next((k for magic, k in MAGIC if head.startswith(magic)), "tar")
        stream = {"gzip": lambda: gzip.GzipFile(fileobj=raw), "bzip2": lambda: bz2.BZ2File(raw),
                  "xz": lambda: lzma.LZMAFile(raw), "tar": lambda: raw}[kind]()
        out = HandinRead(True)
        counted = Counted(stream)
        with tarfile.open(fileobj=counted, mode="r|") as tar:
            for count, member in enumerate(tar):
                if count >= MAX_MEMBERS:
                    out.rejected.append(TOO_MANY)
                    break
                take(tar, member, out)
        if kind != "tar" and out.rejected[-1:] != [TOO_MANY]:
            while counted.read(1 << 20):  # to the end: the decompressor checks its checksum there
                pass
        out.key = content_key(out.files, out.rejected, out.notes)
        return out
    except OverCap:
        return HandinRead(False, f"it expands to over {MAX_STREAM_BYTES >> 20} MiB, where a handin holds a few "
                                 "hundred KB")
    except MemoryError:
        return HandinRead(False, "reading it takes more memory than a handin may")
    except tarfile.ReadError:
        return HandinRead(False, "it is not a tar archive" if kind == "tar" else
                          f"its {kind} stream holds no readable tar archive")
    except Exception:  # noqa: BLE001 (zlib, lzma, bz2, EOF, header errors: all the handin's bytes)
        return HandinRead(False, "its tar archive is corrupt or cut short" if kind == "tar" else
                          f"its {kind} stream is corrupt or cut short")
    finally:
        raw.close()


def take(tar, member, out: HandinRead) -> None:
    """One member: refused, ignored, or read into out.files."""
    name = shown(member.name)
    why = refusal(member)
    if why:
        out.rejected.append(f"{name}: {why}, not extracted")
        return
    if member.isdir():
        return
    clean = posixpath.normpath(member.name.replace("\\", "/"))
    base = posixpath.basename(clean)
    if base not in accepted() or clean not in (base, f"student/{base}"):
        out.notes.append(f"{name}: not one of the handed-in files, ignored")
        return
    if member.size > MAX_MEMBER_BYTES:
        out.rejected.append(f"{name}: {member.size} bytes, over the {MAX_MEMBER_BYTES} byte limit")
        return
    data = tar.extractfile(member).read(MAX_MEMBER_BYTES + 1)
    if base in out.files:
        out.notes.append(f"{name}: {base} appears twice; the last copy is used")
    out.files[base] = data
    out.members.append({"name": name, "size": len(data)})


def limit_myself() -> None:
    """The child's limits, set before it reads a byte of the handin."""
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_SECONDS, CHILD_CPU_SECONDS))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # it writes no file
    resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))


def to_json(r: HandinRead) -> str:
    return json.dumps({"readable": r.readable, "why": r.why, "key": r.key, "rejected": r.rejected,
                       "notes": r.notes, "members": r.members,
                       "files": {k: base64.b64encode(v).decode() for k, v in r.files.items()}})


def from_json(text: str) -> HandinRead:
    data = json.loads(text)
    files = {str(k): base64.b64decode(v) for k, v in data["files"].items() if k in accepted()}
    return HandinRead(bool(data["readable"]), str(data["why"]), files, list(data["members"]),
                      [str(x) for x in data["rejected"]], [str(x) for x in data["notes"]], str(data["key"]))


def max_answer_bytes() -> int:
    """What the child's own answer may take: the accepted files, base64, and the lists."""
    return 4 * len(accepted()) * MAX_MEMBER_BYTES // 3 + (4 << 20)


def cpu_seconds(pid: int) -> float:
    """The CPU time a live process has used (/proc/PID/stat), or 0."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def wait_reading(proc: subprocess.Popen, wall: float = WALL_SECONDS,
                 grace: float = BUSY_GRACE_SECONDS) -> Optional[bytes]:
    """The child's answer, or None if it was killed at the wall-clock limit.
    The child opens the handin without blocking and refuses anything but a
    regular file, so a child that has hardly run at `wall` is waiting for
    the host, not for the handin (a virtual machine paused for seconds, a
    host crowded by other gradings): it gets `grace` more before it counts."""
    try:
        return proc.communicate(timeout=wall)[0]
    except subprocess.TimeoutExpired:
        if cpu_seconds(proc.pid) < CHILD_CPU_SECONDS / 4:
            try:
                return proc.communicate(timeout=grace)[0]
            except subprocess.TimeoutExpired:
                pass
    return None


def read_handin(path: str) -> HandinRead:
    """Reads `path` in a limited child process; never raises for what the
    file holds. A child that ran out of a limit makes it unreadable; one
    still waiting at the wall-clock limit and its grace, having used little
    CPU (a host too busy to run it), is the grader's fault (grader_fault)."""
    proc = subprocess.Popen([sys.executable, "-m", "kit.handin_reader", os.path.abspath(path)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            start_new_session=True)
    out = wait_reading(proc)
    if out is None:
        used = cpu_seconds(proc.pid)
        proc.kill()
        proc.communicate()
        if used < CHILD_CPU_SECONDS / 4:
            return HandinRead(False, "the grading host was too busy to read it", key=unreadable_key(path),
                              grader_fault=f"reading the handin did not finish within "
                                           f"{WALL_SECONDS + BUSY_GRACE_SECONDS} s and used {used:.1f} s of "
                                           f"CPU: the host is overloaded; grade it again")
        return HandinRead(False, f"reading it took over {WALL_SECONDS} s", key=unreadable_key(path))
    if proc.returncode == 0 and len(out) <= max_answer_bytes():
        try:
            r = from_json(out.decode())
            if not r.readable:
                r.key = unreadable_key(path)
            return r
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
    # Ended by its CPU limit (SIGXCPU), or by memory where Python could not say so.
    why = (f"reading it takes over {CHILD_CPU_SECONDS} s of computing" if proc.returncode in (-24, -9)
           else "reading it takes more memory than a handin may")
    return HandinRead(False, why, key=unreadable_key(path))


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    limit_myself()  # also when run by hand
    sys.stdout.write(to_json(read_members(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
