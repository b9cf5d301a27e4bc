"""Part 15's program: decentral_train, on the reference (allreduce data
parallelism beside gossip: consensus distance, accuracy, the bytes a step)
and on the stubs (it names the part).

  python3 -m pytest staff/tests/test_part15_decentral.py -q      (after `make build`)
"""
import re

from staff.tests.trainers import MLP_SIZES, trainer


def test_decentral_train_prints_consensus_accuracy_and_bytes(tmp_path):
    ranks = 4
    proc, _ = trainer("decentral_train", tmp_path, ranks)
    assert proc.returncode == 0, proc.stdout
    # Allreduce keeps one model (distance 0); gossip's ranks differ, a little, after one epoch.
    distances = [float(d) for d in re.findall(r"consensus distance ([0-9.e+-]+)", proc.stdout)]
    assert len(distances) == 2 and distances[0] == 0 and 0 < distances[1] < 1, proc.stdout
    assert proc.stdout.count("Test Acc:") == 2, proc.stdout
    dense = 2 * (ranks - 1) * sum(MLP_SIZES) * 8 // ranks  # the ring allreduce's, comm.h
    gossip = 2 * sum(MLP_SIZES) * 8                        # every parameter to each of two neighbours
    assert f"4 allreduce calls (one for each of the 4 parameters); rank 0 sent {dense} bytes" in proc.stdout
    assert f"8 sendrecv calls (with its neighbours, for each of the 4 parameters); rank 0 sent {gossip} bytes" \
        in proc.stdout, proc.stdout


def test_decentral_train_on_the_stubs_names_the_part(tmp_path):
    proc, _ = trainer("decentral_train", tmp_path, 2, impl="student")
    assert proc.returncode != 0 and "decentralized_sgd_step is not implemented" in proc.stdout \
        and "Part 15" in proc.stdout, proc.stdout
