"""The `coursekit` command line: one subcommand per module, imported only when that command runs.

Each module named here defines `add_arguments(parser)` and `run(args) -> int`.
"""

import argparse
import importlib
import sys

COMMANDS = {
    "exercises": ("coursekit.exercises", "build or check the exercise notebooks from the solution notebooks"),
    "grade": ("coursekit.grading", "grade submitted exercise notebooks in a sandbox into a CSV"),
    "gradescope-autograder": ("coursekit.grading.autograder", "write a Gradescope autograder that runs the "
                              "sandboxed grader on each submission"),
    "i18n": ("coursekit.i18n", "build or check a translated edition from its catalogues"),
}


def build_parser(command=None):
    """The parser; with `command`, only that subcommand gets its (module-defined) arguments."""
    parser = argparse.ArgumentParser(prog="coursekit", description="Exercises, grading and translations for a "
                                     "notebook course.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        subparser = subparsers.add_parser(name, help=help_text, description=help_text)
        subparser.set_defaults(module_name=module_name)
        if name == command:
            importlib.import_module(module_name).add_arguments(subparser)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    args = build_parser(command if command in COMMANDS else None).parse_args(argv)
    return importlib.import_module(args.module_name).run(args)


if __name__ == "__main__":
    sys.exit(main())
