"""The layers of README's "Architecture": each bertlib module imports only from its own layer or those below."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "bertlib"

# Bottom to top, as the README draws them. A module is named by its first part under bertlib/.
LAYERS = {
    "core": {"__init__", "config", "layers", "model", "checkpoint", "presets", "tokenizer", "ops", "files",
             "resources"},
    "data": {"corpora", "nsp", "masking", "data", "datasets"},
    "training": {"settings", "callbacks", "distribute", "training"},
    "tasks": {"tasks", "metrics", "finetune"},
    "course": {"course", "checks", "exercises", "explore", "grading", "cli"},
}
ORDER = list(LAYERS)
# Upward imports kept on purpose, with the reason; each is a debt to pay, not a pattern.
ALLOWED = {}


def layer_of(module):
    """The layer of `bertlib.x.y` (or of the file bertlib/x/y.py)."""
    first = module.split(".")[1] if module.startswith("bertlib.") else module
    for layer, names in LAYERS.items():
        if first in names:
            return layer
    raise AssertionError(f"bertlib.{first} is in no layer of README's Architecture: add it to one, here and there")


def bertlib_imports(path):
    """Every `bertlib.*` module `path` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("bertlib."))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "bertlib":  # from bertlib import data, training
                found.update(f"bertlib.{alias.name}" for alias in node.names)
            elif node.module.startswith("bertlib."):
                found.add(node.module)
    return found


MODULES = sorted(path for path in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_a_module_imports_nothing_from_a_layer_above_it(path):
    own = layer_of(path.relative_to(PACKAGE).parts[0].removesuffix(".py"))
    name = str(path.relative_to(PACKAGE))
    above = sorted(module for module in bertlib_imports(path)
                   if ORDER.index(layer_of(module)) > ORDER.index(own) and (name, module) not in ALLOWED)
    assert not above, f"{name} ({own}) imports {above} from a layer above it"


def test_the_check_sees_an_upward_import(tmp_path):
    bad = tmp_path / "model.py"
    bad.write_text("def f():\n    from bertlib import training\n    import bertlib.course.evidence\n")
    assert bertlib_imports(bad) == {"bertlib.training", "bertlib.course.evidence"}
    assert ORDER.index(layer_of("bertlib.training")) > ORDER.index(layer_of("model"))
