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
    assert messages.translate("epoch") == "轮"
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


# ---------------------------------------------------------------------------- nothing a catalogue holds can crash

SAMPLE_NUMBER = 7  # an int takes every numeric spec the catalogue uses (",d", ".1f", "+.1%", ">5", "0>2")


def sample_fields(template):
    """`{name: value}` for the fields `str.format` reads in `template`, or None when it is no format template
    (a literal brace, as in "return {'logits': ...}", makes `string.Formatter` fail or name a field of quotes)."""
    import string

    def parse(text):  # the fields of `text` and of the specs nested in it ("{name:<{width}}")
        found = [(name, spec) for _, name, spec, _ in string.Formatter().parse(text) if name is not None]
        return found + [field for _, spec in found if spec and "{" in spec for field in parse(spec)]

    try:
        fields = parse(template)
    except ValueError:
        return None
    if any(not name or not name.replace("_", "a").isalnum() for name, _ in fields):
        return None
    return {name: "x" if (spec or "").endswith("s") else SAMPLE_NUMBER for name, spec in fields}


def runtime_entries():
    import polib

    return [entry for entry in polib.pofile(str(messages.catalogue_path("zh"))) if entry.translated()]


def test_every_runtime_catalogue_entry_renders_with_sample_values():
    """Each translated entry of the runtime catalogue, filled the way the course fills it: a check message through
    `message` (msgctxt a key of MESSAGES), a composed sentence through `pgettext(...).format` ("evidence",
    "audit"), a figure or hint string through `_()` and `.format` when its English is a template, and through
    `translate` as the English text a check prints (formatted first; literal text with braces as it is). None may
    raise, and the Chinese of the `.po` must take the English's fields, or a chapter's `.format` would fail."""
    entries = runtime_entries()
    assert len(entries) > 500
    compiled = messages.strings("zh")  # what `translate` reads (the .mo, compiled by `coursekit i18n build`)
    broken = []
    for entry in entries:
        fields = sample_fields(entry.msgid)
        try:
            if entry.msgctxt in messages.MESSAGES:
                assert fields is not None, entry.msgid
                entry.msgstr.format(**fields)
                messages.message(entry.msgctxt, "zh", **fields)
            elif fields is not None:
                entry.msgstr.format(**fields)
                english = entry.msgid.format(**fields)
            else:
                english = entry.msgid  # literal text that holds braces: shown as it is, never formatted
            if not entry.msgctxt and entry.msgid in compiled:
                shown = messages.translate(english, "zh")
                assert isinstance(shown, str) and (shown != english or entry.msgstr == entry.msgid), shown
        except Exception as error:  # noqa: BLE001 - collected, so one run names every broken entry
            broken.append(f"{entry.msgctxt or ''} {entry.msgid[:70]!r}: {type(error).__name__}: {error}")
    assert broken == []


HINT_WITH_BRACES = "return {'logits': numpy array, 'loss': float}"  # exercise 3.6's hint (exercises/03, cell 21)


def test_a_hint_with_literal_braces_reaches_the_learner_in_chinese(monkeypatch):
    """Exercise 3.6 passes this hint to `checked_call`; its Chinese holds the same braces. With BERTLIB_LANG=zh a
    learner's function that raises must give the ✘ message with the Chinese hint, not a KeyError."""
    from bertlib_course import checks

    chinese = {entry.msgid: entry.msgstr for entry in runtime_entries() if not entry.msgctxt}[HINT_WITH_BRACES]
    assert "{'logits'" in chinese
    monkeypatch.setenv("BERTLIB_LANG", "zh")

    def learner_function():
        raise ValueError("shapes do not match")

    with pytest.raises(checks.CheckFailed) as failed:
        checks.checked_call("masked_lm_outputs(weights, batch)", learner_function, hint=HINT_WITH_BRACES)
    assert str(failed.value).startswith("✘") and chinese in str(failed.value)
    assert "ValueError: shapes do not match" in str(failed.value)


def test_translate_fills_only_the_fields_it_captured(monkeypatch):
    """A template's Chinese may hold braces that are no field of its English (a dict in a hint, a field the
    English lacks): those stay as text. Fields with a format spec are captured as the text they were formatted to."""
    listed = {"loss {value} of {'a': 1}": "损失 {value}，来自 {'a': 1}",
              "ratio {ratio:.1f}x, {count} runs": "比值 {ratio:.1f}，{count} 次运行，{extra}",
              "a {{plain}} {x}": "一个 {{plain}} {x}"}
    monkeypatch.setattr(messages, "strings", lambda lang="zh": listed)
    messages._catalogue.cache_clear()
    try:
        assert messages.translate("loss 0.25 of {'a': 1}", "zh") == "损失 0.25，来自 {'a': 1}"
        assert messages.translate("ratio 3.2x, 4 runs", "zh") == "比值 3.2，4 次运行，{extra}"
        assert messages.translate("loss 0.25 of {'b': 2}", "zh") == "loss 0.25 of {'b': 2}"  # not this template
    finally:
        messages._catalogue.cache_clear()


def test_a_broken_translation_of_a_check_message_gives_the_english(monkeypatch):
    class Broken:
        def pgettext(self, context, english):
            return "✘ {name} 与 {nonexistent} 不符 {"

    monkeypatch.setattr(messages, "catalogue", lambda lang="zh": Broken())
    assert messages.message("not_expected", "zh", name="x") == "✘ x is not what was expected."
