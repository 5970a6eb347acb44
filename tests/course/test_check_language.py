"""What a check prints reaches the learner in their language: the names, hints and expected/got texts the notebooks
hand to `bertlib_course.checks` are looked up in the runtime catalogue (`messages.check_text`) before they are put
into a message, and nothing the catalogue holds can make a check fail to give its feedback."""

import re

import polib
import pytest

from bertlib_course import checks, messages
from bertlib_course.checks import CheckFailed
from tests.course.check_texts import check_texts, is_prose

FIELD = re.compile(r"\{(\w+)\}")


def translated_entries():
    """The catalogue's translated, non-fuzzy entries without msgctxt: what `check_text` reads, as the `.po` has it."""
    catalogue = polib.pofile(str(messages.catalogue_path("zh")))
    return {entry.msgid: entry.msgstr for entry in catalogue if not entry.msgctxt and entry.translated()}


def failure(check, *args, **kwargs):
    with pytest.raises(CheckFailed) as caught:
        check(*args, **kwargs)
    return str(caught.value)


@pytest.fixture(scope="module")
def texts():
    return check_texts()


def test_the_extraction_reads_literals_f_strings_and_names(texts):
    """The texts of the walk, against the cells they come from (solutions/03, 04, 05): a literal name and its
    expected text, an f-string's template, a quiz statement reached through `zip(STATEMENTS, ...)`, a dict's value
    reached through `BOUNDARY_HINTS[place]`, a helper's parameter given literals; code is left out."""
    for english in ("label balance", "about half NotNext", "{labels} NotNext", "[MASK] share {where}",
                    "the 10% random branch is what keeps the task a cloze test",
                    "at total_steps the rate is the floor, not 0", "{name} at the boundaries",
                    "head.pool(sequence_output, padding_mask), the first step"):
        assert english in texts, english
    for code in ("replica_plan{case}", "answers", "pool(sequence_output, kernel, bias)",
                 "WarmupCosineDecay(**SETTINGS)", "depends_on_itself({num_layers}, 5)"):
        assert code not in texts and not is_prose(code), code
    assert len(texts) > 350


def test_every_text_the_notebooks_hand_to_a_check_has_chinese(texts):
    """A check a notebook adds without a translation of its name, hint or expected/got text fails here, naming it
    and its cell. The `.mo` the course reads holds the same (`coursekit i18n check` compares the two)."""
    listed = translated_entries()
    missing = [f"{english!r} ({places[0]})" for english, places in texts.items() if english not in listed]
    assert missing == []
    compiled = messages.strings("zh")
    assert [english for english in texts if compiled.get(english) != listed[english]] == []
    for english in texts:  # the Chinese takes the English's fields, so filling it never leaves a brace
        assert set(FIELD.findall(listed[english])) == set(FIELD.findall(english)), english


def sample_text(english):
    """`english` as a notebook's cell would have formatted it: each `{field}` (`{ratio:.1f}` too) a sample value,
    other text as it is."""
    return messages.FIELD.sub(lambda match: f"<{match.group(1)} 7>", english)


def test_every_catalogue_entry_renders_in_a_failed_check(monkeypatch):
    """Each translated entry without msgctxt, formatted with sample values where it is a template and as it is where
    its braces are text ("return {'logits': ...}"), given to a failing check as its name, expected and got texts and
    hint: the check raises its ✘ message (never a KeyError or ValueError of the catalogue), and the Chinese of the
    name reaches the message with the sample values in place of its fields."""
    monkeypatch.setenv("BERTLIB_LANG", "zh")
    listed = translated_entries()
    assert len(listed) > 700
    broken = []
    for english, chinese in listed.items():
        text = sample_text(english)
        try:
            shown = failure(checks.check_true, text, False, text, text, hint=text)
            assert shown.startswith("✘"), shown
            if messages.FIELD.search(english) and chinese != english:
                assert "<" in shown and not messages.FIELD.search(shown.replace(text, "")), shown
            elif not messages.FIELD.search(english):
                assert chinese in shown, shown
        except Exception as error:  # noqa: BLE001 - collected, so one run names every broken entry
            broken.append(f"{english[:70]!r}: {type(error).__name__}: {error}")
    assert broken == []


@pytest.fixture
def made_up_catalogue(monkeypatch):
    """A catalogue of entries that could break a formatter: literal braces, a field the English lacks, one too few,
    a brace left open."""
    listed = {"loss of {'a': 1}": "来自 {'a': 1} 的损失",
              "share {where}": "占比 {where}",
              "ratio {ratio}": "比值 {ratio}，{extra}",
              "two {first} and {second}": "两个 {first}",
              "open {brace": "开 {brace",
              "the end of warmup": "预热结束处",
              "at {place}": "在{place}"}
    monkeypatch.setattr(messages, "strings", lambda lang="zh": listed)
    messages._catalogue.cache_clear()
    yield
    messages._catalogue.cache_clear()


def test_check_text_never_formats_what_the_catalogue_holds(made_up_catalogue):
    assert messages.check_text("loss of {'a': 1}", "zh") == "来自 {'a': 1} 的损失"
    assert messages.check_text("share (token masker)", "zh") == "占比 (token masker)"
    # a field the English lacks: the English, never a brace the learner would read as a slot left empty
    assert messages.check_text("ratio 3.2", "zh") == "ratio 3.2"
    assert messages.check_text("two 1 and 2", "zh") == "两个 1"  # a field left out is the translator's choice
    assert messages.check_text("open {brace", "zh") == "开 {brace"
    # a field is looked up as a whole text, once; the text it came with is never matched against templates again
    assert messages.check_text("at the end of warmup", "zh") == "在预热结束处"
    assert messages.check_text("at share x", "zh") == "在share x"
    assert messages.check_text("not listed", "zh") == "not listed"
    assert messages.check_text("share (token masker)", "en") == "share (token masker)"
    assert messages.check_text(None, "zh") is None


def test_a_failed_check_reads_chinese_and_english_stays_english(monkeypatch):
    """The review's line ("✘ label balance 与预期不符。 / 预期：about half NotNext", exercise 4.3), now."""
    monkeypatch.setenv("BERTLIB_LANG", "zh")
    shown = failure(checks.check_true, "label balance", False, "about half NotNext", "71.0% NotNext",
                    hint="one pair per two consecutive sentences of a document")
    assert shown == ("✘ 标签平衡 与预期不符。\n  预期：大约一半是 NotNext\n  实际：71.0% 是 NotNext\n"
                     "  提示：一个文档中每两句相邻的句子构成一个句对")
    shown = failure(checks.check_equal, "label balance", 1, 2)
    assert shown.splitlines()[0] == "✘ 标签平衡 与预期不符。"
    shown = failure(checks.check_true, "schedule at the boundaries", False,
                    "every rate within 1e-5 x peak of the rules",
                    "first wrong at step 100, the end of warmup: 0.0001 instead of 9e-05")
    assert "✘ schedule 在各边界处" in shown and "第一次出错在第 100 步（预热结束处）：得到 0.0001，应为 9e-05" in shown
    shown = failure(checks.check_shape, "the shapes of head.get_weights()", [1], (2,))
    assert "head.get_weights() 的形状" in shown
    monkeypatch.setenv("BERTLIB_LANG", "en")
    shown = failure(checks.check_true, "label balance", False, "about half NotNext", "71.0% NotNext")
    assert shown.splitlines()[:2] == ["✘ label balance is not what was expected.", "  Expected: about half NotNext"]


def test_passed_checks_and_function_checks_name_their_check_in_chinese(monkeypatch, capsys):
    monkeypatch.setenv("BERTLIB_LANG", "zh")
    checks.check_true("twice the chips, half the days", True, "", "")
    checks.check_close("overall accuracy of a model that always says IsNext", 0.9, 0.9)
    assert capsys.readouterr().out.splitlines() == ["✔ 芯片加倍，天数减半：符合预期", "✔ 总说 IsNext 的模型的总体准确率：符合预期"]
    shown = failure(checks.check_function, "MeanPooledNSPHead on random padded batches", lambda x: x + 1,
                    lambda x: x, lambda rng: (rng.normal(size=3),), trials=1)
    assert shown.startswith("✘ 在带填充的随机批次上的 MeanPooledNSPHead(")
    shown = failure(checks.checked_call, "head.set_weights(random weights)", lambda: 1 / 0,
                    hint="return {'logits': numpy array, 'loss': float}")
    assert "✘ head.set_weights(随机权重)" in shown and "提示：返回 {'logits': numpy 数组, 'loss': float}" in shown


def test_values_in_expected_and_got_are_described_in_chinese(monkeypatch):
    """The words around a shown value (an array's shape and dtype, a tuple's length, a size that may be any) are
    check messages too (msgctxt "array_shown", "items_shown", "any_size"); the values stay as numpy prints them."""
    import numpy as np

    monkeypatch.setenv("BERTLIB_LANG", "zh")
    shown = failure(checks.check_equal, "ids", np.array([1, 2, 4], dtype="int64"), [1, 2, 3])
    assert shown.splitlines()[1:] == ["  预期：[1, 2, 3]", "  实际：形状为 (3,) 的数组，int64：[1, 2, 4]"]
    shown = failure(checks.check_shape, "sequence_output", np.zeros((2, 7)), (2, None, 4))
    assert "预期：(2, 任意, 4)" in shown
    shown = failure(checks.check_equal, "outputs", (np.zeros((2, 3)), 1), [0])
    assert "含 2 项的 tuple：形状为 (2, 3) 的数组, 1" in shown


def test_a_name_composed_of_marked_parts_reads_chinese_throughout(monkeypatch):
    """Exercise 3.3 names each check after its masker (`where`) and 4.6 says where a learner's pooling first goes
    wrong (`shown`): both are marked `_()` where the cell writes them and formatted after the lookup, so no English
    fragment is left inside a Chinese line ("[MASK] 占比 (token masker, rates ...)" was the review's line)."""
    from bertlib_course import _

    monkeypatch.setenv("BERTLIB_LANG", "zh")
    where = _("(token masker, rates {rates})").format(rates=(0.15, 0.8, 0.1))
    shown = failure(checks.check_close, f"[MASK] share {where}", 0.5, 0.8, atol=0.015)
    assert shown.splitlines()[0] == "✘ [MASK] 占比（逐词元掩码器，比率 (0.15, 0.8, 0.1)） 与预期不符。"
    mistake = _("the [CLS] vector, not the mean")
    shown = failure(checks.check_true, "head.pool(sequence_output, padding_mask), the first step", False,
                    _("the reference's values, shape {expected}").format(expected=(3, 8)),
                    _("first wrong here: {shown}").format(shown=_("equal to {mistake}").format(mistake=mistake)))
    assert "  实际：这里第一次出错：等于“[CLS] 的向量，而不是平均值”" in shown
    assert not re.search(r"\b(masker|rates|equal|vector|mean)\b", shown), shown
    monkeypatch.setenv("BERTLIB_LANG", "en")
    assert _("(token masker, rates {rates})").format(rates=(0.15, 0.8, 0.1)) == "(token masker, rates (0.15, 0.8, 0.1))"


def test_chinese_columns_line_up_by_display_width_and_english_is_unchanged(monkeypatch):
    """Chapter 03's branch table (`f"{_(name):>9}"`), chapter 02's parameter ladder (`{label:55s}`) and chapter 08's
    vocabulary table (a label composed with `_().format`, then `:>36`) pad what `_()` gives: in Chinese a wide
    character takes two columns (Unicode's East Asian Width, as a terminal and a notebook's monospaced output show
    it), so padding by characters, the review's misaligned tables, is wrong; in English `_()` gives the str itself."""
    from bertlib_course import _

    monkeypatch.setenv("BERTLIB_LANG", "zh")
    rows = [f"{_(name):>9}：" for name in ("[MASK]", "unchanged", "random")]
    assert [messages.columns(row) for row in rows] == [11, 11, 11], rows
    assert rows[1] == "     不变：" and [f"{_(name):<9}|" for name in ("unchanged",)] == ["不变     |"]
    label = _("{size} (Python docs, {learned} learned)").format(size="250", learned="250")
    assert messages.columns(f"{label:>36}") == 36 and f"{label:>36}".endswith(label)
    assert f"{_('unchanged'):^8}" == "  不变  " and f"{_('unchanged'):.1}" == "不"  # a precision: str's own
    monkeypatch.setenv("BERTLIB_LANG", "en")
    assert type(_("unchanged")) is str and f"{_('unchanged'):>11}" == "  unchanged"


class _Sample:
    """A field value any format spec accepts (`:3d`, `:.1%`, `:>9`), shown as its field's name in angle brackets."""

    def __init__(self, name):
        self.name = name

    def __format__(self, spec):
        return f"<{self.name}>"

    __str__ = __repr__ = lambda self: f"<{self.name}>"  # a `!s` or `!r` conversion


def test_every_catalogue_template_fills_through_formatted_without_crashing(monkeypatch):
    """`messages.formatted` (an explorer's caption, the progress line) looks a template up, then fills it: for every
    translated entry without msgctxt, filled with a value per field of its English, the result is the Chinese with
    each field replaced (or, where the Chinese cannot take the English's fields, the English filled), never an
    exception and never a brace left for a field."""
    monkeypatch.setenv("BERTLIB_LANG", "zh")
    broken = []
    for english, chinese in translated_entries().items():
        names = set(FIELD.findall(english)) | {match.group(1) for match in messages.FIELD.finditer(english)}
        if not messages.FIELD.search(english):
            continue
        try:
            shown = messages.formatted(english, **{name: _Sample(name) for name in names})
            assert not messages.FIELD.search(shown), shown
            if set(messages.FIELD.findall(chinese)) <= names and "{{" not in chinese:
                assert shown == messages.FIELD.sub(lambda match: f"<{match.group(1)}>", chinese), shown
        except Exception as error:  # noqa: BLE001 - collected, so one run names every broken entry
            broken.append(f"{english[:70]!r}: {type(error).__name__}: {error}")
    assert broken == []
    assert messages.formatted("head {h}", h=3) == "头 3"
    monkeypatch.setenv("BERTLIB_LANG", "en")
    assert messages.formatted("head {h}", h=3) == "head 3"
