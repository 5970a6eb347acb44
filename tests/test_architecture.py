"""The layers of docs/development.md's "Layout", as a folder rule: three packages for three users, and in the library, folders
that are its layers. A module imports only from its own layer or those below it.

    coursekit        the course kit (authors, instructors): generic, it imports no course and no library
    bertlib_course   the runtime the chapters import: may use bertlib and coursekit
    bertlib          the library (engineers): imports neither, and inside it, bottom to top:
                     io < model < text < train < finetune
"""

import ast
import re
from pathlib import Path

import pytest

from tools.repo_paths import REPO_ROOT as ROOT

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
    if first == "_lazy" or first[:1].isupper() or first == "__version__":
        return ""
    if first not in LIBRARY_LAYERS:
        raise AssertionError(f"bertlib.{first} is in no layer of docs/development.md's Layout: add it to one, here and there")
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
    assert not wrong, f"{name} imports {wrong} against docs/development.md's Layout"


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


# --- each package's tests need that package (and those below it), not the ones above it ---------------------------
# tests/library runs with the library and its dev extra alone; tests/coursekit without the course (its notebooks'
# checks and hooks are those of its own toy course, tests/coursekit/toycourse). No exceptions.
TESTS_MAY_NOT_IMPORT = {"library": {"bertlib_course", "coursekit"}, "coursekit": {"bertlib_course"}}
TEST_FILES = sorted((folder, path) for folder in TESTS_MAY_NOT_IMPORT for path in (ROOT / "tests" / folder).rglob("*.py"))


def _test_imports_across(folder, path):
    return sorted(module for module in imports_of(path) if package_of(module) in TESTS_MAY_NOT_IMPORT[folder])


@pytest.mark.parametrize("folder, path", TEST_FILES,
                         ids=lambda value: str(value.relative_to(ROOT)) if isinstance(value, Path) else "")
def test_a_packages_tests_import_no_package_above_it(folder, path):
    wrong = _test_imports_across(folder, path)
    assert not wrong, (f"{path.relative_to(ROOT)} imports {wrong}: tests/{folder} must run without "
                       f"{sorted(TESTS_MAY_NOT_IMPORT[folder])} (move the test to the tests of the package it needs)")


# --- function length: no function over 80 lines (STYLE's habits: small functions that read as named steps) -------

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


# --- the shipped packages name no folder of our repository or of our CI (docs/development.md's "Layout": they ship as wheels) --
# In a wheel, `Path(__file__).parents[2]` of a runtime module is `<venv>/lib/python3.x`; the checkout and CI's
# `../shared` folder are tests' and tools' business (tools/repo_paths.py).

_SHARED_FOLDER = re.compile(r"(?:^|[/\\])shared(?:[/\\]|$)")  # "shared", "../shared", "shared/data"


def _steps_above_file(node):
    """How many folders `node` climbs from this module's own file (`Path(__file__).resolve().parents[1]` is 2,
    `os.path.dirname(__file__)` is 1), or None when it is not a path computed from `__file__`."""
    if isinstance(node, ast.Name):
        return 0 if node.id == "__file__" else None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = _steps_above_file(node.value)
        return None if inner is None else inner + 1
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents":
        inner, index = _steps_above_file(node.value.value), node.slice
        if inner is None or not (isinstance(index, ast.Constant) and isinstance(index.value, int)):
            return inner  # parents[i] with a computed i: counted as at least the folder it starts from
        return inner + index.value + 1
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name in ("Path", "PurePath", "abspath", "realpath", "dirname") and node.args:
            inner = _steps_above_file(node.args[0])
            return None if inner is None else inner + (name == "dirname")
        if name in ("resolve", "absolute") and isinstance(node.func, ast.Attribute):
            return _steps_above_file(node.func.value)
    return None


def _docstrings(tree):
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _reads_shared_variable(node):
    """`os.environ.get("BERTLIB_SHARED")`, `os.getenv(...)` or `os.environ[...]`; passing the name on is fine."""
    function = node.func if isinstance(node, ast.Call) and node.args else None
    on_environ = isinstance(function, ast.Attribute) and getattr(function.value, "attr", "") == "environ"
    if getattr(function, "attr", None) == "getenv" or (on_environ and function.attr == "get"):
        key = node.args[0]
    elif isinstance(node, ast.Subscript) and getattr(node.value, "attr", "") == "environ":
        key = node.slice
    else:
        return False
    return isinstance(key, ast.Constant) and key.value == "BERTLIB_SHARED"


def repository_folders_named(path, depth):
    """Lines of `path` (a module `depth` folders below its package's top) that climb out of its package from
    `__file__`, or look up CI's `shared/` folder (a path segment "shared" outside docstrings, or
    $BERTLIB_SHARED read)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings, found = _docstrings(tree), set()
    for node in ast.walk(tree):
        steps = _steps_above_file(node)
        if steps is not None and steps > depth + 1:  # one `.parent` is the module's own folder
            found.add(f"line {node.lineno}: climbs {steps - depth - 1} folder(s) above the package")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                and _SHARED_FOLDER.search(node.value):
            found.add(f"line {node.lineno}: names a shared folder ({node.value!r})")
        if _reads_shared_variable(node):
            found.add(f"line {node.lineno}: reads $BERTLIB_SHARED")
    return sorted(found)


@pytest.mark.parametrize("package, path", MODULES,
                         ids=lambda value: str(value.relative_to(ROOT)) if isinstance(value, Path) else "")
def test_a_shipped_module_names_no_repository_or_ci_folder(package, path):
    depth = len(path.relative_to(PACKAGES[package]).parts) - 1
    found = repository_folders_named(path, depth)
    assert not found, (f"{path.relative_to(ROOT)} is shipped in the {package} wheel, where our checkout and "
                       f"CI's shared/ folder do not exist: {found}. Tests and tools find them through "
                       "tools/repo_paths.py; data comes through $BERTLIB_DATA (bertlib.io.downloads).")


def test_the_folder_check_sees_a_climb_and_a_shared_lookup(tmp_path):
    old = tmp_path / "paths.py"  # the runtime's paths.py before issue 36
    old.write_text('"""Where ../shared is."""\nimport os\nfrom pathlib import Path\n'
                   'REPO_ROOT = Path(__file__).resolve().parents[2]\n'
                   'SHARED = Path(os.environ.get("BERTLIB_SHARED", REPO_ROOT.parent / "shared"))\n'
                   'UP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n'
                   'OWN = Path(__file__).parent / "locale"\nVARIABLES = ("BERTLIB_DATA", "BERTLIB_SHARED")\n')
    assert repository_folders_named(old, depth=0) == [
        "line 4: climbs 2 folder(s) above the package", "line 5: names a shared folder ('shared')",
        "line 5: reads $BERTLIB_SHARED", "line 6: climbs 1 folder(s) above the package"]
    assert repository_folders_named(old, depth=2) == [  # deeper in a package, parents[2] stays inside
        "line 5: names a shared folder ('shared')", "line 5: reads $BERTLIB_SHARED"]


# --- the library's docstrings name nothing an engineer's install lacks -------------------------------------------
_NOT_IN_A_WHEEL = re.compile(r"bertlib_course|coursekit|\btests/|\btest_\w+\.py")


def docstrings_naming_the_repository(path):
    """`line: text` of each docstring in `path` that names the course, the kit or a test file of this repository."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"line {node.body[0].lineno}: {match.group(0)}" for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
            and isinstance(node.body[0].value.value, str)
            for match in [_NOT_IN_A_WHEEL.search(node.body[0].value.value)] if match]


@pytest.mark.parametrize("path", sorted(PACKAGES["bertlib"].rglob("*.py")),
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_a_library_docstring_names_no_course_and_no_test_file(path):
    """`help(bertlib...)` in a wheel install: `bertlib_course.paths.minilm_dir()` or `tests/test_x.py` are not there."""
    assert not docstrings_naming_the_repository(path), docstrings_naming_the_repository(path)


def test_the_docstring_check_sees_a_course_name(tmp_path):
    module = tmp_path / "checkpoint.py"
    module.write_text('"""Weights."""\n\ndef load(path):\n    """>>> load(bertlib_course.paths.minilm_dir())"""\n'
                      '\n\nclass A:\n    """Checked by tests/library/test_a.py."""\n')
    assert docstrings_naming_the_repository(module) == ["line 4: bertlib_course", "line 8: tests/"]
