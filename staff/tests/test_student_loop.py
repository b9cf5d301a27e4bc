"""What a student sees in the loop edit -> make test-partN -> read: the static
checks' warning, one summary per run, and traces.

  python3 -m pytest staff/tests -q      (after `make build`)
"""
import os
import re
import shutil
import subprocess
import sys

from kit import parts as table
from kit.paths import KIT_DIR, REFERENCE_DIR, build_dir
from kit.static_checks import refusal_warning, static_findings
from staff.tests.broken import mutant_binary


def refused_copy(directory):
    """The reference's files in `directory`, func_impl.cpp with a line the
    grader refuses (it reads the environment)."""
    directory.mkdir(exist_ok=True)
    for name in table.IMPL_FILES:
        shutil.copy(os.path.join(REFERENCE_DIR, name), directory)
    path = directory / "func_impl.cpp"
    path.write_text("#include <cstdlib>\n" + path.read_text().replace(
        "namespace dtrain {", "namespace dtrain {\nstatic const char* home = std::getenv(\"HOME\");", 1))
    return directory


def test_a_file_the_grader_would_refuse_is_warned_about(tmp_path):
    refused_copy(tmp_path)
    # Its own cache: the kit's build is shared with the hostile gallery, which checks nothing else wrote there.
    cache = str(tmp_path / "cache.json")
    found = static_findings(str(tmp_path), table.find(["part7"]), build_dir(), cache)
    lines = refusal_warning(found)
    assert lines and lines[0].startswith("!! THE GRADER WOULD REFUSE student/func_impl.cpp")
    assert "part2, part3, part4, part5, part6, part7 would score 0" in lines[0]
    assert any("'getenv': reading or changing the environment is not allowed" in line for line in lines)
    clean = static_findings(REFERENCE_DIR, table.find(["part7"]), build_dir(), cache)
    assert refusal_warning(clean) == []


def test_a_crash_and_its_resumed_job_give_one_summary(tmp_path):
    binary = mutant_binary(tmp_path, "segfaults on one rank")
    proc = subprocess.run([sys.executable, "-m", "kit", "test", "part5", "--binary", binary], cwd=KIT_DIR,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    summaries = re.findall(r"^\d+ passed, \d+ failed", proc.stdout, re.M)
    assert summaries == ["5 passed, 1 failed"], proc.stdout
    assert "crashed with SIGSEGV" in proc.stdout and "the job ended here" in proc.stdout
    assert re.search(r"^part5: [\d.]+ / 20 points", proc.stdout, re.M)


def test_a_refused_handin_removes_the_older_handin_tar(tmp_path):
    source = refused_copy(tmp_path / "impl")
    output = tmp_path / "handin.tar"
    output.write_bytes(b"an older handin")
    proc = subprocess.run([sys.executable, "-m", "kit", "handin", "--source", str(source), "--output", str(output)],
                          cwd=KIT_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout
    assert "the grader would refuse func_impl.cpp" in proc.stdout and "was removed" in proc.stdout, proc.stdout
    assert not output.exists()
