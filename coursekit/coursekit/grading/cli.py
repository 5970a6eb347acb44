"""`coursekit grade`: the command line of the grader."""

from pathlib import Path

from coursekit import course
from coursekit.grading import formats
from coursekit.grading.grader import GradingInputError, grade
from coursekit.grading.plan import find_notebooks
from coursekit.grading.report import safe_text
from coursekit.grading.sandbox import Limits


def add_arguments(parser):
    parser.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION",
                        help="a submitted .ipynb, or a folder of them (searched recursively)")
    parser.add_argument("--out", type=Path, default=None,
                        help="file to write (default grades.csv, results.json or gradebook.csv, by --format); with "
                             "the CSV, the Markdown summary goes beside it (.md), the feedback files into "
                             "<name>_feedback/")
    parser.add_argument("--format", choices=formats.FORMATS, default="csv",
                        help="csv (default): one row per exercise; gradescope: Gradescope's results.json for one "
                             "submission; canvas: a Canvas gradebook import, one column per assignment, with the "
                             "CSV's rows beside it as <name>_grades.csv (docs/grading.md)")
    parser.add_argument("--roster", type=Path, default=None,
                        help="with --format canvas: the CSV of Canvas's Grades > Export, which names the students")
    parser.add_argument("--hidden-visibility", choices=formats.GRADESCOPE_VISIBILITIES, default="after_published",
                        help="with --format gradescope: when a learner sees an exercise whose check has hidden tests "
                             "(default after_published)")
    parser.add_argument("--solutions", type=Path, default=None,
                        help="folder of solution notebooks, the list of exercises, points and checks "
                             "(default: solutions/ of the repository)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds one notebook may run, kernel start included (default 600)")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks graded at the same time (default 1)")
    parser.add_argument("--memory", type=float, default=Limits.memory_bytes / 2**30,
                        help=f"GB of memory one notebook may use (default {Limits.memory_bytes / 2**30:g})")
    parser.add_argument("--no-fast", dest="fast", action="store_false",
                        help="do not set the course's fast_variable to 1 (run the notebooks at full size)")
    parser.add_argument("--unsafe-no-sandbox", dest="unsafe", action="store_true",
                        help="run the notebooks without the bubblewrap sandbox, as you, with your files and network: "
                             "only for notebooks you trust (docs/grading.md)")


def run(args):
    if args.timeout <= 0 or args.jobs < 1 or args.memory <= 0:
        print(f"error: --timeout and --memory must be > 0 and --jobs >= 1, got {args.timeout}, {args.memory} and "
              f"{args.jobs}")
        return 2
    missing = [str(path) for path in args.submissions if not Path(path).exists() and not Path(path).is_symlink()]
    if missing:
        print(f"error: no such submission: {', '.join(missing)} (give notebooks or folders of notebooks)")
        return 2
    if args.roster is not None and args.format != "canvas":
        print(f"error: --roster is for --format canvas (got --format {args.format})")
        return 2
    if not find_notebooks(args.submissions):
        print(f"error: no .ipynb notebook in {', '.join(map(str, args.submissions))}")
        return 2
    out = args.out or Path({"csv": "grades.csv", "gradescope": "results.json", "canvas": "gradebook.csv"}[args.format])
    try:
        report = formats.ReportFormat(args.format, args.roster and formats.read_roster(args.roster),
                                      args.hidden_visibility)
        grades = grade(args.submissions, out, solutions_dir=args.solutions, timeout=args.timeout,
                       fast=args.fast, jobs=args.jobs, unsafe=args.unsafe,
                       limits=Limits(memory_bytes=int(args.memory * 2**30)), report=report)
    except (GradingInputError, formats.FormatError, course.CourseNotFound) as error:
        print(f"error: {error}")
        return 2
    score, maximum = sum(grade.score for grade in grades), sum(grade.max_score for grade in grades)
    where = grades.written[0].parent if grades.written else out.parent
    print(f"graded {len({grade.notebook for grade in grades})} notebooks: {score} of {maximum} points; "
          f"wrote {len(grades.written)} reports in {where}" + (f" ({grades.fallback})" if grades.fallback else ""))
    if args.unsafe:
        print("warning: graded WITHOUT a sandbox (--unsafe-no-sandbox): the notebooks ran as you")
    for other in grades.overlaps:
        print(f"warning: {'another grading run' if args.unsafe else 'a run with --unsafe-no-sandbox'} was active "
              f"beside this one ({safe_text(other, keep='')}): every row says so; grade again")
    for fault in grades.grader_faults[:5]:
        # learner text (a message, a file name) reaches the terminal with every control character escaped
        print(f"grader problem in {safe_text(fault.notebook, keep='')}: {safe_text(fault.outcome.one_line(), keep='')}")
    return 1 if grades.grader_faults or grades.fallback or grades.overlaps else 0
