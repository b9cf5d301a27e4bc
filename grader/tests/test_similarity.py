"""Copied handins across a class (grader/grade --similar, grader/similarity.py):
a verbatim copy and a copy with its variables renamed top the list, above
the correct solutions the kit knows (the reference and its correct variants,
staff/mutants.py) and far above one written independently of them
(grader/tests/similarity/); the stubs' own text counts for nothing; no grade
changes; and a class of 300 is compared, every pair (its time printed: -s shows it).

  python3 -m pytest grader/tests/test_similarity.py -q      (needs sim_c++: apt-get install similarity-tester)
"""
import csv
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import time

import pytest

from conftest import GRADE, KIT
from grader import similarity
from kit import parts as table
from staff.mutants import MUTANTS

INDEPENDENT = os.path.join(KIT, "grader", "tests", "similarity")
CORRECT = [m for m in MUTANTS if m.name.startswith("correct:") and m.file in table.IMPL_FILES]


@pytest.fixture(autouse=True, scope="module")
def sim_is_installed():
    assert shutil.which(similarity.SIM), f"{similarity.SIM} is missing: {similarity.INSTALL}"


def source(folder, name):
    with open(os.path.join(KIT, folder, name)) as f:
        return f.read()


def renamed(text: str) -> str:
    """A copy dressed up: its own names for the variables, its own layout and comments."""
    for old, new in (("grad_w", "gw"), ("grad_b", "gb"), ("shard", "piece"), ("mp_comm", "model_comm"),
                     ("dp_comm", "data_comm"), ("total", "acc"), ("blocks", "parts_of_x"), ("width", "w")):
        text = re.sub(rf"\b{old}\b", new, text)
    return "// my own work\n" + text.replace("  ", "    ").replace("{\n", "{  // begins\n")


class Class:
    """A graded class as a batch leaves it: handins, and a result for each that names its file."""

    def __init__(self, top):
        self.inbox, self.out = top / "handins", top / "out"
        self.inbox.mkdir()
        (self.out / "gradebook.results").mkdir(parents=True)
        self.gradebook = self.out / "gradebook.csv"

    def add(self, name, files):
        path = self.inbox / f"{name}.tar"
        with tarfile.open(path, "w") as tar:
            for f, text in files.items():
                data = text.encode()
                info = tarfile.TarInfo(f"student/{f}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        result = {"handin": f"{name}.tar", "status": "graded", "path": str(path), "scores": {}, "total": 0}
        (self.out / "gradebook.results" / f"{name}.json").write_text(json.dumps(result))

    def similar(self, *extra):
        proc = subprocess.run([sys.executable, GRADE, "--similar", str(self.gradebook), *extra], cwd=KIT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout
        with open(self.out / "gradebook.similar.csv", newline="") as f:
            return proc.stdout, list(csv.DictReader(f))


def snapshot(folder):
    return {p: open(os.path.join(folder, p), "rb").read() for p in os.listdir(folder)}


def test_copies_top_the_list_above_correct_solutions_and_nothing_is_regraded(tmp_path):
    c = Class(tmp_path)
    reference = {f: source("reference", f) for f in table.IMPL_FILES}
    c.add("ann", reference)
    variants = {}
    for name, m in zip(("ben", "cat", "dan", "eve"), CORRECT):
        variants[name] = dict(reference, **{m.file: reference[m.file].replace(m.find, m.replace, 1)})
        assert variants[name] != reference, m.name
        c.add(name, variants[name])
    c.add("fay", variants["cat"])                                            # a verbatim copy of cat
    c.add("gus", {f: renamed(t) for f, t in variants["dan"].items()})       # dan's, renamed
    own = {f: source(INDEPENDENT, f) for f in os.listdir(INDEPENDENT) if f.endswith(".cpp")}
    c.add("kim", dict({f: source("student", f) for f in table.IMPL_FILES}, **own))  # written apart from the reference
    c.add("hal", {f: source("student", f) for f in table.IMPL_FILES})              # the stubs, handed in twice
    c.add("ivy", {f: source("student", f) for f in table.IMPL_FILES})
    (tmp_path / "out" / "gradebook.csv").write_text("handin,total\n")
    before = snapshot(c.out / "gradebook.results"), (c.out / "gradebook.csv").read_text()

    out, pairs = c.similar()
    top = [{p["handin_a"], p["handin_b"]} for p in pairs[:2]]
    assert sorted(top, key=sorted) == [{"cat.tar", "fay.tar"}, {"dan.tar", "gus.tar"}], out
    for p in pairs[:2]:
        assert (float(p["a_in_b"]), float(p["b_in_a"])) == (100, 100), p
        assert {"backward", "collect_weight_grad", "split_data"} <= set(p["functions"].split()), p
        assert "zero_dp_stage3.cpp:" in p["lines"] and "func_impl.cpp:" in p["lines"], p
    # The correct solutions alike below both copies: some of their code differs.
    assert all(min(float(p["a_in_b"]), float(p["b_in_a"])) < 100 for p in pairs[2:]), pairs[2:]
    listed = {h for p in pairs for h in (p["handin_a"], p["handin_b"])}
    assert {"ann.tar", "ben.tar", "eve.tar"} <= listed
    # Written independently: far below the threshold. The stubs: nothing of theirs counts.
    assert not listed & {"kim.tar", "hal.tar", "ivy.tar"}, pairs
    assert out.splitlines()[0].split()[1:3] in (["cat.tar", "fay.tar"], ["dan.tar", "gus.tar"]), out
    assert "10 handins compared, 45 pairs" in out and "no grade changed" in out
    page = (c.out / "gradebook.similar.html").read_text()
    assert "fay.tar" in page and "gus.tar" in page and "kim.tar" not in page
    assert (snapshot(c.out / "gradebook.results"), (c.out / "gradebook.csv").read_text()) == before

    # What the threshold lists: kim's share of the reference's code is small, not nothing.
    _, everything = c.similar("--similar-threshold", "1")
    kim = [p for p in everything if "kim.tar" in (p["handin_a"], p["handin_b"]) and
           "ann.tar" in (p["handin_a"], p["handin_b"])]
    assert kim and float(kim[0]["percent"]) < 25, kim


def test_the_stubs_own_text_is_left_out_and_runs_are_named_by_function():
    stubs = similarity.stub_runs()
    for f in table.IMPL_FILES:
        h = similarity.prepared("stub.tar", {f: source("student", f).encode()}, stubs)
        code = [line for line in h.text.splitlines() if line.strip() and not line.strip().startswith("//")]
        assert code == [], (f, code[:5])
    # A solution keeps its own lines, and each line knows its function.
    text = source("reference", "func_impl.cpp")
    h = similarity.prepared("ann.tar", {"func_impl.cpp": text.encode()}, stubs)
    at = text.splitlines().index("  mp_comm.allreduce(out, total, Op::Sum);")
    assert h.text.splitlines()[at] == "  mp_comm.allreduce(out, total, Op::Sum);"
    assert h.where[at] == ("func_impl.cpp", at + 1, "megatron_collect_forward_output")
    signature = next(i for i, line in enumerate(text.splitlines())
                     if line.startswith("Matrix naive_collect_backward_x"))
    assert h.text.splitlines()[signature] == ""  # the stubs' signature, even without their [[maybe_unused]]


def synthetic(rng: random.Random):
    """A handin of 300: each file the reference's, the independent one's or the
    stub, some variables renamed, a line of its own here and there."""
    files = {}
    for f in table.IMPL_FILES:
        choices = [source(d, f) for d in ("reference", INDEPENDENT, "student")
                   if os.path.exists(os.path.join(KIT, d, f))]
        lines = []
        for line in rng.choice(choices).splitlines():
            if rng.random() < 0.1:
                lines.append(f"  double extra_{rng.randint(0, 99999)} = {rng.random():.3f} * {rng.randint(1, 9)};")
            lines.append(line)
        text = "\n".join(lines) + "\n"
        for name in ("mp_comm", "dp_comm", "shard", "grad_w", "rows"):
            if rng.random() < 0.5:
                text = re.sub(rf"\b{name}\b", f"{name}_{rng.randint(0, 99)}", text)
        files[f] = text
    return files


@pytest.mark.long
def test_a_class_of_300_is_compared_pair_by_pair(tmp_path):
    # Its time is printed, not asserted: a figure for the README, never a
    # verdict on the host's speed.
    c = Class(tmp_path)
    rng = random.Random(300)
    for i in range(300):
        c.add(f"s{i:03d}", synthetic(rng))
    started = time.monotonic()
    out, pairs = c.similar("--jobs", "2")
    seconds = time.monotonic() - started
    print(f"--similar on 300 handins: {seconds:.1f} s")
    assert "300 handins compared, 44850 pairs" in out, out[-2000:]
    assert pairs and all(float(p["percent"]) >= similarity.THRESHOLD for p in pairs)
