"""The course layer, apart from the library: notebook helpers here (fast mode, the set-up call, where models
live, plot style), Colab installation in `colab`, learner checks in `checks`, exercise generation in
`exercises`, grading in `grading`. An engineer who lifts `bertlib` for its layers can leave this subpackage behind.

Every chapter starts with `course.setup(seed=0)`, before it imports Keras; importing this module changes nothing.
The figures' helpers (`plot_history`, `plot_lines`, `plot_masks`, ...) come from `plots`.
`BERTLIB_FAST=1` (set by `make test` and CI) shrinks every experiment so a notebook runs in a minute or two;
learners run the full versions. A notebook reads its sizes through `course.pick(fast=..., full=...)`.
"""

import logging
import os
import random
import re
import sys
import tempfile
import warnings

from bertlib_course.progress import progress, progress_callback  # noqa: F401 (the chapters' API)

# Where the course lives, for the Colab badge and install cell. Change both here and in README.md if you fork.
REPOSITORY = "bertlib-course/bertlib"
BRANCH = "main"

FAST = os.environ.get("BERTLIB_FAST", "0") == "1"


def _(english):
    """Marks a string a chapter writes for the reader (a figure's title, label or legend, a verdict it prints) where it
    is written, as gettext's `_` does, and gives it in the learner's language: the Chinese of the runtime catalogue
    in the Chinese edition, `english` itself otherwise. A template comes back unfilled, so the Chinese may order
    its fields: `_("head {head} of layer {layer}").format(head=3, layer=0)`. Chapters import it by name
    (`from bertlib_course import _`); IPython then leaves `_` alone instead of binding it to the last output."""
    from bertlib_course import messages

    return messages.chapter_text(english)


def pick(fast, full):
    """`fast` under BERTLIB_FAST=1 (CI), else `full` (what a learner runs)."""
    return fast if FAST else full


def setup(seed=0, lang=None, threads=None):
    """The first call of every chapter, before Keras is imported: quiet logs, CPU threads, seeds, plot style.

    - TensorFlow's C++ log lines (CUDA probing on a machine without a GPU, oneDNN notices), its Python and absl
      retracing notices and JAX's "no GPU found" line are kept out of the outputs, so a check's output is the
      check's; so are two Keras warnings the chapters trigger on purpose (a pooler without a gradient when
      next-sentence prediction is off, `shuffle=True` beside tf.data pipelines that shuffle themselves).
    - TensorFlow's thread pools are sized to the cores this process may use (`host.configure_cpu`).
    - On JAX, compiled programs are kept on disk (`host.configure_compile_cache`): a second model of the
      same shape, a re-run cell or a re-run chapter does not wait for the compiler again.
    - Python, numpy and Keras are seeded (`seed_everything`), the plots styled (`set_plot_style`).
    - One line says what runs: backend, versions, devices and where models live (`distributed()`).

    Args:
        seed: int, defaults to 0.
        lang: "en", "zh" or None (the notebook's language): the learner's language, for the messages, verdicts and
            figures of this kernel (it sets `BERTLIB_LANG`).
        threads: int or None, CPU threads for TensorFlow (default: every core this process may use).

    Returns:
        dict, `environment_report()` with the "strategy" (placement name) and "replicas" added.
    """
    quiet_logs()
    # Importing bertlib imports Keras and its backend. PyTorch's OpenMP threads read their wait policy then:
    # spinning, their default, makes a tiny model's step crawl on a busy machine (bertlib.train.host.configure_cpu).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import_tensorflow_quietly()  # before bertlib imports Keras, which starts TensorFlow
    from bertlib.train import host

    host.configure_cpu(threads)
    host.configure_compile_cache()
    seed_everything(seed)
    if lang:
        from bertlib_course import messages

        os.environ["BERTLIB_LANG"] = messages.normalize_language(lang)
    set_plot_style(lang)
    report = environment_report()
    placement = distributed()
    report.update(strategy=placement.name, replicas=placement.num_replicas)
    versions = ", ".join(f"{name} {report[name]}" for name in ("keras", report["backend"]) if name in report)
    print(f"bertlib course: {report['backend']} backend ({versions}), {placement.name} with "
          f"{placement.num_replicas} replica(s) on {'/'.join(sorted(set(placement.devices)))}"
          f"{', fast mode' if FAST else ''}", flush=True)
    return report


def quiet_logs():
    """Keep TensorFlow's, absl's and JAX's log lines, and the warnings the course expects, out of the outputs.

    The C++ level (TF_CPP_MIN_LOG_LEVEL=3: errors too, such as a failed CUDA probe on a CPU machine) works only
    when set before TensorFlow is imported; a value already in the environment wins. The Python loggers keep
    their errors and drop everything below (a filter on each logger; remove it to see the rest again).
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name in ("tensorflow", "absl", "jax._src.xla_bridge"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.ERROR)
        # A level alone does not hold in a notebook: TensorFlow's tf.get_logger(), at its first call (when Keras
        # starts TensorFlow, or later), sets its logger to INFO in an interactive shell. A filter stays.
        logger.addFilter(_errors_only)  # once: addFilter skips a filter already there
    if "absl.logging" in sys.modules or _importable("absl"):
        import absl.logging

        absl.logging.set_verbosity(absl.logging.ERROR)
    # Without NSP the pooler gets no gradient (chapter 04 shows why); Keras warns about it at every fit.
    warnings.filterwarnings("ignore", message="Gradients do not exist for variables")
    warnings.filterwarnings("ignore", message="`shuffle=True` was passed")  # our tf.data pipelines shuffle


# TensorFlow's C++ start-up lines, written to the process's stderr while its libraries load. Since TensorFlow
# logs through absl (2.19+), lines written before absl::InitializeLog() ignore TF_CPP_MIN_LOG_LEVEL: the oneDNN
# notice and "Could not find cuda drivers" came out even with it set (six lines, twice three, as each of
# TensorFlow's two libraries loads). The format: severity letter, date, time, thread, file:line].
_TF_LOG_LINE = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w.\-]+:\d+\] ")
_ABSL_PREAMBLE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
_SEVERITIES = "IWEF"


def import_tensorflow_quietly():
    """Imports TensorFlow (when installed and not yet imported) with its C++ start-up lines filtered by the level
    TF_CPP_MIN_LOG_LEVEL names (`quiet_logs` makes it 3: info, warnings and errors dropped; fatal ones stay).

    The process's stderr (file descriptor 2, where the C++ code writes; in a notebook kernel, what reaches the
    cell's output) goes to a temporary file during the import; every line the level keeps is written back.
    """
    if "tensorflow" in sys.modules or not _importable("tensorflow"):
        return
    try:
        level = int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0"))
    except ValueError:
        level = 0
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow  # noqa: F401 (started here so that its start-up lines are filtered)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = _kept_log_lines(captured.read().decode("utf-8", "replace"), level)
    if kept:
        sys.stderr.write(kept)
        sys.stderr.flush()


def _kept_log_lines(text, level):
    """The lines of `text` that TF_CPP_MIN_LOG_LEVEL=`level` keeps (other lines are kept whatever the level)."""
    kept = []
    for line in text.splitlines(keepends=True):
        match = _TF_LOG_LINE.match(line)
        if match and _SEVERITIES.index(match.group(1)) < min(level, 3):
            continue
        if line.strip() == _ABSL_PREAMBLE and level > 0:
            continue
        kept.append(line)
    return "".join(kept)


def _errors_only(record):
    return record.levelno >= logging.ERROR


def _importable(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None


_PLACEMENTS = {}


def distributed(kind="auto", tpu=None):
    """Where the chapter's models live, on every backend: `with course.distributed():` around building them.

    TensorFlow: the TPU, mirrored-GPU or one-device strategy's scope; JAX: `keras.distribution.DataParallel`
    over all devices (a Colab TPU's 8 cores); PyTorch: one device. See `bertlib.train.distribute.distributed`.
    The placement is made once per kind and reused, so a TPU is initialized once per notebook.
    """
    import keras

    from bertlib.train import distribute

    key = (kind, tpu, keras.backend.backend())
    if key not in _PLACEMENTS:
        _PLACEMENTS[key] = distribute.distributed(kind, tpu)
    return _PLACEMENTS[key]


def seed_everything(seed=0):
    """Seed Python, numpy and Keras (which seeds the backend), so checked numbers repeat run after run."""
    import keras
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    keras.utils.set_random_seed(seed)


def on_colab():
    return "google.colab" in sys.modules


def colab_url(notebook_path):
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/{notebook_path}"


def environment_report():
    """Backend, versions and the devices of the backend that runs, including a TPU when the runtime has one."""
    import keras

    backend = keras.backend.backend()
    report = {"python": sys.version.split()[0], "keras": keras.__version__, "backend": backend,
              "colab": on_colab(), "fast_mode": FAST}
    if backend == "jax":
        import jax

        report["jax"] = jax.__version__
        report["devices"] = [device.platform.upper() for device in jax.devices()]
    elif backend == "torch":
        import torch

        report["torch"] = torch.__version__
        report["devices"] = ["GPU"] * torch.cuda.device_count() or ["CPU"]
    if _importable("tensorflow"):  # the input pipeline (tf.data) on every backend
        import tensorflow as tf

        report["tensorflow"] = tf.__version__
        if backend == "tensorflow":
            report["devices"] = [device.device_type for device in tf.config.list_logical_devices()]
    report.setdefault("devices", [])
    report["tpu"] = "TPU" in report["devices"] or bool(os.environ.get("COLAB_TPU_ADDR") or os.environ.get("TPU_NAME"))
    return report


def set_plot_style(lang=None):
    """One look for every figure of the course; returns the language its titles and labels are drawn in.

    In the Chinese edition (`lang="zh"`, or the notebook's language by default) the course's titles, labels and
    legends are drawn in Chinese with a CJK font, or stay English where no CJK font is installed
    (`bertlib_course.messages.use_plot_language`).
    """
    import matplotlib.pyplot as plt

    from bertlib_course import messages

    plt.rcParams.update({"figure.figsize": (7, 4), "figure.dpi": 90, "axes.grid": True, "grid.alpha": 0.3,
                         "axes.spines.top": False, "axes.spines.right": False})
    return messages.use_plot_language(lang)


def glue_task_dir(task_folder):
    """The folder of one GLUE task (e.g. "SST-2", "WNLI"), found or downloaded by `bertlib.io.downloads.find`.

    It looks in the folders of `$BERTLIB_DATA` (CI's `make` puts its `../shared/data` there), then the user
    cache, and otherwise downloads the task from the GLUE benchmark's files, checked against their sha256
    (`bertlib download glue` does it ahead of time).
    """
    from bertlib.io import downloads

    return downloads.find(downloads.name_of_folder(f"glue/{task_folder}"))


_PLOTS = ("plot_bars", "plot_grouped_bars", "plot_heatmaps", "plot_histogram", "plot_history", "plot_lines",
          "plot_masks", "plot_shares")


def __getattr__(name):
    """The figures' helpers of `bertlib_course.plots`, imported when first asked for (importing numpy and
    matplotlib would change global state on `from bertlib import course`)."""
    if name in _PLOTS:
        from bertlib_course import plots

        return getattr(plots, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
