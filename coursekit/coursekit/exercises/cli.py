"""The `coursekit exercises` command line: `build`, `check` and `test [--chapter NN] [--verbose]`."""

from pathlib import Path

from coursekit import course, files
from coursekit.exercises.convention import ExerciseFormatError
from coursekit.exercises.generate import build, differences
from coursekit.exercises.mutation import run_mutation_tests


def add_arguments(parser):
    parser.add_argument("action", choices=("build", "check", "test"),
                        help="build: write exercises/ from solutions/; check: fail when exercises/ is out of date; "
                             "test: run every check on its reference answer (must pass) and on each wrong answer "
                             "of solutions/wrong_answers/ (must fail)")
    parser.add_argument("--verbose", action="store_true", help="test: say how each wrong answer was rejected")
    parser.add_argument("--chapter", action="append", default=None, metavar="NN",
                        help="test only: the solution notebook(s) of chapter NN (3 or 03; repeatable); a chapter "
                             "with no exercise stops the command")
    parser.add_argument("--solutions", type=Path, default=None,
                        help="folder of solution notebooks (default: solutions/ of the repository)")
    parser.add_argument("--exercises", type=Path, default=None,
                        help="folder of generated exercise notebooks (default: exercises/ of the repository)")


def run(args):
    with course.using(args.solutions):  # a solutions folder given from outside its course: that course's settings
        return _run(args)


def _run(args):
    if args.chapter and args.action != "test":
        print(f"error: --chapter selects the chapters of `exercises test` only; `exercises {args.action}` always "
              f"covers every solution notebook (run it without --chapter)")
        return 2
    try:
        if args.solutions is None or args.exercises is None:
            here = course.current()
            args.solutions = args.solutions or here.solutions
            args.exercises = args.exercises or here.exercises
        if args.action == "test":
            report = run_mutation_tests(args.solutions, args.chapter)
            for line in report.survivors + report.hidden_only + report.problems:
                print(line)
            if args.verbose:
                for exercise_id, description, name, message in report.rejections:
                    print(f"rejected {exercise_id} {description!r}: {name}: {message}")
            print(report.summary())
            return 0 if report.ok else 1
        if args.action == "build":
            changed = build(args.solutions, args.exercises)
            files.print_changed(changed)
            print(f"exercises in {args.exercises} are up to date ({len(changed)} files changed)")
            return 0
        problems = differences(args.solutions, args.exercises)
    except (ExerciseFormatError, FileNotFoundError) as error:
        print(f"error: {error}")
        return 2
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} exercise notebooks are out of date: run `coursekit exercises build` "
              f"(edit solutions/, never exercises/)")
        return 1
    print(f"exercises in {args.exercises} match the {len(list(args.solutions.glob('*.ipynb')))} notebooks of "
          f"{args.solutions}")
    return 0
