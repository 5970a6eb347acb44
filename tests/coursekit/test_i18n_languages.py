"""A third language is a new folder of PO files and nothing else: the kit names no language in its code.

A made-up language ("xx") is added to a copy of the toy course as a translator would add one: a folder
`i18n/xx/` holding the kit's catalogue (`coursekit.po`: the stubs' comment and message, the title words) and a
solution notebook's. The build, the edition's exercise stubs and the grader's choice of feedback language follow.
"""

import json
import shutil

import nbformat
import polib
import pytest

from coursekit import exercises, grading, i18n
from coursekit.i18n.catalogues import new_catalogue
from tests.coursekit.conftest import selected

KIT = {"stub:comment": "ÉCRIVEZ ICI", "stub:message": "Exercice {exercise_id} : écrivez ici",
       "title:solutions": " (corrigés)", "title:exercises": " (exercices)"}


@pytest.fixture()
def course(toy_course_root, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(toy_course_root, root)
    (root / "solutions").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["toycourse"] = {}
    nb.cells = [nbformat.v4.new_markdown_cell("# 01 · Toy (solutions)", id="title"),
                nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION", id="answer",
                                          metadata={"toycourse": {"exercise": "1.1", "role": "solution"}})]
    nbformat.write(nb, root / "solutions" / "01_toy.ipynb")
    with selected(root):
        yield root


def add_language(root, lang):
    """What a translator adds: `i18n/<lang>/coursekit.po` from the kit's template, and the solution's catalogue."""
    kit = i18n.edition.kit_template()
    for entry in kit:
        entry.msgstr = KIT.get(entry.msgctxt, "")
    kit.metadata["Language"] = lang
    (root / "i18n" / lang / "solutions").mkdir(parents=True)
    kit.save(str(root / "i18n" / lang / "coursekit.po"))
    solution = new_catalogue(lang, "solutions/01_toy.ipynb")
    solution.append(polib.POEntry(msgctxt="title", msgid="# 01 · Toy (solutions)", msgstr="# 01 · Jouet (corrigés)"))
    solution.save(str(root / "i18n" / lang / "solutions" / "01_toy.po"))


def test_a_new_folder_of_po_files_is_a_new_language_of_every_part_of_the_kit(course):
    submission = nbformat.v4.new_notebook()
    submission.metadata["toycourse"] = {"lang": "xx"}
    assert i18n.languages(course) == [] and grading.plan.language_of(submission) is None
    add_language(course, "xx")
    assert i18n.languages(course) == ["xx"]
    assert grading.plan.language_of(submission) == "xx"  # the grader gives feedback in the edition's language
    submission.metadata["toycourse"] = {"lang": "yy"}  # a language with no folder is none of the course's
    assert grading.plan.language_of(submission) is None

    i18n.build(course, "xx")
    built = json.loads((course / "exercises" / "xx" / "01_toy.ipynb").read_text(encoding="utf-8"))
    assert "".join(built["cells"][0]["source"]) == "# 01 · Jouet (exercices)"
    assert "".join(built["cells"][1]["source"]) == ('# ÉCRIVEZ ICI\n'
                                                    'raise NotImplementedError("Exercice 1.1 : écrivez ici")')
    assert json.loads((course / "exercises" / "xx" / "01_toy.ipynb").read_text())["metadata"]["toycourse"][
        "lang"] == "xx"
    english = exercises.build_exercise_notebook(exercises.read_notebook(course / "solutions" / "01_toy.ipynb"))
    assert english.cells[1].source == ('# YOUR CODE HERE\n'
                                       'raise NotImplementedError("Exercise 1.1: write your code here")')


def test_a_stub_message_that_loses_its_field_is_refused_naming_the_catalogue(course):
    add_language(course, "xx")
    path = course / "i18n" / "xx" / "coursekit.po"
    kit = polib.pofile(str(path))
    next(entry for entry in kit if entry.msgctxt == "stub:message").msgstr = "Exercice {numéro}"
    kit.save()
    with pytest.raises(i18n.TranslationFormatError, match=r"xx/coursekit\.po.*exercise_id"):
        i18n.build(course, "xx")
