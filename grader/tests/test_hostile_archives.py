"""Hostile archives cost the grader no more than an honest handin: each is
read in a limited child process (kit/handin_reader.py), within 5 s of CPU
and a small memory, and is "not a readable handin" for itself alone; a batch that
holds them grades the others and resumes.

  python3 -m pytest grader/tests/test_hostile_archives.py -q      (after `make build`)

The archives are made here, small and fast: a stream of compressed zeros
written once and repeated (bzip2 and gzip read concatenated streams as one).
"""
import bz2
import csv
import gzip
import io
import json
import lzma
import os
import struct
import subprocess
import sys
import tarfile
import time
import zlib

import pytest

from conftest import BUILD, GRADE, KIT, grade, handin, marked, on_this_machine
from kit.handin_reader import MAX_MEMBERS, read_handin, wait_reading

SECONDS = 5.0           # the CPU reading one of them may cost, whatever it expands to (CPU, not the
                        # clock's: a busy host stretches the one and not the other)
MEMORY_BYTES = 200 << 20  # the reader's peak, and the grader's own: far below one job's


def tar_bytes(members) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def zeros_bomb(path: str) -> str:
    """A bzip2 tar of ~20 KB holding a 16 GiB member of zeros."""
    info = tarfile.TarInfo("student/func_impl.cpp")
    info.size = 16 << 30
    zeros = bz2.compress(bytes(64 << 20), 9)  # 64 MiB of zeros in ~80 bytes
    with open(path, "wb") as f:
        f.write(bz2.compress(info.tobuf(format=tarfile.GNU_FORMAT), 9))
        f.write(zeros * 256)
    return path


def million_members(path: str) -> str:
    """A bzip2 tar of ~16 KB holding 1,000,000 empty members."""
    block = bz2.compress(b"".join(tarfile.TarInfo("empty.txt").tobuf() for _ in range(10000)), 9)
    with open(path, "wb") as f:
        f.write(block * 100)
    return path


def honest_files():
    return [(f"student/{name}", b"// nothing here\n") for name in ("func_impl.cpp",)] + [("feedback.txt", b"ok\n")]


def corrupt_xz(path: str) -> str:
    """A valid .tar.xz with one byte of its stream flipped."""
    data = bytearray(lzma.compress(tar_bytes(honest_files() + [("student/pad.bin", os.urandom(50000))])))
    data[len(data) // 2] ^= 0xFF
    with open(path, "wb") as f:
        f.write(bytes(data))
    return path


def cut_gz(path: str) -> str:
    """A valid .tar.gz cut short in the middle of its stream."""
    data = gzip.compress(tar_bytes(honest_files() + [("student/pad.bin", os.urandom(50000))]))
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
    return path


def huge_dictionary_xz(path: str) -> str:
    """A small honest .tar.xz whose block header asks for a 3 GiB dictionary:
    only a memory limit stops the decompressor from taking it."""
    data = bytearray(lzma.compress(tar_bytes(honest_files())))
    size = (data[12] + 1) * 4  # the block header, after the 12 bytes of the stream header
    header = data[12:12 + size]
    at = 2  # after the size and flags bytes: lzma.compress writes no optional sizes
    assert header[1] & 0xC0 == 0 and header[at:at + 2] == b"\x21\x01", header.hex()
    header[at + 2] = 39  # LZMA2's dictionary size code: 3 GiB
    struct.pack_into("<I", header, size - 4, zlib.crc32(bytes(header[:size - 4])))
    data[12:12 + size] = header
    with open(path, "wb") as f:
        f.write(bytes(data))
    return path


def garbage(path: str) -> str:
    with open(path, "wb") as f:
        f.write(os.urandom(4096))
    return path


HOSTILE = {"zeros_bomb.tar": zeros_bomb, "million_members.tar": million_members, "corrupt_xz.tar": corrupt_xz,
           "cut_gz.tar": cut_gz, "garbage.tar": garbage, "huge_dictionary_xz.tar": huge_dictionary_xz}


def measured_read(path: str):
    """read_handin in a fresh Python: (what it read, its CPU seconds and the
    reader's, the peak memory of that process and of its reader)."""
    code = ("import json, resource, sys\n"
            "from kit.handin_reader import read_handin\n"
            "def cpu(): return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage,"
            " (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))\n"
            "t = cpu(); r = read_handin(sys.argv[1]); s = cpu() - t\n"
            "peak = [resource.getrusage(w).ru_maxrss * 1024 for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]\n"
            "print(json.dumps({'readable': r.readable, 'why': r.why, 'rejected': r.rejected, 'files': sorted(r.files),"
            " 'seconds': s, 'peak': peak}))\n")
    proc = subprocess.run([sys.executable, "-c", code, path], stdout=subprocess.PIPE, text=True, cwd=KIT, timeout=60)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_archive_is_read_within_bounds(tmp_path, name):
    path = HOSTILE[name](str(tmp_path / name))
    assert os.path.getsize(path) < 64 << 10, "the test's archive should be small"
    r = measured_read(path)
    assert r["seconds"] <= on_this_machine(SECONDS), r
    assert max(r["peak"]) <= MEMORY_BYTES, r
    if name == "million_members.tar":  # its first members are looked at, the rest ignored
        assert r["readable"] and r["rejected"] == [f"more than {MAX_MEMBERS} members: the rest are ignored"], r
    else:
        assert not r["readable"] and r["why"], r


def test_the_reasons_are_plain(tmp_path):
    reasons = {name: read_handin(make(str(tmp_path / name))).why for name, make in HOSTILE.items()}
    assert reasons["zeros_bomb.tar"].startswith("it expands to over")
    assert reasons["corrupt_xz.tar"] == "its xz stream is corrupt or cut short"
    assert reasons["cut_gz.tar"] == "its gzip stream is corrupt or cut short"
    assert reasons["garbage.tar"] == "it is not a tar archive"
    assert reasons["huge_dictionary_xz.tar"] == "reading it takes more memory than a handin may"
    assert not any("Error" in why or "(" in why for why in reasons.values()), reasons


def test_an_honest_compressed_handin_still_reads(tmp_path):
    members = [(f"student/{n}", b"// mine\n") for n in ("func_impl.cpp", "zero_dp_stage3.cpp")] + \
              [("feedback.txt", b"ok\n")]
    path = tmp_path / "h.tar.xz"
    path.write_bytes(lzma.compress(tar_bytes(members)))
    r = read_handin(str(path))
    assert r.readable and sorted(r.files) == ["feedback.txt", "func_impl.cpp", "zero_dp_stage3.cpp"], r
    assert r.files["func_impl.cpp"] == b"// mine\n"
    assert read_handin(str(path)).key == r.key  # the same content, the same key


@pytest.mark.parametrize("name", ["corrupt_xz.tar", "zeros_bomb.tar"])
def test_grading_one_says_not_a_readable_handin_in_one_sentence(tmp_path, name):
    path = HOSTILE[name](str(tmp_path / name))
    results = tmp_path / "pl.json"
    g = grade(tmp_path, path, "--prairielearn", str(results))
    assert g.report["status"] == "not a readable handin", g.stdout
    assert g.report["steps"]["extract"] <= on_this_machine(SECONDS), g.report["steps"]
    assert g.report["seconds"] <= on_this_machine(SECONDS), g.report["steps"]
    (note,) = g.report["notes"]
    assert "`make handin`" in note and note.count(". ") == 0 and note.endswith(".") and "\n" not in note, note
    assert "ReadError" not in g.stdout and "method" not in g.stdout
    pl = json.loads(results.read_text())
    assert pl == {"gradable": False, "format_errors": [note]}


def test_garbage_gets_one_sentence_naming_make_handin(tmp_path):
    g = grade(tmp_path, garbage(str(tmp_path / "garbage.tar")))
    note = g.report["notes"][0]
    assert note == ("garbage.tar is not a readable tar archive (it is not a tar archive): upload the handin.tar "
                    "that `make handin` writes in your copy of the kit."), note
    assert g.stdout.count("make handin") == 1


@pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("KIT_REQUIRE_SANDBOX"), reason="needs root")
def test_a_batch_with_hostile_handins_grades_the_others_and_resumes(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    handin(inbox, name="ann.tar")
    for name, make in HOSTILE.items():
        make(str(inbox / name))
    gradebook = tmp_path / "out" / "gradebook.csv"
    cmd = [sys.executable, GRADE, "--build", BUILD, "--batch", str(inbox), "--jobs", "2", "--csv", str(gradebook)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
                          env=marked(tmp_path))
    assert proc.returncode == 0, proc.stdout
    rows = {r["handin"]: r for r in csv.DictReader(gradebook.open())}
    assert rows["ann.tar"]["total"] == "150", proc.stdout
    for name in ("zeros_bomb.tar", "corrupt_xz.tar", "cut_gz.tar", "garbage.tar", "huge_dictionary_xz.tar"):
        assert rows[name]["status"] == "not a readable handin", (name, proc.stdout)
    assert rows["million_members.tar"]["status"] == "graded"  # read, and its 200 members hold no file
    started = time.monotonic()
    again = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                           env=marked(tmp_path))
    assert again.returncode == 0 and "7 handin(s) already graded" in again.stdout, again.stdout
    assert time.monotonic() - started <= 2 * SECONDS, again.stdout  # the keys of all seven, bounded


def stopped_child(seconds_stopped: float) -> subprocess.Popen:
    """A child that hardly runs: stopped at once, as a paused host stops
    every process, and continued after `seconds_stopped` (never if < 0)."""
    proc = subprocess.Popen(["sh", "-c", "kill -STOP $$; echo read"], stdout=subprocess.PIPE)
    if seconds_stopped >= 0:
        subprocess.Popen(["sh", "-c", f"sleep {seconds_stopped}; kill -CONT {proc.pid}"])
    return proc


def test_a_reader_the_host_paused_past_the_wall_limit_still_answers():
    assert wait_reading(stopped_child(1.5), wall=0.5, grace=10) == b"read\n"


def test_a_reader_paused_past_its_grace_is_given_up():
    proc = stopped_child(-1)
    start = time.monotonic()
    assert wait_reading(proc, wall=0.5, grace=1) is None
    assert 1.4 < time.monotonic() - start < 5
    proc.kill()
    proc.communicate()
