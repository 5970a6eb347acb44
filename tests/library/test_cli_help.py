"""`bertlib pretrain --help` and `bertlib finetune --help` show each option's real default, with the paper's value
beside it where the help gives one: the defaults read back from the help text are the settings' own."""

import argparse
import dataclasses
import re

import pytest

from bertlib import cli
from bertlib.finetune.finetuning import FinetuneSettings
from bertlib.train.pretraining import PretrainSettings

SETTINGS = {"pretrain": PretrainSettings, "finetune": FinetuneSettings}


def help_lines(command):
    """{option: its help text} as `bertlib COMMAND --help` prints it (one line per option: no wrapping)."""
    parser = cli.build_parser(command)
    subparser = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction)) \
        .choices[command]
    subparser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100_000, max_help_position=200)
    lines = {}
    for line in subparser.format_help().splitlines():
        match = re.match(r"\s+(--[\w-]+)(?: [^ ]+)*?(?:  +(.*))?$", line)
        if match:
            lines[match.group(1)] = match.group(2) or ""
    return lines


def shown_default(text):
    match = re.search(r"\(default: ([^;)]*)[;)]", text)
    return match and match.group(1)


@pytest.mark.parametrize("command", SETTINGS)
def test_help_shows_the_settings_defaults(command):
    lines = help_lines(command)
    shown = 0
    for field in dataclasses.fields(SETTINGS[command]):
        meta = field.metadata
        if not meta["cli"]:
            continue
        flag = meta["flag"] or "--" + field.name.replace("_", "-")
        default = field.default
        if default in (None, dataclasses.MISSING) or isinstance(default, bool) or meta["required"]:
            assert shown_default(lines[flag]) is None or default is None, (flag, lines[flag])
            continue
        text = shown_default(lines[flag])
        assert text is not None, f"{command} {flag}: no default in its help: {lines[flag]!r}"
        if isinstance(default, tuple):
            assert tuple(text.split(" ")) == default, (flag, text)
        else:
            assert (meta["type"] or type(default))(text) == default, (flag, text, default)
        shown += 1
    assert shown >= (15 if command == "pretrain" else 10)


def test_the_papers_value_stands_beside_the_default():
    pretrain, finetune = help_lines("pretrain"), help_lines("finetune")
    assert pretrain["--steps"].endswith("(default: 600; the paper: 1,000,000)")
    assert pretrain["--learning-rate"].endswith("(default: 0.001; the paper: 1e-4)")
    assert pretrain["--seq-length"].endswith("(default: 128; the paper: 128 for 90% of the steps)")
    assert finetune["--epochs"].endswith("(default: 3; A.3: 2, 3 or 4)")
    assert finetune["--learning-rate"].endswith("(default: 2e-05; A.3: 5e-5, 3e-5 or 2e-5)")
