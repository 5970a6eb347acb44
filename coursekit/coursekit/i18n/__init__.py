"""Translated editions, built from the English notebooks: `coursekit i18n build|check|todo|update|migrate`.

One source, one edition per language. The English notebooks (`notebooks/`, `solutions/`: the course's
`[tool.coursekit]` folders) stay the only notebooks anyone edits. The text of their markdown cells in another
language lives next to them in gettext catalogues, one per notebook and language, with a template per notebook:

    i18n/templates/notebooks/01_problem_setting.pot
    i18n/zh/notebooks/01_problem_setting.po
    i18n/zh/solutions/01_problem_setting.po

(`i18n` is the course's `translations` folder; the languages are its folders of PO files, `languages`), one entry
per paragraph, list item, table, heading or fence of a markdown cell (`blocks`): `msgctxt` the cell id, `msgid`
the English unit, `msgstr` its translation, so translators work in Poedit, Weblate or any PO editor. `update`
writes the templates and merges them into the catalogues as msgmerge does (a changed unit keeps its translation,
`#, fuzzy`, with the English it was written from as `#| msgid`; a new one gets an empty entry); `check` shows what
changed. A fuzzy or empty entry counts as no translation. `migrate` turns the whole-cell catalogues of before into
per-unit ones. docs/translation.md is the translator's guide.

`build` writes `notebooks/<lang>/`, `solutions/<lang>/` and `exercises/<lang>/` (`zh` here):

- every code cell is copied from the English notebook (source, outputs, metadata), so the code of the two
  editions cannot drift; the outputs are the English run's unless the Chinese notebook holds its own full run of
  exactly this code (`tools/run_notebook.py --full notebooks/zh/...`, `make full`), which are kept
  (`keep_own_run`); `exercises/zh/` is built from `solutions/zh/` by the same function as `exercises/`,
  whose stubs then say `# 在此写下你的代码` and `练习 3.2：在此写下你的代码` where the English say `# YOUR CODE HERE`
  and `Exercise 3.2: write your code here` (the only difference; both raise NotImplementedError);
- every markdown cell gets its translated units; a unit without translation, or whose translation was written for
  an earlier English text, keeps its English after a one-line note (`NOTES`, translated in the language's
  `coursekit.po`), so the edition is always complete and honest;
- the notebook metadata gets `"<metadata_key>": {"lang": "zh", ...}` (the course's `[tool.coursekit]` key, `"bertlib"`
  here), which the course's runtime reads (here `bertlib_course.messages.language()`);
- the course's runtime catalogue (the `.po` its `runtime_catalogue(lang)` hook names: check messages, figure and
  hint strings) is compiled to the `.mo` the course reads, when it lies in the repository.

`check` reports (a) units without translation, (b) translations whose English has changed or that are marked
fuzzy (stale, with the catalogue's file and line), (c) generated notebooks (and the runtime `.mo`) that differ from what `build` would write,
(d) entries for cells that no longer exist, (e) words the glossary (`docs/glossary.md`) lists as variants not to
use, (f) relative links of the translation that lead to no file from the generated notebook, (g) breaches of the typesetting rules (`typesetting_problems`:
spaces against full-width punctuation, quotes, headings, the 【解读者观点】 marker, emphasis, marks such as
第 05 章, 3-5 or a half-width comma beside Chinese), each naming the
translation file, the cell id and the text. By default it fails only on (c), (e), (f) and malformed files;
`--strict` also fails on (a), (b), (d) and (g), and on an edition that was never built.

The parts, bottom to top:

- `blocks`: a markdown cell cut into the units a translator translates, and joined back;
- `catalogues`: the PO files and templates (polib), where they lie, the languages, reading, writing and merging
  them, and the course's runtime catalogue and its compiled `.mo`;
- `migrate`: whole-cell catalogues into per-unit ones, every translation kept;
- `typesetting`: the typesetting rules of Chinese Markdown and the joining of wrapped lines (`unwrap_cjk`);
- `glossary`: the glossary's terms and the variants a text uses instead;
- `extract`: the strings code cells show at run time, read from their source (`_()`-marked or at a plotting call);
- `edition`: the translated notebooks written from the English ones (`build`, `update`);
- `check`: what the edition lacks or breaks (`check`, `todo`, `Coverage`);
- `cli`: the command line.
"""

from coursekit.i18n.blocks import Block, Blocks, split_blocks
from coursekit.i18n.catalogues import (
    PO_WRAP,
    SOURCE_EDITIONS,
    TEMPLATES,
    TranslationFormatError,
    compiled_catalogues,
    english_notebooks,
    languages,
    merge_catalogue,
    new_catalogue,
    new_template,
    own_runtime_catalogue,
    read_catalogue,
    read_entries,
    read_translations,
    runtime_catalogue,
    template_path,
    translation_path,
    update_catalogue,
    write_translation,
)
from coursekit.i18n.check import Coverage, broken_links, check, todo
from coursekit.i18n.cli import add_arguments, run
from coursekit.i18n.edition import (
    EXERCISE_TEXTS,
    EXERCISES,
    NOTES,
    build,
    code_comments,
    exercise_texts,
    expected_edition,
    keep_own_run,
    notes,
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
from coursekit.i18n.migrate import Migration, migrate_catalogue, pair_units
from coursekit.i18n.typesetting import (
    DASH_AND_ELLIPSIS,
    FULL_WIDTH_MARKS,
    MARK_RULES,
    OUR_READING,
    OUR_READING_VARIANTS,
    typesetting_problems,
    unwrap_cjk,
)

__all__ = ["Block", "Blocks", "Coverage", "DASH_AND_ELLIPSIS", "EXERCISE_TEXTS", "EXERCISES", "code_comments",
           "exercise_texts", "FIGURE_KEYWORDS", "FULL_WIDTH_MARKS",
           "GLOSSARY", "LABEL_CALLS", "LABEL_KEYWORDS", "MARK_KEYWORD", "MARK_RULES", "Migration", "NOTES",
           "TEMPLATES", "languages", "merge_catalogue", "migrate_catalogue", "new_template", "notes", "pair_units",
           "read_entries", "split_blocks", "template_path",
           "OUR_READING", "OUR_READING_VARIANTS", "PO_WRAP", "SERIES_CALLS", "SOURCE_EDITIONS", "Term",
           "TranslationFormatError", "add_arguments", "broken_links", "build", "check",
           "compiled_catalogues", "english_notebooks", "expected_edition", "glossary_problems",
           "keep_own_run", "new_catalogue", "own_runtime_catalogue", "read_catalogue", "read_glossary",
           "read_translations", "run", "runtime_catalogue", "runtime_strings", "series_strings", "todo",
           "translate_notebook", "translation_path", "typesetting_problems", "unmarked_figure_text",
           "unmarked_strings", "untranslated_strings", "unwrap_cjk", "update", "update_catalogue",
           "write_translation"]
