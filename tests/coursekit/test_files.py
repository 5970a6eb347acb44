"""`coursekit.files.write_changed`, the one writer of generated files (exercises/, the translated editions)."""

import os
from pathlib import Path

import pytest

from coursekit import files

OLD = 1_000_000_000  # an mtime long past (2001), so a rewrite shows whatever the clock's resolution


def make(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (OLD, OLD))


@pytest.fixture
def folder(tmp_path):
    make(tmp_path / "exercises/zh/01_same.ipynb", b'{"cells": []}\n')
    make(tmp_path / "exercises/zh/02_changed.ipynb", b'{"cells": ["old"]}\n')
    make(tmp_path / "exercises/zh/03_stale.ipynb", b"{}\n")
    make(tmp_path / "exercises/zh/notes.txt", b"not generated\n")
    make(tmp_path / "exercises/en/09_elsewhere.ipynb", b"{}\n")  # outside the stale folders
    make(tmp_path / "locale/zh/messages.mo", b"\x00old")
    return tmp_path


def test_only_what_changed_is_written_and_stale_files_are_removed(folder):
    wanted = {"exercises/zh/01_same.ipynb": '{"cells": []}\n', "exercises/zh/02_changed.ipynb": '{"cells": []}\n',
              "notebooks/zh/04_new.ipynb": "new é\n", "locale/zh/messages.mo": b"\x00new"}
    changed = files.write_changed(folder, wanted, stale_folders=["exercises/zh", "notebooks/zh"])
    # written in the order given, then the removed ones
    assert changed == [folder / "exercises/zh/02_changed.ipynb", folder / "notebooks/zh/04_new.ipynb",
                       folder / "locale/zh/messages.mo", folder / "exercises/zh/03_stale.ipynb"]
    assert os.stat(folder / "exercises/zh/01_same.ipynb").st_mtime == OLD  # unchanged: not rewritten
    assert os.stat(folder / "exercises/zh/02_changed.ipynb").st_mtime > OLD
    assert (folder / "exercises/zh/02_changed.ipynb").read_bytes() == b'{"cells": []}\n'
    assert (folder / "notebooks/zh/04_new.ipynb").read_bytes() == b"new \xc3\xa9\n"  # UTF-8
    assert (folder / "locale/zh/messages.mo").read_bytes() == b"\x00new"
    assert not (folder / "exercises/zh/03_stale.ipynb").exists()
    # what the pattern or the folders leave out stays
    assert (folder / "exercises/zh/notes.txt").read_bytes() == b"not generated\n"
    assert (folder / "exercises/en/09_elsewhere.ipynb").exists()
    # no temporary file left beside the targets
    assert sorted(path.name for path in (folder / "exercises/zh").iterdir()) == [
        "01_same.ipynb", "02_changed.ipynb", "notes.txt"]
    # a second run finds nothing to do
    assert files.write_changed(folder, wanted, stale_folders=["exercises/zh", "notebooks/zh"]) == []


def test_text_is_written_with_unix_line_endings_and_bytes_as_they_are(tmp_path):
    changed = files.write_changed(tmp_path, {"a.ipynb": "one\ntwo\n", "b.mo": b"one\r\ntwo\n"})
    assert changed == [tmp_path / "a.ipynb", tmp_path / "b.mo"]
    assert (tmp_path / "a.ipynb").read_bytes() == b"one\ntwo\n"
    assert (tmp_path / "b.mo").read_bytes() == b"one\r\ntwo\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(folder, monkeypatch):
    def fail(descriptor):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="No space left"):
        files.write_changed(folder, {"exercises/zh/02_changed.ipynb": "new\n"})
    assert (folder / "exercises/zh/02_changed.ipynb").read_bytes() == b'{"cells": ["old"]}\n'
    assert sorted(path.name for path in Path(folder / "exercises/zh").iterdir()) == [
        "01_same.ipynb", "02_changed.ipynb", "03_stale.ipynb", "notes.txt"]
