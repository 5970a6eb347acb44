"""Imports on demand: lazy names for bertlib's packages (`bertlib.model.BertBackbone` imports
`bertlib.model.backbone` when it is first asked for), and the optional packages of bertlib's extras, whose absence
is an error that names the pip command adding them (`import_extra`, `check_extras`)."""

import importlib
import importlib.util
import shlex


def attach(package, exports):
    """(`__getattr__`, `__dir__`, `__all__`) for `package` whose `exports` map a public name to its submodule."""

    def __getattr__(name):
        if name in exports:
            return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        try:  # a submodule: bertlib.model.layers, bertlib.text.masking, ...
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{package}.{name}":
                raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__, sorted(exports)


class MissingExtraError(ImportError):
    """A package of one of bertlib's extras (pyproject.toml's optional dependencies) is not installed; the message
    names the pip command that installs that extra. `bertlib`'s commands print it without a traceback."""


def extra_requirements(extra):
    """The requirements of bertlib's `extra` as installed metadata lists them (pyproject.toml's
    `[project.optional-dependencies]`), e.g. ["pooch>=1.8", "urllib3>=2.3", "tqdm>=4.66"]; [] when unknown."""
    from importlib import metadata

    try:
        requirements = metadata.requires("bertlib") or []
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return []
    marker = f'extra == "{extra}"'
    return [requirement.partition(";")[0].strip() for requirement in requirements
            if marker in requirement.partition(";")[2]]


def missing_extra(packages, extra, needed_for):
    """The MissingExtraError for `packages` (import names) of bertlib's `extra`, needed for `needed_for`."""
    command = "pip install " + " ".join(shlex.quote(requirement)
                                        for requirement in extra_requirements(extra) or packages)
    return MissingExtraError(f"{needed_for} needs {' and '.join(packages)}, of bertlib's {extra!r} extra, which "
                             f"{'is' if len(packages) == 1 else 'are'} not installed. Install it: {command}")


def is_installed(module):
    """Whether `module` can be imported, found without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, or `sys.modules[module] = None`
        return False


def import_extra(module, extra, needed_for):
    """`importlib.import_module(module)`, or, when its package is not installed, a `MissingExtraError` naming
    the pip command for bertlib's `extra` (an ImportError from inside an installed package is raised as it is)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        top = module.partition(".")[0]
        if is_installed(top):  # the package is there, and something inside it (or one it needs) failed
            raise
        raise missing_extra([top], extra, needed_for) from error


def check_extras(needed_for, **extras):
    """Before long work: a `MissingExtraError` naming what is missing when a package of `extras`
    ({extra: [import names]}) is not installed. Imports nothing."""
    for extra, modules in extras.items():
        missing = [module for module in modules if not is_installed(module)]
        if missing:
            raise missing_extra(missing, extra, needed_for)
