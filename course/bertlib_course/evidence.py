"""What a chapter shows as evidence: score lines, a shared tiny pretrained model, spreads over seeds.

- `score_line` prints a score beside the figure it must beat, in one fixed format that
  `tests/course/test_notebook_evidence.py` reads back from the stored notebooks (a printed score at or below its
  majority or chance figure is a contradiction that test fails on).
- `tiny_pretrained` pretrains a tiny BERT once and keeps it on disk, keyed by every setting, so chapters 03,
  04, 05 and 08 share one model per variant instead of each pretraining its own.
- `spread` and `show_spread` report an ablation over seeds as a median and a range, in a table and a plot;
  a direction is claimed only where the range excludes zero.
- `timing_claim` asserts a wall-clock comparison only in full mode, where one notebook runs alone; in fast
  mode (CI, cores shared) it only prints.

Every sentence these functions print is the runtime catalogue's entry with msgctxt "evidence"
(`bertlib_course.messages.pgettext`), so the Chinese edition prints its verdicts in Chinese; the words a chapter
hands in (a score's name, a baseline, a direction, a timing claim) are its figure strings (`messages.translate`).
Numbers print alike in both languages, and the English is the one the notebooks' stored outputs show.
"""

import dataclasses
import functools
import hashlib
import inspect
import io
import json
import math
import os
import shutil
import textwrap
import time
import tokenize
import unicodedata
from pathlib import Path
from typing import NamedTuple

import bertlib_course as course
from bertlib.io import files
from bertlib_course import messages

try:
    import fcntl
except ImportError:  # Windows: no lock; the atomic rename alone keeps the cache whole
    fcntl = None

# The one format of a score line; tests/course/test_notebook_evidence.py parses its English, keep the two in step.
SCORE_FORMAT = "{name}: {value:.1%} ({baseline_name} {baseline:.1%})"
NOT_ABOVE_SUFFIX = "; not clearly above it"
NOT_ABOVE_FORMAT = SCORE_FORMAT[:-1] + NOT_ABOVE_SUFFIX + ")"

# This module's sentences in the learner's language: `_(english)` is the catalogue's template, filled in after.
_ = functools.partial(messages.pgettext, "evidence")


def _words(text):
    """Words a chapter hands in (a score's name, a baseline, a direction, a unit, a claim) in the learner's language:
    this module's own rendering where it has one ("points" in a sentence is 个百分点, on an axis 百分点), else the
    catalogue's figure string, else `text` as it is (names, numbers)."""
    own = _(text)
    return own if own != text else messages.translate(text)


def _columns(text):
    """How many columns of a terminal `text` takes, where a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _pad(text, width):
    """`text` right-aligned in `width` columns of a terminal."""
    return " " * (width - _columns(text)) + text


def _check_number(what, value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a number, got {value!r}.") from None
    if math.isnan(number):
        raise ValueError(f"{what} is NaN: a run that produced NaN has no score. Check the loss curve for "
                         "divergence (a smaller learning rate, or float32 precision).")
    return number


def score_line(name, value, baseline, baseline_name="majority", above=True, margin=None):
    """Print `name: 57.6% (majority 53.4%)` and return `value`.

    Args:
        name: str, what was measured, e.g. "QNLI dev accuracy" (no colon in it).
        value: float in [0, 1], the score.
        baseline: float in [0, 1], the figure it is read against (majority class, chance).
        baseline_name: str, defaults to "majority" ("chance", "left context only", ...).
        above: bool, defaults to True: the line presents the score as beating its baseline. False for an
            experiment whose point is a score at chance (e.g. a model that learned to copy); the line then
            says so, and the evidence test does not read it as a result.
        margin: float or None. If given, the claim is checked in the mode that runs, not only printed:
            with `above`, assert `value >= baseline + margin`; without, assert `value < baseline + margin`.
    """
    if ":" in name:
        raise ValueError(f"score_line name {name!r} must not contain ':' (the line is parsed at the colon).")
    value = _check_number(f"score {name!r}", value)
    baseline = _check_number(f"baseline {baseline_name!r} of {name!r}", baseline)
    for what, number in (("score", value), ("baseline", baseline)):
        if not 0.0 <= number <= 1.0:
            raise ValueError(f"{what} of {name!r} must be a fraction in [0, 1], got {number!r}.")
    fields = {"name": _words(name), "value": value, "baseline_name": _words(baseline_name), "baseline": baseline,
              "margin": margin}
    print(_(SCORE_FORMAT if above else NOT_ABOVE_FORMAT).format(**fields), flush=True)
    if margin is not None and above:
        assert value >= baseline + margin, _(
            "{name}: {value:.1%} does not beat the {baseline_name} figure {baseline:.1%} by the margin {margin:.1%} "
            "this chapter claims.").format(**fields)
    if margin is not None and not above:
        assert value < baseline + margin, _(
            "{name}: {value:.1%} is more than {margin:.1%} above the {baseline_name} figure {baseline:.1%}, which "
            "this chapter says it should not be.").format(**fields)
    return value


# Fewer seeds than this give no range worth reading: no direction is claimed from them.
MIN_SEEDS = 3


class Spread(NamedTuple):
    """Median and range of one quantity over seeds."""

    median: float
    low: float
    high: float
    count: int

    @property
    def excludes_zero(self):
        """True when at least `MIN_SEEDS` seeds all agree on the sign (the range does not contain 0)."""
        return self.count >= MIN_SEEDS and (self.low > 0 or self.high < 0)

    @property
    def direction(self):
        """+1 or -1 where the range excludes zero, else 0 (no measurable difference)."""
        return 0 if not self.excludes_zero else (1 if self.low > 0 else -1)


def spread(values):
    """`Spread(median, low, high, count)` of a list of numbers; NaN is an error, not a value."""
    import numpy as np

    values = [_check_number("spread value", value) for value in values]
    if not values:
        raise ValueError("spread() needs at least one value.")
    return Spread(float(np.median(values)), min(values), max(values), len(values))


def describe(spread_, unit="points", higher="higher", lower="lower"):
    """The sentence a chapter may write about one spread: a direction only where the range excludes 0.

    `unit`, `higher` and `lower` are the chapter's words, in the learner's language where the catalogue has them.
    """
    text = _("median {median:+.1f} {unit}, range {low:+.1f} to {high:+.1f} over {count} seeds").format(
        median=spread_.median, unit=_words(unit), low=spread_.low, high=spread_.high, count=spread_.count)
    if spread_.direction:
        return _("{direction} ({spread})").format(direction=_words(higher if spread_.direction > 0 else lower),
                                                  spread=text)
    if spread_.count < MIN_SEEDS:
        return _("no direction claimed from {count} seed(s) ({spread})").format(count=spread_.count, spread=text)
    return _("no measurable difference at this scale ({spread})").format(spread=text)


def show_spread(differences, title, ylabel, unit="points", ax=None):
    """Print a table of median and range per row and plot them; returns `{row: Spread}`.

    Args:
        differences: dict, row name -> list of values over seeds (usually a difference to a reference run,
            so that 0 means "no effect").
        title, ylabel: str, for the plot.
        unit: str, printed after the numbers.
        ax: an optional matplotlib axis (else a new figure, shown).
    """
    import matplotlib.pyplot as plt

    spreads = {name: spread(values) for name, values in differences.items()}
    width = max(_columns(name) for name in spreads)  # Chinese row names take two columns a character
    print(f"{'':<{width}}  {_pad(_('median'), 8)}  {_pad(_('range'), 17)}  {_pad(_('seeds'), 5)}  {_('reading')}")
    for name, s in spreads.items():
        reading = (_("range excludes 0") if s.excludes_zero else _("range includes 0") if s.count >= MIN_SEEDS
                   else _("{count} seed(s): no direction claimed").format(count=s.count))
        print(_("{name:<{width}}  {median:>+8.1f}  {low:>+7.1f} to {high:<+7.1f}  {count:>5}  {reading}").format(
            name=name + " " * (width - _columns(name)), width=0, median=s.median, low=s.low, high=s.high, count=s.count, reading=reading))
    own_figure = ax is None
    if own_figure:
        _figure, ax = plt.subplots(figsize=(max(5, 1.2 * len(spreads) + 2), 3.6))
    names, crowded = list(spreads), len(spreads) > 3 or max(map(len, spreads)) > 14  # long labels tilt
    for index, name in enumerate(names):
        ax.scatter([index] * len(differences[name]), differences[name], color="gray", s=12, zorder=2)
        s = spreads[name]
        ax.errorbar(index, s.median, yerr=[[s.median - s.low], [s.high - s.median]], fmt="o", color="C0",
                    capsize=6, zorder=3, label=messages.translate("median and range") if index == 0 else None)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(names)), names, rotation=20 if crowded else 0, ha="right" if crowded else "center")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    if own_figure:
        plt.tight_layout()
        plt.show()
    return spreads


def timing_claim(holds, description):
    """Assert a wall-clock claim only in full mode (one notebook alone on the machine); print it always.

    In fast mode (CI) other jobs share the cores, so a measured time says little; assert counted work
    (FLOPs, positions computed) instead and show the time beside it.
    """
    claim = _words(description)
    line = _("timing, measured here: {claim}") if holds else _("timing, measured here: {claim}: does NOT hold")
    print(line.format(claim=claim) + ("" if not course.FAST else _(" (reported only: fast mode shares the machine)")),
          flush=True)
    if not course.FAST:
        assert holds, _("timing claim failed in full mode: {claim}").format(claim=claim)
    return bool(holds)


# ---------------------------------------------------------------------------------------------------------
# The shared tiny pretrained model

TINY_DEFAULTS = {
    "corpus": "python-docs",       # bertlib.text.corpora.python_docs(), embedded in the package
    "vocabulary_size": 2000,        # WordPiece trained on the corpus; None = BERT's real uncased vocabulary
    "num_layers": 2,
    "hidden_dim": 64,
    "num_heads": 2,
    "seq_length": 64,
    "max_predictions": 10,          # 15% of 64 tokens
    "batch_size": 32,
    "steps": 1000,
    "learning_rate": 2e-3,
    "warmup_fraction": 0.1,
    "next_sentence": True,
    "mask_token_rate": 0.8,         # the paper's MASK / SAME / RND = 80 / 10 / 10 (A.4.6)
    "random_token_rate": 0.1,
    "dropout": 0.0,                 # none, unlike BERT's 0.1: the chapters' claims hold either way (chapter 04's
                                    # NSP and MLM gaps, run both ways), and without it TensorFlow compiles the step
                                    # with XLA (bertlib.train.pretraining._use_xla): about 40% less time a model
                                    # (bench/RESULTS.md)
    "seed": 0,
    "precision": "float32",
}
# The library files a cached model depends on: a change to any of them retrains.
_SOURCES = ("model/config.py", "model/layers.py", "model/backbone.py", "text/masking.py", "text/nsp.py",
            "text/data.py", "text/tokenizer.py", "text/vocabulary.py", "train/pretraining.py", "train/schedule.py",
            "train/precision.py", "train/phases.py", "train/callbacks.py", "train/settings.py", "text/corpora.py")
# The layout of a cached model's folder and how it was trained; a new format never loads an older folder.
# 2: trained by bertlib.train.pretraining.pretrain (1: a fit loop of this module's own).
CACHE_FORMAT = 2


class TinyModel(NamedTuple):
    """A pretrained tiny model: `pretrainer` (with its heads), `backbone`, `tokenizer`, `config`, the
    `settings` it was trained with, `history` (per-interval metrics), `path` and whether it came `cached`."""

    pretrainer: object
    backbone: object
    tokenizer: object
    config: object
    settings: dict
    history: dict
    path: Path
    cached: bool


def cache_root():
    """`$BERTLIB_CACHE/models`, else `~/.cache/bertlib/models` (`bertlib.io.files.cache_home`)."""
    return files.cache_home() / "models"


def tiny_settings(**settings):
    """All settings of a tiny model, defaults filled in; unknown names are an error."""
    unknown = sorted(set(settings) - set(TINY_DEFAULTS))
    if unknown:
        raise TypeError(f"tiny_pretrained() got unknown setting(s) {unknown}; known: {sorted(TINY_DEFAULTS)}.")
    return {**TINY_DEFAULTS, **settings}


def tiny_key(settings):
    """The cache key: a hash of the settings, of the Keras backend and of the library code that trains the model.

    The backend is part of it because each backend trains to its own floats: without it, chapter 03's stored
    TensorFlow run once showed a model that a JAX run had trained into the shared cache (bench/RESULTS.md).
    """
    import keras

    import bertlib

    package = Path(bertlib.__file__).resolve().parent
    digest = hashlib.sha256(json.dumps({"format": CACHE_FORMAT, "backend": keras.backend.backend(), **settings},
                                       sort_keys=True).encode())
    for name in _SOURCES:
        digest.update(code_of((package / name).read_text(encoding="utf-8")).encode())
    for function in (_pretrain_into, _tokenizer_for, _documents):  # this module's training code, not its printing
        digest.update(code_of(textwrap.dedent(inspect.getsource(function))).encode())
    return digest.hexdigest()[:16]


@functools.cache  # the same files on every call of tiny_key: tokenized once a process
def code_of(source):
    """Python source as its tokens without comments and without statements that are only a string (docstrings):
    what runs, so a reworded docstring or comment (the API reference is built from them) keeps the cached models,
    and any change to the code retrains. Tokens, not `ast.parse`: Python 3.11's parser fails when another thread
    parses at the same moment ("AST constructor recursion depth mismatch"; TensorFlow's autograph parses too)."""
    kept, line = [], []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL):
            continue
        line.append((tokenize.tok_name[token.type], token.string))
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            layout = [t for t in line if t[0] in ("INDENT", "DEDENT")]
            rest = [t for t in line if t[0] not in ("INDENT", "DEDENT", "NEWLINE", "ENDMARKER")]
            kept.extend(layout if rest and all(t[0] == "STRING" for t in rest) else line)
            line = []
    return "\n".join(f"{kind} {text!r}" for kind, text in kept)


def tiny_pretrained(verbose=True, **settings):
    """A tiny BERT pretrained with masked LM (+ NSP) on the embedded corpus, trained once and cached.

    The first call with given settings pretrains (seconds to minutes on a CPU) and saves the model under
    `cache_root()/<key>/`; later calls, in this process or another (a later notebook, a parallel pytest
    worker), load it. Two processes asking for the same model at once: one trains, the other waits on a file
    lock and then loads, and the folder appears by an atomic rename, never half-written.

    Args:
        verbose: bool, print one line saying what was loaded or trained.
        **settings: any of `TINY_DEFAULTS` (corpus, vocabulary_size, num_layers, hidden_dim, num_heads,
            seq_length, max_predictions, batch_size, steps, learning_rate, warmup_fraction, next_sentence,
            mask_token_rate, random_token_rate, dropout, seed, precision).

    Returns:
        TinyModel.
    """
    settings = tiny_settings(**settings)
    for name in ("steps", "batch_size", "seq_length", "num_layers", "hidden_dim", "num_heads", "max_predictions"):
        if not isinstance(settings[name], int) or isinstance(settings[name], bool) or settings[name] < 1:
            raise ValueError(f"tiny_pretrained: {name} must be a positive integer, got {settings[name]!r}.")
    if settings["mask_token_rate"] + settings["random_token_rate"] > 1:
        raise ValueError("tiny_pretrained: mask_token_rate + random_token_rate must be at most 1, got "
                         f"{settings['mask_token_rate']} + {settings['random_token_rate']}.")
    target = cache_root() / tiny_key(settings)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        cached = (target / "settings.json").exists()
        if not cached:
            started = time.perf_counter()
            staging = target.parent / f".{target.name}.{os.getpid()}.tmp"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir()
            try:
                _pretrain_into(staging, settings)
                (staging / "seconds.txt").write_text(f"{time.perf_counter() - started:.1f}\n")
                if not (target / "settings.json").exists():  # (without a lock another process may have won)
                    shutil.rmtree(target, ignore_errors=True)
                    os.replace(staging, target)  # the finished folder appears at once
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    model = _load(target, settings, cached)
    if verbose:
        print(_loaded_line(model, target), flush=True)
    return model


def _loaded_line(model, folder):
    """What `tiny_pretrained` says of the model it returns: its size, whether it was trained or loaded, its last
    accuracies (as the training log names them)."""
    settings = model.settings
    what = _("loaded from the cache") if model.cached else _("pretrained in {seconds} s").format(
        seconds=(folder / "seconds.txt").read_text().strip())
    last = ", ".join(f"{name} {values[-1]:.3f}" for name, values in model.history.items() if "accuracy" in name)
    return _("tiny model ({layers} layers, H={hidden}, {objectives}, {steps} steps, seed {seed}): {what}; last "
             "interval {last}").format(layers=settings["num_layers"], hidden=settings["hidden_dim"],
                                       objectives="MLM + NSP" if settings["next_sentence"] else _("MLM only"),
                                       steps=settings["steps"], seed=settings["seed"], what=what, last=last)


def _tokenizer_for(settings, documents, folder):
    from bertlib.text import data, tokenizer, vocabulary

    if settings["vocabulary_size"] is None:
        return data.default_tokenizer()
    pieces = vocabulary.train_wordpiece_vocab([sentence for document in documents for sentence in document],
                                              settings["vocabulary_size"])
    vocabulary.write_vocabulary(pieces, folder / "vocab.txt")
    return tokenizer.WordPieceTokenizer(pieces)


def _documents(corpus):
    from bertlib.text import corpora

    if corpus != "python-docs":
        raise ValueError(f"tiny_pretrained: corpus must be 'python-docs' (embedded), got {corpus!r}.")
    return corpora.python_docs()


def _pretrain_into(folder, settings):
    """Pretrain with `bertlib.train.pretraining.pretrain` (the library's one training loop) and save into `folder`."""
    from bertlib.model.config import BertConfig
    from bertlib.train import pretraining

    documents = _documents(settings["corpus"])
    tokenizer = _tokenizer_for(settings, documents, folder)
    config = BertConfig(num_layers=settings["num_layers"], num_heads=settings["num_heads"],
                        hidden_dim=settings["hidden_dim"], intermediate_dim=4 * settings["hidden_dim"],
                        vocabulary_size=tokenizer.vocabulary_size, dropout=settings["dropout"],
                        max_sequence_length=max(128, settings["seq_length"]))
    steps = settings["steps"]
    interval = steps // 10 if steps % 10 == 0 else steps  # ten logged intervals: the history's points
    run = pretraining.PretrainSettings(
        corpus=settings["corpus"], steps=steps, batch_size=settings["batch_size"],
        seq_length=settings["seq_length"], max_predictions=settings["max_predictions"],
        learning_rate=settings["learning_rate"], warmup_steps=max(1, int(steps * settings["warmup_fraction"])),
        mask_token_rate=settings["mask_token_rate"], random_token_rate=settings["random_token_rate"],
        next_sentence=settings["next_sentence"], dropout=settings["dropout"], seed=settings["seed"],
        precision=settings["precision"], log_every=interval, checkpoint_every=interval)
    # A tiny step: the most steps a call.
    run = dataclasses.replace(run, steps_per_execution=_steps_per_call(run))
    from bertlib_course.progress import Progress

    bar = Progress(steps, description="pretraining the tiny model")  # a first call trains for minutes; the
    # display translates its description (progress.render), so the Chinese edition reads 预训练小模型
    bar.start()
    try:
        result = pretraining.pretrain(run, tokenizer=tokenizer, config=config, verbose=False,
                                      on_progress=lambda record: bar.advance(record["step"]))
    except FloatingPointError as error:
        raise ValueError(f"tiny_pretrained: {error} (settings {settings}); try a smaller learning_rate.") from error
    finally:
        bar.finish()
    history = {name: [record[name] for record in result["history"]]
               for name in ("loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy")
               if result["history"][0][name] is not None}
    result["pretrainer"].save(folder / "pretrainer.keras")
    (folder / "history.json").write_text(json.dumps(history))
    (folder / "config.json").write_text(json.dumps(config.to_dict()))
    (folder / "settings.json").write_text(json.dumps(settings, sort_keys=True, indent=1))  # written last


def _steps_per_call(run, most=50):
    """Steps per call into the compiled step for a tiny model's `pretrain`: the largest divisor of every logged
    interval and phase end up to `most` on TensorFlow and JAX (the same steps on the same batches, the same
    weights: `tests/library/test_training.py`; a tiny step is mostly fixed cost per call, and 50 steps a call cut
    TensorFlow's from 24 to 17 ms, `bench/tiny_step.py`), one on PyTorch, whose Keras runs one step a call."""
    import keras

    if keras.backend.backend() == "torch":
        return 1
    return math.gcd(most, run.log_interval, *(end for _, _, end in run.phase_plan))


def _load(folder, settings, cached):
    import keras

    import bertlib.model.backbone  # noqa: F401  (registers the layers for loading)
    from bertlib.model.config import BertConfig
    from bertlib.text import data, tokenizer

    if (folder / "vocab.txt").exists():
        model_tokenizer = tokenizer.WordPieceTokenizer.from_vocab_file(folder / "vocab.txt")
    else:
        model_tokenizer = data.default_tokenizer()
    pretrainer = keras.saving.load_model(folder / "pretrainer.keras", compile=False)
    config = BertConfig(**json.loads((folder / "config.json").read_text()))
    history = json.loads((folder / "history.json").read_text())
    return TinyModel(pretrainer, pretrainer.backbone, model_tokenizer, config, settings, history, folder, cached)


def masking_effects(masker, rows):
    """What a masking recipe does to a batch (chapter 06, L2): four measures, each a mean over `rows`.

    Args:
        masker: a `bertlib.text.masking.MaskedLMMasker` (its selection rate is the recipe under test).
        rows: (batch, seq) int array of token ids.

    Returns:
        dict with "signal" (prediction targets per row: the loss terms), "mask_share" (share of the input that
        is [MASK], a symbol fine-tuning never shows), "intact_share" (share of positions not selected, so
        holding their own token) and "free_neighbours" (share of interior targets whose two neighbours were
        both left alone).
    """
    import numpy as np

    rows = np.asarray(rows)
    out = masker(rows)
    selected = np.zeros(rows.shape, dtype=bool)
    used = out["mask_weights"] > 0  # the padded slots of mask_positions point nowhere
    selected[np.nonzero(used)[0], out["mask_positions"][used]] = True
    interior = selected[:, 1:-1]
    both_free = interior & ~selected[:, :-2] & ~selected[:, 2:]
    return {"signal": float(out["mask_weights"].sum(axis=1).mean()),
            "mask_share": float((out["token_ids"] == masker.mask_token_id).mean()),
            "intact_share": float((~selected).mean()),
            "free_neighbours": float(both_free.sum() / interior.sum())}
