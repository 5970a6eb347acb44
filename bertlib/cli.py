"""The `bertlib` command line: one subcommand per module, imported only when used.

Each module named here defines `add_arguments(parser)` and `run(args) -> int`.
"""

import argparse
import importlib
import sys

COMMANDS = {
    "data": ("bertlib.data", "build pretraining instances (NSP pairs) and write TFRecords"),
    "pretrain": ("bertlib.training", "pretrain with masked LM (+ NSP) on a corpus or TFRecords"),
    "finetune": ("bertlib.finetune", "fine-tune on a GLUE task, SQuAD or SWAG"),
    "exercises": ("bertlib.exercises", "build or check exercises/ from solutions/"),
    "grade": ("bertlib.grading", "grade submitted exercise notebooks into a CSV"),
}


def build_parser():
    parser = argparse.ArgumentParser(prog="bertlib", description="BERT, built to learn from.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        subparser = subparsers.add_parser(name, help=help_text, description=help_text)
        subparser.set_defaults(module_name=module_name)
        _module(module_name).add_arguments(subparser)
    return parser


def _module(module_name):
    return importlib.import_module(module_name)


def main(argv=None):
    args = build_parser().parse_args(argv)
    return _module(args.module_name).run(args)


if __name__ == "__main__":
    sys.exit(main())
