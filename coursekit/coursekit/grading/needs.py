"""What the solution notebooks need on the grading machine, read from their code before any kernel starts.

A solution notebook's needs are derived from its code with `ast`, not declared: every code cell (the set-up cells,
the solutions, the instructor's checks, which run in the runner) is parsed, and

- a module-level `import x` / `from x import y` needs the module `x` in the grader's Python environment (the
  kernel and the checks both use it);
- a call needs what the course's `call_need` hook says (course.py): a dataset, a checkpoint, or nothing.

`missing(solution_paths)` lists what this machine lacks; the grader refuses with `refusal(...)`, one message naming
each missing thing and the command that fetches it. What the rules cannot see (a dataset named by a variable, a
helper that finds data itself) fails at run time instead, and `lacking()` turns the errors that the course's
`error_need` hook recognises into rows that say so and blame the machine, never the learner (outcome.py).

A need is any hashable object with `kind`, `name`, `what` (its description), `command` (what fetches it) and
`present()`; `Need` is the kit's own, a Python module.
"""

import ast
import importlib.util
from dataclasses import dataclass

from coursekit import course, exercises

UNRESOLVABLE = "unresolvable"  # what `call_need` returns for a call whose need the rules cannot name


@dataclass(frozen=True, order=True)
class Need:
    """A Python module a notebook imports: `Need("module", "scipy")`."""

    kind: str
    name: str = ""

    @property
    def what(self):
        return f"the Python module {self.name}"

    @property
    def command(self):
        return f"pip install {self.name}"

    def present(self):
        """Whether the grader's Python environment (the kernel's too) has it."""
        try:
            return importlib.util.find_spec(self.name) is not None
        except (ImportError, ValueError):
            return False


def order(need):
    """The sort key of needs of any kind: by kind, then name."""
    return need.kind, need.name


def notebook_needs(notebook):
    """(needs, unresolved) of a solution notebook: the `Need`s its code shows, sorted, and a description of each
    call to a data-finding function whose name is not a literal (the rules cannot tell what it needs)."""
    call_need = course.hook("call_need", lambda call: None)
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
                need = call_need(node)
                if need == UNRESOLVABLE:
                    unresolved.append(f"cell {index + 1}: {ast.unparse(node)[:120]}")
                elif need is not None:
                    found.add(need)
    return sorted(found, key=order), unresolved


def _imported(statement):
    if isinstance(statement, ast.Import):
        return {Need("module", alias.name.split(".")[0]) for alias in statement.names}
    if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module != "__future__":
        return {Need("module", statement.module.split(".")[0])}
    return set()


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
    return dict(sorted(lacking.items(), key=lambda item: order(item[0])))


def refusal(lacking):
    """The one message that names each missing thing, the notebooks that need it and the command that fetches it,
    and the course's note (`refusal_note`, e.g. where its datasets are looked for)."""
    lines = [f"  - {need.what}, needed by {', '.join(names)}: `{need.command}`" for need, names in lacking.items()]
    text = ("the grading machine lacks what the notebooks need, so nothing was graded and no report written "
            "(every row would have been wrong). Fetch it, then grade again:\n" + "\n".join(lines))
    note = course.hook("refusal_note", lambda lacking: "")(lacking)
    return f"{text}\n{note}" if note else text


def lacking(error_name, message):
    """'<what>: `<command>`' of the need a cell's error says this machine lacks (the course's `error_need`, e.g.
    'GLUE WNLI (dataset wnli): `bertlib download wnli`'); else None."""
    need = course.hook("error_need", lambda error_name, message: None)(error_name, message)
    return f"{need.what}: `{need.command}`" if need else None
