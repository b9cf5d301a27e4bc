"""Reading, as root, files that a sandboxed job (the grader's) could have
written or replaced.

A job owns its run directory, so any name there may have become a FIFO
(an open() of it blocks until someone writes: the grader hangs), a symlink
(root would read whatever it points to), a device (/dev/zero never ends) or
a file as large as the job's limits allow. open_sandbox_file opens without
following a last symlink, without blocking, refuses anything but a regular
file, and reads a bounded amount; every grader-side read of such a file
goes through it (kit/build.py, kit/records.py and grader/grading.py call it).
"""
import os
import stat


class UnsafeSandboxFile(OSError):
    """A file the sandbox wrote is not a plain, bounded regular file."""


def open_sandbox_file(path: str, max_bytes: int) -> bytes:
    """The content of `path`, at most `max_bytes` of it; raises
    UnsafeSandboxFile if it is a symlink, not a regular file, or larger."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as e:
        raise UnsafeSandboxFile(e.errno, f"cannot open the sandbox's file safely: {e.strerror}", path) from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeSandboxFile(f"{path}: written by the sandbox, and not a regular file "
                                    f"(mode {stat.filemode(st.st_mode)}): not read")
        if st.st_size > max_bytes:
            raise UnsafeSandboxFile(f"{path}: written by the sandbox, {st.st_size} bytes, over the "
                                    f"{max_bytes} bytes the grader reads: not read")
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:  # it grew while we read
            raise UnsafeSandboxFile(f"{path}: written by the sandbox, over the {max_bytes} bytes the grader "
                                    "reads: not read")
        return data
    finally:
        os.close(fd)


def copy_sandbox_tree(src: str, dest: str, max_bytes: int) -> None:
    """Copies the regular files and directories below `src` (a scratch
    directory a job wrote in) to `dest`, each file read safely; symlinks,
    FIFOs and devices are left out, never followed."""
    for root, dirs, files in os.walk(src, followlinks=False):
        target = os.path.join(dest, os.path.relpath(root, src))
        os.makedirs(target, exist_ok=True)
        for name in files:
            try:
                data = open_sandbox_file(os.path.join(root, name), max_bytes)
            except OSError:
                continue
            with open(os.path.join(target, name), "wb") as f:
                f.write(data)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]

