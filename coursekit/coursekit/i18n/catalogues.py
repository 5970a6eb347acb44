"""The gettext catalogues of the translated editions: where they lie, reading, templating and merging them (polib).

The course's `[tool.coursekit]` names the folders (`notebooks`, `solutions`, `exercises`, `translations`); the
languages are the folders under `translations` that hold PO files (`languages`), so a new language is a new folder
of PO files and nothing else. Per English notebook:

    <translations>/templates/<edition>/<stem>.pot   the template, written by `coursekit i18n update`
    <translations>/<lang>/<edition>/<stem>.po       one language's catalogue, merged from the template

one entry per translation unit of a markdown cell (`blocks.split_blocks`: a paragraph, a list item, a table, a
heading, a fenced block): `msgctxt` the cell id, `msgid` the English unit, `msgstr` its translation. The key of an
entry is (cell id, English unit), as gettext keys every entry by (msgctxt, msgid), and not a unit's position: a
paragraph inserted or removed beside another leaves the other's entry matching, and an edited paragraph is found
again among its own cell's entries by similarity (`merge_catalogue`, msgmerge's rule), so its translation comes
back fuzzy with the English it was written from as `#| msgid`. An entry whose msgid is a whole cell (the format
before units, and what `migrate` keeps where a translation's paragraphs do not pair with the English's) is used
for that cell while the cell is unchanged.
"""

import difflib
from pathlib import Path

import polib

from coursekit import course
from coursekit.files import write_text_atomically
from coursekit.i18n.blocks import split_blocks
from coursekit.i18n.comments import KIND as COMMENT_KIND

SOURCE_EDITIONS = ("notebooks", "solutions")  # edited by hand, in English
TEMPLATES = "templates"  # the folder of the .pot files under the translations folder (never a language)
PO_WRAP = 120  # the line width polib wraps msgid and msgstr at (Poedit keeps a file's own wrapping)
FUZZY_SIMILARITY = 0.6  # msgmerge's threshold for giving a changed string the translation of a similar one
# The header that says a catalogue holds one entry per unit (written by `new_catalogue` and `migrate`); `update`
# refuses a catalogue without it, which holds whole cells and must be migrated first.
FORMAT_HEADER, UNITS_FORMAT = "X-Coursekit-Format", "units"


class TranslationFormatError(ValueError):
    """A translation file that cannot be read as `coursekit.i18n` describes; the message names it."""


def source_text(source):
    return "".join(source) if isinstance(source, list) else str(source)


def folder(root, key):
    """The folder `[tool.coursekit]` names for `key` ("notebooks", "solutions", "exercises", "translations"),
    relative to `root`, as a string; the kit's default where `root` holds no course."""
    try:
        return Path(getattr(course.current(root), key)).relative_to(Path(root).resolve()).as_posix()
    except (course.CourseNotFound, ValueError):
        return course.DEFAULTS[key]


def english_notebooks(root, edition):
    path = Path(root) / folder(root, edition)
    return sorted(path.glob("*.ipynb")) if path.is_dir() else []


def translations_folder(root):
    return Path(root) / folder(root, "translations")


def languages(root):
    """The languages of the course: the folders under its translations folder that hold PO files."""
    path = translations_folder(root)
    if not path.is_dir():
        return []
    return sorted(child.name for child in path.iterdir()
                  if child.is_dir() and child.name != TEMPLATES and next(child.rglob("*.po"), None))


def translation_path(root, lang, edition, stem):
    """`<translations>/<lang>/<edition>/<stem>.po`, one language's text of one English notebook."""
    return translations_folder(root) / lang / edition / f"{stem}.po"


def template_path(root, edition, stem):
    """`<translations>/templates/<edition>/<stem>.pot`, the English units of one notebook, for every language."""
    return translations_folder(root) / TEMPLATES / edition / f"{stem}.pot"


def new_catalogue(lang, project, comment=None):
    """An empty PO catalogue with the header gettext tools require (`msgfmt --check` accepts it); no dates, so
    rewriting a file changes only its entries."""
    catalogue = polib.POFile(wrapwidth=PO_WRAP)
    catalogue.header = comment or (f"The {lang} text of {project}, one entry per paragraph, list item, table, "
                                   f"heading or fence of a markdown cell (msgctxt: the cell id).\nOpen it in Poedit "
                                   f"or Weblate; `coursekit i18n build` writes the edition.")
    catalogue.metadata = {"Project-Id-Version": project, "Language": lang, "MIME-Version": "1.0",
                          "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit",
                          "Plural-Forms": "nplurals=1; plural=0;", FORMAT_HEADER: UNITS_FORMAT}
    return catalogue


def read_catalogue(path):
    """The polib catalogue at `path`, or a `TranslationFormatError` naming it."""
    try:
        return polib.pofile(str(path), wrapwidth=PO_WRAP)
    except (OSError, ValueError) as error:  # polib raises OSError on a syntax error
        raise TranslationFormatError(f"{path}: not a readable PO file ({error})") from error


def _where(path, entry):
    return f"{path}:{entry.linenum}" if getattr(entry, "linenum", None) else str(path)


def read_entries(path):
    """`[{"cell", "en", "translation", "fuzzy", "previous", "line"}]` of the current (not obsolete) entries of one
    catalogue, in file order (`[]` when it does not exist): `en` is the msgid, `translation` the msgstr ("" when
    empty), `line` the entry's line in the file, `previous` the `#| msgid` of a fuzzy entry or "". The whole file is read and checked before anything is used:
    an entry without msgctxt or a second entry with the same msgctxt and msgid raise `TranslationFormatError`
    naming the file and the line."""
    path = Path(path)
    if not path.exists():
        return []
    entries, seen = [], set()
    for entry in read_catalogue(path):
        if entry.obsolete:
            continue
        if not entry.msgctxt:
            raise TranslationFormatError(f"{_where(path, entry)}: the entry {entry.msgid[:40]!r} needs a msgctxt "
                                         f"(its cell id)")
        if (entry.msgctxt, entry.msgid) in seen:
            raise TranslationFormatError(f"{_where(path, entry)}: a second entry for the same English of the cell "
                                         f"{entry.msgctxt!r} (msgctxt and msgid)")
        seen.add((entry.msgctxt, entry.msgid))
        entries.append({"cell": entry.msgctxt, "en": entry.msgid, "translation": entry.msgstr,
                        "fuzzy": "fuzzy" in entry.flags, "previous": entry.previous_msgid or "",
                        "line": entry.linenum})
    return entries


def read_translations(path):
    """`{cell_id: {"en", "zh", "fuzzy", "previous"}}` (`zh`: the translation, in any language): the translated
    entries of one catalogue, those of one cell
    joined by blank lines (the text a check reads: glossary, links, typesetting). Untranslated entries hold no
    translation and are left out."""
    cells = {}
    for entry in read_entries(path):
        entry["zh"] = entry.pop("translation")  # the key this function has always given its readers
        if not entry["zh"].strip():
            continue
        if entry["cell"] not in cells:
            cells[entry["cell"]] = entry
            continue
        joined = cells[entry["cell"]]
        for key in ("en", "zh", "previous"):
            joined[key] = "\n\n".join(text for text in (joined[key], entry[key]) if text)
        joined["fuzzy"] = joined["fuzzy"] or entry["fuzzy"]
    for joined in cells.values():
        joined.pop("cell")
        joined.pop("line")
    return cells


def write_translation(root, lang, edition, stem, cell_id, zh, english_source):
    """Records the translation of one whole cell (one entry, msgid the whole English cell), with the English it was
    written from; the build uses it while the cell is unchanged."""
    path = translation_path(root, lang, edition, stem)
    catalogue = read_catalogue(path) if path.exists() else new_catalogue(lang, f"{edition}/{stem}.ipynb")
    english = source_text(english_source)
    entry = next((entry for entry in catalogue if entry.msgctxt == cell_id and not entry.obsolete
                  and entry.msgid == english), None)
    entry = entry or next((entry for entry in catalogue if entry.msgctxt == cell_id and not entry.obsolete), None)
    if entry is None:
        entry = polib.POEntry(msgctxt=cell_id)
        catalogue.append(entry)
    entry.msgid, entry.msgstr = english, source_text(zh)
    entry.flags = [flag for flag in entry.flags if flag != "fuzzy"]
    entry.previous_msgid = None
    write_text_atomically(path, str(catalogue))
    return path


def new_template(project, english, comments=None):
    """The `.pot` of one notebook: an entry per unit of each markdown cell (`english`: `{cell_id: markdown}`, in
    notebook order), the unit's kind as a comment for the translator. A unit repeated in one cell is one entry.
    `comments`: `{cell_id: [text]}`, the comment blocks of a solution notebook's code cells (`i18n.comments`), one
    entry each after the markdown's."""
    code = ", and one per block of comments of a code cell" if comments else ""
    template = new_catalogue("", project, comment=f"The English of {project}, one entry per paragraph, list item, "
                             f"table, heading or fence of a markdown cell{code} (msgctxt: the cell id).\nThe "
                             f"template of every language's catalogue: `coursekit i18n update` writes it and merges "
                             f"it in.")
    seen = set()
    for cell_id, text in english.items():
        for block in split_blocks(text).blocks:
            if (cell_id, block.text) not in seen:
                seen.add((cell_id, block.text))
                template.append(polib.POEntry(msgctxt=cell_id, msgid=block.text, msgstr="", comment=block.kind))
    for cell_id, texts in (comments or {}).items():
        for text in texts:
            template.append(polib.POEntry(msgctxt=cell_id, msgid=text, msgstr="", comment=COMMENT_KIND))
    return template


def _similar(text, candidates):
    """The candidate most like `text` at or above msgmerge's similarity, else None."""
    best, best_ratio = None, FUZZY_SIMILARITY
    for candidate in candidates:
        matcher = difflib.SequenceMatcher(None, candidate.msgid, text, autojunk=False)
        if matcher.real_quick_ratio() >= best_ratio and matcher.quick_ratio() >= best_ratio:
            ratio = matcher.ratio()
            if ratio >= best_ratio:
                best, best_ratio = candidate, ratio
    return best


def merge_catalogue(catalogue, template, english):
    """`catalogue` brought up to `template` as msgmerge does, in place: an entry whose (msgctxt, msgid) is in the
    template stays; a template entry without one takes the translation of the most similar translated entry of
    its cell, marked fuzzy with that entry's English as `#| msgid`; translated entries no longer used become
    obsolete (`#~`, kept for the translator), empty ones go. A whole-cell entry (`english`: `{cell_id: markdown}`)
    stays while its cell is unchanged."""
    old = [entry for entry in catalogue if not entry.obsolete]
    by_key = {(entry.msgctxt, entry.msgid): entry for entry in old}
    used, merged = set(), []
    for cell_id, text in english.items():
        whole = by_key.get((cell_id, text))
        if whole is not None and len(split_blocks(text).blocks) > 1:
            merged.append(whole)
            used.add(id(whole))
    for unit in template:
        entry = by_key.get((unit.msgctxt, unit.msgid))
        if entry is None:
            entry = polib.POEntry(msgctxt=unit.msgctxt, msgid=unit.msgid, msgstr="")
            source = _similar(unit.msgid, [candidate for candidate in old if candidate.msgctxt == unit.msgctxt
                                           and candidate.msgstr and id(candidate) not in used])
            if source is not None:
                entry.msgstr, entry.flags = source.msgstr, ["fuzzy"]
                entry.previous_msgid = source.previous_msgid if "fuzzy" in source.flags and source.previous_msgid \
                    else source.msgid
                used.add(id(source))
        used.add(id(entry))
        entry.comment = unit.comment
        merged.append(entry)
    obsolete = [entry for entry in catalogue if entry.obsolete]
    for entry in old:
        if id(entry) not in used and entry.msgstr:
            entry.obsolete = True
            obsolete.append(entry)
    order = {cell_id: index for index, cell_id in enumerate(english)}
    merged.sort(key=lambda entry: order.get(entry.msgctxt, len(order)))  # stable: a cell's units keep their order
    catalogue[:] = merged + obsolete
    return catalogue


def require_units(path, catalogue=None):
    """Raises `TranslationFormatError` where the catalogue at `path` (if any) holds whole cells: merging units into
    it would leave its translations unused, so it must be migrated first."""
    path = Path(path)
    if catalogue is None and not path.exists():
        return
    catalogue = catalogue if catalogue is not None else read_catalogue(path)
    if catalogue.metadata.get(FORMAT_HEADER) != UNITS_FORMAT:
        raise TranslationFormatError(f"{path}: one entry per whole cell (no '{FORMAT_HEADER}: {UNITS_FORMAT}' "
                                     f"header): run `coursekit i18n migrate` first (docs/translation.md)")


def update_catalogue(path, lang, project, english, template=None):
    """Merges `template` (default: `new_template(project, english)`) into the catalogue at `path`
    (`merge_catalogue`), creating it if needed. Returns True when the file changed."""
    path = Path(path)
    template = template if template is not None else new_template(project, english)
    catalogue = read_catalogue(path) if path.exists() else new_catalogue(lang, project)
    require_units(path, catalogue)
    before = str(catalogue)
    merge_catalogue(catalogue, template, english)
    if str(catalogue) == before and path.exists():
        return False
    write_text_atomically(path, str(catalogue))
    return True


def write_template(path, template):
    """Writes `template` at `path` unless it already holds it. Returns True when the file changed."""
    path = Path(path)
    if path.exists() and path.read_text(encoding="utf-8") == str(template):
        return False
    write_text_atomically(path, str(template))
    return True


def runtime_catalogue(lang):
    """The course's runtime catalogue (`.po`): its check messages, figure and hint strings, as the course's
    `runtime_catalogue(lang)` hook names it; None for a course without one (its runtime strings are not checked)."""
    path = course.hook("runtime_catalogue", lambda lang: None)(lang)
    return None if path is None else Path(path)


def own_runtime_catalogue(root, lang):
    """The runtime catalogue when it lies in `root`, else None: `build` and `update` on a copy of the chapters
    elsewhere (as in the tests) leave the installed course alone."""
    path = runtime_catalogue(lang)
    if path is None:
        return None
    path = path.resolve()
    return path if path.is_file() and Path(root).resolve() in path.parents else None


def compiled_catalogues(root, lang):
    """`{path of the .mo relative to root: its bytes}` of the runtime catalogue in `root` (fuzzy entries left out)."""
    path = own_runtime_catalogue(root, lang)
    if path is None:
        return {}
    return {path.with_suffix(".mo").relative_to(Path(root).resolve()).as_posix(): read_catalogue(path).to_binary()}
