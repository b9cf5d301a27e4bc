"""grader/grade: grades handins of the distributed-training kit.

  grader/grade HANDIN.tar [--gradescope results.json] [--prairielearn results.json] [--json report.json]
               [--platform NAME | --time-budget SECONDS] [--hidden-values FILE] [--show-hidden]
  grader/grade --batch DIR_OR_GLOB_OR_FILE --jobs N --csv gradebook.csv [--regrade [all]]
               [--canvas canvas.csv --roster canvas-export.csv] [--platform NAME | --time-budget SECONDS]
  grader/grade --rescore gradebook.csv [--canvas canvas.csv --roster canvas-export.csv]
                                            the course's points, parts and visibility, from the kept results
  grader/grade --errors gradebook.csv
  grader/grade --similar gradebook.csv      pairs of handins that share code (sim_c++); no grade changes

One handin: prints a table of parts and, as the last line of standard
output, the Autolab score line {"scores": {...}, "scoreboard": [total]}.
The exit status is 0 whenever grading finished, whatever the score.
Even when the grader itself fails, the Autolab line and the Gradescope
results are written, with status "grader error" and the cause.
Batch: grades the handins --batch names (a folder's *.tar, a glob, one file)
with N workers (grader/batches.py) into the gradebook, whose every other row
stays: it is written from every result kept beside it. Each result is kept
the moment it is graded, so a batch that is killed, even with kill -9,
resumes where it stopped: a rerun skips handins already graded with the same
content by the same kit, and grades a new or changed one (a late handin).
--regrade grades the named handins again; results of another kit are graded
again only with --regrade all, which the batch names with the time it would
take; the same --regrade command resumes a regrade that was stopped. Ctrl-C
stops cleanly and prints the command that grades the rest.
"""
import argparse
import os
import sys
import traceback
from typing import List

from grader import batches, gradebook, grades, grading, reports, rescore, similarity
from kit import parts as table
from kit.course import PLATFORMS
from kit.paths import build_dir


write_json = gradebook.write_json_atomically


def failed_grade(handin: str, e: BaseException) -> grades.Grade:
    g = grades.Grade(os.path.basename(handin), status="grader error")
    g.notes.append(f"the grader itself failed ({type(e).__name__}: {e}); this is not the handin's fault")
    g.traceback = traceback.format_exc()
    g.parts = grades.nothing_graded()
    return g


def one_handin(args) -> int:
    """Grades one handin; whatever happens, the Autolab line ends the output
    and the Gradescope results are written."""
    try:
        outputs = tuple(os.path.dirname(os.path.abspath(p))
                        for p in (args.json, args.gradescope, args.prairielearn, args.keep) if p)
        g = grading.grade_handin(args.handin, args.build, keep=args.keep, private=outputs,
                                 time_budget=args.time_budget, hidden_values=args.hidden_values,
                                 kit_stamp=args.kit_stamp)
    except Exception as e:  # noqa: BLE001 (a grader bug still gets a report)
        g = failed_grade(args.handin, e)
    try:
        if args.gradescope:
            write_json(args.gradescope, reports.gradescope_results(g, args.show_hidden))
        if args.prairielearn:
            write_json(args.prairielearn, reports.prairielearn_results(g, args.show_hidden))
        if args.json:
            write_json(args.json, reports.full_json(g))
        print(reports.human_report(g, args.show_hidden))
    except Exception as e:  # noqa: BLE001
        g = failed_grade(args.handin, e)
        if args.gradescope:
            write_json(args.gradescope, reports.gradescope_results(g))
        if args.prairielearn:
            write_json(args.prairielearn, reports.prairielearn_results(g))
        print(f"grade: grader error while writing the reports: {e}")
    print(reports.autolab_line(g), flush=True)  # Autolab reads the last line
    return 0


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="grader/grade", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("handin", nargs="?", help="the handin tarball")
    ap.add_argument("--gradescope", metavar="PATH", help="also write a Gradescope results.json")
    ap.add_argument("--prairielearn", metavar="PATH", help="also write a PrairieLearn results.json")
    ap.add_argument("--json", metavar="PATH", help="also write the full report as JSON")
    ap.add_argument("--time-budget", type=float, metavar="SECONDS",
                    help="the seconds the platform gives one grading (default: $KIT_TIME_BUDGET, else the "
                         "course's for --platform): the test jobs end in time for the reports, and cases left "
                         "unrun are named")
    ap.add_argument("--platform", choices=PLATFORMS,
                    help="the platform grading: its time budget is the course's (course.toml, [time_budget])")
    ap.add_argument("--kit-stamp", metavar="STAMP",
                    help="the stamp of the kit the platform's assignment was made from (a bundle's kit-stamp.txt): "
                         "a grader image of another kit is a grader error, not a grade")
    ap.add_argument("--hidden-values", metavar="FILE",
                    help="the judge's hidden values (and the salt) from this one file instead of the kit's own "
                         "(PrairieLearn: from serverFilesCourse, so the image holds none)")
    ap.add_argument("--batch", metavar="DIR_OR_GLOB", help="grade every handin of a directory or glob")
    ap.add_argument("--jobs", type=int, default=1, help="parallel workers in batch mode")
    ap.add_argument("--csv", default=os.path.join("out", "gradebook.csv"),
                    help="the gradebook of batch mode (default out/gradebook.csv, where every recipe keeps it)")
    ap.add_argument("--build", help="the kit's build directory (default: $KIT_BUILD or build/ in the kit)")
    ap.add_argument("--keep", metavar="DIR", help="keep the scratch directory's files here (debugging)")
    ap.add_argument("--show-hidden", action="store_true",
                    help="staff: show every failing case with its messages, whatever grader/policy.py says")
    ap.add_argument("--regrade", nargs="?", const=True, choices=["all"],
                    help="batch: grade again the handins --batch names (one student: --batch handins/bob.tar); "
                         "`--regrade all` grades again every handin of the gradebook, as a changed kit needs; the "
                         "same command resumes a regrade that was stopped")
    ap.add_argument("--canvas", metavar="CSV", help="batch: also write a Canvas gradebook import (needs --roster)")
    ap.add_argument("--roster", metavar="CSV", help="batch: Canvas's gradebook export, to map handins to students")
    ap.add_argument("--assignment", default="Distributed training",
                    help="batch: the Canvas column, as Canvas names it, e.g. 'Distributed training (12345)'")
    ap.add_argument("--errors", metavar="GRADEBOOK", help="list the grader errors of a batch's gradebook, and why")
    ap.add_argument("--rescore", metavar="GRADEBOOK",
                    help="score a batch's gradebook again under the course's points, parts and visibility, from the "
                         "results kept beside it, with its reports (and, with --canvas and --roster, Canvas's "
                         "import): no handin runs")
    ap.add_argument("--similar", metavar="GRADEBOOK",
                    help="compare every pair of a graded class's handins with sim_c++ (Debian's similarity-tester), "
                         "the stubs' own text left out: the pairs above --similar-threshold, with the functions and "
                         "lines they share, printed and written beside GRADEBOOK (NAME.similar.csv, "
                         "NAME.similar.html); no grade changes")
    ap.add_argument("--similar-threshold", type=float, default=similarity.THRESHOLD, metavar="PERCENT",
                    help=f"--similar: the share of a handin's own code found in another that lists the pair "
                         f"(default {similarity.THRESHOLD:g})")
    args = ap.parse_args(argv)
    if args.errors:
        return gradebook.list_errors(args.errors)
    if args.canvas and not args.roster:
        ap.error("--canvas needs --roster (Canvas's gradebook export)")
    if args.roster and not args.canvas:
        ap.error("--roster goes with --canvas FILE, the Canvas import to write")
    if args.similar:
        return similarity.similar(args.similar, args.similar_threshold, args.jobs)
    if args.rescore:
        return rescore.rescore(args.rescore, args.show_hidden, args.canvas, args.roster, args.assignment)
    if args.time_budget is None:
        args.time_budget = table.COURSE.budget(args.platform)
    if args.time_budget is not None and args.time_budget < 10:
        ap.error(f"--time-budget must give a grading at least 10 s, got {args.time_budget:g}")
    if args.hidden_values and not os.path.isfile(args.hidden_values):
        ap.error(f"--hidden-values {args.hidden_values}: no such file")
    args.build = build_dir(args.build)
    if not os.path.isfile(os.path.join(args.build, "impl_recipe.json")):
        print(f"grade: {args.build} holds no kit build; run `make build` first", file=sys.stderr)
        return 2
    if args.batch:
        return batches.run_batch(args)
    if not args.handin:
        ap.error("name a handin, or use --batch")
    if not os.path.isfile(args.handin):
        print(f"grade: {args.handin}: no such file", file=sys.stderr)
        return 2
    return one_handin(args)

