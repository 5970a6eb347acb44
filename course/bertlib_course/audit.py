"""The evidence behind the paper's five contributions, as the study guide lists them (its section 一; chapter 08's
task 4 and exercise 8.6): where the evidence is, which figures it has, and a reader that says whether a one-sentence
reason points at it.

A reason for contribution N reads as evidence when it

1. names one of N's sources: a section or table of the paper (§5.1, Table 5, C.1, ...; "section 5.1" counts as
   §5.1, and so do the Chinese edition's 第 5.1 节, 表 5 and 图 5) or a chapter of this course that measured it
   ("chapter 03", "ch. 3", 第 3 章);
2. says what was measured: it quotes one of N's figures, or names one of N's measured things (a task such as
   QNLI, a model such as LTR, perplexity, steps, ...);
3. quotes no number that is not one of N's figures: numbers are read with `coursekit.prose.quantities`, the
   prose checker's reader, so citations, labels, years and small counts are not numbers here.

So "See chapter 4 for this one, it is convincing." is no reason for any contribution (it names a chapter and says
nothing of what it measured), and "§5.2: the biggest model gains 12.5 points on MRPC." is refused because Table 6
has no 12.5. The problems are said in the learner's language: the runtime catalogue's entries with msgctxt "audit"
(`bertlib_course.messages.pgettext`), where chapter 04 is 第 4 章 and Table 5 is 表 5.

Example:
>>> reason_problems(3, "§5.1: without NSP, QNLI drops 3.5 points (88.4 to 84.9).")
[]
>>> reason_problems(1, "See chapter 4 for this one, it is convincing.")[0]
'it names chapter 04, not where the evidence for contribution 1 is (Table 5, §5.1, chapter 01 or 03)'
"""

import functools
import re
from typing import NamedTuple

from bertlib_course import messages
from coursekit.prose import quantities

# This module's sentences in the learner's language: `_(english)` is the catalogue's template, filled in after.
_ = functools.partial(messages.pgettext, "audit")

CONTRIBUTIONS = {
    1: "deep bidirectional pretraining",
    2: "fewer task-specific architectures",
    3: "NSP is useful",
    4: "bigger is better on small tasks",
    5: "MLM slower but ahead almost at once",
}


class Evidence(NamedTuple):
    """Where a contribution's evidence is, and what it measured."""

    sources: frozenset   # sections, tables and figures of the paper: "§5.1", "Table 5", "C.1", "Figure 5"
    chapters: frozenset  # chapters of this course: "01", "03"
    figures: frozenset   # the numbers a reason may quote
    measured: tuple      # words that name what was measured (matched case-insensitively, as words; the Chinese
                         # edition's terms, docs/glossary.md, anywhere in a sentence: Chinese has no spaces)


def _millions(*values):
    """A parameter count may be written 110 (with "M" as a word elsewhere) or 110M."""
    return {value for value in values} | {value * 1e6 for value in values}


# Figures from the paper (arXiv v2 / NAACL numbering): Table 5 (§5.1) BASE, No NSP, LTR & No NSP, + BiLSTM on
# MNLI-m, QNLI, MRPC, SST-2, SQuAD v1.1; Tables 1-4 (§4.1-§4.4) and the abstract; Table 6 (§5.2) whole, its size
# columns too, 3,600 MRPC training examples, 100M and 235M (the literature's largest), 110M and 340M; C.1
# (Figure 5): 1M against 500k steps, almost 1.0 MNLI point.
# Table 6, "Ablation over BERT model size", one row per model: #L (layers), #H (hidden size), #A (attention heads),
# LM (ppl) on held-out training data, then dev accuracy on MNLI-m, MRPC and SST-2.
TABLE_6 = ((3, 768, 12, 5.84, 77.9, 79.8, 88.4),
           (6, 768, 3, 5.24, 80.6, 82.2, 90.7),
           (6, 768, 12, 4.68, 81.9, 84.8, 91.3),
           (12, 768, 12, 3.99, 84.4, 86.7, 92.9),
           (12, 1024, 16, 3.54, 85.7, 86.9, 93.3),
           (24, 1024, 16, 3.23, 86.6, 87.8, 93.7))
TABLE_5 = {84.4, 88.4, 86.7, 92.7, 88.5, 83.9, 84.9, 86.5, 92.6, 87.9, 82.1, 84.3, 77.5, 92.1, 77.8, 84.1, 75.7,
           91.6}
EVIDENCE = {
    1: Evidence(frozenset({"§5.1", "Table 5"}), frozenset({"01", "03"}),
                frozenset(TABLE_5 | {10.7, 10.1, 0.6, 9.3}),
                ("SQuAD", "LTR", "left-to-right", "bidirectional", "BiLSTM", "MNLI", "QNLI", "MRPC", "right context",
                 "right-context", "ELMo", "GPT", "probe", "双向", "从左到右", "单向", "探针", "右侧上下文")),
    2: Evidence(frozenset({"§4", "§4.1", "§4.2", "§4.3", "§4.4", "§3", "§3.2", "Table 1", "Table 2", "Table 3",
                           "Table 4"}), frozenset({"05", "06", "07"}),
                frozenset({11, 80.5, 7.7, 82.1, 86.7, 4.6, 93.2, 1.5, 83.1, 5.1, 86.3, 86.6, 7.0, 4.5}),
                ("GLUE", "SQuAD", "SWAG", "head", "output layer", "backbone", "tasks", "fine-tun", "输出层", "骨干网络",
                 "任务", "微调")),
    3: Evidence(frozenset({"§5.1", "Table 5", "§3.1"}), frozenset({"04"}),
                frozenset(TABLE_5 | {3.5, 0.5, 0.6, 0.2, 0.1, 97, 98}),
                ("QNLI", "MNLI", "SQuAD", "MRPC", "SST-2", "No NSP", "RoBERTa", "ALBERT",
                 "same-document", "same document", "IsNext", "NotNext", "同一文档", "同一篇文档")),
    4: Evidence(frozenset({"§5.2", "Table 6"}), frozenset({"02", "08"}),
                frozenset({figure for row in TABLE_6 for figure in row} | {3_600} | _millions(100, 110, 235, 340)),
                ("perplexity", "MNLI", "MRPC", "SST-2", "size", "larger", "bigger", "layers", "hidden", "heads",
                 "cloze", "parameters", "困惑度", "规模", "更大", "层数", "隐藏维度", "注意力头", "完形填空", "参数")),
    5: Evidence(frozenset({"C.1", "Figure 5"}), frozenset({"03"}),
                frozenset({1.0, 500, 500_000, 1_000_000}),
                ("steps", "converge", "MNLI", "LTR", "left-to-right", "curve", "步数", "收敛", "从左到右", "曲线")),
}

SOURCE = re.compile(
    r"(?:§\s*|\bsection\s+)(?P<section>\d(?:\.\d)?)|第\s*(?P<zh_section>\d(?:\.\d)?)\s*节"
    r"|\b(?P<kind>Table|Figure)\s+(?P<number>\d)|(?P<zh_kind>[表图])\s*(?P<zh_number>\d)"
    r"|(?<![\w.])(?P<appendix>[A-C]\.\d)\b"
    r"|\b(?:chapter|ch\.?)\s*0?(?P<chapter>\d)\b|第\s*0?(?P<zh_chapter>\d)\s*章", re.IGNORECASE)
ZH_KINDS = {"表": "Table", "图": "Figure"}  # the Chinese edition's names: 表 6, 图 5, 第 5.1 节, 第 3 章


def named_sources(text):
    """The sources a sentence names, written as in `EVIDENCE`: {"§5.1", "Table 5", "C.1", "04"}; the Chinese
    names (表 5, 图 5, 第 5.1 节, 第 3 章) count as the English ones."""
    found = set()
    for match in SOURCE.finditer(text):
        part = {name: value for name, value in match.groupdict().items() if value}
        if "section" in part or "zh_section" in part:
            found.add(f"§{part.get('section') or part['zh_section']}")
        elif "kind" in part:
            found.add(f"{part['kind'].capitalize()} {part['number']}")
        elif "zh_kind" in part:
            found.add(f"{ZH_KINDS[part['zh_kind']]} {part['zh_number']}")
        elif "appendix" in part:
            found.add(part["appendix"].upper())
        else:
            found.add(f"0{part.get('chapter') or part['zh_chapter']}")
    return found


def _chapters(names):
    """"chapter 01 or 03" (第 1 或 3 章) for the chapter names {"01", "03"}."""
    numbers = _(" or ").join(_("{number:0>2}").format(number=int(name)) for name in sorted(names))
    return _("chapter {numbers}").format(numbers=numbers)


def _source(name):
    """A source as `EVIDENCE` writes it ("04", "Table 5", "§5.1") in the learner's words (第 4 章, 表 5, §5.1)."""
    if name.isdigit():
        return _chapters([name])
    kind, _space, number = name.partition(" ")
    if kind == "Table":
        return _("Table {number}").format(number=number)
    if kind == "Figure":
        return _("Figure {number}").format(number=number)
    return name


def _where(evidence):
    return _(", ").join([*(_source(name) for name in sorted(evidence.sources)), _chapters(evidence.chapters)])


def reason_problems(number, reason):
    """What keeps `reason` from reading as evidence for contribution `number` (1-5): a list of sentences, empty
    when it names one of the contribution's sources, says what was measured and quotes only its figures."""
    if number not in EVIDENCE:
        raise ValueError(f"contribution {number!r}: the guide lists contributions 1 to 5.")
    if not isinstance(reason, str):
        return [_("the reason is {kind}, not a sentence (str)").format(kind=type(reason).__name__)]
    evidence, problems = EVIDENCE[number], []
    named = named_sources(reason)
    if not named & (evidence.sources | evidence.chapters):
        what = _(", ").join(_source(name) for name in sorted(named)) or _("no source")
        problems.append(_("it names {what}, not where the evidence for contribution {number} is ({where})").format(
            what=what, number=number, where=_where(evidence)))
    numbers = quantities(reason)
    made_up = [found.text for found in numbers if not any(found.agrees_with(figure) for figure in evidence.figures)]
    if made_up:
        problems.append(_("it quotes {numbers}, not a figure of that evidence").format(numbers=_(", ").join(made_up)))
    quoted = len(numbers) > len(made_up)
    says = any(re.search(rf"(?<![\w-]){re.escape(word)}" if word.isascii() else re.escape(word), reason, re.IGNORECASE)
               for word in evidence.measured)
    if not (quoted or says):
        problems.append(_("it does not say what was measured (a figure, or the task, model or quantity)"))
    return problems
