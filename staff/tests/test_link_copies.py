"""The link between a program and its MPI side carries a large buffer by
the side's own copy (process_vm_readv/writev, framework/comm/comm_link.h),
or, where the host refuses that copy, through the socket: both paths give
the same training, bit for bit, and each is the one taken. The trainers
run under a side here (KIT_TRAINERS_SIDE=1, tools/kitrun); as they run by
default, with the side's work in their own process
(framework/comm/side/comm_link_in_process.cpp), they train the same again
and copy nothing across processes.

  python3 -m pytest staff/tests/test_link_copies.py -q      (after `make build`; needs strace)
"""
import json
import os
import re
import shutil
import subprocess

from kit.paths import KITRUN, build_dir

COPIES = ("process_vm_readv", "process_vm_writev")


def train(tmp_path, label: str, env: dict) -> tuple:
    """A short naive-TP, data-parallel run on 4 ranks, under strace: its
    report, and how many direct copies its processes made."""
    report, counts = tmp_path / f"{label}.json", tmp_path / f"{label}.strace"
    strace = shutil.which("strace")
    assert strace, "strace is missing (the CI installs it: .ci/run)"
    proc = subprocess.run([strace, "-f", "-qq", "-c", "-o", str(counts), "-e", "trace=" + ",".join(COPIES), KITRUN,
                           "-n", "4", os.path.join(build_dir(), "reference", "unified_train"), "--mp_size", "2",
                           "--dp_size", "2", "--num_train_samples", "2400", "--num_test_samples", "600",
                           "--report", str(report)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                          env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    calls = sum(int(m.group(1)) for m in re.finditer(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?process_vm_",
                                                        counts.read_text(), re.M))
    return json.loads(report.read_text()), calls


def test_direct_and_inline_copies_train_the_same_and_each_path_is_taken(tmp_path):
    # MPI's own single-copy transfers between ranks use the same calls: off.
    base = dict({k: v for k, v in os.environ.items() if k not in ("KIT_LINK_COPIES", "KIT_TRAINERS_SIDE")},
                KIT_SINGLE_COPY="none")
    direct, direct_calls = train(tmp_path, "direct", dict(base, KIT_TRAINERS_SIDE="1"))
    inline, inline_calls = train(tmp_path, "inline", dict(base, KIT_TRAINERS_SIDE="1", KIT_LINK_COPIES="inline"))
    in_process, in_process_calls = train(tmp_path, "in_process", base)
    # Every weight gradient and activation of FC1 is over the size the side
    # copies itself: a run of 40 iterations makes hundreds of such copies.
    assert direct_calls > 100, f"the side copied directly {direct_calls} times"
    assert inline_calls == 0, f"KIT_LINK_COPIES=inline, yet the side copied directly {inline_calls} times"
    assert in_process_calls == 0, f"a trainer without a side, yet {in_process_calls} copies across processes"
    for key in ("final_loss", "test_accuracy", "iterations", "ledger_calls"):
        assert direct[key] == inline[key], f"{key}: {direct[key]} by direct copies, {inline[key]} through the socket"
        assert direct[key] == in_process[key], f"{key}: {direct[key]} under a side, {in_process[key]} without"
