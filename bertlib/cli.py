"""The `bertlib` command line: one subcommand per module, imported only when that command runs.

Each module named here defines `add_arguments(parser)` and `run(args) -> int`; only the chosen command's module is
imported. A missing optional package is an error that names the pip command adding it (`bertlib._lazy`).
"""

import argparse
import importlib
import sys

from bertlib._lazy import MissingExtraError

COMMANDS = {
    "data": ("bertlib.text.data", "build pretraining instances (NSP pairs) and write TFRecords"),
    "pretrain": ("bertlib.train.pretraining", "pretrain with masked LM (+ NSP) on a corpus or TFRecords"),
    "finetune": ("bertlib.finetune.finetuning", "fine-tune on a GLUE task, SQuAD or SWAG"),
    "download": ("bertlib.io.downloads", "fetch datasets by name (glue, sst2, squad_v2, ...) into the cache"),
}


def build_parser(command=None):
    """The parser; with `command`, only that subcommand gets its (module-defined) arguments."""
    parser = argparse.ArgumentParser(prog="bertlib", description="BERT, built to learn from.")
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
    try:
        return importlib.import_module(args.module_name).run(args)
    except MissingExtraError as error:  # an optional package: its message names the pip command
        print(f"bertlib {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
