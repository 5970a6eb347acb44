"""`bertlib_course.paths` as a learner's install sees it: data comes through `$BERTLIB_DATA` only, never from a
folder found beside the package (CI's `../shared`, `$BERTLIB_SHARED`), which a wheel install does not have."""

import os

import pytest

import bertlib_course as course
from bertlib_course import paths


def test_squad_dir_is_the_first_bertlib_data_folder_holding_squad(tmp_path, monkeypatch):
    empty, first, second = tmp_path / "empty", tmp_path / "first", tmp_path / "second"
    for folder in (empty, first / "squad", second / "squad"):
        folder.mkdir(parents=True)
    monkeypatch.setenv("BERTLIB_DATA", os.pathsep.join([str(empty), str(first), str(second)]))
    assert paths.squad_dir() == first / "squad"


def test_squad_dir_ignores_ci_shared_folder_and_the_cache(tmp_path, monkeypatch):
    for folder in ("shared/data/squad", "cache/squad"):
        (tmp_path / folder).mkdir(parents=True)
    monkeypatch.setenv("BERTLIB_SHARED", str(tmp_path / "shared"))  # what the runtime read before issue 36
    monkeypatch.setenv("BERTLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BERTLIB_DATA", "")
    assert paths.squad_dir() is None
    monkeypatch.delenv("BERTLIB_DATA")
    assert paths.squad_dir() is None


def test_glue_task_dir_finds_through_the_librarys_mechanism(tmp_path, monkeypatch):
    """`course.glue_task_dir` finds a GLUE task where `bertlib.io.downloads` does: in a `$BERTLIB_DATA` folder."""
    monkeypatch.delenv("BERTLIB_DATA_MIRROR", raising=False)
    monkeypatch.setenv("BERTLIB_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "mine" / "glue" / "SST-2"
    folder.mkdir(parents=True)
    (folder / "dev.tsv").write_text("sentence\tlabel\n")
    monkeypatch.setenv("BERTLIB_DATA", str(tmp_path / "mine"))
    assert course.glue_task_dir("SST-2") == folder
    with pytest.raises(ValueError, match="glue/SST-5"):
        course.glue_task_dir("SST-5")
