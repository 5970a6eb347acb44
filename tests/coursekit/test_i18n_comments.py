"""The comments of a solution notebook's code cells reach a translated edition through its catalogue
(`coursekit.i18n.comments`): extracted by `update` as entries of their cell, written by `build` into the solutions'
and exercises' code at the comment's place, fuzzy when the English changes, never in a chapter's code.

References: the English cells written here (which lines are comments is Python's `tokenize`, not ours) and the
English build, whose every line that is not a translated comment must come back byte for byte.
"""

import json
import shutil
from pathlib import Path

import nbformat
import polib
import pytest

from coursekit import i18n
from coursekit.i18n.comments import KIND, comment_blocks
from tests.coursekit.conftest import selected

REPO = Path(__file__).resolve().parents[2]
SPEC = "# The names the check reads:\n#   answer: int, the number of tokens\n#       (padding not counted)"
SOLUTION = (SPEC + "\n### BEGIN SOLUTION\n# how: count them\nanswer = 3  # three\n### END SOLUTION\n"
            'text = """\n# not a comment: inside a string\n"""')
FUNCTION = "def f(x):\n    # Say what f returns.\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION"
CHECK = ("# First, one row by hand.\n# NBVAL_IGNORE_OUTPUT\nassert answer == 3\n### BEGIN HIDDEN TESTS\n"
         "# hidden: never shown\nassert f(1) == 1\n### END HIDDEN TESTS")
CHAPTER_CODE = "# A chapter's comment stays English.\nx = 1"
SHOWN = ["The names the check reads:\n  answer: int, the number of tokens\n      (padding not counted)",
         "Say what f returns.", "First, one row by hand."]
CHINESE = {SHOWN[0]: "检查读取的名称：\n  answer：int，词元数\n      （不计填充）", SHOWN[1]: "说明 f 返回什么。",
           SHOWN[2]: "先手算一行。"}


def notebook(cells, key):
    nb = nbformat.v4.new_notebook()
    nb.metadata[key] = {}
    for index, (kind, source, info) in enumerate(cells):
        cell = nbformat.v4.new_markdown_cell(source) if kind == "markdown" else nbformat.v4.new_code_cell(source)
        cell.id = f"cell{index}"
        if info:
            cell.metadata[key] = info
        nb.cells.append(cell)
    return nb


@pytest.fixture()
def course(toy_course_root, tmp_path):
    """A copy of the toy course with one chapter and its solution notebook (exercise 1.1)."""
    root = tmp_path / "course"
    shutil.copytree(toy_course_root, root)
    key = "toycourse"
    (root / "notebooks").mkdir()
    (root / "solutions").mkdir()
    (root / "i18n" / "zh").mkdir(parents=True, exist_ok=True)
    (root / "docs").mkdir(exist_ok=True)
    shutil.copy(REPO / "docs" / "glossary.md", root / "docs" / "glossary.md")  # what `check` reads terms from
    nbformat.write(notebook([("markdown", "# One", None), ("code", CHAPTER_CODE, None)], key),
                   root / "notebooks" / "01_one.ipynb")
    nbformat.write(notebook([("markdown", "# One (solutions)\n\nCount the tokens.", None),
                             ("code", SOLUTION, {"exercise": "1.1", "role": "solution"}),
                             ("code", FUNCTION, {"exercise": "1.1", "role": "solution"}),
                             ("code", CHECK, {"exercise": "1.1", "role": "check"})], key),
                   root / "solutions" / "01_one.ipynb")
    with selected(root):
        yield root


def code_of(path):
    return ["".join(cell["source"]) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
            if cell["cell_type"] == "code"]


def translate(root, chinese):
    path = i18n.translation_path(root, "zh", "solutions", "01_one")
    catalogue = polib.pofile(str(path))
    for entry in catalogue:
        if entry.msgid in chinese:
            entry.msgstr, entry.flags = chinese[entry.msgid], []
    catalogue.save()


def test_comment_blocks_are_the_comments_the_learner_sees():
    assert [text for _, _, _, text in comment_blocks(SOLUTION)] == [SHOWN[0]]  # not the solution's, not a string
    assert [text for _, _, _, text in comment_blocks(FUNCTION)] == [SHOWN[1]]
    assert [(first, last, indent) for first, last, indent, _ in comment_blocks(FUNCTION)] == [(1, 1, "    ")]
    assert [text for _, _, _, text in comment_blocks(CHECK)] == [SHOWN[2]]  # not nbval's, not the hidden test's
    assert comment_blocks("x = (\n# unclosed") == []  # a cell that does not tokenize has none


def test_update_extracts_the_comments_and_build_writes_their_translation(course):
    i18n.update(course, "zh")
    entries = [entry for entry in polib.pofile(str(i18n.translation_path(course, "zh", "solutions", "01_one")))
               if entry.comment == KIND]
    assert [(entry.msgctxt, entry.msgid) for entry in entries] == [("cell1", SHOWN[0]), ("cell2", SHOWN[1]),
                                                                   ("cell3", SHOWN[2])]
    template = polib.pofile(str(i18n.template_path(course, "solutions", "01_one")))
    assert [entry.msgid for entry in template if entry.comment == KIND] == SHOWN
    chapter = polib.pofile(str(i18n.translation_path(course, "zh", "notebooks", "01_one")))
    assert all(entry.comment != KIND for entry in chapter)  # a chapter's code is never translated
    assert sum(line.startswith("== solutions/01_one cell") for line in i18n.todo(course, "zh")) == 5  # and 2 of markdown

    translate(course, CHINESE)
    i18n.build(course, "zh")
    solution = code_of(course / "solutions" / "zh" / "01_one.ipynb")
    assert solution[0] == SOLUTION.replace(SPEC, "# 检查读取的名称：\n#   answer：int，词元数\n#       （不计填充）")
    assert solution[1] == FUNCTION.replace("# Say what f returns.", "# 说明 f 返回什么。")
    assert solution[2] == CHECK.replace("# First, one row by hand.", "# 先手算一行。")
    exercise = code_of(course / "exercises" / "zh" / "01_one.ipynb")
    assert exercise[0].startswith("# 检查读取的名称：\n#   answer：int，词元数\n#       （不计填充）\n# ")
    assert "    # 说明 f 返回什么。\n" in exercise[1] and "# 先手算一行。" in exercise[2]
    assert code_of(course / "notebooks" / "zh" / "01_one.ipynb") == [CHAPTER_CODE]
    assert [line for line in i18n.todo(course, "zh") if "cell1" in line or "cell2" in line] == []
    assert i18n.check(course, "zh").orphans == []


def test_a_changed_comment_comes_back_fuzzy_and_shows_in_english_until_reviewed(course):
    i18n.update(course, "zh")
    translate(course, CHINESE)
    path = course / "solutions" / "01_one.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[3].source = nb.cells[3].source.replace("one row by hand.", "one row by hand, then two.")
    nbformat.write(nb, path)
    i18n.update(course, "zh")
    entry = next(entry for entry in polib.pofile(str(i18n.translation_path(course, "zh", "solutions", "01_one")))
                 if entry.msgctxt == "cell3" and not entry.obsolete)
    assert entry.msgid == "First, one row by hand, then two." and "fuzzy" in entry.flags
    assert entry.previous_msgid == SHOWN[2] and entry.msgstr == CHINESE[SHOWN[2]]
    i18n.build(course, "zh")
    assert code_of(course / "solutions" / "zh" / "01_one.ipynb")[2].startswith("# First, one row by hand, then two.")
    assert any("cell3 (stale)" in line for line in i18n.todo(course, "zh"))


def test_the_check_reads_a_comment_as_prose_around_code(course):
    """A comment's code (`epochs_of_corpus`, `{"text": float}`) is neither a glossary variant ("epoch") nor Chinese
    in straight quotes; its Chinese still is checked: 轮次 for epoch is reported, naming the cell."""
    i18n.update(course, "zh")
    translate(course, {**CHINESE, SHOWN[1]: '说明 f 返回什么：epochs_of_corpus，{"text": float}，按轮计'})
    i18n.build(course, "zh")
    coverage = i18n.check(course, "zh")
    assert coverage.glossary == [] and coverage.typesetting == []
    translate(course, {SHOWN[1]: "说明 f 返回什么：训练的轮次"})
    i18n.build(course, "zh")
    (problem,) = i18n.check(course, "zh").glossary
    assert "cell cell2" in problem and "轮次" in problem


def test_a_docstring_the_learner_sees_is_a_unit_and_comes_back_translated_between_its_quotes():
    """A stub's docstring states its names and types ("(batch, seq) mask -> boolean"): outside the regions it is a
    unit (its text as `inspect.cleandoc` reads it) and the edition writes the translation between the same triple
    quotes at the same indentation. One inside a solution region, or one whose translation could not stand between
    triple quotes, stays as written; the code lines come back byte for byte."""
    from coursekit.i18n.comments import comment_texts, translate_comments

    source = ('def mask(padding, causal=False):\n    """(batch, seq) 0/1 mask -> (batch, 1, seq, seq) boolean.\n\n'
              '    Key j must be real."""\n    ### BEGIN SOLUTION\n    def helper():\n        """Hidden."""\n'
              '    return padding\n    ### END SOLUTION\n\n\nclass Quiz:\n    """Five statements."""\n    n = 5')
    shown = ["(batch, seq) 0/1 mask -> (batch, 1, seq, seq) boolean.\n\nKey j must be real.", "Five statements."]
    assert comment_texts(source) == shown  # "Hidden." is inside the region
    chinese = {shown[0]: "(batch, seq) 的 0/1 掩码 → (batch, 1, seq, seq) 的布尔值。\n\n键 j 必须是真实词元。",
               shown[1]: "五个陈述。"}
    translated = translate_comments(source, chinese)
    assert '    """(batch, seq) 的 0/1 掩码 → (batch, 1, seq, seq) 的布尔值。\n\n    键 j 必须是真实词元。"""\n' in translated
    assert '    """五个陈述。"""\n' in translated and '"""Hidden."""' in translated
    code = [line for line in source.split("\n") if '"""' not in line and line.strip() and "Key j" not in line]
    assert [line for line in translated.split("\n") if line in code] == code
    compile(translated, "translated", "exec")  # still Python
    unsafe = translate_comments(source, {shown[1]: 'say """ this'})
    assert '"""Five statements."""' in unsafe
