"""The Chinese edition, built from the English notebooks: `coursekit i18n build|check|todo|update`.

One source, two editions. The English notebooks (`notebooks/`, `solutions/`) stay the only notebooks anyone
edits. The Chinese text of their markdown cells lives next to them in gettext catalogues, one per notebook:

    i18n/zh/notebooks/01_problem_setting.po
    i18n/zh/solutions/01_problem_setting.po

one entry per markdown cell: `msgctxt` the cell id, `msgid` the English the Chinese was written from, `msgstr` the
Chinese, so translators work in Poedit, Weblate or any PO editor. When the English cell changes, its msgid no
longer matches: `check` shows what changed, and `update` writes the gettext state for it (as msgmerge does: the new
English as msgid, `#, fuzzy`, the English the Chinese was written from as `#| msgid`), which the editors show as
needing review; it also adds an empty entry for each cell without one. A fuzzy or empty entry counts as no Chinese.

`build` writes `notebooks/zh/`, `solutions/zh/` and `exercises/zh/`:

- every code cell is copied from the English notebook (source, outputs, metadata), so the code of the two
  editions cannot drift; the outputs are the English run's unless the Chinese notebook holds its own full run of
  exactly this code (`tools/run_notebook.py --full notebooks/zh/...`, `make full`), which are kept
  (`keep_own_run`); `exercises/zh/` is built from `solutions/zh/` by the same function as `exercises/`,
  whose stubs then say `# 在此写下你的代码` and `练习 3.2：在此写下你的代码` where the English say `# YOUR CODE HERE`
  and `Exercise 3.2: write your code here` (the only difference; both raise NotImplementedError);
- every markdown cell gets its Chinese text; a cell without Chinese text, or whose Chinese was written for an
  earlier English text, keeps its English with a one-line note, so the edition is always complete and honest;
- the notebook metadata gets `"<metadata_key>": {"lang": "zh", ...}` (the course's `[tool.coursekit]` key, `"bertlib"`
  here), which `bertlib_course.messages.language()` reads;
- the course's runtime catalogue (the `.po` its `runtime_catalogue(lang)` hook names: check messages, figure and
  hint strings) is compiled to the `.mo` the course reads, when it lies in the repository.

`check` reports (a) markdown cells without Chinese text, (b) Chinese text whose English has changed or that is
marked fuzzy (stale), (c) generated notebooks (and the runtime `.mo`) that differ from what `build` would write,
(d) entries for cells that no longer exist, (e) words the glossary (`docs/glossary.md`) lists as variants not to
use, (f) relative links of the Chinese text that lead to no file from the generated notebook, (g) breaches of the typesetting rules (`typesetting_problems`:
spaces against full-width punctuation, quotes, headings, the 【解读者观点】 marker, emphasis, marks such as
第 05 章, 3-5 or a half-width comma beside Chinese), each naming the
translation file, the cell id and the text. By default it fails only on (c), (e), (f) and malformed files;
`--strict` also fails on (a), (b), (d) and (g), and on an edition that was never built.

The parts, bottom to top:

- `catalogues`: the PO files (polib), where they lie, reading, writing and merging them, and the course's runtime
  catalogue and its compiled `.mo`;
- `typesetting`: the typesetting rules of Chinese Markdown and the joining of wrapped lines (`unwrap_cjk`);
- `glossary`: the glossary's terms and the variants a text uses instead;
- `extract`: the strings code cells show at run time, read from their source (`_()`-marked or at a plotting call);
- `edition`: the translated notebooks written from the English ones (`build`, `update`);
- `check`: what the edition lacks or breaks (`check`, `todo`, `Coverage`);
- `cli`: the command line.
"""

from coursekit.i18n.catalogues import (
    LOCALES,
    PO_WRAP,
    SOURCE_EDITIONS,
    TranslationFormatError,
    compiled_catalogues,
    english_notebooks,
    new_catalogue,
    own_runtime_catalogue,
    read_catalogue,
    read_translations,
    runtime_catalogue,
    translation_path,
    update_catalogue,
    write_translation,
)
from coursekit.i18n.check import Coverage, broken_links, check, todo
from coursekit.i18n.cli import LANGUAGES, add_arguments, run
from coursekit.i18n.edition import (
    EXERCISES,
    NOTES,
    build,
    expected_edition,
    keep_own_run,
    translate_notebook,
    update,
)
from coursekit.i18n.extract import (
    FIGURE_KEYWORDS,
    LABEL_CALLS,
    LABEL_KEYWORDS,
    MARK_KEYWORD,
    SERIES_CALLS,
    _shown,  # noqa: F401 (tests/coursekit/test_i18n.py filters with it)
    runtime_strings,
    series_strings,
    unmarked_figure_text,
    unmarked_strings,
    untranslated_strings,
)
from coursekit.i18n.glossary import GLOSSARY, Term, glossary_problems, read_glossary
from coursekit.i18n.typesetting import (
    DASH_AND_ELLIPSIS,
    FULL_WIDTH_MARKS,
    MARK_RULES,
    OUR_READING,
    OUR_READING_VARIANTS,
    typesetting_problems,
    unwrap_cjk,
)

__all__ = ["Coverage", "DASH_AND_ELLIPSIS", "EXERCISES", "FIGURE_KEYWORDS", "FULL_WIDTH_MARKS", "GLOSSARY",
           "LABEL_CALLS", "LABEL_KEYWORDS", "LANGUAGES", "LOCALES", "MARK_KEYWORD", "MARK_RULES", "NOTES",
           "OUR_READING", "OUR_READING_VARIANTS", "PO_WRAP", "SERIES_CALLS", "SOURCE_EDITIONS", "Term",
           "TranslationFormatError", "add_arguments", "broken_links", "build", "check",
           "compiled_catalogues", "english_notebooks", "expected_edition", "glossary_problems",
           "keep_own_run", "new_catalogue", "own_runtime_catalogue", "read_catalogue", "read_glossary",
           "read_translations", "run", "runtime_catalogue", "runtime_strings", "series_strings", "todo",
           "translate_notebook", "translation_path", "typesetting_problems", "unmarked_figure_text",
           "unmarked_strings", "untranslated_strings", "unwrap_cjk", "update", "update_catalogue",
           "write_translation"]
