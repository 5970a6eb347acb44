"""The fine-tuning tasks of §4: GLUE (§4.1), SQuAD v1.1 / v2.0 (§4.2, §4.3) and SWAG (§4.4).

Each task has a loader that reads the files in the layout the benchmark distributes (and raises an error naming
the file, the value and what was expected when they differ) and a featurizer that turns the examples into the
three int32 arrays a `BertBackbone` takes: `token_ids`, `segment_ids`, `padding_mask`. `bertlib.tasks.heads`
holds the small Keras models put on the backbone for each kind of task (imported on demand: it needs Keras).
"""

from bertlib.tasks.glue import (
    GLUE_TASKS,
    STSB_RANGE,
    Examples,
    GlueTask,
    glue_file,
    load_glue,
    num_labels,
    pack_examples,
)
from bertlib.tasks.squad import (
    SQUAD_FILES,
    SquadExample,
    SquadFeatures,
    load_squad,
    squad_features,
    squad_file,
    squad_predictions,
    tokenize_with_offsets,
)
from bertlib.tasks.swag import SWAG_CHOICES, SWAG_COLUMNS, SWAG_FILES, load_swag, pack_swag, swag_file

__all__ = ["GLUE_TASKS", "SQUAD_FILES", "STSB_RANGE", "SWAG_CHOICES", "SWAG_COLUMNS", "SWAG_FILES", "TASKS", "Examples",
           "GlueTask", "SquadExample", "SquadFeatures", "check_task", "glue_file", "load_glue", "load_squad",
           "load_swag", "num_labels", "pack_examples", "pack_swag", "squad_features", "squad_file",
           "squad_predictions", "swag_file", "tokenize_with_offsets"]

TASKS = (*GLUE_TASKS, "squad_v1", "squad_v2", "swag")


def check_task(task):
    """Return `task` if bertlib knows it, else raise a ValueError listing the known tasks."""
    if task not in TASKS:
        raise ValueError(f"Unknown task {task!r}; expected one of {list(TASKS)}.")
    return task
