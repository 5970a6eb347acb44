"""An optional package that is missing is named with the pip command that installs its extra (pyproject.toml's
`[project.optional-dependencies]`), before any long work starts, by every command that needs it."""

import sys

import pytest
from packaging.requirements import Requirement

from bertlib import cli
from bertlib._lazy import MissingExtraError, extra_requirements, import_extra
from bertlib.io import downloads
from tools.repo_paths import REPO_ROOT

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

DATA_EXTRA = "pip install 'pooch>=1.8' 'urllib3>=2.3' 'tqdm>=4.66'"


def _requirements(strings):
    return sorted((Requirement(text).name, str(Requirement(text).specifier)) for text in strings)


def test_the_pip_command_installs_what_pyproject_declares():
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for extra in ("data", "tensorflow", "datasets"):
        assert _requirements(extra_requirements(extra)) == \
            _requirements(declared["optional-dependencies"][extra]), extra
    assert " ".join(f"'{text}'" for text in declared["optional-dependencies"]["data"]) in DATA_EXTRA


def test_an_import_error_inside_an_installed_package_is_not_called_a_missing_extra(monkeypatch):
    for name in ("tqdm", "tqdm.auto"):  # as if not installed, also where an earlier test imported it
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingExtraError, match=r"needs tqdm, of bertlib's 'data' extra"):
        import_extra("tqdm.auto", "data", "A progress bar")
    with pytest.raises(ImportError) as raised:
        import_extra("bertlib.no_such_module", "data", "Nothing")
    assert not isinstance(raised.value, MissingExtraError)


@pytest.mark.parametrize("blocked, extra, command", [("tqdm", "data", DATA_EXTRA),
                                                     ("tensorflow", "tensorflow", "pip install 'tensorflow")])
def test_bertlib_data_names_a_missing_extra_before_reading_the_corpus(blocked, extra, command, monkeypatch,
                                                                       capsys, tmp_path):
    monkeypatch.setitem(sys.modules, blocked, None)  # as if not installed
    assert cli.main(["data", "--corpus", "python-docs", "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"bertlib data: error: bertlib data needs {blocked}, of bertlib's '{extra}' extra, "
                            "which is not installed. Install it: " + command), error
    assert "Traceback" not in error and not (tmp_path / "out").exists()


@pytest.fixture
def no_data_here(tmp_path, monkeypatch):
    """A machine without datasets: no BERTLIB_DATA, an empty cache, no mirror."""
    monkeypatch.delenv("BERTLIB_DATA", raising=False)
    monkeypatch.delenv("BERTLIB_DATA_MIRROR", raising=False)
    monkeypatch.setenv("BERTLIB_CACHE", str(tmp_path / "cache"))


def test_a_download_without_pooch_names_the_extra_not_the_network(no_data_here, monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "pooch", None)
    with pytest.raises(MissingExtraError) as raised:
        downloads.find("sst2")
    message = str(raised.value)
    assert message == f"Downloading a dataset needs pooch, of bertlib's 'data' extra, which is not installed. " \
                      f"Install it: {DATA_EXTRA}"
    assert cli.main(["download", "sst2"]) == 2
    assert capsys.readouterr().err == f"bertlib download: error: {message}\n"
    assert cli.main(["finetune", "--task", "sst2", "--init", "tiny", "--output-dir", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert error.endswith(f"error: {message}\n"), error
    assert "make lab" not in error and "To fix" not in error and ".." not in error
