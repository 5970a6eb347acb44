"""The course layer, apart from the library: notebook helpers here (fast mode, seeding, Colab/TPU set-up,
plot style), learner checks in `checks`, exercise generation in `exercises`, grading in `grading`.
An engineer who lifts `bertlib` for its layers can leave this subpackage behind.

`BERTLIB_FAST=1` (set by `make test` and CI) shrinks every experiment so a notebook runs in a minute or two;
learners run the full versions. A notebook reads its sizes through `course.pick(fast=..., full=...)`.
"""

import os
import random
import sys
from pathlib import Path

from bertlib import distribute

# TensorFlow's C++ start-up chatter (oneDNN, CUDA probing) is noise for a reader; set before it is imported.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
distribute.configure_cpu()  # TensorFlow's thread pools sized to the cores this process may use

# Where the course lives, for the Colab badge and install cell. Change both here and in README.md if you fork.
REPOSITORY = "bertlib-course/bertlib"
BRANCH = "main"

FAST = os.environ.get("BERTLIB_FAST", "0") == "1"


def pick(fast, full):
    """`fast` under BERTLIB_FAST=1 (CI), else `full` (what a learner runs)."""
    return fast if FAST else full


def seed_everything(seed=0):
    """Seed Python, numpy and Keras (which seeds the backend), so checked numbers repeat run after run."""
    import keras
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    keras.utils.set_random_seed(seed)


def distributed(kind="auto", tpu=None):
    """Where the chapter's models live, on every backend: `with course.distributed() as placement:`.

    TensorFlow: the TPU, mirrored-GPU or one-device strategy's scope; JAX: `keras.distribution.DataParallel`
    over all devices (a Colab TPU's 8 cores); PyTorch: one device. See `bertlib.distribute.distributed`.
    """
    return distribute.distributed(kind, tpu)


def on_colab():
    return "google.colab" in sys.modules


def colab_url(notebook_path):
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/{notebook_path}"


def environment_report():
    """Backend, versions and devices, including a TPU when the runtime has one."""
    import keras

    report = {"python": sys.version.split()[0], "keras": keras.__version__, "backend": keras.backend.backend(),
              "colab": on_colab(), "fast_mode": FAST}
    try:
        import tensorflow as tf

        report["tensorflow"] = tf.__version__
        report["devices"] = [device.device_type for device in tf.config.list_logical_devices()]
    except ImportError:
        report["devices"] = []
    if keras.backend.backend() == "jax":
        import jax

        report["jax"] = jax.__version__
        report["devices"] = [device.platform.upper() for device in jax.devices()]
    report["tpu"] = "TPU" in report["devices"] or bool(os.environ.get("COLAB_TPU_ADDR") or os.environ.get("TPU_NAME"))
    return report


def set_plot_style(lang=None):
    """One look for every figure of the course; returns the language its titles and labels are drawn in.

    In the Chinese edition (`lang="zh"`, or the notebook's language by default) the course's titles, labels and
    legends are drawn in Chinese with a CJK font, or stay English where no CJK font is installed
    (`bertlib.course.messages.use_plot_language`).
    """
    import matplotlib.pyplot as plt

    from bertlib.course import messages

    plt.rcParams.update({"figure.figsize": (7, 4), "figure.dpi": 90, "axes.grid": True, "grid.alpha": 0.3,
                         "axes.spines.top": False, "axes.spines.right": False})
    return messages.use_plot_language(lang)


def repo_root():
    return Path(__file__).resolve().parents[2]


def glue_task_dir(task_folder):
    """The folder of one GLUE task (e.g. "SST-2", "WNLI"), found or downloaded by `bertlib.datasets.find`.

    It looks in `$BERTLIB_DATA`, then `../shared/data` (CI's copy), then the user cache, and otherwise downloads
    the task from the GLUE benchmark's files, checked against their sha256 (`bertlib download glue` does it
    ahead of time).
    """
    from bertlib import datasets

    return datasets.find(datasets.name_of_folder(f"glue/{task_folder}"))
