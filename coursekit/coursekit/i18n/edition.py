"""The translated edition, written from the English notebooks and their catalogues (`coursekit i18n build|update`).

`translate_notebook` gives one English notebook its translated markdown (a cell without current translation keeps
its English with a one-line note, `NOTES`) and copies its code cells; `keep_own_run` keeps the outputs of the
edition's own full run where its code is this code; `expected_edition` is every generated file, the exercise
notebooks included; `build` writes them and the compiled runtime catalogue, and `update` brings every catalogue up
to date with the English as msgmerge does.
"""

import json
from pathlib import Path

import nbformat
import polib

from coursekit import course, exercises
from coursekit.files import write_changed, write_text_atomically
from coursekit.i18n.catalogues import (
    SOURCE_EDITIONS,
    compiled_catalogues,
    english_notebooks,
    own_runtime_catalogue,
    read_catalogue,
    read_translations,
    source_text,
    translation_path,
    update_catalogue,
)
from coursekit.i18n.extract import untranslated_strings
from coursekit.i18n.typesetting import unwrap_cjk

EXERCISES = "exercises"  # generated from solutions/ (and exercises/zh/ from solutions/zh/)
NOTES = {
    "zh": {
        "missing": "（本段尚无中文译文，暂以英文原文显示。）",
        "stale": "（英文原文已更新，本段中文译文待同步，暂以英文原文显示。）",
    },
}


def translate_notebook(nb, entries, lang="zh"):
    """The `lang` edition of an English notebook (a new object): markdown from `entries`, everything else copied.

    Returns `(notebook, status)` where status maps each markdown cell id to "ok", "missing" or "stale".
    """
    translated = json.loads(json.dumps(nb))  # a deep copy, plain dicts
    status = {}
    for cell in translated["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        english = source_text(cell["source"])
        entry = entries.get(cell["id"])
        if entry is None:
            state, text = "missing", f"{NOTES[lang]['missing']}\n\n{english}"
        elif entry["fuzzy"] or entry["en"] != english:
            state, text = "stale", f"{NOTES[lang]['stale']}\n\n{english}"
        else:
            state, text = "ok", unwrap_cjk(entry["zh"])
        status[cell["id"]] = state
        cell["source"] = text
    key = course.setting("metadata_key")
    info = translated["metadata"].get(key)
    translated["metadata"][key] = {**(info if isinstance(info, dict) else {}), "lang": lang}
    return nbformat.from_dict(translated), status


def expected_edition(root, lang="zh"):
    """`{relative path: text}` of every generated file of the `lang` edition, and `{(edition, stem): status}`."""
    root = Path(root)
    files, statuses = {}, {}
    for edition in SOURCE_EDITIONS:
        for path in english_notebooks(root, edition):
            nb = exercises.read_notebook(path)
            entries = read_translations(translation_path(root, lang, edition, path.stem))
            translated, status = translate_notebook(nb, entries, lang)
            keep_own_run(translated, root / edition / lang / path.name, lang)
            statuses[(edition, path.stem)] = (status, entries, nb)
            files[f"{edition}/{lang}/{path.name}"] = exercises.notebook_text(translated)
            if edition == "solutions":
                exercise = exercises.build_exercise_notebook(translated, str(path), lang)
                exercise.metadata[course.setting("metadata_key")]["lang"] = lang
                files[f"{EXERCISES}/{lang}/{path.name}"] = exercises.notebook_text(exercise)
    return files, statuses


def keep_own_run(translated, own_path, lang="zh"):
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


def build(root=None, lang="zh", out=None):
    """Writes the `lang` edition under `out` (default: the repository), removing stale generated notebooks.

    Returns the paths written or removed.
    """
    root = course.root_or(root)
    out = Path(out or root)
    notebooks, _ = expected_edition(root, lang)
    editions = [f"{edition}/{lang}" for edition in (*SOURCE_EDITIONS, EXERCISES)]
    return write_changed(out, notebooks, stale_folders=editions) + write_changed(out, compiled_catalogues(root, lang))


def update(root=None, lang="zh", notebook=None):
    """Brings every catalogue up to date with the English (`update_catalogue`), and adds an empty entry to the
    runtime catalogue for each figure or hint string it lacks. Returns the paths written.

    `notebook`: only the catalogues of notebooks whose name starts so ("03": chapter 03, its solution and its
    exercise), so that an author updating one chapter leaves every other catalogue as it is; the runtime
    catalogue still gains the strings it lacks (new entries only, appended).
    """
    root = course.root_or(root)
    changed = []
    for edition in SOURCE_EDITIONS:
        for path in english_notebooks(root, edition):
            if notebook is not None and not path.stem.startswith(notebook):
                continue
            english = {cell.id: source_text(cell.source) for cell in exercises.read_notebook(path).cells
                       if cell.cell_type == "markdown"}
            target = translation_path(root, lang, edition, path.stem)
            if update_catalogue(target, lang, f"{edition}/{path.name}", english):
                changed.append(target)
    runtime = own_runtime_catalogue(root, lang)
    lacking = untranslated_strings(root, lang) if runtime is not None else {}
    if lacking:
        catalogue = read_catalogue(runtime)
        present = {entry.msgid for entry in catalogue if not entry.msgctxt}
        for text in lacking:
            if text not in present:
                catalogue.append(polib.POEntry(msgid=text, msgstr="", flags=["python-brace-format"] * ("{" in text)))
        write_text_atomically(runtime, str(catalogue))
        changed.append(runtime)
    return changed
