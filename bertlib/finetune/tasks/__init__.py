"""The fine-tuning tasks of §4: GLUE (§4.1), SQuAD v1.1 / v2.0 (§4.2, §4.3) and SWAG (§4.4).

Each task is a `Task` object that owns its parts: a loader that reads the files in the layout the benchmark
distributes (and raises an error naming the file, the value and what was expected when they differ), a
featurizer that turns the examples into the three int32 arrays a `BertBackbone` takes (`token_ids`,
`segment_ids`, `padding_mask`), its head (`bertlib.finetune.tasks.heads`, imported on demand: it needs Keras), its
loss and metrics, its evaluation and its prediction files. `get("sst2")` returns the task.

A new task is one new module here whose `TASKS` lists its `Task` objects: the modules are found when this
package is imported, and `bertlib.finetune.finetuning` composes whatever task it is given.
"""

import importlib
import pkgutil

from bertlib.finetune.tasks._task import Task, TaskData
from bertlib.finetune.tasks.glue import (
    GLUE_TASKS,
    STSB_RANGE,
    Examples,
    GlueRegressionTask,
    GlueTask,
    glue_file,
    load_glue,
    num_labels,
    pack_examples,
)
from bertlib.finetune.tasks.squad import (
    SQUAD_FILES,
    SquadExample,
    SquadFeatures,
    SquadFile,
    SquadTask,
    load_squad,
    read_squad,
    squad_features,
    squad_file,
    squad_predictions,
    tokenize_with_offsets,
)
from bertlib.finetune.tasks.swag import (
    SWAG_CHOICES,
    SWAG_COLUMNS,
    SWAG_FILES,
    SwagTask,
    load_swag,
    pack_swag,
    swag_file,
)

__all__ = ["GLUE_TASKS", "SQUAD_FILES", "STSB_RANGE", "SWAG_CHOICES", "SWAG_COLUMNS", "SWAG_FILES", "TASKS", "Examples",
           "GlueRegressionTask", "GlueTask", "SquadExample", "SquadFeatures", "SquadFile", "SquadTask", "SwagTask",
           "Task", "TaskData", "check_task", "get", "glue_file", "load_glue", "load_squad", "load_swag",
           "num_labels", "output_patterns", "pack_examples", "pack_swag", "read_squad", "squad_features",
           "squad_file", "squad_predictions", "swag_file", "tokenize_with_offsets"]

_NOT_TASK_MODULES = ("heads",)  # the Keras heads, imported by the tasks when they build a model


def _registry():
    found = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("_") or module.name in _NOT_TASK_MODULES:
            continue
        for task in getattr(importlib.import_module(f"{__name__}.{module.name}"), "TASKS", ()):
            if task.name in found:
                raise RuntimeError(f"Two tasks are named {task.name!r}: {found[task.name]!r} and {task!r}.")
            found[task.name] = task
    return found


_TASKS = _registry()
TASKS = tuple(_TASKS)


def check_task(task):
    """Return `task` if bertlib knows it, else raise a ValueError listing the known tasks."""
    if task not in _TASKS:
        raise ValueError(f"Unknown task {task!r}; expected one of {list(TASKS)}.")
    return task


def get(task):
    """The `Task` named `task` ("sst2", "squad_v2", ...); a `Task` object is returned as it is."""
    if isinstance(task, Task):
        return task
    return _TASKS[check_task(task)]


def output_patterns():
    """Every file name pattern a task's `write_predictions` may write (so a folder is cleared of any of them)."""
    return tuple(sorted({pattern for task in _TASKS.values() for pattern in task.output_patterns}))
