"""grader/grade: grades handins of the distributed-training kit.

  grader/grade HANDIN.tar [--gradescope results.json] [--json report.json]
  grader/grade --batch DIR_OR_GLOB --jobs N --csv gradebook.csv

One handin: prints a table of parts and, as the last line of standard
output, the Autolab score line {"scores": {...}, "scoreboard": [total]}.
The exit status is 0 whenever grading finished, whatever the score.
Batch: grades every *.tar with N workers, writes one CSV row per handin and a
report per handin beside the CSV; one bad handin never stops the batch.
"""
import argparse
import csv
import glob
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import List

from grader import grading
from kit import parts as table
from kit.paths import build_dir
from kit.report import fmt


def write_json(path, data):
    with open(path, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def batch(args) -> int:
    pattern = args.batch
    handins = sorted(glob.glob(os.path.join(pattern, "*.tar")) if os.path.isdir(pattern) else glob.glob(pattern))
    if not handins:
        print(f"grade: no handins match {pattern}", file=sys.stderr)
        return 2
    out_dir = os.path.dirname(os.path.abspath(args.csv))
    os.makedirs(out_dir, exist_ok=True)
    keys = [p.key for p in table.PARTS]

    def one(path):  # each worker's grading claims a sandbox slot of its own (grader/sandbox.py)
        try:
            g = grading.grade_handin(path, args.build)
        except Exception as e:  # a grader bug on one handin must not stop the batch
            g = grading.Grade(os.path.basename(path), status=f"grader error: {e}")
        stem = os.path.splitext(os.path.basename(path))[0]
        with open(os.path.join(out_dir, stem + ".report.txt"), "w") as f:
            f.write(grading.human_report(g) + "\n" + grading.autolab_line(g) + "\n")
        print(f"  {g.handin}: {fmt(g.total)} / {table.TOTAL_POINTS} ({g.status}, {g.seconds:.1f} s)",
              flush=True)
        return g

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        grades = list(pool.map(one, handins))
    with open(args.csv, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["handin"] + keys + ["total", "status"])
        for g in grades:
            scores = g.scores()
            writer.writerow([g.handin] + [fmt(scores[k]) for k in keys] + [fmt(g.total), g.status])
    print(f"grade: {len(grades)} handins graded; gradebook {args.csv}, reports beside it")
    return 0


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="grader/grade", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("handin", nargs="?", help="the handin tarball")
    ap.add_argument("--gradescope", metavar="PATH", help="also write a Gradescope results.json")
    ap.add_argument("--json", metavar="PATH", help="also write the full report as JSON")
    ap.add_argument("--batch", metavar="DIR_OR_GLOB", help="grade every handin of a directory or glob")
    ap.add_argument("--jobs", type=int, default=1, help="parallel workers in batch mode")
    ap.add_argument("--csv", default="gradebook.csv", help="the gradebook of batch mode")
    ap.add_argument("--build", help="the kit's build directory (default: $KIT_BUILD or build/ in the kit)")
    ap.add_argument("--keep", metavar="DIR", help="keep the scratch directory's files here (debugging)")
    args = ap.parse_args(argv)
    args.build = build_dir(args.build)
    if not os.path.isfile(os.path.join(args.build, "impl_recipe.json")):
        print(f"grade: {args.build} holds no kit build; run `make build` first", file=sys.stderr)
        return 2
    if args.batch:
        return batch(args)
    if not args.handin:
        ap.error("name a handin, or use --batch")
    if not os.path.isfile(args.handin):
        print(f"grade: {args.handin}: no such file", file=sys.stderr)
        return 2
    g = grading.grade_handin(args.handin, args.build, keep=args.keep)
    if args.gradescope:
        write_json(args.gradescope, grading.gradescope_results(g))
    if args.json:
        write_json(args.json, grading.full_json(g))
    print(grading.human_report(g))
    print(grading.autolab_line(g), flush=True)  # Autolab reads the last line
    return 0

