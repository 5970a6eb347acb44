"""A Chinese notebook speaks Chinese by itself (`bertlib_course.messages.language`), on Colab too.

The reference for what the running notebook is: Jupyter Server >= 2 gives the kernel `JPY_SESSION_NAME` (the
notebook's path), and on Colab `google.colab._message.blocking_request("get_ipynb", ...)` returns
`{"ipynb": <the open notebook as a dict>}`, or None when the frontend does not answer in time
(googlecolab/colabtools, google/colab/_message.py). `BERTLIB_LANG`, when set, always wins.
"""

import json
import sys
import types

import pytest

from bertlib_course import messages
from coursekit import i18n
from tools.repo_paths import REPO_ROOT as REPO

ENGLISH = REPO / "notebooks" / "01_problem_setting.ipynb"


def notebook(lang=None):
    return {"metadata": {"bertlib": {"lang": lang}} if lang else {}, "cells": [], "nbformat": 4,
            "nbformat_minor": 5}


@pytest.fixture()
def clean(tmp_path, monkeypatch):
    """No variable, no session, no Colab, a neutral folder, and no answer remembered from another test."""
    for name in ("BERTLIB_LANG", "JPY_SESSION_NAME"):
        monkeypatch.delenv(name, raising=False)
    for name in ("google.colab", "google.colab._message"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.chdir(tmp_path)
    messages._colab_language.cache_clear()
    yield tmp_path
    messages._colab_language.cache_clear()


def fake_colab(monkeypatch, reply):
    """A `google.colab._message` whose `blocking_request` answers `reply` (or raises it) and records the calls."""
    calls = []

    def blocking_request(request_type, request="", timeout_sec=5, parent=None):
        calls.append((request_type, timeout_sec))
        if isinstance(reply, Exception):
            raise reply
        return reply

    google, colab = types.ModuleType("google"), types.ModuleType("google.colab")
    message = types.ModuleType("google.colab._message")
    message.blocking_request = blocking_request
    colab._message = message
    if "google" not in sys.modules:  # else the real namespace package (protobuf's) stays and gets a `colab`
        monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setattr(sys.modules["google"], "colab", colab, raising=False)
    for module in (colab, message):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    return calls


def test_a_notebook_with_chinese_metadata_is_chinese(clean, monkeypatch):
    path = clean / "第一章.ipynb"
    path.write_text(json.dumps(notebook("zh")), encoding="utf-8")
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    assert messages.language() == "zh"
    assert messages.message("passed", name="x") == "✔ x：符合预期"


def test_a_session_path_relative_to_the_server_root_is_found_from_the_kernel_folder(clean, monkeypatch):
    folder = clean / "course" / "chapters"
    folder.mkdir(parents=True)
    (folder / "01.ipynb").write_text(json.dumps(notebook("zh")), encoding="utf-8")
    monkeypatch.chdir(folder)  # Jupyter starts the kernel in the notebook's folder; the path is from the root
    monkeypatch.setenv("JPY_SESSION_NAME", "course/chapters/01.ipynb")
    assert messages.language() == "zh"


def test_the_english_notebook_is_english(clean, monkeypatch):
    monkeypatch.setenv("JPY_SESSION_NAME", str(ENGLISH))
    assert messages.notebook_language() == "en"
    # The notebook's word is final: an English notebook in a folder named like the Chinese edition's is English.
    folder = clean / "notebooks" / "zh"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    assert messages.language() == "en"


def test_the_variable_wins_over_the_metadata(clean, monkeypatch):
    path = clean / "chapter.ipynb"
    path.write_text(json.dumps(notebook("zh")), encoding="utf-8")
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    monkeypatch.setenv("BERTLIB_LANG", "en")
    assert messages.language() == "en"
    monkeypatch.setenv("BERTLIB_LANG", "zh_CN")
    monkeypatch.setenv("JPY_SESSION_NAME", str(ENGLISH))
    assert messages.language() == "zh"


def test_the_ipython_session_global_names_the_notebook(clean, monkeypatch):
    path = clean / "chapter.ipynb"
    path.write_text(json.dumps(notebook("zh")), encoding="utf-8")
    shell = types.SimpleNamespace(user_ns={"__vsc_ipynb_file__": str(path)})
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert messages.language() == "zh"


@pytest.mark.parametrize("content", [None, b"", b"{not json", b"\xff\xfe garbage", b"[1, 2]", b'{"cells": 3}',
                                     b'{"metadata": {"bertlib": "zh"}, "cells": []}',
                                     b'{"metadata": {"bertlib": {"lang": "klingon"}}, "cells": []}',
                                     b"[" * 100_000])
def test_a_missing_or_garbled_notebook_is_english_without_an_error(clean, monkeypatch, content):
    path = clean / "chapter.ipynb"
    if content is not None:
        path.write_bytes(content)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    assert messages.language() == "en"


def test_a_folder_named_like_a_notebook_is_no_notebook(clean, monkeypatch):
    (clean / "chapter.ipynb").mkdir()
    monkeypatch.setenv("JPY_SESSION_NAME", str(clean / "chapter.ipynb"))
    assert messages.notebook_language() is None
    assert messages.language() == "en"


def test_on_colab_the_open_notebook_says_chinese(clean, monkeypatch):
    calls = fake_colab(monkeypatch, {"ipynb": notebook("zh")})
    assert messages.language() == "zh"
    assert messages.translate("epoch") == "轮次"
    assert calls == [("get_ipynb", messages.COLAB_TIMEOUT_S)]  # asked once per process, not per message


def test_on_colab_an_english_notebook_is_english(clean, monkeypatch):
    fake_colab(monkeypatch, {"ipynb": json.loads(ENGLISH.read_text(encoding="utf-8"))})
    assert messages.language() == "en"


@pytest.mark.parametrize("reply", [None, {}, {"ipynb": "{garbled"}, {"ipynb": [1]}, RuntimeError("no frontend"),
                                   TimeoutError()])
def test_on_colab_no_answer_is_english_without_an_error(clean, monkeypatch, reply):
    fake_colab(monkeypatch, reply)
    assert messages.language() == "en"


def test_on_colab_the_variable_still_wins(clean, monkeypatch):
    calls = fake_colab(monkeypatch, {"ipynb": notebook("zh")})
    monkeypatch.setenv("BERTLIB_LANG", "en")
    assert messages.language() == "en"
    assert calls == []


def test_every_generated_chinese_notebook_carries_its_language():
    generated = [path for edition in (*i18n.SOURCE_EDITIONS, i18n.EXERCISES)
                 for path in sorted((REPO / edition / "zh").glob("*.ipynb"))]
    assert len(generated) >= 3 * 8
    for path in generated:
        document = json.loads(path.read_text(encoding="utf-8"))
        assert document["metadata"]["bertlib"]["lang"] == "zh", path
        assert messages._file_language(path) == "zh", path
    for edition in (*i18n.SOURCE_EDITIONS, i18n.EXERCISES):
        for path in sorted((REPO / edition).glob("*.ipynb")):
            assert messages._file_language(path) == "en", path
