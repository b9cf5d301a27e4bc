"""The record channels of one test job: a FIFO per rank, read as records
arrive (tests/harness/job.h is the other end).

A rank opens its own channel write-only before any student code runs, so
it can neither read back nor rewrite what it wrote, nor write into another
rank's: the rank of every line is the channel it came through. The
channels are drained all the time, whatever arrives, so no rank ever
blocks on a full pipe; past MAX_BYTES a job's lines are counted and
dropped, not kept. Beside them lies the roll-call board, a small file each
rank maps to mark that it answered a roll-call (watchdog.cpp); it decides
nothing here.

A job of hidden cases finds their salt there too (offer_salt): a pipe that
only the ranks' MPI sides read, before their programs start.

Each rank's MPI side (framework/comm/side/) has a channel of its own too,
side<r>, for its accounts of the traffic (kit/traffic.py): it opens it
before it starts the rank's program, and its lines are kept apart.

    channels = Channels(directory, ranks)   # before the job starts
    ... the job runs; channels.bytes grows as records arrive ...
    lines = channels.close()                # [(rank, line), ...] in arrival order
    channels.side_lines                     # the same, of the sides' channels
"""
import os
import select
import sys
import tempfile
import threading
from typing import List, Optional, Tuple

from kit.records import MAX_FILE_BYTES as MAX_BYTES, MAX_LINE_BYTES

BOARD_BYTES = 4096  # tests/harness/job.h: kBoardSlots 32-bit slots
# What keeping one line costs the grader beyond its bytes (a tuple and a
# bytes object): charged against MAX_BYTES too, so a flood of empty lines
# is bounded like a flood of long ones.
LINE_COST = 96


class Channels:
    def __init__(self, parent: Optional[str], ranks: int, shared: bool = False):
        """Makes the job's channels in a new directory under `parent`;
        `shared`: another user (the sandbox's) runs the job, so it may write
        them, and nothing more."""
        self.dir = tempfile.mkdtemp(prefix="kit-records-", dir=parent)
        self.ranks = ranks
        self.bytes = 0          # received, kept or not: the job's sign of life
        self.kept = 0           # what the kept lines cost, bytes and LINE_COST each
        self.dropped = 0        # bytes past MAX_BYTES, or in lines past MAX_LINE_BYTES
        self.torn = 0           # channels whose last line the job's end cut off
        self.lines: List[Tuple[int, bytes]] = []
        self.side_lines: List[Tuple[int, bytes]] = []
        self._names = [f"{kind}{rank}" for kind in ("rank", "side") for rank in range(ranks)]
        self._partial = {name: bytearray() for name in self._names}
        self._fds = {}
        self._lock = threading.Lock()
        for name in self._names:
            path = os.path.join(self.dir, name)
            os.mkfifo(path, 0o600)
            if shared:
                os.chmod(path, 0o622)  # others write; only we read
            # Opened before the job: a rank's open never waits for a reader.
            self._fds[os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)] = name
        board = os.path.join(self.dir, "rollcall")
        fd = os.open(board, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        os.ftruncate(fd, BOARD_BYTES)
        os.close(fd)
        if shared:
            os.chmod(board, 0o666)
            os.chmod(self.dir, 0o711)
        # A writer end of our own keeps each channel open between the ranks'
        # opens and after their exits, so select never spins on end-of-file.
        self._keep = [os.open(os.path.join(self.dir, name), os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                      for name in self._names]
        self._shared = shared
        self._stop = threading.Event()
        # Written once by close(): the reader's wait ends at once, where a
        # timed poll kept each job's end waiting up to 50 ms.
        self._wake_read, self._wake_write = os.pipe2(os.O_CLOEXEC)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def offer_salt(self, salt: int) -> None:
        """Leaves the hidden cases' salt for the job's MPI sides, a copy per
        rank, in a pipe (salt): each side takes its copy before its rank's
        program exists, and the ranks meet before any program starts, so no
        program finds one left (framework/comm/side/comm_side_salt.h)."""
        path = os.path.join(self.dir, "salt")
        os.mkfifo(path, 0o600)
        if self._shared:
            os.chmod(path, 0o644)  # the sandbox's user reads; the folder above is its and ours alone
        # Held open for writing until the job is over, so what the sides have
        # not read yet stays in the pipe.
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self._keep.append(fd)
        os.write(fd, (salt & ((1 << 64) - 1)).to_bytes(8, sys.byteorder) * self.ranks)

    def _take(self, fd: int) -> bool:
        """Reads what one channel holds now; False when it holds nothing."""
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return False
        if not chunk:
            return False
        name = self._fds[fd]
        rank = int(name[4:])
        kept = self.lines if name.startswith("rank") else self.side_lines
        with self._lock:
            self.bytes += len(chunk)
            if self.kept > MAX_BYTES:
                self.dropped += len(chunk)
                return True
            buf = self._partial[name]
            buf += chunk
            while True:
                end = buf.find(b"\n")
                if end < 0:
                    break
                line = bytes(buf[:end])
                del buf[:end + 1]
                if len(line) > MAX_LINE_BYTES or self.kept > MAX_BYTES:
                    self.dropped += len(line) + 1
                else:
                    self.kept += len(line) + LINE_COST
                    kept.append((rank, line))
            if len(buf) > MAX_LINE_BYTES:  # a line that never ends
                self.dropped += len(buf)
                buf.clear()
        return True

    def _run(self) -> None:
        poller = select.poll()
        for fd in self._fds:
            poller.register(fd, select.POLLIN)
        poller.register(self._wake_read, select.POLLIN)
        while not self._stop.is_set():
            for fd, _ in poller.poll():
                if fd != self._wake_read:
                    while self._take(fd):
                        pass

    def lines_since(self, index: int) -> List[Tuple[int, bytes]]:
        """The rank channels' lines kept so far, from the index-th on."""
        with self._lock:
            return self.lines[index:]

    def close(self) -> List[Tuple[int, bytes]]:
        """Stops reading once what the job left in the pipes is read; the
        complete lines, each with the rank whose channel it came through."""
        self._stop.set()
        os.write(self._wake_write, b"x")
        self._thread.join(5)
        for fd in self._fds:
            while self._take(fd):
                pass
        for fd in list(self._fds) + self._keep + [self._wake_read, self._wake_write]:
            os.close(fd)
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)
        with self._lock:
            # A line the job's end cut off is no record: counted, not kept.
            self.torn = sum(1 for b in self._partial.values() if b)
            return list(self.lines)
