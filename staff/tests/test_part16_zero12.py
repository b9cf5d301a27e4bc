"""Part 16's program: zero_stages, on the reference (what each ZeRO stage
keeps and sends, against the explorer's formulas) and on the stubs (it names
the part).

  python3 -m pytest staff/tests/test_part16_zero12.py -q      (after `make build`)
"""
from kit import explore_part16_zero12 as panel
from staff.tests.trainers import trainer


def test_zero_stages_keeps_and_sends_what_the_formulas_say(tmp_path):
    proc, report = trainer("zero_stages", tmp_path, 3)
    assert proc.returncode == 0, proc.stdout
    want = panel.formulas(3)
    for stage in report["zero_stages"]["stages"]:
        f = want[f"stage {stage['stage']}"]
        assert (stage["kept_doubles"], stage["bytes_per_step"]) == (f["kept"], f["sent"]), (stage, f)
        assert stage["m"] == stage["v"] == panel.shard(panel.N, 3)


def test_zero_stages_on_the_stubs_names_the_part(tmp_path):
    proc, _ = trainer("zero_stages", tmp_path, 2, impl="student")
    assert proc.returncode != 0 and "Zero1Adam::step is not implemented" in proc.stdout \
        and "Part 16" in proc.stdout, proc.stdout
