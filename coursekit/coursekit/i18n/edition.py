"""The translated edition, written from the English notebooks and their catalogues (`coursekit i18n build|update`).

`translate_notebook` gives one English notebook its translated markdown (a cell without current translation keeps
its English with a one-line note, `NOTES`) and copies its code cells; `keep_own_run` keeps the outputs of the
edition's own full run where its code is this code; `expected_edition` is every generated file, the exercise
notebooks included; `build` writes them and the compiled runtime catalogue, and `update` brings every catalogue up
to date with the English as msgmerge does.
"""

import json
import re
from pathlib import Path

import nbformat
import polib

from coursekit import course, exercises
from coursekit.files import write_changed, write_text_atomically
from coursekit.i18n.blocks import split_blocks
from coursekit.i18n.catalogues import (
    SOURCE_EDITIONS,
    TEMPLATES,
    TranslationFormatError,
    compiled_catalogues,
    english_notebooks,
    folder,
    new_catalogue,
    new_template,
    own_runtime_catalogue,
    read_catalogue,
    read_entries,
    require_units,
    source_text,
    template_path,
    translation_path,
    translations_folder,
    update_catalogue,
    write_template,
)
from coursekit.i18n.comments import comment_texts, translate_comments
from coursekit.i18n.extract import untranslated_strings
from coursekit.i18n.typesetting import unwrap_cjk

EXERCISES = "exercises"  # generated from solutions/ (and exercises/<lang>/ from solutions/<lang>/)
# The kit's own strings, shown where a passage has no current translation; each language translates them in its
# `<translations>/<lang>/coursekit.po` (template: `templates/coursekit.pot`), else they show in English.
NOTES = {
    "missing": "(This passage has no translation yet; it is shown in English.)",
    "stale": "(The English of this passage has changed and its translation awaits review; it is shown in English.)",
}
KIT_CATALOGUE = "coursekit"  # <translations>/<lang>/coursekit.po: the kit's own strings (NOTES, EXERCISE_TEXTS)
# The texts of an exercise notebook (`exercises.ExerciseTexts`) by msgctxt: a stub's comment (without its "# ") and
# message, and the title words, which a language may write in a second form after a title that ends in
# parentheses (Chinese: "…（MLM）——参考答案", never "…（MLM）（参考答案）").
EXERCISE_TEXTS = {
    "stub:comment": "YOUR CODE HERE",
    "stub:message": "Exercise {exercise_id}: write your code here",
    "title:solutions": " (solutions)",
    "title:exercises": " (exercises)",
    "title:solutions, after parentheses": " (solutions)",
    "title:exercises, after parentheses": " (exercises)",
}


def _kit_strings(root, lang):
    """`{(msgctxt, msgid): translation}` of `lang`'s `coursekit.po` (untranslated and fuzzy entries left out)."""
    path = translations_folder(root) / lang / f"{KIT_CATALOGUE}.po"
    if not path.exists():
        return {}
    return {(entry.msgctxt, entry.msgid): entry.msgstr for entry in read_catalogue(path)
            if entry.translated() and not entry.obsolete}


def notes(root, lang):
    """`NOTES` in `lang`, from its `coursekit.po` (an untranslated or fuzzy note stays English)."""
    found = {msgid: text for (_, msgid), text in _kit_strings(root, lang).items()}
    return {key: found.get(text, text) for key, text in NOTES.items()}


def exercise_texts(root, lang):
    """The `exercises.ExerciseTexts` of the `lang` edition, from its `coursekit.po`; each text it does not translate
    (a language without that catalogue: every one) stays English. The English title words always apply too."""
    found = _kit_strings(root, lang)
    text = {key: found.get((key, english), english) for key, english in EXERCISE_TEXTS.items()}
    if set(re.findall(r"\{(\w*)", text["stub:message"])) != {"exercise_id"} or text["stub:comment"].count("\n"):
        raise TranslationFormatError(f"{translations_folder(root) / lang / KIT_CATALOGUE}.po: the stub's message must "
                                     f"name {{exercise_id}} and no other field, its comment be one line: "
                                     f"{text['stub:message']!r}, {text['stub:comment']!r}")
    titles = [(text[f"title:solutions{form}"], text[f"title:exercises{form}"]) for form in ("", ", after parentheses")]
    return exercises.ExerciseTexts(comment=f"# {text['stub:comment']}", message=text["stub:message"],
                                   titles=tuple(dict.fromkeys([*titles, *exercises.ENGLISH_TEXTS.titles])))


def kit_template():
    template = new_catalogue("", "coursekit", comment="The strings of the course kit itself: the notes a translated "
                             "edition shows where a passage has no current translation, and the texts of an exercise "
                             "notebook (a stub's comment and message, the title words).")
    for key, text in NOTES.items():
        template.append(polib.POEntry(msgctxt=f"note:{key}", msgid=text, msgstr=""))
    for key, text in EXERCISE_TEXTS.items():
        template.append(polib.POEntry(msgctxt=key, msgid=text, msgstr="",
                                      flags=["python-brace-format"] * ("{" in text)))
    return template


def cell_units(english, entries):
    """`(units, whole)` for one markdown cell: `units` is `[(state, english unit, entry or None)]` per unit of the
    cell ("ok", "stale": fuzzy or written for other English, "missing"), `whole` the entry translating the whole
    cell as it is, or None. `entries`: `{msgid: entry}` of the cell's translated entries."""
    whole = entries.get(english)
    if whole is not None:
        return [("stale" if whole["fuzzy"] else "ok", english, whole)], None if whole["fuzzy"] else whole
    blocks = split_blocks(english)
    known = {block.text for block in blocks.blocks} | {english}
    outdated = [entry for msgid, entry in entries.items() if msgid not in known]  # English changed, not updated
    units = []
    for block in blocks.blocks:
        entry = entries.get(block.text)
        if entry is not None:
            units.append(("stale" if entry["fuzzy"] else "ok", block.text, entry))
        else:
            units.append(("stale" if outdated else "missing", block.text, outdated[0] if outdated else None))
    return units, None


def _cell_text(english, units, whole, note):
    """The translated cell: every unit translated, or the untranslated runs in English after a one-line note."""
    if whole is not None:
        return unwrap_cjk(whole["translation"])
    states = [state for state, _, _ in units]
    if all(state == "ok" for state in states):
        return unwrap_cjk(split_blocks(english).join(entry["translation"] for _, _, entry in units))
    if not any(state == "ok" for state in states):
        return f"{note[states[0] if len(set(states)) == 1 else 'stale']}\n\n{english}"
    pieces = []
    for index, (state, text, entry) in enumerate(units):
        if state == "ok":
            pieces.append(unwrap_cjk(entry["translation"]))
        else:
            pieces.append(text if index and units[index - 1][0] != "ok" else f"{note[state]}\n\n{text}")
    return split_blocks(english).join(pieces)


def code_comments(nb):
    """`{cell_id: [text]}`: the comment blocks of each code cell that has any (`i18n.comments`), in notebook order."""
    found = {}
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            texts = comment_texts(source_text(cell["source"]))
            if texts:
                found[cell["id"]] = texts
    return found


def comment_units(texts, entries):
    """`cell_units`' list for the comment blocks of one code cell: "ok", "stale" (fuzzy, or the cell has a
    translated entry for other English) or "missing" each."""
    outdated = [entry for msgid, entry in entries.items() if msgid not in texts]
    units = []
    for text in texts:
        entry = entries.get(text)
        if entry is not None:
            units.append(("stale" if entry["fuzzy"] else "ok", text, entry))
        else:
            units.append(("stale" if outdated else "missing", text, outdated[0] if outdated else None))
    return units


def _translate_code_cell(cell, cell_entries, units):
    """Writes the current translations of a code cell's comments into it (`translate_comments`); a comment
    without one stays English. Records the cell's units in `units` when it has comments."""
    source = source_text(cell["source"])
    texts = comment_texts(source)
    if not texts:
        return
    cell_unit_list = comment_units(texts, cell_entries)
    units[cell["id"]] = cell_unit_list
    current = {text: entry["translation"] for state, text, entry in cell_unit_list if state == "ok"}
    if current:
        cell["source"] = translate_comments(source, current)


def translate_notebook(nb, entries, lang, note=None, comments=False):
    """The `lang` edition of an English notebook (a new object): markdown from `entries` (`read_entries`),
    everything else copied. `note`: `NOTES` in `lang` (`notes`). `comments`: also the comment blocks of the code
    cells (`i18n.comments`; a solution notebook's, never a chapter's, whose code stays the English bytes).

    Returns `(notebook, status, units)`: status maps each markdown cell id to "ok", "missing" or "stale" (its
    units' worst), units to `cell_units`' list (and `comment_units`' for a code cell with comments).
    """
    note = note or NOTES
    by_cell = {}
    for entry in entries:
        if entry["translation"].strip():
            by_cell.setdefault(entry["cell"], {})[entry["en"]] = entry
    translated = json.loads(json.dumps(nb))  # a deep copy, plain dicts
    status, units = {}, {}
    for cell in translated["cells"]:
        if cell["cell_type"] == "code" and comments:
            _translate_code_cell(cell, by_cell.get(cell["id"], {}), units)
        if cell["cell_type"] != "markdown":
            continue
        english = source_text(cell["source"])
        cell_unit_list, whole = cell_units(english, by_cell.get(cell["id"], {}))
        states = {state for state, _, _ in cell_unit_list}
        status[cell["id"]] = "stale" if "stale" in states else "missing" if "missing" in states else "ok"
        units[cell["id"]] = cell_unit_list
        cell["source"] = _cell_text(english, cell_unit_list, whole, note)
    key = course.setting("metadata_key")
    info = translated["metadata"].get(key)
    translated["metadata"][key] = {**(info if isinstance(info, dict) else {}), "lang": lang}
    return nbformat.from_dict(translated), status, units


def expected_edition(root, lang):
    """`{relative path: text}` of every generated file of the `lang` edition, and `{(edition, stem): (status,
    entries, nb, units)}`. Every catalogue is read before anything is built: a malformed one stops the build."""
    root = Path(root)
    files, statuses = {}, {}
    note, texts = notes(root, lang), exercise_texts(root, lang)
    exercise_folder = folder(root, EXERCISES)
    for edition in SOURCE_EDITIONS:
        out_folder = folder(root, edition)
        for path in english_notebooks(root, edition):
            nb = exercises.read_notebook(path)
            entries = read_entries(translation_path(root, lang, edition, path.stem))
            translated, status, units = translate_notebook(nb, entries, lang, note, comments=edition == "solutions")
            keep_own_run(translated, root / out_folder / lang / path.name, lang)
            statuses[(edition, path.stem)] = (status, entries, nb, units)
            files[f"{out_folder}/{lang}/{path.name}"] = exercises.notebook_text(translated)
            if edition == "solutions":
                # the stubs' two texts and the title words in `lang` where its kit catalogue has them, else English
                exercise = exercises.build_exercise_notebook(translated, str(path), texts)
                exercise.metadata[course.setting("metadata_key")]["lang"] = lang
                files[f"{exercise_folder}/{lang}/{path.name}"] = exercises.notebook_text(exercise)
    return files, statuses


def keep_own_run(translated, own_path, lang):
    """Gives `translated` the outputs of its own edition's full run (`tools/run_notebook.py --full` on
    `notebooks/zh/...`: figures, printed results and check messages in Chinese), where that run exists, ran in
    `lang` (its run record's `lang`; a record copied from the English run says "en" or nothing) and was made with
    this code (`exercises.outputs_belong`: its `code_sha256`, or a recorded move); else `translated` keeps the English outputs it was copied with.
    Returns True when the edition's own outputs were kept."""
    if not own_path.is_file():
        return False
    own = exercises.read_notebook(own_path)
    key = course.setting("metadata_key")
    run = own.metadata.get(key, {}).get("run", {})
    own_cells = {cell.get("id"): cell for cell in own.cells if cell.cell_type == "code"}
    code_cells = [cell for cell in translated.cells if cell.cell_type == "code"]
    if (run.get("mode") != "full" or run.get("lang") != lang or not exercises.outputs_belong(run, translated)
            or any(cell.get("id") not in own_cells for cell in code_cells)):
        return False
    for cell in code_cells:
        cell.outputs = own_cells[cell.id].outputs
        cell.execution_count = own_cells[cell.id].execution_count
    translated.metadata[key] = {**translated.metadata.get(key, {}), "run": run}
    return True


def build(root, lang, out=None):
    """Writes the `lang` edition under `out` (default: the repository), removing stale generated notebooks.

    Returns the paths written or removed.
    """
    root = course.root_or(root)
    out = Path(out or root)
    notebooks, _ = expected_edition(root, lang)
    editions = [f"{folder(root, edition)}/{lang}" for edition in (*SOURCE_EDITIONS, EXERCISES)]
    return write_changed(out, notebooks, stale_folders=editions) + write_changed(out, compiled_catalogues(root, lang))


def update(root, lang, notebook=None):
    """Writes the templates (`<translations>/templates/`) and merges them into the `lang` catalogues as msgmerge
    does (`update_catalogue`), and adds an empty entry to the runtime catalogue for each figure or hint string it
    lacks. Returns the paths written.

    `notebook`: only the catalogues of notebooks whose name starts so ("03": chapter 03, its solution and its
    exercise), so that an author updating one chapter leaves every other catalogue (the kit's `coursekit.po`
    too) as it is; the runtime catalogue still gains the strings it lacks (new entries only, appended).
    """
    root = course.root_or(root)
    chosen = [(edition, path) for edition in SOURCE_EDITIONS for path in english_notebooks(root, edition)
              if notebook is None or path.stem.startswith(notebook)]
    for edition, path in chosen:  # every catalogue checked before anything is written
        read_entries(translation_path(root, lang, edition, path.stem))
        require_units(translation_path(root, lang, edition, path.stem))
    changed = [] if notebook is not None else _update_kit(root, lang)
    for edition, path in chosen:
        english = {cell.id: source_text(cell.source) for cell in exercises.read_notebook(path).cells
                   if cell.cell_type == "markdown"}
        project = f"{edition}/{path.name}"
        template = new_template(project, english, code_comments(exercises.read_notebook(path))
                                if edition == "solutions" else None)
        if write_template(template_path(root, edition, path.stem), template):
            changed.append(template_path(root, edition, path.stem))
        target = translation_path(root, lang, edition, path.stem)
        if update_catalogue(target, lang, project, english, template):
            changed.append(target)
    changed += _update_runtime(root, lang)
    return changed


def _update_kit(root, lang):
    """The kit's own template and `lang` catalogue (`NOTES`), brought up to date; the paths written."""
    template, changed = kit_template(), []
    template_file = translations_folder(root) / TEMPLATES / f"{KIT_CATALOGUE}.pot"
    catalogue = translations_folder(root) / lang / f"{KIT_CATALOGUE}.po"
    if write_template(template_file, template):
        changed.append(template_file)
    if update_catalogue(catalogue, lang, KIT_CATALOGUE, {}, template):
        changed.append(catalogue)
    return changed


def _update_runtime(root, lang):
    runtime = own_runtime_catalogue(root, lang)
    lacking = untranslated_strings(root, lang) if runtime is not None else {}
    if not lacking:
        return []
    catalogue = read_catalogue(runtime)
    present = {entry.msgid for entry in catalogue if not entry.msgctxt}
    for text in lacking:
        if text not in present:
            catalogue.append(polib.POEntry(msgid=text, msgstr="", flags=["python-brace-format"] * ("{" in text)))
    write_text_atomically(runtime, str(catalogue))
    return [runtime]
