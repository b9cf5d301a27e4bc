"""Part 14's program: compress_train, on the reference (dense, top-k with
error feedback, top-k alone; the bytes a step by comm.h's formulas) and on
the stubs (it names the part).

  python3 -m pytest staff/tests/test_part14_compress.py -q      (after `make build`)
"""
from staff.tests.trainers import MLP_SIZES, trainer

# The entries top-k keeps of each parameter at --keep 0.01.
KEPT = sum(max(1, int(0.01 * n)) for n in MLP_SIZES)


def test_compress_train_sends_what_the_formulas_say(tmp_path):
    proc, _ = trainer("compress_train", tmp_path, 2)
    assert proc.returncode == 0, proc.stdout
    for way in ("== dense", "== top-k with error feedback", "== top-k alone"):
        assert way in proc.stdout, proc.stdout
    assert proc.stdout.count("Test Acc") == 3, proc.stdout
    ranks = 2
    dense = 2 * (ranks - 1) * sum(MLP_SIZES) * 8 // ranks  # the ring allreduce's, comm.h
    sparse = 2 * (ranks - 1) * KEPT * 8                    # two allgathers of K each, comm.h
    assert f"rank 0 sent {dense} bytes in 4 allreduce calls" in proc.stdout, proc.stdout
    assert proc.stdout.count(f"rank 0 sent {sparse} bytes in 8 allgather calls") == 2, proc.stdout


def test_compress_train_on_the_stubs_names_the_part(tmp_path):
    proc, _ = trainer("compress_train", tmp_path, 2, impl="student")
    assert proc.returncode != 0 and "compress_with_feedback is not implemented" in proc.stdout \
        and "Part 14" in proc.stdout, proc.stdout
