"""Exercise notebooks generated from solution notebooks: stubs, tags, determinism, and `exercises check`.

The toy solution notebook defined here (three exercises, numpy only) is also the fixture of test_grading.py.
"""

import argparse
import json
import os
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from bertlib.course import exercises, grading

TOY_NAME = "03_toy.ipynb"
TOY_POINTS = {"3.1": 1, "3.2": 2, "3.3": 1}

SOFTMAX_SOLUTION = """def softmax(x):
    ### BEGIN SOLUTION
    shifted = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)
    ### END SOLUTION"""
SQUARES_SOLUTION = """### BEGIN SOLUTION
mean_of_squares = float(np.mean(np.arange(5) ** 2))
### END SOLUTION"""
PADDING_SOLUTION = """token_ids = np.array([[5, 6, 0, 0], [7, 0, 0, 0]])
### BEGIN SOLUTION
padding_mask = (token_ids != 0).astype("int32")
### END SOLUTION
lengths = padding_mask.sum(axis=1)
### BEGIN SOLUTION
longest = int(lengths.max())
### END SOLUTION"""


def main(argv):
    """`bertlib ARGV` for the exercises and grade commands, without importing every other subcommand's module."""
    parser = argparse.ArgumentParser(prog="bertlib")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, module in (("exercises", exercises), ("grade", grading)):
        module.add_arguments(commands.add_parser(name))
    args = parser.parse_args(argv)
    return {"exercises": exercises, "grade": grading}[args.command].run(args)


def exercise_cell(source, exercise_id, role, **extra):
    return new_code_cell(source, metadata={"bertlib": {"exercise": exercise_id, "role": role, **extra}})


def toy_solution_notebook():
    """Three exercises as the convention of bertlib.exercises has them, plus ordinary cells between them."""
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        new_markdown_cell("# Chapter 3 (toy)"),
        new_code_cell("import numpy as np\n\nfrom bertlib.checks import check_close, check_equal, check_function, "
                      "check_shape, done"),
        new_markdown_cell("**Exercise 3.1.** Write a numerically stable softmax over the last axis."),
        exercise_cell(SOFTMAX_SOLUTION, "3.1", "solution"),
        exercise_cell('def reference_softmax(x):\n    e = np.exp(x - x.max(axis=-1, keepdims=True))\n'
                      '    return e / e.sum(axis=-1, keepdims=True)\n\n'
                      'check_function("softmax", softmax, reference_softmax, lambda rng: (rng.normal(size=(2, 5)) * 50,),'
                      ' hint="subtract the row maximum before np.exp")\ndone("3.1")', "3.1", "check"),
        new_code_cell("print('an ordinary cell between exercises')"),
        new_code_cell("raise ValueError('a demonstration of an error')", metadata={"tags": ["raises-exception"]}),
        exercise_cell(SQUARES_SOLUTION, "3.2", "solution", points=2),
        exercise_cell('check_close("mean_of_squares", mean_of_squares, 6.0, hint="square first, then average")\n'
                      'done("3.2")', "3.2", "check"),
        exercise_cell(PADDING_SOLUTION, "3.3", "solution"),
        exercise_cell('check_equal("padding_mask", padding_mask, np.array([[1, 1, 0, 0], [1, 0, 0, 0]]))\n'
                      'check_shape("padding_mask", padding_mask, (2, None))\n'
                      'check_equal("longest", longest, 2)\ndone("3.3")', "3.3", "check"),
    ]
    return nb


def write_toy_course(root):
    """Writes root/solutions/03_toy.ipynb (with stored outputs, as an author would save it); returns the folder."""
    nb = toy_solution_notebook()
    nb.cells[5].outputs = [nbformat.v4.new_output("stream", name="stdout", text="an ordinary cell\n")]
    nb.cells[5].execution_count = 4
    nb.metadata["widgets"] = {"state": {}}
    nb.cells[3].metadata["scrolled"] = True
    solutions = root / "solutions"
    solutions.mkdir(parents=True)
    nbformat.write(nb, str(solutions / TOY_NAME))
    return solutions


def run_nbval(*paths, cwd):
    """pytest --nbval-lax on notebooks, in a fresh interpreter (as CI runs them); returns (exit code, output)."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTEST_ADDOPTS"}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-p", "no:cacheprovider", "-q",
         "--rootdir", str(cwd), *map(str, paths)], cwd=cwd, env=environment, capture_output=True, text=True,
        timeout=240, check=False)
    return completed.returncode, completed.stdout + completed.stderr


def test_stub_keeps_indentation_and_names_the_exercise():
    stubbed = exercises.stub_solution_regions(SOFTMAX_SOLUTION, "3.1")
    assert stubbed == ('def softmax(x):\n    # YOUR CODE HERE\n'
                       '    raise NotImplementedError("Exercise 3.1: write your code here")')
    namespace = {}
    exec(stubbed, namespace)  # noqa: S102 (running the generated stub is the point of this test)
    with pytest.raises(NotImplementedError, match="Exercise 3.1"):
        namespace["softmax"](1.0)


def test_two_regions_in_one_cell_keep_the_code_between_them():
    stubbed = exercises.stub_solution_regions(PADDING_SOLUTION, "3.3")
    assert stubbed.count("raise NotImplementedError") == 2
    assert "lengths = padding_mask.sum(axis=1)" in stubbed and "astype" not in stubbed and "max()" not in stubbed


@pytest.mark.parametrize("source, problem", [
    ("### BEGIN SOLUTION\nx = 1", "never closed"),
    ("x = 1\n### END SOLUTION", "without a ### BEGIN SOLUTION"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "inside the region opened on line 1"),
])
def test_broken_regions_name_the_line(source, problem):
    with pytest.raises(exercises.ExerciseFormatError, match=problem):
        exercises.stub_solution_regions(source, "3.1", "solutions/03_toy.ipynb, cell 3")


def test_exercise_notebook_has_stubs_tags_and_no_outputs(tmp_path):
    solutions = write_toy_course(tmp_path)
    solution = exercises.read_notebook(solutions / TOY_NAME)
    built = exercises.build_exercise_notebook(solution)
    assert len(built.cells) == len(solution.cells)
    assert all(cell.outputs == [] and cell.execution_count is None for cell in built.cells if cell.cell_type == "code")
    assert set(built.metadata) == {"kernelspec"} and "scrolled" not in built.cells[3].metadata
    for original, cell in zip(solution.cells, built.cells):
        role = original.metadata.get("bertlib", {}).get("role")
        tags = cell.metadata.get("tags", [])
        assert ("raises-exception" in tags) == (role is not None or "raises-exception" in original.metadata.get("tags", []))
        if role == "solution":
            assert "BEGIN SOLUTION" not in cell.source and "NotImplementedError" in cell.source
        else:
            assert cell.source == original.source
    assert exercises.exercise_cells(built) == {
        "3.1": {"points": 1, "solution": [3], "check": [4]}, "3.2": {"points": 2, "solution": [7], "check": [8]},
        "3.3": {"points": 1, "solution": [9], "check": [10]}}
    assert solution.cells[5].outputs, "building must not change the solution notebook"


@pytest.mark.parametrize("change, problem", [
    (lambda nb: nb.cells[4].metadata.update(bertlib={"exercise": "3.1", "role": "answer"}), "must be one of"),
    (lambda nb: nb.cells[7].metadata["bertlib"].update(exercise="4.2"), "should be \"3.<number>\""),
    (lambda nb: nb.cells.pop(8), "exercise 3.2 has no check cell"),
    (lambda nb: nb.cells[3].update(source="def softmax(x):\n    return x"), "needs a ### BEGIN SOLUTION"),
    (lambda nb: nb.cells[5].update(source="### BEGIN SOLUTION\nx = 1\n### END SOLUTION"), "cell 5: ### BEGIN"),
    (lambda nb: nb.cells[8].metadata["bertlib"].update(points=3), "given 3 points here but 2"),
])
def test_invalid_solution_notebooks_are_refused_with_the_reason(tmp_path, change, problem):
    nb = toy_solution_notebook()
    change(nb)
    with pytest.raises(exercises.ExerciseFormatError, match=problem):
        exercises.validate_solution_notebook(nb, tmp_path / TOY_NAME)


def test_build_then_check_passes_and_a_hand_edit_fails(tmp_path, capsys):
    solutions = write_toy_course(tmp_path)
    exercises_dir = tmp_path / "exercises"
    arguments = ["--solutions", str(solutions), "--exercises", str(exercises_dir)]
    assert main(["exercises", "check", *arguments]) == 1  # nothing built yet: the file is missing
    assert "missing" in capsys.readouterr().out
    assert main(["exercises", "build", *arguments]) == 0
    first = (exercises_dir / TOY_NAME).read_bytes()
    assert main(["exercises", "build", *arguments]) == 0
    assert (exercises_dir / TOY_NAME).read_bytes() == first, "the build must be deterministic"
    assert main(["exercises", "check", *arguments]) == 0

    edited = json.loads(first)
    edited["cells"][3]["source"] = "def softmax(x):\n    return x\n"
    (exercises_dir / TOY_NAME).write_text(json.dumps(edited, indent=1), encoding="utf-8")
    capsys.readouterr()
    assert main(["exercises", "check", *arguments]) == 1
    assert f"{exercises_dir / TOY_NAME}: differs" in capsys.readouterr().out

    (exercises_dir / "09_stale.ipynb").write_text(first.decode(), encoding="utf-8")
    assert main(["exercises", "build", *arguments]) == 0
    assert not (exercises_dir / "09_stale.ipynb").exists()
    assert (exercises_dir / TOY_NAME).read_bytes() == first
    (exercises_dir / "09_stale.ipynb").write_text(first.decode(), encoding="utf-8")
    capsys.readouterr()
    assert main(["exercises", "check", *arguments]) == 1
    assert "09_stale.ipynb: extra" in capsys.readouterr().out


def test_build_is_independent_of_cell_ids_invented_on_read(tmp_path):
    """nbformat invents random ids for 4.5 cells without one; two builds must still write the same bytes."""
    solutions = write_toy_course(tmp_path)
    data = json.loads((solutions / TOY_NAME).read_text())
    for cell in data["cells"]:
        cell.pop("id")
    (solutions / TOY_NAME).write_text(json.dumps(data))
    assert exercises.expected_exercises(solutions) == exercises.expected_exercises(solutions)


@pytest.mark.slow
def test_nbval_passes_on_solutions_and_generated_exercises(tmp_path):
    solutions = write_toy_course(tmp_path)
    exercises.build(solutions, tmp_path / "exercises")
    code, output = run_nbval(solutions / TOY_NAME, tmp_path / "exercises" / TOY_NAME, cwd=tmp_path)
    assert code == 0, output
    assert "18 passed" in output, output  # 9 code cells in each notebook
