"""The explorer's ZeRO panel (Part 16, an extension part): `make explore`
runs zero_stages (your Zero1Adam and Zero2Adam training the MLP as one
flat vector of N doubles) and zero_dp_train (stage 3, Parts 8-9) on 2 and
4 ranks, and sets what a rank keeps between steps and sends in a step
beside the ZeRO paper's formulas for this model, with data parallelism
(formulas only) above them, in a table and a PNG.

  python3 -m kit explore          (the panel comes after the strategies, when Part 16 is built)

The paper counts mixed precision (2 + 2 + 12 bytes a parameter); here every
value is a double, so a rank keeps, in doubles: data parallelism 4N
(parameters, gradient, m, v); stage 1 2N + 2S (the moments sharded, S =
ceil(N/P)); stage 2 N + 3S (the gradient too); stage 3 4S per layer's
shards (the parameters too). Sent per step, by comm.h's ring formulas:
stage 1 an allreduce of N and an allgather of S P; stage 2 a reduce-scatter
and an allgather of S P; stage 3 each layer's weight gathered twice and its
gradient reduce-scattered, its bias gathered once and reduce-scattered.
"""
import json
import os
from typing import Dict, List, Optional

from kit import gnuplot
from kit.explore import finish_panel, run_panel_program
from kit.facts import CLASSES, FEATURES, HIDDEN, VALUE_BYTES, ring_bytes

RANKS = (2, 4)
SHORT = ["--num_train_samples", "1200", "--num_test_samples", "200"]
LAYERS = ((FEATURES, HIDDEN), (HIDDEN, CLASSES))
N = sum(i * o + o for i, o in LAYERS)


def shard(n: int, p: int) -> int:
    return -(-n // p)


def formulas(p: int) -> Dict[str, Dict[str, int]]:
    """Each stage's doubles kept per rank and bytes sent per step, by the formulas."""
    s = shard(N, p)
    stage3_kept = 4 * sum(shard(i * o, p) + shard(o, p) for i, o in LAYERS)
    stage3_sent = sum(3 * ring_bytes(shard(i * o, p) * p, p, 1) + 2 * ring_bytes(shard(o, p) * p, p, 1)
                      for i, o in LAYERS)
    return {"data parallel": {"kept": 4 * N, "sent": ring_bytes(N, p, 2)},
            "stage 1": {"kept": 2 * N + 2 * s, "sent": ring_bytes(N, p, 2) + ring_bytes(s * p, p, 1)},
            "stage 2": {"kept": N + 3 * s, "sent": 2 * ring_bytes(s * p, p, 1)},
            "stage 3": {"kept": stage3_kept, "sent": stage3_sent}}


def measured(build: str, impl: str, out: str, p: int, problems: List[str]) -> Dict[str, Optional[Dict]]:
    """What the runs on p ranks measured, by stage (None: not measured)."""
    got: Dict[str, Optional[Dict]] = {"data parallel": None, "stage 1": None, "stage 2": None, "stage 3": None}
    stages = run_panel_program(["-n", str(p), os.path.join(build, impl, "zero_stages")] + SHORT,
                               os.path.join(out, f"zero-stages-p{p}"), f"zero_stages on {p} ranks", "zero_stages",
                               problems)
    for s in (stages or {}).get("stages", []):
        got[f"stage {s['stage']}"] = {"kept": s["kept_doubles"], "sent": s["bytes_per_step"],
                                      "accuracy": s["test_accuracy"]}
    stem = os.path.join(out, f"zero-stage3-p{p}")
    run_panel_program(["-n", str(p), os.path.join(build, impl, "zero_dp_train"), "--dp_size", str(p)] + SHORT, stem,
                      f"zero_dp_train on {p} ranks", "memory", problems)
    report = _report(stem)
    if report is not None:
        memory = report["memory"]
        got["stage 3"] = {"kept": round((memory["parameters"] + memory["gradients"] + memory["optimizer"]) / VALUE_BYTES),
                          "sent": round(report["dp_bytes_per_iteration"]),
                          "accuracy": report["test_accuracy"]}
    return got


def _report(stem: str) -> Optional[Dict]:
    try:
        with open(stem + ".json") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def panel(build: str, impl: str, out: str) -> List[str]:
    """Runs, prints and draws the panel; returns the problems found (a
    failed run, a figure off its formula)."""
    print(f"\nZeRO stages (Part 16, and stage 3 of Parts 8-9): the MLP's N = {N} parameters in doubles, "
          f"on {' and '.join(map(str, RANKS))} ranks", flush=True)
    problems: List[str] = []
    rows = []
    print(f"  {'P':>2}  {'':<14} {'kept per rank':>14} {'formula':>10}   {'sent per step':>14} {'formula':>10}   "
          f"{'test acc':>8}", flush=True)
    for p in RANKS:
        want, got = formulas(p), measured(build, impl, out, p, problems)
        for stage, f in want.items():
            g = got[stage]
            rows.append({"ranks": p, "stage": stage, "kept_doubles": g["kept"] if g else "",
                         "kept_formula": f["kept"], "sent_bytes": g["sent"] if g else "", "sent_formula": f["sent"]})
            shown = (f"{g['kept']:>14} {f['kept']:>10}   {g['sent']:>14} {f['sent']:>10}   {g['accuracy']:>8.4f}" if g
                     else f"{'':>14} {f['kept']:>10}   {'':>14} {f['sent']:>10}")
            print(f"  {p:>2}  {stage:<14} {shown}")
            if g and (g["kept"] != f["kept"] or g["sent"] != f["sent"]):
                problems.append(f"{stage} on {p} ranks: keeps {g['kept']} doubles and sends {g['sent']} bytes, the "
                                f"formulas {f['kept']} and {f['sent']}")
    print("  kept: doubles a rank keeps between steps (parameters, gradient, m, v); sent: bytes rank 0 sends in a "
          "step; data parallelism by its formulas alone")
    finish_panel(rows, out, "zero_stages", chart)
    return problems


def chart(rows: List[Dict], png: str) -> Optional[str]:
    """Kept and sent per stage, measured, one cluster per rank count."""
    data = os.path.splitext(png)[0] + ".dat"
    with open(data, "w") as f:
        for r in rows:
            kept = r["kept_doubles"] if r["kept_doubles"] != "" else r["kept_formula"]
            sent = r["sent_bytes"] if r["sent_bytes"] != "" else r["sent_formula"]
            f.write(f"\"{r['stage']}, P={r['ranks']}\" {kept * VALUE_BYTES / 1048576:.4f} {sent / 1048576:.4f}\n")
    return gnuplot.draw(f"""
set terminal pngcairo size 900,480
set output '{png}'
set title "ZeRO stages on the MLP (N = {N} doubles): what a rank keeps and sends"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "MiB"
set yrange [0:*]
set xtics rotate by -30
set key top right
plot '{data}' using 2:xtic(1) title 'kept per rank', '' using 3 title 'sent per step'
""", [data])
