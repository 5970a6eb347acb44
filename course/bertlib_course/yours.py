"""The learner's own classes, gathered from their notebooks, as d2l's `#@save` gathers its chapters into `d2l`.

A code cell of chapters 02-05 whose first line is `#@save` defines a piece the learner built: the embeddings,
attention, encoder block and `Bert` (02), the masked-LM head and loss (03), the NSP head and the pretrainer (04),
the schedule and AdamW (05). `load()` reads those cells from the learner's notebooks, in chapter and cell order,
and runs them in one fresh module, so a later chapter trains the model the learner wrote, not `bertlib`'s:

    mine = yours.load()          # chapters 02-05, from the folder of the running notebook
    model = mine.MlmNspPretrainer(mine.Bert(config))

The notebooks are read from the folder of the running notebook (an edition's folder, `notebooks/` or
`notebooks/zh/`, whose code cells are the same), found as `messages` finds it, else from the kernel's working
folder, where Jupyter starts a notebook's kernel. Nothing else of a notebook runs: a saved cell must define, not
compute on, the chapter's variables.
"""

import json
import types
from pathlib import Path

MARKER = "#@save"
CHAPTERS = ("02", "03", "04", "05")
# What every saved cell may use without importing it: the chapters' own first-cell imports.
PRELUDE = "import math\n\nimport keras\nimport numpy as np\nfrom keras import ops\n"


class SavedCellError(RuntimeError):
    """A saved cell is missing or fails; the message names the notebook and the cell."""


def notebook_folder():
    """The folder of the running notebook (Jupyter's session path, VS Code's), else the working folder."""
    from bertlib_course import messages

    for session in messages._session_paths():
        for path in messages._candidates(session):
            if path.is_file():
                return path.parent
    return Path.cwd()


def saved_cells(folder=None, chapters=CHAPTERS):
    """[(notebook path, cell number, cell id, source)] of every `#@save` cell of `chapters`, in order."""
    folder = Path(folder) if folder is not None else notebook_folder()
    cells = []
    for chapter in chapters:
        found = sorted(folder.glob(f"{chapter}_*.ipynb"))
        if len(found) != 1:
            raise SavedCellError(f"yours.load: expected one notebook {chapter}_*.ipynb in {folder}, found "
                                 f"{[path.name for path in found] or 'none'}; open this notebook from the "
                                 f"course's folder of chapters, or pass folder=.")
        notebook = json.loads(found[0].read_text(encoding="utf-8"))
        saved = [(found[0], number, cell.get("id", "?"), _source(cell))
                 for number, cell in enumerate(notebook["cells"])
                 if cell["cell_type"] == "code" and _source(cell).lstrip().startswith(MARKER)]
        if not saved:
            raise SavedCellError(f"yours.load: {found[0].name} has no cell starting with {MARKER}: the cells that "
                                 f"define your classes start with that line; restore it where it was removed.")
        cells.extend(saved)
    return cells


def load(folder=None, upto=None, expect=()):
    """A fresh module holding everything the saved cells of chapters 02-`upto` (default 05) define.

    Args:
        folder: where the notebooks are; defaults to the running notebook's folder.
        upto: the last chapter to read, e.g. "03" in chapter 04.
        expect: names the module must define (e.g. "Bert"); a missing one raises naming the chapters read.
    """
    chapters = tuple(chapter for chapter in CHAPTERS if upto is None or chapter <= upto)
    if not chapters:
        raise ValueError(f"yours.load: upto={upto!r} names no chapter of {CHAPTERS}.")
    module = types.ModuleType("yours", "The learner's classes, from the #@save cells of chapters "
                              f"{', '.join(chapters)}.")
    exec(compile(PRELUDE, "<yours prelude>", "exec"), module.__dict__)
    for path, number, cell_id, source in saved_cells(folder, chapters):
        where = f"{path.name}, cell {number} (id {cell_id})"
        try:
            exec(compile(source, f"<{where}>", "exec"), module.__dict__)
        except Exception as error:  # noqa: BLE001 - any failure of the learner's cell, named
            raise SavedCellError(f"yours.load: the saved cell in {where} failed: {type(error).__name__}: "
                                 f"{error}. Run that cell in its notebook to see why.") from error
    missing = [name for name in expect if name not in module.__dict__]
    if missing:
        raise SavedCellError(f"yours.load: no saved cell of chapters {', '.join(chapters)} defines "
                             f"{', '.join(missing)}; is its cell's first line {MARKER}?")
    return module


def _source(cell):
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source
