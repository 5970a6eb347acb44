"""Notebook files as the kit reads and writes them, and a code cell as plain Python.

`read_notebook` reads nbformat 4 with stable cell ids (a file that is not a notebook raises `ExerciseFormatError`
naming it); `notebook_text` is the exact text written for a notebook, so a build writes the same bytes every time;
`runnable_code` blanks IPython's `%` and `!` lines (line numbers kept) so that `ast` and `exec` read a cell.
"""

import json
from pathlib import Path

import nbformat

from coursekit.exercises.convention import ExerciseFormatError


def read_notebook(path):
    """Reads a notebook as nbformat 4; a file that is not a notebook raises ExerciseFormatError naming it.

    Cells of an nbformat 4.5 notebook that lack an id get `cell-<index>`: nbformat would invent random ids,
    and the build must write the same bytes every time.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("nbformat") == 4 and data.get("nbformat_minor", 0) >= 5:
            for index, cell in enumerate(data.get("cells", [])):
                cell.setdefault("id", f"cell-{index}")
        return nbformat.reads(json.dumps(data), as_version=4)
    except Exception as error:
        raise ExerciseFormatError(f"{path}: not a readable notebook ({type(error).__name__}: {error})") from error


def notebook_text(nb):
    """The exact text written for `nb`: nbformat's JSON (sorted keys, indent 1) with a final newline."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def runnable_code(source):
    """A cell's source as plain Python: IPython's `%` and `!` lines blanked (line numbers kept)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))
