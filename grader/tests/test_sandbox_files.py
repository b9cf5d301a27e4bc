"""Root's slot locks, its reads of files a sandbox wrote, and the sandbox's
mounts (tools/sandbox_mounts), without a grading around them.

  KIT_SANDBOX_UID=63000 python3 -m pytest grader/tests/test_sandbox_files.py   (the lock cases need root)
"""
import os
import subprocess
import threading
import time

import pytest

from conftest import BUILD
from grader import sandbox, slots
from kit.safe_read import UnsafeSandboxFile, open_sandbox_file

BASE = slots.uid_base()
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="root's lock folder needs root")


def test_a_regular_file_is_read_whole(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"{}\n" * 10)
    assert open_sandbox_file(str(path), 100) == b"{}\n" * 10


def test_a_fifo_a_symlink_a_device_and_a_big_file_are_refused_at_once(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to("/etc/hostname")
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    started = time.monotonic()
    for path in (fifo, link, "/dev/zero", big):
        with pytest.raises(UnsafeSandboxFile):
            open_sandbox_file(str(path), 100)
    assert time.monotonic() - started < 5  # a FIFO nobody writes never blocks the reader


@needs_root
def test_a_uid_is_held_by_one_grader_whatever_its_slot():
    # Two graders whose KIT_SANDBOX_UID ranges overlap name the same user by
    # different slots: the lock is the user's, so only one gets it.
    first = slots.lock_uid(BASE + 5)
    assert first is not None
    try:
        assert slots.lock_uid(BASE + 5) is None
        other = sandbox.Sandbox.__new__(sandbox.Sandbox)
        other.base, other.cancel, other.slot_lock, other.root = BASE + 5, None, None, True
        slot = slots.claim_slot(other, 0)
        try:
            assert other.uid != BASE + 5 and other.uid == BASE + 5 + slot
        finally:
            other.slot_lock.close()
    finally:
        first.close()
    again = slots.lock_uid(BASE + 5)
    assert again is not None
    again.close()


@needs_root
def test_the_lock_folder_is_roots_own_and_holds_only_regular_files():
    # A uid past every grader's range: a grader beside this test (pytest -n 2) may hold BASE's.
    spare = BASE + 4 * slots.SLOTS
    slots.lock_uid(spare).close()
    st = os.lstat(slots.LOCK_DIR)
    assert st.st_uid == 0 and st.st_mode & 0o777 == 0o700 and not os.path.islink(slots.LOCK_DIR)
    fifo = os.path.join(slots.LOCK_DIR, f"uid-{spare + 1}.lock")
    if os.path.lexists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo)  # as if planted: refused, not waited on
    try:
        started = time.monotonic()
        with pytest.raises(RuntimeError):
            slots.lock_uid(spare + 1)
        assert time.monotonic() - started < 5
    finally:
        os.unlink(fifo)


@needs_root
def test_waiting_for_a_slot_ends_when_the_batch_is_stopped():
    held = [h for h in (slots.lock_uid(BASE + s) for s in range(slots.SLOTS)) if h is not None]
    try:
        waiting = sandbox.Sandbox.__new__(sandbox.Sandbox)
        waiting.base, waiting.slot_lock, waiting.root = BASE, None, True
        waiting.cancel = threading.Event()
        threading.Timer(1.0, waiting.cancel.set).start()
        started = time.monotonic()
        if len(held) == slots.SLOTS:
            with pytest.raises(RuntimeError, match="cancelled"):
                slots.claim_slot(waiting, 0)
            assert time.monotonic() - started < 10
    finally:
        for h in held:
            h.close()


MOUNTER = os.path.join(BUILD, "sandbox_mounts")


@needs_root
@pytest.mark.parametrize("steps, says", [
    (["tmpfs", "ro,size=64k,nosuid,nodev", "/no/such/place"], "tmpfs on /no/such/place: No such file or directory"),
    (["bind", "/no/such/place", "/mnt"], "bind /no/such/place to /mnt: No such file or directory"),
    (["remount-ro", "nosuid", "/no/such/place"], "remount-ro /no/such/place"),
    (["tmpfs", "ro"], "tmpfs needs more arguments"),
    (["chmod", "/mnt"], "unknown step 'chmod'"),
])
def test_a_mount_step_that_fails_runs_nothing(tmp_path, steps, says):
    # The first failed step ends it, naming the step, before the command runs.
    made = tmp_path / "ran"
    proc = subprocess.run(["unshare", "--mount", "--", MOUNTER, "tmpfs", "size=64k,nosuid,nodev", "/mnt", *steps,
                           "--", "touch", str(made)], capture_output=True, text=True, timeout=30)
    assert proc.returncode in (2, 71) and says in proc.stderr, proc.stderr
    assert not made.exists()


@needs_root
def test_the_mounts_are_made_with_their_flags_then_the_command_runs(tmp_path):
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "seen").write_text("here")
    stage, cover = tmp_path / "stage", tmp_path / "cover"
    stage.mkdir()
    cover.mkdir()
    (cover / "hidden").write_text("secret")
    inside = str(stage / "a" / "b")
    steps = ["tmpfs", "ro,size=64k,mode=755,nosuid,nodev", "/mnt",
             "tmpfs", "size=64k,mode=755,nosuid,nodev", str(stage), "mkdir", inside, "bind", str(kept), inside,
             "remount-ro", "size=64k,mode=755,nosuid,nodev", str(stage), "move", str(stage), str(cover)]
    show = f"grep -E ' (/mnt|{cover}|{cover}/a/b) ' /proc/self/mountinfo; ls {cover}; cat {cover}/a/b/seen"
    proc = subprocess.run(["unshare", "--mount", "--", MOUNTER, *steps, "--", "sh", "-c", show],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    mnt = next(line for line in lines if " /mnt " in line)
    top = next(line for line in lines if f" {cover} " in line)
    assert "ro,nosuid,nodev" in mnt and "tmpfs" in mnt and "size=64k" in mnt, mnt
    assert "ro,nosuid,nodev" in top and "tmpfs" in top, top  # read-only, its other flags kept
    assert lines[-2:] == ["a", "here"]  # the cover hides what was there; the kept folder shows through
    assert (cover / "hidden").read_text() == "secret"  # the host's folder is never written
