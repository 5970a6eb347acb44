"""Claims about the paper's own evidence: a star rating against the legend it uses, and a figure of the paper
against the row of its table that the sentence gives it.

- **rating**: the course grades evidence with the study guide's legend, ★★★ strong experimental support, ★★ an
  ablation only, ★ argument only. A paragraph (or table row) that gives one star (★ alone, "one star", "from two
  stars to one", 一颗星) while it names an ablation (the word, or one of the paper's ablation tables and
  sections) contradicts that legend: an ablation is at least ★★.
- **column**: a label the prose quotes as a column or row of the output ("the "reading" column", “解读”一列) is
  printed in the notebook's outputs, in the same edition: a translated output renames its columns. A sentence
  that cites the paper ("Table 1's "Average" column") names the paper's table, not an output.
- **label**: a unit that sets the masked LM against a left-to-right model ("MLM against LTR", 掩码语言模型 与
  从左到右) and quotes Table 5's figures for it must quote the rows that differ only in the objective, "No NSP"
  and "LTR & No NSP" (SQuAD 87.9 against 77.8). A figure of the BERT_BASE row (88.5) keeps NSP, so it belongs
  in such a sentence only labelled as BERT_BASE or beside the No NSP figure that isolates the objective.

The figures are the paper's (arXiv v2 / NAACL), Table 5 (§5.1): Dev MNLI-m, QNLI, MRPC, SST-2 and SQuAD v1.1 F1.
"""

import re

TABLE_5 = {
    "BERT_BASE": (84.4, 88.4, 86.7, 92.7, 88.5),
    "No NSP": (83.9, 84.9, 86.5, 92.6, 87.9),
    "LTR & No NSP": (82.1, 84.3, 77.5, 92.1, 77.8),
    "+ BiLSTM": (82.1, 84.1, 75.7, 91.6, 84.9),
}
TASKS = ("MNLI-m", "QNLI", "MRPC", "SST-2", "SQuAD")

ONE_STAR = re.compile(r"(?<!★)★(?!★)|\bone star\b|\bstars?\s+to\s+one\b|一颗星|一星(?!期)|降为一颗")
LEGEND = re.compile(r"argument only|仅有论证|只有论证", re.IGNORECASE)
ABLATION = re.compile(r"ablation|消融|§\s*5\.[123]\b|第\s*5\.[123]\s*节|\bTable\s+[5-8]\b|表\s*[5-8](?!\d)|"
                      r"(?<![\w.])C\.[12]\b|\bFigure\s+5\b|图\s*5(?!\d)", re.IGNORECASE)

MLM = re.compile(r"\bMLM\b|\bmasked[- ]LM\b|bidirectional|掩码语言模型|双向", re.IGNORECASE)
LTR = re.compile(r"\bLTR\b|left-to-right|从左到右", re.IGNORECASE)
BASE_LABEL = re.compile(r"BERT[_ -]?\{?BASE\}?|with NSP|带 ?NSP|保留 ?NSP", re.IGNORECASE)
FIGURE = re.compile(r"(?<![\w.])(\d{2}\.\d)(?![\d.]*\d)")


def rating_problems(source):
    """`(what, why)` for each one-star rating in a paragraph (or table row) of a markdown cell that names an
    ablation: a rating and its reason often sit in neighbouring sentences."""
    problems = []
    for paragraph in re.split(r"\n\s*\n|\n(?=\s*\|)", source):
        ablation = ABLATION.search(paragraph)
        if ablation and not LEGEND.search(paragraph):  # the legend itself names every rating
            problems += [(star[0], f"one star where {ablation[0]!r}, an ablation, is named: the legend gives an "
                                   "ablation ★★") for star in ONE_STAR.finditer(paragraph)]
    return problems


def label_problems(text):
    """`(what, why)` for a BERT_BASE figure of Table 5 quoted as the masked LM in an MLM-against-LTR sentence."""
    if not (MLM.search(text) and LTR.search(text)) or BASE_LABEL.search(text):
        return []
    quoted = {float(match[1]) for match in FIGURE.finditer(text)}
    problems = []
    for task, base, no_nsp, ltr in zip(TASKS, TABLE_5["BERT_BASE"], TABLE_5["No NSP"], TABLE_5["LTR & No NSP"]):
        if base in quoted and ltr in quoted and no_nsp not in quoted:
            problems.append((f"{base:g}", f"{base:g} is BERT_BASE with NSP (Table 5, {task}); MLM against LTR, "
                                          f"NSP removed from both, is {no_nsp:g} against {ltr:g}"))
    return problems


QUOTED_COLUMN = re.compile(r'(?:"|“)(?P<label>[^"“”\n]{1,30})(?:"|”)\s*(?:column|row|一列|列|一行|行)(?![A-Za-z])',
                           re.IGNORECASE)


def column_problems(text, printed_lines):
    """`(what, why)` for a quoted column or row label that no output of the notebook prints."""
    printed = "\n".join(printed_lines).lower()
    return [(match[0], f"no output of this notebook prints {match['label']!r}")
            for match in QUOTED_COLUMN.finditer(text) if match["label"].lower() not in printed]
