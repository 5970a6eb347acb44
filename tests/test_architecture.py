"""The layers of README's "Layout", as a folder rule: three packages for three users, and in the library, folders
that are its layers. A module imports only from its own layer or those below it.

    coursekit        the course kit (authors, instructors): generic, it imports no course and no library
    bertlib_course   the runtime the chapters import: may use bertlib and coursekit
    bertlib          the library (engineers): imports neither, and inside it, bottom to top:
                     io < model < text < train < finetune
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"bertlib": ROOT / "bertlib", "bertlib_course": ROOT / "course" / "bertlib_course",
            "coursekit": ROOT / "coursekit" / "coursekit"}
# Inside bertlib, bottom to top. The package's own __init__ (lazy names only) and _lazy sit below everything.
LIBRARY_LAYERS = ["", "io", "model", "text", "train", "finetune"]
# What each package may import, besides itself.
MAY_IMPORT = {"bertlib": set(), "bertlib_course": {"bertlib", "coursekit"}, "coursekit": set()}
# Imports across the rule kept on purpose, with the reason; each is a debt to pay, not a pattern.
ALLOWED = {}


def package_of(module):
    return module.split(".")[0]


def library_layer(module):
    """The layer of `bertlib.x.y`: its first folder under bertlib/ ("" for bertlib's own names and bertlib._lazy;
    the command line sits on top, with finetune, since it names every command)."""
    parts = module.split(".")
    first = parts[1] if len(parts) > 1 else ""
    if first == "cli":
        return "finetune"
    if first == "_lazy" or first[:1].isupper() or first in ("register_keras_serializables", "__version__"):
        return ""
    if first not in LIBRARY_LAYERS:
        raise AssertionError(f"bertlib.{first} is in no layer of README's Layout: add it to one, here and there")
    return first


def imports_of(path):
    """Every module of the three packages that `path` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from bertlib import text` is bertlib.text; `from bertlib.text.tokenizer import X`, the module's X
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {module for module in found if package_of(module) in PACKAGES}


def module_name(package, path):
    parts = [package, *path.relative_to(PACKAGES[package]).with_suffix("").parts]
    return ".".join(part for part in parts if part != "__init__")


MODULES = sorted((package, path) for package, folder in PACKAGES.items() for path in folder.rglob("*.py"))


@pytest.mark.parametrize("package, path", MODULES,
                         ids=lambda value: str(value.relative_to(ROOT)) if isinstance(value, Path) else "")
def test_a_module_imports_nothing_from_a_layer_above_it(package, path):
    own = module_name(package, path)
    name = str(path.relative_to(PACKAGES[package].parent))
    wrong = []
    for module in sorted(imports_of(path)):
        other = package_of(module)
        if (name, module) in ALLOWED:
            continue
        if other != package and other not in MAY_IMPORT[package]:
            wrong.append(f"{module} (package {other})")
        elif other == package == "bertlib" and \
                LIBRARY_LAYERS.index(library_layer(module)) > LIBRARY_LAYERS.index(library_layer(own)):
            wrong.append(f"{module} (layer {library_layer(module)} is above {library_layer(own)})")
    assert not wrong, f"{name} imports {wrong} against README's Layout"


def test_every_allowed_exception_is_still_needed():
    used = {(str(path.relative_to(PACKAGES[package].parent)), module) for package, path in MODULES
            for module in imports_of(path)}
    assert not set(ALLOWED) - used, f"paid debts still listed in ALLOWED: {sorted(set(ALLOWED) - used)}"


def test_the_check_sees_an_upward_import(tmp_path):
    bad = tmp_path / "backbone.py"
    bad.write_text("def f():\n    from bertlib.train import pretraining\n    import bertlib_course.evidence\n"
                   "    from bertlib import text\n")
    assert imports_of(bad) == {"bertlib.train.pretraining", "bertlib_course.evidence", "bertlib.text"}
    assert LIBRARY_LAYERS.index(library_layer("bertlib.train.pretraining")) > \
        LIBRARY_LAYERS.index(library_layer("bertlib.model.backbone"))
    assert "bertlib_course" not in MAY_IMPORT["bertlib"]


def test_the_library_has_no_module_outside_its_layers():
    loose = sorted(path.name for path in PACKAGES["bertlib"].glob("*.py")
                   if path.stem not in ("__init__", "_lazy", "cli"))
    assert not loose, f"modules at bertlib/'s top level, in no layer: {loose}"


# --- function length: no function over 80 lines (README's habits: small functions that read as named steps) -------

MAX_FUNCTION_LINES = 80
# Functions over the limit kept for now, with the reason; each must still be over it (else drop it from here).
ALLOWED_LONG = {}


def function_lengths(path):
    """{qualified name: lines} of every function and method in `path` (ast: end_lineno - lineno + 1)."""
    lengths = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lengths[name] = child.end_lineno - child.lineno + 1
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return lengths


def all_function_lengths():
    return {(str(path.relative_to(PACKAGES[package].parent)), name): lines for package, path in MODULES
            for name, lines in function_lengths(path).items()}


def test_no_function_is_over_80_lines():
    long = {key: lines for key, lines in all_function_lengths().items()
            if lines > MAX_FUNCTION_LINES and key not in ALLOWED_LONG}
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps): {long}"


def test_every_allowed_long_function_is_still_long():
    lengths = all_function_lengths()
    paid = sorted(key for key in ALLOWED_LONG if lengths.get(key, 0) <= MAX_FUNCTION_LINES)
    assert not paid, f"no longer over {MAX_FUNCTION_LINES} lines (or gone): drop them from ALLOWED_LONG: {paid}"


def test_the_length_check_sees_a_long_function(tmp_path):
    body = "".join(f"        x{n} = {n}\n" for n in range(80))
    source = tmp_path / "long.py"
    source.write_text(f"class A:\n    def method(self):\n{body}\n\ndef short():\n    return 1\n")
    assert function_lengths(source) == {"A.method": 81, "short": 2}
