"""Whether a notebook's stored outputs belong to its code: fingerprints of its code cells.

`code_fingerprint` is what a run record (`tools/run_notebook.py`) stores as `code_sha256`; `body_fingerprint`
leaves out import statements and undoes recorded renames, so that a move of modules keeps a chapter's outputs
when the run record says so (`outputs_belong`).
"""

import ast
import hashlib
import re

from coursekit.exercises.notebooks import runnable_code


def code_fingerprint(notebook):
    """sha256 of the notebook's code cells, in order: the stored outputs belong to exactly this code (the run
    record of `tools/run_notebook.py` holds it as `code_sha256`)."""
    digest = hashlib.sha256()
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            digest.update(source.encode("utf-8") + b"\0")
    return digest.hexdigest()


def body_fingerprint(notebook, renames=None):
    """sha256 of the code cells after undoing `renames` ({old: new} texts a move changed: module names,
    `bertlib.tasks` -> `bertlib.finetune.tasks`, or a whole cell) and without their import statements: what a
    move cannot have changed."""
    undo = sorted((renames or {}).items(), key=lambda pair: -len(pair[1]))
    digest = hashlib.sha256()
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        for old, new in undo:  # a module's name: dotted, or bare before an attribute (`pretraining.pretrain`)
            source = re.sub(rf"(?<![\w.]){re.escape(new)}" + (r"(?!\w)" if "." in new else r"(?=\.)"),
                            lambda _, old=old: old, source)
        lines = source.split("\n")
        try:
            tree = ast.parse(runnable_code(source))
        except SyntaxError:
            tree = None
        if tree is not None:
            dropped = {line for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                       for line in range(node.lineno - 1, node.end_lineno)}
            lines = [line for index, line in enumerate(lines) if index not in dropped]
        digest.update("\n".join(lines).encode("utf-8") + b"\0")
    return digest.hexdigest()


def outputs_belong(run, notebook):
    """Whether the outputs of the run recorded as `run` (a notebook's `metadata.bertlib.run` here) belong to the
    notebook's code: made with exactly this code, or with code that a recorded move (`run["moved"]`) changed only
    in its import statements and in the module names it lists."""
    if run.get("code_sha256") == code_fingerprint(notebook):
        return True
    moved = run.get("moved") or {}
    return bool(moved.get("body_sha256")) and body_fingerprint(notebook, moved.get("renames")) == moved["body_sha256"]
