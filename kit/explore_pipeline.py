"""The explorer's pipeline panel (Part 12, an extension part): `make explore`
runs pipeline_train under both schedules for M in 1, 2, 4, 8, 16 micro-batches
on K stages (4, or 2 on a machine of fewer than 4 cores, so that no stage
waits for a core), and sets the bubble and each stage's peak stash against
the formulas, in a table and a PNG.

  python3 -m kit explore          (the panel comes after the strategies, when Part 12 is built)

A run's bubble is the share of a step its busiest stage idles (it sets the
pace), measured from the ledger's forward and backward spans. The lecture's
(K-1)/(M+K-1) assumes stages of equal cost: pipeline_train also measures a
pipeline of equal stages, which is what the formula describes. This model's
stages are not equal (784x256 first, 256x10 last): its bubble is set against
the schedule played out with its stages' measured times.
"""
import os
from typing import Dict, List, Optional

from kit import gnuplot
from kit.facts import CLASSES, FEATURES, HIDDEN
from kit.explore import finish_panel, run_panel_program, series_files

STAGES = 4 if (os.cpu_count() or 1) >= 4 else 2
MICRO_BATCHES = (1, 2, 4, 8, 16)
SCHEDULES = ("gpipe", "1f1b")
CORES_NOTE = "" if STAGES == 4 else f" (not 4: this machine has {os.cpu_count()} cores)"


def run(build: str, impl: str, out: str, schedule: str, m: int, problems: List[str]) -> Optional[Dict]:
    cmd = ["-n", str(STAGES), os.path.join(build, impl, "pipeline_train"), "--schedule", schedule,
           "--micro_batches", str(m), "--num_train_samples", "1200", "--num_test_samples", "200"]
    return run_panel_program(cmd, os.path.join(out, f"pipeline-{schedule}-m{m}"), f"pipeline {schedule} M={m}",
                             "pipeline", problems)


def row_of(p: Dict) -> Dict:
    s = p["stash"][p["schedule"]]
    return {"schedule": p["schedule"], "micro_batches": p["micro_batches"], "stages": p["stages"],
            "bubble_measured": p["bubble_measured"], "bubble_played": p["bubble_played"],
            "bubble_equal_stages": p["bubble_equal_stages"], "bubble_formula": p["bubble_formula"],
            "stage0_stash_kib": s["bytes"][0] / 1024, "stash_micro_batches": s["micro_batches"],
            "stash_formula": s["formula_micro_batches"], "step_ms": p["step_seconds"] * 1e3}


def chart(rows: List[Dict], png: str) -> Optional[str]:
    def line(r: Dict) -> str:
        kib_per_stash = r["stage0_stash_kib"] / max(1, r["stash_micro_batches"][0])
        return (f"{r['micro_batches']} {r['bubble_measured']} {r['bubble_played']} {r['bubble_formula']} "
                f"{r['stage0_stash_kib']} {r['stash_formula'][0] * kib_per_stash} {r['bubble_equal_stages']}")

    paths = series_files(rows, png, "schedule", SCHEDULES, "micro_batches", line)
    g, f1 = paths["gpipe"], paths["1f1b"]
    script = f"""
set terminal pngcairo size 1400,1000 font ",11" noenhanced
set output "{png}"
set multiplot layout 2,1 title "Pipeline parallelism on K = {STAGES} stages{CORES_NOTE}: M micro-batches a step"
set logscale x 2
set xtics (1, 2, 4, 8, 16)
set xrange [0.8:20]
set xlabel "M (micro-batches)"
set grid
set key outside right top
set yrange [0:1]
set ylabel "share of a step the busiest stage idles"
set title "the bubble, from the ledger's spans: of equal stages against (K-1)/(M+K-1), and of this MLP's unequal ones against their schedule played out"
plot "{g}" using 1:4 with lines lw 3 lc rgb "#999999" title "(K-1)/(M+K-1)", \\
     "{g}" using 1:7 with linespoints lw 2 pt 7 lc rgb "#cc3311" title "GPipe, equal stages", \\
     "{f1}" using 1:7 with linespoints lw 2 pt 5 lc rgb "#0077bb" title "1F1B, equal stages", \\
     "{g}" using 1:2 with linespoints lw 1 dt 2 pt 6 lc rgb "#cc3311" title "GPipe, this MLP", \\
     "{f1}" using 1:2 with linespoints lw 1 dt 2 pt 4 lc rgb "#0077bb" title "1F1B, this MLP", \\
     "{g}" using 1:3 with lines lw 1 dt 3 lc rgb "#cc3311" title "GPipe, this MLP played out", \\
     "{f1}" using 1:3 with lines lw 1 dt 3 lc rgb "#0077bb" title "1F1B, this MLP played out"
set yrange [0:*]
set ylabel "KiB"
set title "stage 0's peak stash: GPipe keeps all M micro-batches (the whole batch), 1F1B at most K of them (points: measured; lines: the formula)"
plot "{g}" using 1:6 with lines lw 2 lc rgb "#cc3311" title "GPipe, M stashes", \\
     "{g}" using 1:5 with points pt 7 ps 1.5 lc rgb "#cc3311" title "GPipe, measured", \\
     "{f1}" using 1:6 with lines lw 2 lc rgb "#0077bb" title "1F1B, min(K, M) stashes", \\
     "{f1}" using 1:5 with points pt 5 ps 1.5 lc rgb "#0077bb" title "1F1B, measured"
unset multiplot
"""
    return gnuplot.draw(script, paths.values())


def panel(build: str, impl: str, out: str) -> List[str]:
    """Runs, prints and draws the panel; returns the problems found (a
    failed run, a stash count off its formula)."""
    print(f"\nPipeline parallelism (Part 12): K = {STAGES} stages, both schedules, M in "
          f"{', '.join(map(str, MICRO_BATCHES))}", flush=True)
    problems: List[str] = []
    reports = [run(build, impl, out, schedule, m, problems) for schedule in SCHEDULES for m in MICRO_BATCHES]
    rows = [row_of(p) for p in reports if p is not None]
    print(f"  {'schedule':<8} {'M':>3} {'step ms':>8}   {'bubble: equal stages':>20} {'formula':>8}   "
          f"{'this MLP':>8} {'played':>7}   {'stash: stage 0 KiB':>18}  micro-batches per stage (formula)")
    for r in rows:
        held = " ".join(f"{c:.0f}({f})" for c, f in zip(r["stash_micro_batches"], r["stash_formula"]))
        print(f"  {r['schedule']:<8} {r['micro_batches']:>3} {r['step_ms']:>8.2f}   {r['bubble_equal_stages']:>20.3f} "
              f"{r['bubble_formula']:>8.3f}   {r['bubble_measured']:>8.3f} {r['bubble_played']:>7.3f}   "
              f"{r['stage0_stash_kib']:>18.1f}  {held}")
        if [round(c) for c in r["stash_micro_batches"]] != r["stash_formula"]:
            problems.append(f"pipeline {r['schedule']} M={r['micro_batches']}: stashes {r['stash_micro_batches']}, "
                            f"the formula {r['stash_formula']}")
    print("  bubble: the share of a step the busiest stage idles; equal stages: pipeline_train's pipeline of equal "
          f"layers, as the formula assumes; this MLP: {FEATURES}-{HIDDEN}-...-{CLASSES}, with its schedule played out "
          "from its stages' measured times and free messages")
    finish_panel(rows, out, "pipeline", chart)
    return problems
