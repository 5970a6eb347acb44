"""Static lints of a solution notebook's check cells, reported by the mutation tests.

A check must call a learner's function through a call wrapper (`CALL_WRAPPERS`), so that an error it raises
becomes a ✘ line with a hint rather than a bare traceback (`unwrapped_calls`), and no two public checks of one
exercise may share a name (`duplicate_check_names`).
"""

import ast

from coursekit.exercises.convention import exercise_cells
from coursekit.exercises.generate import strip_hidden_tests
from coursekit.exercises.notebooks import runnable_code

# Check helpers that call a learner's function for the check cell, turning its error into a ✘ line with a hint.
CALL_WRAPPERS = ("checked_call", "check_function", "check_raises", "check_same_activations")


def _solution_names(nb, entry):
    """The names an exercise's solution cells define at their top level (functions, classes, assignments)."""
    names = set()
    for index in entry["solution"]:
        for node in ast.parse(runnable_code(nb.cells[index].source)).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name))
    return names


def unwrapped_calls(nb, source_name="notebook"):
    """One line per call, in a check cell, of a name that a solution cell of the notebook defines, made outside a
    call wrapper (`CALL_WRAPPERS`): an error it raised would be a bare traceback at the wrong line, and the grader
    would record `error` without a hint. Passing the function to a wrapper, or a lambda that calls it, is fine; an
    argument such as `checked_call("f", f, g(x))` is not (`g(x)` runs before the wrapper does)."""
    found = exercise_cells(nb, source_name)
    defined = set().union(*(_solution_names(nb, entry) for entry in found.values()))
    problems = []
    for exercise_id, entry in found.items():
        for index in entry["check"]:
            tree = ast.parse(runnable_code(nb.cells[index].source))
            deferred = {id(node) for call in ast.walk(tree) if _is_wrapper_call(call)
                        for argument in [*call.args, *call.keywords] for function in ast.walk(argument)
                        if isinstance(function, ast.Lambda) for node in ast.walk(function.body)}
            lines = sorted({node.lineno: node.func.id for node in ast.walk(tree)
                            if isinstance(node, ast.Call) and id(node) not in deferred
                            and isinstance(node.func, ast.Name) and node.func.id in defined}.items())
            problems += [f"{source_name}, exercise {exercise_id}, cell {index}, line {line}: {name}(...) is called "
                         f"outside checked_call or check_function" for line, name in lines]
    return problems


def _is_wrapper_call(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CALL_WRAPPERS


def duplicate_check_names(nb, source_name="notebook"):
    """One line per name that two checks of one exercise's public part share ("✔ answers: as expected", then
    "✘ answers is not what was expected" reads as a contradiction)."""
    problems = []
    for exercise_id, entry in exercise_cells(nb, source_name).items():
        seen = set()
        for index in entry["check"]:
            tree = ast.parse(runnable_code(strip_hidden_tests(nb.cells[index].source)))
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("check_")
                        and node.func.id != "check_shape"  # which prints "the shape of <name>"
                        and node.args and isinstance(node.args[0], ast.Constant)):
                    name = node.args[0].value
                    if name in seen:
                        problems.append(f"{source_name}, exercise {exercise_id}: two checks named {name!r}")
                    seen.add(name)
    return problems
