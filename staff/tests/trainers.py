"""A short run of an extension part's trainer, for the staff tests of each
part's programs (staff/tests/test_KEY.py, test_extension_programs.py)."""
import json
import os
import subprocess

from kit.paths import KITRUN, build_dir

SHORT = ["--num_train_samples", "1200", "--num_test_samples", "200"]


def trainer(program, tmp_path, ranks, *flags, impl="reference"):
    """A short run of one of the extension parts' trainers: its output, and its report (None without one)."""
    report = tmp_path / "report.json"
    proc = subprocess.run([KITRUN, "-n", str(ranks), os.path.join(build_dir(), impl, program), *SHORT,
                           "--report", str(report), *flags],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    return proc, (json.loads(report.read_text()) if report.exists() else None)


# The MLP's parameter sizes (784-256-10): W1, b1, W2, b2.
MLP_SIZES = (784 * 256, 256, 256 * 10, 10)
