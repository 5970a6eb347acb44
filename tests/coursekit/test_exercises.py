"""Exercise notebooks generated from solution notebooks: stubs, tags, determinism, and `exercises check`.

The toy solution notebook defined here (three exercises, numpy and the toy course's checks only) is also the fixture
of test_grading.py. Every test here runs on the toy course (conftest.py): its metadata key and its check helpers.
"""

import argparse
import json
import os
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from coursekit import exercises, grading

pytestmark = pytest.mark.usefixtures("toy_course_module")

TOY_KEY = "toycourse"  # the toy course's metadata_key (toycourse/pyproject.toml)
TOY_CHECKS = "toycourse.checks"  # the module of check helpers the toy notebooks import
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
    """`coursekit ARGV` for the exercises and grade commands, without importing every other subcommand's module."""
    parser = argparse.ArgumentParser(prog="coursekit")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, module in (("exercises", exercises), ("grade", grading)):
        module.add_arguments(commands.add_parser(name))
    args = parser.parse_args(argv)
    return {"exercises": exercises, "grade": grading}[args.command].run(args)


def exercise_cell(source, exercise_id, role, key=TOY_KEY, **extra):
    return new_code_cell(source, metadata={key: {"exercise": exercise_id, "role": role, **extra}})


def toy_solution_notebook(key=TOY_KEY, checks=TOY_CHECKS):
    """Three exercises as the convention of coursekit.exercises has them, plus ordinary cells between them; `key`
    and `checks` are the course's metadata key and checks module (tests/course's copies use the BERT course's)."""
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        new_markdown_cell("# Chapter 3 (toy)"),
        new_code_cell(f"import numpy as np\n\nfrom {checks} import check_close, check_equal, check_function, "
                      "check_shape, done"),
        new_markdown_cell("**Exercise 3.1.** Write a numerically stable softmax over the last axis."),
        exercise_cell(SOFTMAX_SOLUTION, "3.1", "solution", key),
        exercise_cell('def reference_softmax(x):\n    e = np.exp(x - x.max(axis=-1, keepdims=True))\n'
                      '    return e / e.sum(axis=-1, keepdims=True)\n\n'
                      'check_function("softmax", softmax, reference_softmax, lambda rng: (rng.normal(size=(2, 5)) * 50,),'
                      ' hint="subtract the row maximum before np.exp")\ndone("3.1")', "3.1", "check", key),
        new_code_cell("print('an ordinary cell between exercises')"),
        new_code_cell("raise ValueError('a demonstration of an error')", metadata={"tags": ["raises-exception"]}),
        exercise_cell(SQUARES_SOLUTION, "3.2", "solution", key, points=2),
        exercise_cell('check_close("mean_of_squares", mean_of_squares, 6.0, hint="square first, then average")\n'
                      'done("3.2")', "3.2", "check", key),
        exercise_cell(PADDING_SOLUTION, "3.3", "solution", key),
        exercise_cell('check_equal("padding_mask", padding_mask, np.array([[1, 1, 0, 0], [1, 0, 0, 0]]))\n'
                      'check_shape("padding_mask", padding_mask, (2, None))\n'
                      'check_equal("longest", longest, 2)\ndone("3.3")', "3.3", "check", key),
    ]
    return nb


def write_toy_course(root, **course):
    """Writes root/solutions/03_toy.ipynb (with stored outputs, as an author would save it); returns the folder.
    `course`: toy_solution_notebook's key and checks."""
    nb = toy_solution_notebook(**course)
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


def test_a_chinese_stub_differs_only_in_its_comment_and_message():
    """exercises/zh/: the comment and the message are Chinese; the rest of the code, the NotImplementedError whose
    type the grader reads as "not attempted" included, is the same."""
    english = exercises.stub_solution_regions(SOFTMAX_SOLUTION, "3.1")
    texts = exercises.ExerciseTexts(comment="# 在此写下你的代码", message="练习 {exercise_id}：在此写下你的代码")
    chinese = exercises.stub_solution_regions(SOFTMAX_SOLUTION, "3.1", texts=texts)
    assert chinese == ('def softmax(x):\n    # 在此写下你的代码\n'
                       '    raise NotImplementedError("练习 3.1：在此写下你的代码")')
    assert chinese == english.replace("    # YOUR CODE HERE", "    # 在此写下你的代码").replace(
        '"Exercise 3.1: write your code here"', '"练习 3.1：在此写下你的代码"')
    namespace = {}
    exec(chinese, namespace)  # noqa: S102
    with pytest.raises(NotImplementedError, match="练习 3.1：在此写下你的代码"):
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
    assert set(built.metadata) == {"kernelspec", TOY_KEY} and "scrolled" not in built.cells[3].metadata
    assert built.metadata[TOY_KEY] == {"chapter": "03", "exercises": ["3.1", "3.2", "3.3"]}, "the grader's ids"
    for original, cell in zip(solution.cells, built.cells):
        role = original.metadata.get(TOY_KEY, {}).get("role")
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
    (lambda nb: nb.cells[4].metadata.update({TOY_KEY: {"exercise": "3.1", "role": "answer"}}), "must be one of"),
    (lambda nb: nb.cells[7].metadata[TOY_KEY].update(exercise="4.2"), "should be \"3.<number>\""),
    (lambda nb: nb.cells.pop(8), "exercise 3.2 has no check cell"),
    (lambda nb: nb.cells[3].update(source="def softmax(x):\n    return x"), "needs a ### BEGIN SOLUTION"),
    (lambda nb: nb.cells[5].update(source="### BEGIN SOLUTION\nx = 1\n### END SOLUTION"), "cell 5: ### BEGIN"),
    (lambda nb: nb.cells[8].metadata[TOY_KEY].update(points=3), "given 3 points here but 2"),
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


def test_hidden_tests_are_removed_from_the_learner_copy(tmp_path):
    nb = toy_solution_notebook()
    nb.cells[8].source = ('check_true("mean_of_squares is a float", isinstance(mean_of_squares, float), "a float", '
                          'repr(mean_of_squares))\n### BEGIN HIDDEN TESTS\ncheck_close("mean_of_squares", mean_of_squares, '
                          '6.0)\n### END HIDDEN TESTS\ndone("3.2")')
    built = exercises.build_exercise_notebook(nb, "03_toy.ipynb")
    assert built.cells[8].source == ('check_true("mean_of_squares is a float", isinstance(mean_of_squares, float), '
                                     '"a float", repr(mean_of_squares))\ndone("3.2")')
    assert "6.0" not in built.cells[8].source
    nb.cells[8].source = "### BEGIN HIDDEN TESTS\ncheck_close('x', 1, 1)"
    with pytest.raises(exercises.ExerciseFormatError, match="never closed"):
        exercises.build_exercise_notebook(nb, "03_toy.ipynb")


def test_a_region_inside_an_expression_is_refused_because_its_stub_is_not_python(tmp_path):
    nb = toy_solution_notebook()
    nb.cells[7].source = 'answers = {\n    ### BEGIN SOLUTION\n    "a": 1,\n    ### END SOLUTION\n}'
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    nbformat.write(nb, str(solutions / TOY_NAME))
    with pytest.raises(exercises.ExerciseFormatError, match="cell 7: not valid Python"):
        exercises.expected_exercises(solutions)


def write_catalogue(solutions, text):
    (solutions / "wrong_answers").mkdir()
    (solutions / "wrong_answers" / "03_toy.py").write_text(text, encoding="utf-8")


TOY_CATALOGUE = """
WRONG_ANSWERS = {
    "3.1": {
        "over the batch axis": [("np.max(x, axis=-1, keepdims=True)", "np.max(x, axis=0, keepdims=True)"),
                                ("shifted.sum(axis=-1, keepdims=True)", "shifted.sum(axis=0, keepdims=True)")],
        "no normalisation": [("return shifted / shifted.sum(axis=-1, keepdims=True)", "return shifted")],
        "identity": "def softmax(x):\\n    return x\\n",
    },
    "3.2": {
        "mean, then square": [("np.mean(np.arange(5) ** 2)", "np.mean(np.arange(5)) ** 2")],
        "sum": [("np.mean(", "np.sum(")],
        "constant": "mean_of_squares = 5.0\\n",
    },
    "3.3": {
        "hard-coded longest": [("longest = int(lengths.max())", "longest = 2")],
        "mask inverted": [("(token_ids != 0)", "(token_ids == 0)")],
    },
}
"""


def test_mutation_test_reports_a_wrong_answer_that_passes_and_a_short_catalogue(tmp_path, capsys):
    solutions = write_toy_course(tmp_path)
    write_catalogue(solutions, TOY_CATALOGUE)
    report = exercises.mutation_test(solutions / TOY_NAME, log=lambda line: None)
    assert (report.exercises, report.wrong_answers, report.rejected) == (3, 8, 7)
    assert report.survivors == ["exercise 3.3, wrong answer 'hard-coded longest': passes the checks"]
    assert report.problems == ["exercise 3.3: 2 wrong answers in the catalogue, at least 3 needed"]
    assert report.summary().startswith("3 exercises, 8 wrong answers, 1 NOT rejected")
    assert main(["exercises", "test", "--solutions", str(solutions)]) == 1
    assert "1 NOT rejected" in capsys.readouterr().out


def test_mutation_test_reports_a_check_that_crashes_on_a_wrong_answer_instead_of_failing(tmp_path):
    """Issue 24: exercise 2.4's check crashed inside numpy on the chapter's (output, probabilities), which the old
    test counted as rejected. A check must reject a wrong answer with a ✘ line; a crash is reported."""
    nb = toy_solution_notebook()
    nb.cells[8].source = 'check_close("mean_of_squares", float(mean_of_squares), 6.0)\ndone("3.2")'  # float(None) crashes
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    nbformat.write(nb, str(solutions / TOY_NAME))
    catalogue = TOY_CATALOGUE.replace('"constant": "mean_of_squares = 5.0\\n"', '"not a number": "mean_of_squares = None\\n"')
    assert "mean_of_squares = None" in catalogue
    write_catalogue(solutions, catalogue)
    report = exercises.mutation_test(solutions / TOY_NAME, log=lambda line: None)
    crashes = [problem for problem in report.problems if "crashed" in problem]
    assert crashes == [crash for crash in crashes if crash.startswith(
        "exercise 3.2, wrong answer 'not a number': the check (cell 8) crashed with TypeError")] and len(crashes) == 1
    assert not report.ok and report.rejected == 6, report.rejections

    # The same wrong answer, read by the check helper itself: rejected by a failed check.
    nb.cells[8].source = 'check_close("mean_of_squares", mean_of_squares, 6.0)\ndone("3.2")'
    nbformat.write(nb, str(solutions / TOY_NAME))
    report = exercises.mutation_test(solutions / TOY_NAME, log=lambda line: None)
    assert not [problem for problem in report.problems if "crashed" in problem] and report.rejected == 7


def test_the_learner_copy_carries_the_learners_title():
    """Issue 24: both exercise notebooks were titled "(solutions)". A translated edition's title words are its own
    (`ExerciseTexts.titles`, from its kit catalogue), here the Chinese in both its forms."""
    chinese = exercises.ExerciseTexts(titles=(("（参考答案）", "（练习）"), ("——参考答案", "——练习"),
                                              *exercises.ENGLISH_TEXTS.titles))
    for title, expected, texts in (("# 03 · Toy (solutions) — 第3章", "# 03 · Toy (exercises) — 第3章", None),
                                   ("# 03 · 玩具（参考答案）— 第3章", "# 03 · 玩具（练习）— 第3章", chinese),
                                   ("# 03 · 玩具（MLM）——参考答案", "# 03 · 玩具（MLM）——练习", chinese)):
        nb = toy_solution_notebook()
        nb.cells[0].source = f"{title}\n\nExercises for the toy chapter (solutions are hidden)."
        built = exercises.build_exercise_notebook(nb, TOY_NAME, *[texts] * bool(texts))
        assert built.cells[0].source == f"{expected}\n\nExercises for the toy chapter (solutions are hidden)."
        assert nb.cells[0].source.startswith(title), "the solution notebook keeps its own title"


def test_mutation_test_reports_a_reference_that_fails_and_a_replacement_that_does_not_apply(tmp_path):
    nb = toy_solution_notebook()
    nb.cells[8].source = nb.cells[8].source.replace("6.0", "7.0")  # the check now rejects the reference too
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    nbformat.write(nb, str(solutions / TOY_NAME))
    write_catalogue(solutions, TOY_CATALOGUE.replace('"np.sum("', '"np.total("').replace('[("np.mean(", ', '[("np.average(", '))
    report = exercises.mutation_test(solutions / TOY_NAME, log=lambda line: None)
    assert any(problem.startswith("exercise 3.2: the reference answer fails its own check") for problem in report.problems)
    assert any("'np.average(' does not occur in the reference solution cell" in problem for problem in report.problems)
    assert not report.ok


def test_check_cells_call_learner_code_only_through_a_wrapper():
    """Issue 38: 5.5's check called replica_plan outside checked_call; an answer that raised gave a bare traceback
    and the grader recorded `error` without a hint. Every call of a name a solution cell defines goes through
    checked_call / check_function / check_raises (a lambda passed to them is deferred; an argument is not)."""
    nb = toy_solution_notebook()
    nb.cells[4].source += ('\nhalf = softmax(np.zeros(2))\n'
                           'check_function("softmax", lambda x: softmax(x), reference_softmax, lambda rng: rng.normal(size=3))\n'
                           'checked_call("softmax", softmax, softmax(np.zeros(3)))\n'
                           'checked_call("softmax", softmax, np.zeros(3))\n')
    problems = exercises.unwrapped_calls(nb, TOY_NAME)
    assert problems == [f"{TOY_NAME}, exercise 3.1, cell 4, line {line}: softmax(...) is called outside checked_call "
                        f"or check_function" for line in (7, 9)]


def test_two_checks_of_one_exercise_never_share_a_name():
    """Issue 35: 3.5 printed "✔ answers: as expected" and then "✘ answers is not what was expected"."""
    nb = toy_solution_notebook()
    nb.cells[8].source = 'check_true("mean_of_squares", True, "", "")\n' + nb.cells[8].source
    assert exercises.duplicate_check_names(nb, TOY_NAME) == [f"{TOY_NAME}, exercise 3.2: two checks named "
                                                             f"'mean_of_squares'"]
