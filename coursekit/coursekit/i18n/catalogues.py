"""The gettext catalogues of a translated edition: where they lie, and reading, writing and merging them (polib).

One PO file per English notebook, `i18n/<lang>/<edition>/<stem>.po` (`translation_path`), one entry per markdown
cell: `msgctxt` the cell id, `msgid` the English, `msgstr` the translation, written as Poedit and Weblate write
them. `update_catalogue` merges one with the current English as msgmerge does (a changed msgid makes its entry
fuzzy). The course's own runtime catalogue (the `.po` its `runtime_catalogue(lang)` hook names) is found here
too, and compiled to the `.mo` the course reads (`compiled_catalogues`). `SOURCE_EDITIONS` and
`english_notebooks` name the English notebooks that have catalogues.
"""

from pathlib import Path

import polib

from coursekit import course
from coursekit.files import write_text_atomically

SOURCE_EDITIONS = ("notebooks", "solutions")  # edited by hand, in English
LOCALES = {"zh": "zh_CN"}  # the PO header's Language
PO_WRAP = 120  # the line width polib wraps msgid and msgstr at (Poedit keeps a file's own wrapping)


class TranslationFormatError(ValueError):
    """A translation file that cannot be read as `coursekit.i18n` describes; the message names it."""


def source_text(source):
    return "".join(source) if isinstance(source, list) else str(source)


def english_notebooks(root, edition):
    folder = Path(root) / edition
    return sorted(folder.glob("*.ipynb")) if folder.is_dir() else []


def translation_path(root, lang, edition, stem):
    """`<root>/i18n/<lang>/<edition>/<stem>.po`, the Chinese text of one English notebook."""
    return Path(root) / "i18n" / lang / edition / f"{stem}.po"


def new_catalogue(lang, project, comment=None):
    """An empty PO catalogue with the header gettext tools require (`msgfmt --check` accepts it); no dates, so
    rewriting a file changes only its entries."""
    catalogue = polib.POFile(wrapwidth=PO_WRAP)
    catalogue.header = comment or (f"The {lang} text of {project}, one entry per markdown cell (msgctxt: the cell "
                                   f"id).\nOpen it in Poedit or Weblate; `coursekit i18n build` writes the edition.")
    catalogue.metadata = {"Project-Id-Version": project, "Language": LOCALES.get(lang, lang), "MIME-Version": "1.0",
                          "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit",
                          "Plural-Forms": "nplurals=1; plural=0;"}
    return catalogue


def read_catalogue(path):
    """The polib catalogue at `path`, or a `TranslationFormatError` naming it."""
    try:
        return polib.pofile(str(path), wrapwidth=PO_WRAP)
    except (OSError, ValueError) as error:  # polib raises OSError on a syntax error
        raise TranslationFormatError(f"{path}: not a readable PO file ({error})") from error


def read_translations(path):
    """`{cell_id: {"en", "zh", "fuzzy", "previous"}}` of the translated entries of one catalogue (`{}` when it does
    not exist): `en` is the msgid, `previous` the `#| msgid` of a fuzzy entry (the English the Chinese was written
    from) or "". Untranslated (empty) and obsolete entries are left out: they hold no Chinese."""
    path = Path(path)
    if not path.exists():
        return {}
    entries, seen = {}, set()
    for entry in read_catalogue(path):
        if entry.obsolete:
            continue
        if not entry.msgctxt:
            raise TranslationFormatError(f"{path}: the entry {entry.msgid[:40]!r} needs a msgctxt (its cell id)")
        if entry.msgctxt in seen:
            raise TranslationFormatError(f"{path}: two entries for the cell {entry.msgctxt!r} (msgctxt)")
        seen.add(entry.msgctxt)
        if entry.msgstr.strip():
            entries[entry.msgctxt] = {"en": entry.msgid, "zh": entry.msgstr, "fuzzy": "fuzzy" in entry.flags,
                                      "previous": entry.previous_msgid or ""}
    return entries


def write_translation(root, lang, edition, stem, cell_id, zh, english_source):
    """Records the Chinese text of one cell, with the English it was written from (used when translating)."""
    path = translation_path(root, lang, edition, stem)
    catalogue = read_catalogue(path) if path.exists() else new_catalogue(lang, f"{edition}/{stem}.ipynb")
    entry = next((entry for entry in catalogue if entry.msgctxt == cell_id and not entry.obsolete), None)
    if entry is None:
        entry = polib.POEntry(msgctxt=cell_id)
        catalogue.append(entry)
    entry.msgid, entry.msgstr = source_text(english_source), source_text(zh)
    entry.flags = [flag for flag in entry.flags if flag != "fuzzy"]
    entry.previous_msgid = None
    write_text_atomically(path, str(catalogue))
    return path


def update_catalogue(path, lang, project, english):
    """Brings the catalogue at `path` up to date with `english` (`{cell_id: markdown}`, in notebook order), as
    msgmerge does: an entry whose English changed gets it as msgid, `#, fuzzy` and its old msgid as `#| msgid`
    (kept from an earlier change); a cell without entry gets an empty one. Entries of cells that are gone stay
    (`check` lists them). Returns True when the file changed."""
    path = Path(path)
    catalogue = read_catalogue(path) if path.exists() else new_catalogue(lang, project)
    before = str(catalogue)
    entries = {entry.msgctxt: entry for entry in catalogue if not entry.obsolete}
    for cell_id, text in english.items():
        entry = entries.get(cell_id)
        if entry is None:
            catalogue.append(polib.POEntry(msgctxt=cell_id, msgid=text, msgstr=""))
        elif entry.msgid != text:
            if entry.msgstr and "fuzzy" not in entry.flags:
                entry.flags.append("fuzzy")
                entry.previous_msgid = entry.msgid
            entry.msgid = text
    if str(catalogue) == before and path.exists():
        return False
    write_text_atomically(path, str(catalogue))
    return True


def runtime_catalogue(lang="zh"):
    """The course's runtime catalogue (`.po`): its check messages, figure and hint strings, as the course's
    `runtime_catalogue(lang)` hook names it; None for a course without one (its runtime strings are not checked)."""
    path = course.hook("runtime_catalogue", lambda lang: None)(lang)
    return None if path is None else Path(path)


def own_runtime_catalogue(root, lang="zh"):
    """The runtime catalogue when it lies in `root`, else None: `build` and `update` on a copy of the chapters
    elsewhere (as in the tests) leave the installed course alone."""
    path = runtime_catalogue(lang)
    if path is None:
        return None
    path = path.resolve()
    return path if path.is_file() and Path(root).resolve() in path.parents else None


def compiled_catalogues(root, lang="zh"):
    """`{path of the .mo relative to root: its bytes}` of the runtime catalogue in `root` (fuzzy entries left out)."""
    path = own_runtime_catalogue(root, lang)
    if path is None:
        return {}
    return {path.with_suffix(".mo").relative_to(Path(root).resolve()).as_posix(): read_catalogue(path).to_binary()}
