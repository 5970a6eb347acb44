"""Settings objects: a run's settings written once, as a dataclass, in the way `BertConfig` holds a model's.

Each field is declared with `setting(default, help, ...)`. From that one declaration come

- the command-line options (`add_arguments(parser, PretrainSettings)`: `--batch-size` from `batch_size`, with
  its default, type and help),
- the record a run keeps (`record(settings)`: the JSON a checkpoint or `metrics.json` stores),
- the settings a resumed run must keep (`resume_fields`: fields declared with `resume=True`), and what a resume
  with other total steps would change (`check_resumed_steps`).

The dataclass checks its values in `__post_init__` and raises a ValueError naming the value and the rule, so
a bad setting is refused before any work starts, from Python and from the command line alike.

Example:
>>> @dataclasses.dataclass(frozen=True)
... class Settings:
...     steps: int = setting(600, "total optimizer steps")
...     vocab: str | None = setting(None, "vocab.txt", resume=True)
>>> parser = argparse.ArgumentParser(); add_arguments(parser, Settings)
>>> from_arguments(Settings, parser.parse_args(["--steps", "10"]))
Settings(steps=10, vocab=None)
"""

import dataclasses
import math
import re
from pathlib import Path


def setting(default=dataclasses.MISSING, help="", *, type=None, flag=None, resume=False, cli=True,  # noqa: A002
            required=False, **argparse_options):
    """A settings field: `dataclasses.field` with what `add_arguments` and `resume_fields` read.

    Args:
        default: the default value; leave it out for a setting that has none (a required option).
        help: str, the option's help text.
        type: callable that parses the option's text; defaults to the type of `default` (give it when the
            default is None).
        flag: the option's name when it is not `--field-name` (e.g. "--no-nsp" for `next_sentence=True`).
        resume: True when a resumed run must keep this setting, or the name of the property it is compared
            through (several fields that a resume sees as one value, such as the sequence lengths).
        cli: False for a setting with no command-line option.
        required: True for an option the command line must give although Python has a default (None).
        **argparse_options: `choices`, `nargs`, `const`, `metavar`, as `argparse` takes them.
    """
    metadata = {"help": help, "type": type, "flag": flag, "resume": resume, "cli": cli, "required": required,
                "argparse": argparse_options}
    return dataclasses.field(default=default, metadata=metadata)


def same_setting(settings_class, name, default=dataclasses.MISSING, note=None):
    """The setting `name` of `settings_class` (help, type, flag, choices, ...) for another settings class that
    takes the same option: one declaration, read by both. `default` replaces its default when given, and
    `note` (str) is added to its help (what that other default means)."""
    field = next(field for field in dataclasses.fields(settings_class) if field.name == name)
    metadata = dict(field.metadata)
    if note:
        metadata["help"] = f"{metadata['help']}; {note}" if metadata["help"] else note
    return dataclasses.field(default=field.default if default is dataclasses.MISSING else default,
                             metadata=metadata)


def add_arguments(parser, settings_class):
    """One option per field of `settings_class` (but those declared `cli=False`)."""
    for field in dataclasses.fields(settings_class):
        meta = field.metadata
        if not meta.get("cli", True):
            continue
        option = meta["flag"] or "--" + field.name.replace("_", "-")
        options = {"dest": field.name, "help": _help_with_default(meta["help"], field.default) or None}
        if isinstance(field.default, bool):  # a switch: its flag turns the default around
            options["action"] = "store_false" if field.default else "store_true"
        else:
            parse = meta["type"] or (type(field.default) if field.default not in (None, dataclasses.MISSING)
                                      else str)
            options.update(type=parse, **meta["argparse"])
            if field.default is dataclasses.MISSING or meta["required"]:
                options["required"] = True
            else:
                options["default"] = list(field.default) if isinstance(field.default, tuple) else field.default
        parser.add_argument(option, **options)
    return parser


# A help text's closing reference value: "(the paper: 1,000,000)", "(A.3: 2, 3 or 4)", "(A.4.6: 0.8)".
_REFERENCE_VALUE = re.compile(r" \((the paper|A\.[\d.]+|§[\d.]+):? (.+)\)$")


def _help_with_default(help_text, default):
    """`help_text` with the option's default, beside the paper's value where the help ends with one:
    "total optimizer steps (default: 600; the paper: 1,000,000)". Switches, required options and None show none."""
    if default in (None, dataclasses.MISSING) or isinstance(default, bool):
        return help_text
    shown = " ".join(map(str, default)) if isinstance(default, (tuple, list)) else str(default)
    shown = shown.replace("%", "%%")  # argparse formats help texts with %
    reference = _REFERENCE_VALUE.search(help_text)
    if reference:
        return f"{help_text[:reference.start()]} (default: {shown}; {reference.group(1)}: {reference.group(2)})"
    return f"{help_text} (default: {shown})" if help_text else f"default: {shown}"


def from_arguments(settings_class, args):
    """The settings object of parsed command-line `args` (its checks run as for any other)."""
    return settings_class(**{field.name: getattr(args, field.name) for field in dataclasses.fields(settings_class)
                             if field.metadata.get("cli", True)})


def record(settings):
    """The settings as JSON-ready values: what a checkpoint or `metrics.json` stores."""
    return {field.name: _plain(getattr(settings, field.name)) for field in dataclasses.fields(settings)}


def _plain(value):
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Path):
        return str(value)
    return getattr(value, "name", type(value).__name__)  # a ready strategy or placement: what it is called


def resume_fields(settings):
    """`{name: value}` of what a resumed run must keep: each `resume=True` field, and each property that
    `resume="name"` fields are compared through."""
    values = {}
    for field in dataclasses.fields(settings):
        resume = field.metadata.get("resume")
        if resume is True:
            values[field.name] = _plain(getattr(settings, field.name))
        elif resume:
            values[resume] = _plain(getattr(settings, resume))
    return values


# Checks shared by the settings classes: each raises a ValueError naming the field, the value and the rule.

def check_positive_int(owner, **values):
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{owner}.{name} must be a positive integer, got {value!r}.")


def check_optional_positive_int(owner, **values):
    check_positive_int(owner, **{name: value for name, value in values.items() if value is not None})


def check_number(owner, name, value, low=-math.inf, high=math.inf, rule=None, low_open=False, high_open=False,
                 kind="number"):
    """`value` must be a real number (not a bool, not NaN) in the interval; `rule` says why, for the learner."""
    article = "an" if kind[0] in "aeiou" else "a"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{owner}.{name} must be {article} {kind}, got {value!r}.")
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high:
        if high == math.inf:
            wanted = f"{'> ' if low_open else '>= '}{low}"
        else:
            wanted = f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{owner}.{name} must be {article} {kind} {wanted}, got {value!r}"
                         + (f": {rule}" if rule else "") + ".")


def check_int(owner, name, value, low=-math.inf, high=math.inf, rule=None):
    if isinstance(value, float):
        raise ValueError(f"{owner}.{name} must be an integer, got {value!r}.")
    check_number(owner, name, value, low, high, rule, kind="integer")


def check_strategy(owner, value, kinds):
    """`value` is where a run trains: one of `kinds` (`bertlib.train.distribute.STRATEGY_KINDS`), a ready
    `tf.distribute.Strategy` or a `bertlib.train.distribute.Placement` (what `distribute.placement_of` takes)."""
    if isinstance(value, str):
        if value not in kinds:
            raise ValueError(f"Unknown strategy {value!r}; expected one of {list(kinds)}.")
    elif not hasattr(value, "num_replicas_in_sync"):
        raise ValueError(f"{owner}.strategy must be one of {list(kinds)}, a tf.distribute.Strategy or a "
                         f"bertlib.train.distribute.Placement, got {value!r}.")


def check_choice(owner, name, value, choices):
    if value not in choices:
        raise ValueError(f"{owner}.{name} must be one of {list(choices)}, got {value!r}.")


def check_resumed_steps(run, latest, say=None):
    """Resuming `latest` (a checkpoint's record) with another `run.steps` moves the run's schedule: the learning
    rate decays linearly to 0 at `steps` (A.2), and the long phase starts `long_fraction` before it. Without
    `run.change_steps` that is refused with a ValueError saying what would change; with it, `say` (a progress
    line) tells what does. Nothing happens for a fresh run or the same steps.

    Extending a finished run is the legitimate use (a run of 1,000 steps continued to 2,000): the rate, which had
    decayed to 0, goes back up to where the longer schedule has it. nanoGPT and Keras would change the schedule
    silently; here it is a decision the command line states.
    """
    recorded = (latest or {}).get("settings", {}).get("steps")
    if recorded is None or recorded == run.steps:
        return
    from bertlib.train.phases import phase_plan
    from bertlib.train.schedule import warmup_linear_decay

    step = latest["step"]
    rates = [float(warmup_linear_decay(run.learning_rate, run.warmup_steps, total)(step))
             for total in (recorded, run.steps)]
    long_starts = [plan[1][1] if len(plan) > 1 else "none" for plan in
                   (phase_plan(total, run.long_fraction, run.seq_length, run.long_seq_length)
                    for total in (recorded, run.steps))]

    def changes(would):
        def verb(conditional, present):
            return conditional if would else present

        text = (f"the learning rate at step {step} {verb('would be', 'is')} {rates[1]:.3g} instead of {rates[0]:.3g} "
                f"and {verb('reach', 'reaches')} 0 at step {run.steps} instead of {recorded}")
        if long_starts != ["none", "none"]:
            text += (f", and the {run.long_seq_length}-token phase {verb('would start', 'starts')} at step "
                     f"{long_starts[1]} instead of {long_starts[0]}")
        return text

    if not run.change_steps:
        raise ValueError(f"{run.checkpoint_dir} holds a run of --steps {recorded}, now at step {step}; resuming it "
                         f"with --steps {run.steps} would change its schedule: {changes(would=True)}. Nothing was "
                         f"trained: resume with --steps {recorded}, or pass --change-steps to train on with the new "
                         "schedule.")
    if say:
        say(f"resuming a run of --steps {recorded} with --steps {run.steps} (--change-steps): {changes(would=False)}")
