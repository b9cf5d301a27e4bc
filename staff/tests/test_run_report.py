"""The trainers' --report JSON (programs/run_report.h) stays valid JSON
whatever the data path holds.

  python3 -m pytest staff/tests -q      (after `make build`)
"""
import json
import os
import subprocess

from kit.paths import KITRUN, build_dir

FASHION = "/usr/share/datasets/fashion-mnist"
STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def test_a_data_path_with_quotes_and_backslashes_gives_valid_json(tmp_path):
    data = tmp_path / 'we"ird\\dir'
    data.mkdir()
    for name in os.listdir(FASHION):  # the Debian package's files, plain or gzipped
        if name.startswith(STEMS):
            os.symlink(os.path.join(FASHION, name), data / name)
    report = tmp_path / "report.json"
    proc = subprocess.run([KITRUN, "-n", "1", os.path.join(build_dir(), "reference", "unified_train"),
                           "--data", str(data), "--num_train_samples", "120", "--num_test_samples", "60",
                           "--report", str(report)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    got = json.loads(report.read_text())
    assert got["data_dir"] == str(data)
    assert got["train_rows"] == 120 and got["test_rows"] == 60 and got["strategy"] == "dp"
