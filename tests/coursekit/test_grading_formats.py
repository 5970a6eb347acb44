"""Grades that plug in (issue 57): Gradescope's results.json, a ready Gradescope autograder, a Canvas gradebook import.

The files are checked against the formats' published fields (Gradescope's autograder specification, "Output format";
the columns of Canvas's gradebook export, which its import reads), and their points against grades.csv of the same
submissions. The slow tests grade the toy course of test_exercises.py: one sandboxed run for Canvas and the CSV,
one run of the generated `run_autograder` per isolation. The course is the toy course of conftest.py (what the
autograder carries of the BERT course is checked in tests/course/test_kit_integration.py).
"""

import csv
import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from coursekit import course as kit_course
from coursekit import exercises, grading
from coursekit.grading import autograder, formats
from coursekit.grading.outcome import Outcome, Status
from coursekit.grading.report import Grade
from tests.coursekit.test_exercises import TOY_NAME, TOY_POINTS, main, write_toy_course
from tests.coursekit.test_grading import private_run_registry, read_csv, replace_cell_source  # noqa: F401 (a fixture)
from tools.repo_paths import REPO_ROOT

pytestmark = pytest.mark.usefixtures("toy_course_module")

# Gradescope's autograder specification, "Output format": the fields and values this writer may use
GRADESCOPE_TOP = {"score", "execution_time", "output", "visibility", "stdout_visibility", "extra_data", "tests",
                  "leaderboard", "output_format", "test_output_format", "test_name_format"}
GRADESCOPE_TEST = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
                   "tags", "visibility", "extra_data"}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}

CANVAS_EXPORT = (  # the first rows of Canvas's Grades > Export, as it writes them
    'Student,ID,SIS User ID,SIS Login ID,Section,03_toy (4242),Quiz 1 (17),Current Score\n'
    '    Points Possible,,,,,4.00,10.00,(read only)\n'
    '"Lovelace, Ada",101,S101,ada,Section A,,8.00,80\n'
    '"Hopper, Grace",102,S102,grace,Section A,,9.00,90\n'
    '"Turing, Alan",103,S103,alan,Section B,,7.00,70\n'
    '"Student, Test",999,,,Section A,,,\n')


HIDDEN_3_2 = ('check_shape("mean_of_squares", mean_of_squares, ())  # a number: all the public part sees\n'
              '### BEGIN HIDDEN TESTS\ncheck_close("mean_of_squares", mean_of_squares, 6.0)\n'
              '### END HIDDEN TESTS\ndone("3.2")')


def wrong_3_2(nb):
    replace_cell_source(nb, "3.2", "solution", "np.arange(5) ** 2", "np.arange(5)")
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory, toy_course_module):
    """The toy course, with exercise 3.2's expected value in hidden tests."""
    root = tmp_path_factory.mktemp("course")
    write_toy_course(root)
    nb = exercises.read_notebook(root / "solutions" / TOY_NAME)
    (check,) = exercises.exercise_cells(nb)["3.2"]["check"]
    nb.cells[check].source = HIDDEN_3_2
    nbformat.write(nb, str(root / "solutions" / TOY_NAME))
    exercises.build(root / "solutions", root / "exercises")
    return root


def submissions(course, folder):
    """Ada's folder (named by her SIS Login ID), and Grace's file as Canvas's "Download Submissions" names it."""
    solution = exercises.read_notebook(course / "solutions" / TOY_NAME)
    (folder / "ada").mkdir(parents=True)
    nbformat.write(solution, str(folder / "ada" / TOY_NAME))
    nbformat.write(wrong_3_2(exercises.read_notebook(course / "solutions" / TOY_NAME)),
                   str(folder / f"hoppergrace_LATE_102_5555_{TOY_NAME}"))
    return folder


def row(exercise, points, status, message="", note="", hidden=False, notebook="sub/03_toy.ipynb"):
    return Grade(notebook, exercise, points, Outcome(status, message), note, hidden)


# ------------------------------------------------------------------------------------------ fast: the formats

def test_gradescope_results_hold_one_test_per_exercise_in_the_specifications_fields():
    rows = [row("3.1", 1, Status.PASSED), row("3.2", 2, Status.FAILED, "Expected: 6.0\nGot:      2.0", hidden=True),
            row("3.3", 1, Status.TIMEOUT, "the notebook passed its time limit", note="renamed: x")]
    results = formats.gradescope_results(rows, isolation="sandboxed", seconds=12.4)
    assert set(results) <= GRADESCOPE_TOP and results["score"] == 1 and results["execution_time"] == 12
    assert results["output"] == "sandboxed" and results["visibility"] in VISIBILITIES
    assert results["stdout_visibility"] in VISIBILITIES
    for test in results["tests"]:
        assert set(test) <= GRADESCOPE_TEST and test["status"] in {"passed", "failed"}
        assert test["visibility"] in VISIBILITIES and isinstance(test["output"], str) and test["output"]
    assert [(test["name"], test["number"], test["score"], test["max_score"], test["status"], test["visibility"])
            for test in results["tests"]] == [
        ("Exercise 3.1", "3.1", 1, 1, "passed", "visible"),
        ("Exercise 3.2", "3.2", 0, 2, "failed", "after_published"),
        ("Exercise 3.3", "3.3", 0, 1, "failed", "visible")]
    assert "Expected: 6.0" in results["tests"][1]["output"] and "renamed: x" in results["tests"][2]["output"]
    assert formats.gradescope_results(rows, hidden_visibility="hidden")["tests"][1]["visibility"] == "hidden"
    with pytest.raises(ValueError, match="hidden_visibility"):
        formats.gradescope_results(rows, hidden_visibility="later")
    json.loads(formats.gradescope_text(rows))  # the file is JSON


def test_a_canvas_export_is_read_as_canvas_writes_it_and_the_gradebook_keeps_its_columns(tmp_path):
    export = tmp_path / "export.csv"
    export.write_text(CANVAS_EXPORT, encoding="utf-8-sig")  # Canvas's export starts with a byte order mark
    roster = formats.read_roster(export)
    assert [student["SIS Login ID"] for student in roster.students] == ["ada", "grace", "alan"], "no test student"
    assert roster.assignment_headers == ("03_toy (4242)", "Quiz 1 (17)")
    assert roster.header_for("03_toy") == "03_toy (4242)", "an existing assignment keeps its Canvas id"
    assert roster.header_for("04_other") == "04_other", "a new one is a new column"
    grades = [row("3.1", 1, Status.PASSED, notebook="a.ipynb"), row("3.2", 2, Status.PASSED, notebook="a.ipynb"),
              row("3.1", 1, Status.FAILED, notebook="g.ipynb"), row("3.2", 2, Status.PASSED, notebook="g.ipynb")]
    students = {"a.ipynb": roster.students[0], "g.ipynb": roster.students[1]}
    text = formats.canvas_gradebook(grades, roster, students, {"a.ipynb": "03_toy", "g.ipynb": "03_toy"})
    table = list(csv.reader(text.splitlines()))
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "03_toy (4242)"]
    assert table[1] == ["    Points Possible", "", "", "", "", "3"]
    assert table[2:] == [["Lovelace, Ada", "101", "S101", "ada", "Section A", "3"],
                         ["Hopper, Grace", "102", "S102", "grace", "Section A", "2"],
                         ["Turing, Alan", "103", "S103", "alan", "Section B", ""]], "no submission: left as it is"
    bad = tmp_path / "bad.csv"
    bad.write_text("Name,Score\nAda,3\n")
    with pytest.raises(formats.FormatError, match="Student, ID, SIS User ID, SIS Login ID, Section"):
        formats.read_roster(bad)


def test_submissions_are_placed_by_folder_or_canvas_download_name_and_the_unplaced_are_named(course, tmp_path):
    roster = formats.read_roster(_export(tmp_path))
    folder = submissions(course, tmp_path / "submissions")
    plans = grading.identify_submissions(grading.find_notebooks([folder]),
                                         exercises.solution_notebooks(course / "solutions"))
    students, assignments = formats.match_students(plans, roster, [folder])
    assert {name: student["Student"] for name, student in students.items()} == {
        str(folder / "ada" / TOY_NAME): "Lovelace, Ada",
        str(folder / f"hoppergrace_LATE_102_5555_{TOY_NAME}"): "Hopper, Grace"}
    assert set(assignments.values()) == {"03_toy"}
    shutil.copy(folder / "ada" / TOY_NAME, folder / "ada" / "03_toy_v2.ipynb")
    (folder / "nobody").mkdir()
    shutil.copy(folder / "ada" / TOY_NAME, folder / "nobody" / TOY_NAME)
    plans = grading.identify_submissions(grading.find_notebooks([folder]),
                                         exercises.solution_notebooks(course / "solutions"))
    with pytest.raises(formats.FormatError) as refused:
        formats.match_students(plans, roster, [folder])
    assert "are both Lovelace, Ada's 03_toy: keep one" in str(refused.value)
    assert "nobody/03_toy.ipynb matches no student of the roster" in str(refused.value)


def test_the_command_line_refuses_a_format_without_what_it_needs_before_any_work(course, tmp_path, capsys):
    arguments = ["grade", str(course / "solutions" / TOY_NAME), "--solutions", str(course / "solutions")]
    assert main([*arguments, "--format", "canvas", "--out", str(tmp_path / "gradebook.csv")]) == 2
    assert "--format canvas needs --roster" in capsys.readouterr().out
    assert main([*arguments, "--roster", str(_export(tmp_path)), "--out", str(tmp_path / "g.csv")]) == 2
    assert "--roster is for --format canvas" in capsys.readouterr().out
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(course / "solutions" / TOY_NAME, alone / "someone.ipynb")
    assert main(["grade", str(alone), "--solutions", str(course / "solutions"), "--format", "canvas", "--roster",
                 str(_export(tmp_path)), "--out", str(tmp_path / "gradebook.csv")]) == 2
    assert "someone.ipynb matches no student of the roster" in capsys.readouterr().out
    assert not list(tmp_path.glob("gradebook*")), "nothing written"


def test_the_command_line_writes_gradescopes_file_with_the_csvs_points(course, tmp_path, monkeypatch):
    """The plumbing of `--format gradescope`, on runs stubbed to end with a dead kernel (fast): one test per
    exercise, the same points and statuses as the CSV's rows."""
    monkeypatch.setattr(grading.grader, "run_cells",
                        lambda *args, **kwargs: grading.NotebookRun(ending=grading.Ending.KERNEL_DIED))
    notebook = str(course / "solutions" / TOY_NAME)
    arguments = ["grade", notebook, "--solutions", str(course / "solutions"), "--timeout", "5"]
    assert main([*arguments, "--out", str(tmp_path / "grades.csv")]) == 0
    assert main([*arguments, "--format", "gradescope", "--hidden-visibility", "hidden",
                 "--out", str(tmp_path / "results.json")]) == 0
    rows = read_csv(tmp_path / "grades.csv")
    results = json.loads((tmp_path / "results.json").read_text())
    assert sorted(path.name for path in tmp_path.iterdir()) == ["grades.csv", "grades.md", "grades_feedback",
                                                                "results.json"], "only results.json for Gradescope"
    assert [(test["number"], test["score"], test["max_score"], test["status"]) for test in results["tests"]] == [
        (grade["exercise"], int(grade["score"]), int(grade["max_score"]),
         "passed" if grade["status"] == "passed" else "failed") for grade in rows]
    assert results["score"] == sum(int(grade["score"]) for grade in rows)
    assert [test["visibility"] for test in results["tests"]] == ["visible", "hidden", "visible"]
    assert all(grade["message"].split(" | ")[0] in test["output"] for grade, test in zip(rows, results["tests"]))


def test_the_autograder_folder_holds_gradescopes_two_scripts_the_course_settings_and_the_checks(course, tmp_path,
                                                                                                  toy_course_module):
    folder = autograder.write_autograder(tmp_path / "autograder", solutions_dir=course / "solutions",
                                         timeout=90, wheels=False)
    names = sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())
    assert names == ["course/pyproject.toml", f"course/solutions/{TOY_NAME}", "run_autograder", "setup.sh"]
    for script in ("setup.sh", "run_autograder"):
        assert os.access(folder / script, os.X_OK) and (folder / script).read_text().startswith("#!/usr/bin/env bash")
        subprocess.run(["bash", "-n", str(folder / script)], check=True)  # it parses
    assert "/autograder" in (folder / "run_autograder").read_text() and "--timeout 90" in (
        folder / "run_autograder").read_text()
    setup = (folder / "setup.sh").read_text()
    assert "apt-get install -y --no-install-recommends bubblewrap" in setup
    assert "\npip install numpy\n" in setup and "pip install sys" not in setup, "what the notebooks import"
    assert "pip install toycourse" not in setup, "a course package comes as a wheel"
    table = kit_course.tomllib.loads((folder / "course" / "pyproject.toml").read_text())["tool"]["coursekit"]
    settings = kit_course.current(folder / "course")
    toy = kit_course.current(toy_course_module)
    assert settings.solutions == folder / "course" / "solutions" and set(table) <= set(kit_course.DEFAULTS)
    assert (settings.kernel_packages, settings.hooks, settings.metadata_key, settings.fast_variable) == (
        toy.kernel_packages, toy.hooks, toy.metadata_key, toy.fast_variable) == (
        ("toycourse",), "toycourse.kit", "toycourse", "TOYCOURSE_FAST")
    with pytest.raises(grading.GradingInputError, match="exists"):
        autograder.write_autograder(folder, solutions_dir=course / "solutions", wheels=False)
    assert autograder.distribution_folders(toy) == {
        REPO_ROOT / "coursekit": [REPO_ROOT / "coursekit" / "coursekit"],
        toy_course_module: [toy_course_module / "toycourse"]}, "what setup.sh installs"


def _export(tmp_path):
    export = tmp_path / "export.csv"
    if not export.exists():
        export.write_text(CANVAS_EXPORT, encoding="utf-8-sig")
    return export


# ------------------------------------------------------------------------- slow: the points agree, end to end

@pytest.mark.slow
def test_canvas_cells_and_gradescope_totals_equal_the_csv_of_the_same_submissions(course, tmp_path, capsys):
    folder = submissions(course, tmp_path / "submissions")
    gradebook = tmp_path / "gradebook.csv"
    assert main(["grade", str(folder), "--solutions", str(course / "solutions"), "--format", "canvas",
                 "--roster", str(_export(tmp_path)), "--out", str(gradebook), "--timeout", "90", "--jobs", "2"]) == 0
    rows = read_csv(tmp_path / "gradebook_grades.csv")
    csv_totals = {}
    for grade in rows:
        who = "ada" if "/ada/" in grade["notebook"] else "grace"
        csv_totals[who] = csv_totals.get(who, 0) + int(grade["score"])
    assert csv_totals == {"ada": sum(TOY_POINTS.values()), "grace": sum(TOY_POINTS.values()) - TOY_POINTS["3.2"]}
    table = {line["SIS Login ID"]: line for line in read_csv(gradebook)}
    assert table["ada"]["03_toy (4242)"] == str(csv_totals["ada"])
    assert table["grace"]["03_toy (4242)"] == str(csv_totals["grace"])
    assert table["alan"]["03_toy (4242)"] == "" and table[""]["03_toy (4242)"] == str(sum(TOY_POINTS.values()))

    root = _autograder_root(course, tmp_path, folder / f"hoppergrace_LATE_102_5555_{TOY_NAME}")
    completed = _run_autograder(root, os.environ["PATH"])
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == csv_totals["grace"] == sum(test["score"] for test in results["tests"])
    grace_rows = {grade["exercise"]: grade for grade in rows if "/ada/" not in grade["notebook"]}
    assert {test["number"]: (test["score"], test["max_score"]) for test in results["tests"]} == {
        exercise: (int(grade["score"]), int(grade["max_score"])) for exercise, grade in grace_rows.items()}
    assert {test["number"]: test["visibility"] for test in results["tests"]} == {
        "3.1": "visible", "3.2": "after_published", "3.3": "visible"}, "3.2's check has hidden tests"
    assert "6.0" in results["tests"][1]["output"], "the hidden test's message, shown once grades are published"
    assert results["output"].startswith("Graded in a bubblewrap sandbox")


@pytest.mark.slow
def test_where_the_container_gives_bubblewrap_no_namespaces_the_autograder_says_what_isolates_it(course, tmp_path):
    root = _autograder_root(course, tmp_path, course / "solutions" / TOY_NAME)
    tools = tmp_path / "bin"  # a container without bubblewrap's namespaces: here, without bwrap
    tools.mkdir()
    for tool in ("bash", "sh", "unshare", "setpriv", "mount", "env"):
        if shutil.which(tool):
            (tools / tool).symlink_to(shutil.which(tool))
    # in a network namespace of its own, as in Gradescope's container: the run registry is per network namespace, so
    # a grading run elsewhere on this machine (another test worker's) is not beside this unsafe one
    completed = _run_autograder(root, str(tools), prefix=[shutil.which("unshare"), "--net", *(
        [] if os.geteuid() == 0 else ["--map-root-user"])])
    assert completed.returncode == 0, completed.stdout + completed.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == sum(TOY_POINTS.values())
    assert "could not start in this grading container (`bwrap` is not installed)" in results["output"]
    assert "a fresh container of its own" in results["output"] and "without the sandbox" in results["output"]
    assert all("graded without a sandbox" in test["output"] for test in results["tests"])
    assert "could have changed this submission's own results" in completed.stdout, "the instructor is told"


def _autograder_root(course, tmp_path, notebook):
    """A folder laid out as Gradescope lays out /autograder: source/ (the zip), run_autograder, submission/."""
    root = tmp_path / "autograder-root"
    built = autograder.write_autograder(tmp_path / "built", solutions_dir=course / "solutions", timeout=90,
                                        wheels=False)
    shutil.copytree(built, root / "source")
    shutil.copy2(built / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    shutil.copy(notebook, root / "submission" / notebook.name)
    return root


def _run_autograder(root, path, prefix=()):
    environment = {**os.environ, "PATH": path, autograder.ROOT_VARIABLE: str(root),
                   autograder.PYTHON_VARIABLE: sys.executable}
    return subprocess.run([*prefix, str(root / "run_autograder")], cwd=root, env=environment, capture_output=True,
                          text=True, timeout=300, check=False)
