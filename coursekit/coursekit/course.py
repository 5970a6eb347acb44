"""The course the kit works on, read from the `[tool.coursekit]` table of its repository's `pyproject.toml`.

The kit knows nothing of any one course: a course names its folders and the packages its grading kernels import
there, for example

    [tool.coursekit]
    notebooks = "notebooks"
    solutions = "solutions"
    exercises = "exercises"
    translations = "i18n"
    kernel_packages = ["mylib", "mycourse"]
    hooks = "mycourse.kit"              # optional: the course's own rules, below
    fast_variable = "MYCOURSE_FAST"     # "1" in a graded notebook's environment: small sizes (--no-fast: unset)
    language_variable = "MYCOURSE_LANG" # the edition a graded notebook runs in ("zh")
    metadata_key = "mycourse"           # notebook and cell metadata: {"mycourse": {"exercise": "3.2", ...}}

`hooks` names a module of the course with functions the kit calls where a course has rules of its own; each is
optional, and a missing one (or no `hooks`) gives the generic behaviour in brackets:

- `call_need(call)`: what one call (an `ast.Call`) in a solution's code needs on the grading machine: None, a need
  (an object with `kind`, `name`, `what`, `command` and `present()`, hashable), or "unresolvable" [None];
- `error_need(error_name, message)`: the need a kernel's error says this machine lacks, or None [None];
- `refusal_note(lacking)`: a line added to the refusal, given {need: [notebook names]} [""];
- `data_folders()`: folders the sandbox shows the kernel read-only (datasets, caches) [none];
- `kernel_environment()`: variables the kernel gets besides the kit's own [none];
- `runtime_catalogue(lang)`: the `.po` path of the strings the course's code shows at run time (figure texts,
  hints), which `coursekit i18n` checks the notebooks' figure texts against and compiles to its `.mo` [None: not
  checked];
- `check_arguments()`: {check function name: (positions, keywords) of its arguments that are texts a learner
  reads (a check's name, hint, expected and got texts)}, which `coursekit i18n` extracts and checks against the runtime catalogue
  (`coursekit.i18n.checktexts`) [{}: none].

The repository is `$COURSEKIT_ROOT`, else the course `using` names, else the nearest folder at or above the
working directory whose `pyproject.toml` has that table. Outside any course the kit uses its defaults.
"""

import contextlib
import importlib
import os
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

DEFAULTS = {"notebooks": "notebooks", "solutions": "solutions", "exercises": "exercises", "translations": "i18n",
            "kernel_packages": [], "hooks": "", "fast_variable": "COURSEKIT_FAST",
            "language_variable": "COURSEKIT_LANG", "metadata_key": "coursekit"}
_USING = []  # the roots `using` names, innermost last


class CourseNotFound(FileNotFoundError):
    pass


@dataclass(frozen=True)
class Course:
    root: Path
    notebooks: Path
    solutions: Path
    exercises: Path
    translations: Path
    kernel_packages: tuple = ()
    hooks: str = DEFAULTS["hooks"]
    fast_variable: str = DEFAULTS["fast_variable"]
    language_variable: str = DEFAULTS["language_variable"]
    metadata_key: str = DEFAULTS["metadata_key"]


def _table(pyproject):
    if not pyproject.is_file():
        return None
    with open(pyproject, "rb") as file:
        return tomllib.load(file).get("tool", {}).get("coursekit")


def find_root(start=None):
    """The course's repository folder, or None where no `[tool.coursekit]` is found."""
    if os.environ.get("COURSEKIT_ROOT"):
        return Path(os.environ["COURSEKIT_ROOT"]).resolve()
    if _USING and start is None:
        return _USING[-1]
    start = Path(start or Path.cwd()).resolve()
    return next((folder for folder in [start, *start.parents] if _table(folder / "pyproject.toml") is not None),
                None)


def current(root=None):
    """The `Course` at `root` (default: `find_root()`); CourseNotFound names where it looked."""
    root = Path(root).resolve() if root else find_root()
    table = _table(root / "pyproject.toml") if root else None
    if table is None:
        where = root or f"{Path.cwd()} and the folders above it"
        raise CourseNotFound(f"no course found: no pyproject.toml with a [tool.coursekit] table in {where}. Run "
                             "from the course's repository, set COURSEKIT_ROOT, or pass the folders as options.")
    unknown = sorted(set(table) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"{root / 'pyproject.toml'}: [tool.coursekit] has unknown keys {unknown}; "
                         f"expected some of {sorted(DEFAULTS)}")
    values = {**DEFAULTS, **table}
    folders = {key: root / values[key] for key in ("notebooks", "solutions", "exercises", "translations")}
    names = {key: str(values[key]) for key in ("hooks", "fast_variable", "language_variable", "metadata_key")}
    return Course(root=root, **folders, kernel_packages=tuple(values["kernel_packages"]), **names)


@contextlib.contextmanager
def using(folder):
    """Inside the block, the course holding `folder` (a solutions folder given as an option) is the current one
    when the working directory is in none: its settings, not the kit's defaults, apply to its notebooks. A no-op
    for `folder` None."""
    root = None if folder is None or find_root() else find_root(folder)
    if root is not None:
        _USING.append(root)
    try:
        yield
    finally:
        if root is not None:
            _USING.pop()


def setting(key):
    """The current course's `key` of [tool.coursekit]; the kit's default outside any course."""
    try:
        return getattr(current(), key)
    except CourseNotFound:
        return DEFAULTS[key]


def hook(name, default):
    """The function `name` of the course's `hooks` module, else `default` (the kit's generic behaviour)."""
    module_name = setting("hooks")
    if not module_name:
        return default
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise CourseNotFound(f"the course's hooks {module_name!r} ([tool.coursekit] hooks) cannot be imported: "
                             f"{error}") from error
    return getattr(module, name, default)


def root_or(root):
    """`root` as a Path, else the current course's root."""
    return Path(root) if root else current().root


def kernel_packages():
    """The packages a grading kernel imports: the course's `kernel_packages` (none where no course is found), and
    coursekit itself (an exercise notebook's checks report through it)."""
    try:
        names = current().kernel_packages
    except CourseNotFound:
        names = ()
    return tuple(dict.fromkeys([*names, "coursekit"]))


def package_folder(name):
    """The folder of the importable package `name` (its `__init__.py`'s folder)."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        raise CourseNotFound(f"the kernel package {name!r} of [tool.coursekit] kernel_packages is not installed")
    return Path(spec.origin).resolve().parent
