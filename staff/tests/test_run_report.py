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


def test_a_program_started_without_its_side_says_how_to_start_it_in_one_line():
    # A trainer by hand, and a program that needs a side (mpi_demo) the usual
    # MPI way (a bare mpirun of two ranks): one line from the program, from
    # one rank, and exit status 2. What Open MPI's mpirun adds after it is mpirun's own.
    trainer = os.path.join(build_dir(), "reference", "unified_train")
    demo = os.path.join(build_dir(), "mpi_demo")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for launch, program in (([], trainer), (["mpirun.openmpi", "--oversubscribe", "-n", "2"], demo)):
        proc = subprocess.run(launch + [program], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, timeout=60)
        mine = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith(program + ":")]
        assert proc.returncode == 2, (launch, proc.returncode, proc.stderr)
        assert len(mine) == 1 and "tools/kitrun -n 4 " + program in mine[0], (launch, proc.stdout + proc.stderr)
        assert "terminate called" not in proc.stderr


def test_a_trainer_started_the_usual_mpi_way_trains(tmp_path):
    # A trainer holds its side's work itself (framework/comm/side/comm_link_in_process.cpp):
    # a bare mpirun starts it as tools/kitrun does, and the two runs agree.
    program = os.path.join(build_dir(), "reference", "unified_train")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    args = ["--dp_size", "2", "--num_train_samples", "600", "--num_test_samples", "200"]
    reports = []
    for label, launch in (("bare", ["mpirun.openmpi", "--oversubscribe", "-n", "2"]), ("kitrun", [KITRUN, "-n", "2"])):
        report = tmp_path / f"{label}.json"
        proc = subprocess.run(launch + [program] + args + ["--report", str(report)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env, timeout=120)
        assert proc.returncode == 0, (label, proc.stdout[-3000:])
        reports.append(json.loads(report.read_text()))
    for key in ("final_loss", "test_accuracy", "ledger_calls"):
        assert reports[0][key] == reports[1][key], (key, reports[0][key], reports[1][key])
