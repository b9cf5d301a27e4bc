"""Helpers of the staff tests: the reference with one edit, built against
the kit's build, and a short traced training.

  (imported by the tests in staff/tests; nothing to run)
"""
import os
import shutil
import subprocess

from kit import parts as table
from kit.build import build
from kit.paths import KITRUN, REFERENCE_DIR, build_dir
from staff.mutants import MUTANTS


def broken_reference(tmp_path, file: str, find: str, replace: str) -> str:
    """The reference with `find` replaced in `file`, built as
    tmp_path/custom/kit_tests (its sources in tmp_path/impl), even where the
    link check would refuse the edit: the tests show what `make test` says
    of such a file."""
    impl = tmp_path / "impl"
    impl.mkdir()
    for name in table.built_files():  # the extension parts' files too: the build links them
        shutil.copy(os.path.join(REFERENCE_DIR, name), impl)
    source = impl / file
    text = source.read_text()
    assert find in text, f"the reference's {file} no longer holds {find!r}"
    # Unique text: the object cache (kit/object_cache.py) would otherwise hand out an
    # object compiled from another test's copy, whose line table names a file
    # that is gone, and messages could not quote the student's line.
    source.write_text(text.replace(find, replace, 1) + f"// built in {tmp_path}\n")
    binary = str(tmp_path / "custom" / "kit_tests")
    report = build(str(impl), binary, build_dir(), enforce=False)
    assert report["linked"], report
    return binary


def mutant_binary(tmp_path, name: str) -> str:
    """The known-bug mutant of staff/mutants.py whose name is or contains `name`, built."""
    mutant = next(m for m in MUTANTS if m.name == name) if any(m.name == name for m in MUTANTS) else \
        next(m for m in MUTANTS if name in m.name)
    return broken_reference(tmp_path, mutant.file, mutant.find, mutant.replace)


def traced_training(path, train_rows: int = 1200, test_rows: int = 200) -> subprocess.CompletedProcess:
    """The reference's unified_train, mp 2 x dp 2, with --trace PATH."""
    return subprocess.run([KITRUN, "-n", "4", os.path.join(build_dir(), "reference", "unified_train"),
                           "--mp_size", "2", "--dp_size", "2", "--num_train_samples", str(train_rows),
                           "--num_test_samples", str(test_rows), "--trace", str(path)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
