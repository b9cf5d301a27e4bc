"""Part 11's chart (an extension part; `make mpi-demo CASE=ring`): times the
naive allreduce, the ring allreduce (yours, or the reference's with
--impl reference) and MPI's allreduce over buffer sizes from 64 bytes to
4 MiB, on several rank counts, then prints the times, the bus bandwidth and
each rank's bytes against the formulas, and writes them as CSV and a PNG.

  python3 -m kit ring [--impl student|reference] [--ranks 2 3 4 8] [--out DIR]

Bus bandwidth, as nccl-tests defines it for an allreduce: the buffer's bytes
over the time, times 2(n-1)/n, the share of the buffer each rank must send
and receive at the least; it can be compared across rank counts, and against
the link's speed.
"""
import argparse
import csv
import json
import os
import subprocess
from typing import Dict, List, Optional

from kit import facts, gnuplot
from kit import parts
from kit.paths import KITRUN, build_dir

ALGORITHMS = {"naive": "#cc3311", "ring": "#0077bb", "mpi": "#555555"}


# Part 11's byte formulas, in Python and, for the build's kit_facts.h, in C++
# (dtrain::facts::ring), side by side: staff/tests/test_facts.py checks that
# both give the same numbers.
def ring_allreduce_bounds(elements: int, n: int) -> Dict[str, int]:
    """What one rank of the ring allreduce sends: 2(n-1) blocks of
    floor(L/n) or ceil(L/n) values."""
    return {"low": 2 * (n - 1) * (elements // n) * facts.VALUE_BYTES,
            "high": 2 * (n - 1) * (-(-elements // n)) * facts.VALUE_BYTES}


def naive_allreduce_bytes(elements: int, n: int, rank: int) -> int:
    """What one rank of the naive allreduce sends: each rank its buffer to
    rank 0, and rank 0 the sum back to each other rank."""
    return (n - 1) * elements * facts.VALUE_BYTES if rank == 0 else elements * facts.VALUE_BYTES


CPP_TEXT = """\
// The ring allreduce: 2(n-1) blocks of floor(L/n) or ceil(L/n) values.
constexpr std::uint64_t ring_allreduce_low(long elements, int n) {
  return 2 * (static_cast<std::uint64_t>(n) - 1) * static_cast<std::uint64_t>(elements / n) * kValueBytes;
}
constexpr std::uint64_t ring_allreduce_high(long elements, int n) {
  return 2 * (static_cast<std::uint64_t>(n) - 1) * static_cast<std::uint64_t>((elements + n - 1) / n) * kValueBytes;
}
// The naive allreduce: each rank its buffer to rank 0, rank 0 the sum to each other rank.
constexpr std::uint64_t naive_allreduce_bytes(long elements, int n, int rank) {
  const std::uint64_t buffer = static_cast<std::uint64_t>(elements) * kValueBytes;
  return rank == 0 ? (static_cast<std::uint64_t>(n) - 1) * buffer : buffer;
}
"""


def formula_bytes(algorithm: str, n: int, elements: int, rank0: bool) -> Dict[str, int]:
    """What one rank sends, at least and at most (ring_collectives.h; comm.h and kit/facts.py for MPI's)."""
    if algorithm == "naive":
        exact = naive_allreduce_bytes(elements, n, 0 if rank0 else 1)
        return {"low": exact, "high": exact}
    if algorithm == "ring":  # 2(n-1) blocks of floor(L/n) or ceil(L/n) elements
        return ring_allreduce_bounds(elements, n)
    exact = facts.ring_bytes(elements, n, 2)  # the ledger counts a collective by comm.h's ring formula
    return {"low": exact, "high": exact}


def bus_bandwidth(row: Dict) -> float:
    """GB/s."""
    n = row["ranks"]
    return row["bytes"] / row["seconds"] * 2 * (n - 1) / n / 1e9


def run(build: str, impl: str, ranks: int, out: str) -> Optional[List[Dict]]:
    program = os.path.join(build, impl, "ring_timing")
    log = os.path.join(out, f"ring-n{ranks}.log")
    proc = subprocess.run([KITRUN, "-n", str(ranks), program], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, text=True)
    with open(log, "w") as f:
        f.write(proc.stdout)
    rows = []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    if proc.returncode != 0 or not rows:
        print(f"  {ranks} ranks: failed (exit status {proc.returncode}); see {log}")
        for line in proc.stdout.strip().splitlines()[-4:]:
            print(f"      {line}")
        return None
    return rows


def print_times(rows: List[Dict]) -> None:
    print(f"  {'ranks':>5} {'bytes':>9}   {'naive ms':>9} {'ring ms':>9} {'MPI ms':>9}   "
          f"{'busbw GB/s: naive':>17} {'ring':>6} {'MPI':>6}")
    by_key = {(r["ranks"], r["elements"], r["algorithm"]): r for r in rows}
    for n, elements in sorted({(r["ranks"], r["elements"]) for r in rows}):
        got = [by_key.get((n, elements, a)) for a in ALGORITHMS]
        if None in got:
            continue
        print(f"  {n:>5} {size_text(8 * elements):>9}   " + " ".join(f"{r['seconds'] * 1e3:>9.3f}" for r in got) +
              f"   {bus_bandwidth(got[0]):>17.3f} {bus_bandwidth(got[1]):>6.3f} {bus_bandwidth(got[2]):>6.3f}")


def size_text(b: float) -> str:
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if b >= scale:
            return f"{b / scale:g} {unit}"
    return f"{b:g} B"


def formula_text(f: Dict[str, int]) -> str:
    return str(f["low"]) if f["low"] == f["high"] else f"{f['low']}-{f['high']}"


def check_bytes(rows: List[Dict]) -> List[str]:
    """Prints the bytes per rank of the largest buffer of each rank count
    against the formulas; returns what does not match (every size is checked)."""
    problems = []
    for r in rows:
        for rank0, key in ((True, "sent_rank0"), (False, "sent_other_max")):
            f = formula_bytes(r["algorithm"], r["ranks"], r["elements"], rank0)
            if not f["low"] <= r[key] <= f["high"]:
                who = "rank 0" if rank0 else "the other ranks"
                problems.append(f"{r['algorithm']} on {r['ranks']} ranks, {r['elements']} elements: {who} sent "
                                f"{r[key]:.0f} bytes, the formula {f['low']}" +
                                (f" to {f['high']}" if f["high"] != f["low"] else ""))
    print("\n  bytes each rank sent in one call of the largest buffer, against the formulas:")
    print(f"  {'ranks':>5} {'algorithm':<9} {'rank 0':>12} {'formula':>17}   {'others':>12} {'formula':>17}")
    largest = {}
    for r in rows:
        largest[(r["ranks"], r["algorithm"])] = max(largest.get((r["ranks"], r["algorithm"]), 0), r["elements"])
    for r in sorted(rows, key=lambda r: (r["ranks"], list(ALGORITHMS).index(r["algorithm"]))):
        if r["elements"] != largest[(r["ranks"], r["algorithm"])]:
            continue
        f0, f1 = (formula_text(formula_bytes(r["algorithm"], r["ranks"], r["elements"], rank0))
                  for rank0 in (True, False))
        print(f"  {r['ranks']:>5} {r['algorithm']:<9} {r['sent_rank0']:>12.0f} {f0:>17}   "
              f"{r['sent_other_max']:>12.0f} {f1:>17}")
    print("  formulas (B: the buffer's bytes, n ranks): naive, rank 0 (n-1) B and every other rank B; "
          "ring, every rank 2(n-1)/n B; MPI's, as the kit counts a collective, 2(n-1)/n B")
    return problems


def chart(rows: List[Dict], png: str) -> Optional[str]:
    base = os.path.splitext(png)[0]
    counts = sorted({r["ranks"] for r in rows})
    series, plots_time, plots_bw = [], [], []
    for a, color in ALGORITHMS.items():
        for i, n in enumerate(counts):
            path = f"{base}.{a}{n}.dat"
            with open(path, "w") as f:
                for r in sorted((r for r in rows if r["algorithm"] == a and r["ranks"] == n), key=lambda r: r["bytes"]):
                    f.write(f"{r['bytes']} {r['seconds'] * 1e3} {bus_bandwidth(r)}\n")
            series.append(path)
            style = f'with linespoints lw 2 dt {i + 1} pt {i + 5} lc rgb "{color}" title "{a}, {n} ranks"'
            plots_time.append(f'"{path}" using 1:2 {style}')
            plots_bw.append(f'"{path}" using 1:3 {style}')
    script = [
        'set terminal pngcairo size 1400,1100 font ",11" noenhanced', f'set output "{png}"',
        'set multiplot layout 2,1 title "Allreduce of one buffer: the naive one through rank 0, the ring, and MPI\'s"',
        "set logscale x 2",
        "set xtics (" + ", ".join(f'"{size_text(b)}" {b}' for b in sorted({r["bytes"] for r in rows})) + ")",
        'set xlabel "buffer"', "set grid", "set key outside right top",
        "set logscale y", 'set ylabel "ms per call (log)"', 'set title "time: the slowest rank\'s, per call"',
        "plot " + ", ".join(plots_time),
        "unset logscale y", "set yrange [0:*]", 'set ylabel "GB/s"',
        'set title "bus bandwidth: bytes / time x 2(n-1)/n (nccl-tests\' definition)"',
        "plot " + ", ".join(plots_bw), "unset multiplot"]
    return gnuplot.draw("\n".join(script), series)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m kit ring", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impl", choices=["student", "reference"], default="student")
    ap.add_argument("--build", help="the CMake build directory (default: $KIT_BUILD or build/)")
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 3, 4, 8], help="the rank counts (2 to 8)")
    ap.add_argument("--out", help="where to write the chart and the logs (default BUILD/ring)")
    args = ap.parse_args(argv)
    if any(not 2 <= n <= 64 for n in args.ranks):
        print(f"kit ring: --ranks must be between 2 and 64, got {args.ranks}")
        return 2
    if "part11_ring" not in parts.CONFIGURATION.held:  # the course file says what the copy holds, not its folders
        print("kit ring: this copy does not hold Part 11 (course.toml, [copy] extension_parts)")
        return 2
    build = build_dir(args.build)
    out = args.out or os.path.join(build, "ring")
    os.makedirs(out, exist_ok=True)
    rows: List[Dict] = []
    for n in args.ranks:
        print(f"  timing on {n} ranks ...", flush=True)
        got = run(build, args.impl, n, out)
        if got is None:
            return 1
        rows += got
    print()
    print_times(rows)
    problems = check_bytes(rows)
    table = os.path.join(out, "ring.csv")
    with open(table, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) + ["bus_gb_per_s"])
        writer.writeheader()
        writer.writerows(dict(r, bus_gb_per_s=bus_bandwidth(r)) for r in rows)
    png = os.path.join(out, "ring.png")
    problem = chart(rows, png)
    print(f"\ntable: {table}\n" + (f"kit ring: {problem}" if problem else f"chart: {png}"))
    for p in problems:
        print(f"bytes differ from the formula: {p}")
    return 1 if problems or problem else 0
