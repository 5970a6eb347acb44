"""`bertlib_course.audit`: the reader behind chapter 08's task 4 and exercise 8.6 accepts a reason that points at a
contribution's evidence and refuses one that only names a chapter or quotes a figure the evidence does not have."""

import doctest

import pytest

from bertlib_course import audit

REFERENCE = {  # the reasons of solutions/08's reference audit
    1: "§5.1: LTR & No NSP loses 10.7 SQuAD F1; our toy MLM encoder beat LTR on a right-context probe (chapter 03).",
    2: "§4: one backbone and a one-layer head for GLUE, SQuAD and SWAG.",
    3: "§5.1: a clear loss on QNLI only; NSP is solvable from topic cues and later dropped by RoBERTa.",
    4: "§5.2: accuracy rises monotonically with size on MRPC, MNLI and the LM (Table 6).",
    5: "C.1: 1M steps beat 500k by almost 1.0 MNLI point, one figure (Figure 5) and no table.",
}


def test_the_reference_reasons_read_as_evidence():
    for number, reason in REFERENCE.items():
        assert audit.reason_problems(number, reason) == [], (number, reason)


@pytest.mark.parametrize("number", sorted(audit.EVIDENCE))
def test_a_six_word_sentence_naming_chapter_4_is_no_reason(number):
    # Issue 24: the old check accepted any six-word sentence that contained "chapter 4", for every contribution.
    for reason in ("See chapter 4 for this one, really.", "Chapter 4 shows it, I am sure.",
                   "As in chapter 04, this is convincing."):
        assert audit.reason_problems(number, reason), (number, reason)


def test_a_made_up_figure_or_another_contributions_source_is_refused():
    assert audit.reason_problems(4, "§5.2: the biggest model gains 12.5 points on MRPC.") == [
        "it quotes 12.5, not a figure of that evidence"]
    assert audit.reason_problems(5, "§5.1: LTR & No NSP loses 10.7 SQuAD F1.")  # contribution 1's evidence
    assert audit.reason_problems(3, "Chapter 02 shows NSP helps QNLI by 3.5 points.")  # the wrong chapter
    assert audit.reason_problems(3, "§5.1: without NSP, QNLI drops 3.5 points (88.4 to 84.9).") == []
    assert audit.reason_problems(1, "section 5.1: the LTR model loses 10.7 F1 on SQuAD") == []  # in words
    assert audit.reason_problems(2, None) == ["the reason is NoneType, not a sentence (str)"]
    with pytest.raises(ValueError, match="1 to 5"):
        audit.reason_problems(6, "§5.1")



def test_table_6s_size_columns_are_figures_of_its_evidence():
    # The learner trial of 2026-12-05: "grows from 3 to 24 layers" was refused, though 24 is Table 6's #L of
    # BERT_LARGE. Every column of Table 6 counts; the sizes are also Table 1's BASE and LARGE (§3, §4.1).
    assert audit.TABLE_6[3][:3] == (12, 768, 12) and audit.TABLE_6[-1][:3] == (24, 1024, 16)
    assert [row[3] for row in audit.TABLE_6] == sorted((row[3] for row in audit.TABLE_6), reverse=True)  # ppl falls
    for reason in ("§5.2, Table 6: MRPC rises from 79.8 to 87.8 as the model grows from 3 to 24 layers.",
                   "Table 6: the 24-layer model with H = 1024 and 16 heads reaches an LM perplexity of 3.23.",
                   "§5.2: 6 layers with 3 heads (H = 768) score 80.6 on MNLI-m, 6 with 12 heads 81.9."):
        assert audit.reason_problems(4, reason) == [], reason
    assert audit.reason_problems(4, "Table 6: 32 layers with H = 1536 reach 95.0 on SST-2.") == [
        "it quotes 32, 1536, 95.0, not a figure of that evidence"]

def test_named_sources():
    assert audit.named_sources("§5.1 and Table 5; C.1, Figure 5; chapter 04, ch. 3, section 4.2") == {
        "§5.1", "Table 5", "C.1", "Figure 5", "04", "03", "§4.2"}
    assert audit.named_sources("bertlib 3.15.1, 10.7 F1") == set()


def test_docstring_examples():
    assert doctest.testmod(audit).failed == 0


def test_the_chinese_editions_source_names_count_as_the_english_ones():
    """Issue 25: a learner of the Chinese edition writes 表 6, 第 5.1 节, 第 3 章; they name the same sources."""
    assert audit.named_sources("第 5.1 节（表 5）与图5，附录 C.1，第 03 章") == {"§5.1", "Table 5", "Figure 5", "C.1", "03"}
    assert audit.reason_problems(3, "第 5.1 节（表 5）：去掉 NSP 后，QNLI 从 88.4 降到 84.9。") == []
    assert audit.reason_problems(4, "表 6：模型越大，MRPC、MNLI 和语言模型困惑度越好。") == []
    assert audit.reason_problems(1, "第 3 章：我们的玩具 MLM 编码器在右侧语境探针上胜过 LTR。") == []
    # The same rules hold: the wrong chapter, or a made-up figure, is still refused.
    assert audit.reason_problems(3, "第 2 章说明 NSP 让 QNLI 提高了 3.5 分。")
    assert audit.reason_problems(4, "表 6：最大的模型在 MRPC 上多得 12.5 分。") == [
        "it quotes 12.5, not a figure of that evidence"]


def test_a_chinese_reason_names_what_was_measured_in_chinese():
    """Issue 39: the glossary's terms say what was measured, written inside a Chinese sentence without spaces."""
    assert audit.reason_problems(1, "第 3 章：深层双向的编码器在探针上胜过单向模型。") == []
    assert audit.reason_problems(4, "表 6：隐藏维度越大，困惑度越低。") == []
    assert audit.reason_problems(5, "附录 C.1：MLM 的收敛曲线起步稍慢，但很快就领先。") == []
    assert audit.reason_problems(3, "第 4 章：预训练过 NSP 的模型在同一文档任务上胜过多数类。") == []
    # naming the source alone still says nothing of what was measured, in Chinese as in English
    assert audit.reason_problems(5, "附录 C.1 很有说服力。") == [
        "it does not say what was measured (a figure, or the task, model or quantity)"]
