"""The English chapters stay within their word budget (issue 56: at most 19,500 words of prose, about 30% under the
27,380 of the wave before, against d2l's ~4,900 for its BERT sections).

Prose is the words of the markdown cells: the runs between spaces that hold a letter or a digit (so a table's pipes
and rules and a lone dash are not words), without fenced code and HTML comments (neither is read as prose); tables
count, since a learner reads them. The Chinese edition follows the English paragraph by
paragraph, so it is not counted separately.
"""

import re

import nbformat

from tools.repo_paths import REPO_ROOT

BUDGET = 19_500
WORD = re.compile(r"\w")
FENCE = re.compile(r"```.*?```", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)


def prose_words(markdown):
    return sum(1 for token in COMMENT.sub("", FENCE.sub("", markdown)).split() if WORD.search(token))


def chapter_words(path):
    notebook = nbformat.read(path, as_version=4)
    return sum(prose_words(cell.source) for cell in notebook.cells if cell.cell_type == "markdown")


def test_the_counter_skips_code_and_comments_and_counts_tables():
    text = "One two - three.\n\n```python\nx = 1  # not prose\n```\n<!-- a note -->\n| a | b |\n|---|---|\n| 1 | 2 |"
    assert prose_words(text) == 3 + 2 + 2


def test_the_english_chapters_fit_their_word_budget():
    chapters = sorted((REPO_ROOT / "notebooks").glob("0*.ipynb"))
    assert len(chapters) == 10, [path.name for path in chapters]
    words = {path.name: chapter_words(path) for path in chapters}
    total = sum(words.values())
    assert total <= BUDGET, (f"{total:,} words of English prose, over the budget of {BUDGET:,}: "
                             + ", ".join(f"{name} {count:,}" for name, count in sorted(words.items())))
