"""The prose of a markdown cell cut into the units a citation covers, and the quantities each quotes.

`prose_units` strips a cell's Markdown (code, HTML, link targets, emphasis; `strip_markdown`) and cuts it into
sentences and table cells (`Unit`), each with its section and whether it (or its table row) carries a citation
(`CITATION`). `quantities` keeps the numbers of a unit that are quantities (rule 6 of `coursekit.prose`: no
citation, label, year, small count or name). The patterns a sentence's reach depends on ("above", "below",
"chapter 03", `<!-- constants: -->`) are here too.
"""

import re
from dataclasses import dataclass

from coursekit.prose.numbers import HEDGE, parse_numbers

CITATION = re.compile(r"§|\bTables?\s+\d|\bFig(?:ure|\.)?\s*\d|\bappendi(?:x|ces)\b|(?<![\w.])[A-C]\.\d\b|"
                      r"\bguide\b|\bguide's\b|\bet al\b|\babstract\b|\bfootnote\b|RESULTS\.md|"
                      r"导读|附录|表\s*\d|图\s*\d|摘要|脚注", re.IGNORECASE)
# Citations themselves ("§5.1-5.3", "Table 8", "A.2") hold numbers that are not quantities.
CITATION_TOKEN = re.compile(r"§\s*[\dA-C][\d.]*(?:\s*[-–]\s*[\dA-C]?[\d.]+)?|"
                            r"\b(?:Tables?|Figures?|Fig\.)\s+\d+[a-z]?|(?<![\w.])[A-C]\.\d+\b|[表图]\s*\d+|"
                            r"footnote\s+\d+", re.IGNORECASE)
LABEL_WORD = re.compile(r"(?:\b(?:sections?|chapters?|ch\.|exercises?|tasks?|lines?|steps?|questions?|"
                        r"levels?|parts?|footnotes?|versions?|seeds?|blocks?|heads?|layers?|positions?|rows?|"
                        r"columns?|items?|rungs?|notebooks?|cells?|rank|no\.|L|v)|第|位置|种子|任务|练习|行|列)\s*$",
                        re.IGNORECASE)
LABEL_AFTER = re.compile(r"^\s*(?:章|节|题|个种子|号)")
CHAPTER_REFERENCE = re.compile(r"\b(?:chapters?|ch\.|notebook)\s*0?(\d)(?:\s*(?:-|–|and|,|or)\s*0?(\d))?|"
                               r"\[0?(\d)\]\(|第\s*0?(\d)\s*章", re.IGNORECASE)
ABOVE = re.compile(r"\babove\b|\bearlier\b|上面|上文|前面|上方|此前")
BELOW = re.compile(r"\bbelow\b|下面|下文|下方")
SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bet al)(?<!\bvs)(?<!\bFig)(?<!\bch)(?<!\bno)"
                          r"([.!?])\s+(?=[A-Z(*\"“‘\[`_])|[。！？]")
DECLARED = re.compile(r"<!--\s*constants?\s*:(.*?)-->", re.DOTALL | re.IGNORECASE)
SLASH_GROUP = re.compile(r"(?<![\w.])\d[\d.,]*%?(?:\s?/\s?\d[\d.,]*%?)+(?![\w])")
POINTS = re.compile(r"\s*(?:[A-Za-z-]+\s+)?(?:points?\b|个百分点|分)")
# `evidence.describe`'s spread over seeds, in either edition: "median -3.3 points, range -7.7 to -1.6",
# "中位数 -3.3 个百分点，范围 -7.7 至 -1.6".
SPREAD = re.compile(r"(?:median|中位数)\s*[+\-−]?\d[\d.,]*%?\s*(?:points?|个百分点)?\s*[,，;；]?\s*"
                    r"(?:range|范围)\s*[+\-−]?\d[\d.,]*%?\s*(?:to|至|-|–)\s*[+\-−]?\d[\d.,]*%?", re.IGNORECASE)
COUNT_UNIT = re.compile(r"^\s*(?:points?|passes|epochs|times|个百分点|分)\b")


@dataclass
class Unit:
    """A sentence (or a table cell) of a markdown cell, with what its numbers may draw on."""

    text: str
    section: int          # headings seen before it in the notebook
    cited: bool
    row_cited: bool = False


def strip_markdown(source):
    """The prose of a markdown cell: no code, comments, HTML, links' targets or emphasis marks."""
    text = re.sub(r"```.*?```", " ", source, flags=re.DOTALL)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.DOTALL)
    text = re.sub(r"<[^>\n]+>", " ", text)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)
    text = re.sub(r"\[(\d+)\]\([^)]*\)", r"[\1](", text)  # keep "[02](" for chapter references
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"``?[^`\n]+``?", " CODE ", text)
    text = re.sub(r"\$\$.+?\$\$", " MATH ", text, flags=re.DOTALL)  # display math, which may span lines
    text = re.sub(r"\$[^$\n]+\$", " MATH ", text)
    lines, in_block, previous_blank = [], False, True
    for line in text.split("\n"):
        indented = line.startswith("    ") or line.startswith("\t")
        in_block = indented and (in_block or previous_blank)
        previous_blank = not line.strip()
        lines.append("" if in_block else line)
    return "\n".join(lines).replace("*", "")


def prose_units(source, first_section=0):
    """The units of one markdown cell with their section numbers (headings counted from `first_section`)."""
    units, section, paragraph = [], first_section, []

    def flush():
        if paragraph:
            text = " ".join(paragraph)
            for sentence in SENTENCE_END.split(text):
                if sentence and sentence.strip() and sentence not in ".!?":
                    units.append(Unit(sentence.strip(), section, bool(CITATION.search(sentence))))
            paragraph.clear()

    for line in strip_markdown(source).split("\n"):
        stripped = line.strip()
        if re.match(r"#{1,6}\s", stripped):
            flush()
            section += 1
            continue
        if stripped.startswith("|"):
            flush()
            cells = [cell.strip() for cell in stripped.strip("|").split("|")]
            if all(re.fullmatch(r":?-+:?", cell) for cell in cells if cell):
                continue
            cited_upto = max((index for index, cell in enumerate(cells) if CITATION.search(cell)), default=-1)
            units += [Unit(cell, section, bool(CITATION.search(cell)), index <= cited_upto)
                      for index, cell in enumerate(cells) if cell]
            continue
        if not stripped or re.match(r"([-+]|\d+[.)])\s", stripped):
            flush()
        if stripped:
            paragraph.append(re.sub(r"^(?:[-+]|\d+[.)])\s+", "", stripped))
    flush()
    return units, section


def quantities(text):
    """The numbers of a sentence that are quantities: rule 6 removes citations, labels, years, small counts and
    names. `quantities("§5.1: QNLI drops 3.5 points (chapter 04)")` -> [3.5]."""
    masked = CITATION_TOKEN.sub(lambda m: " " * len(m[0]), text)
    masked = SLASH_GROUP.sub(lambda m: " " * len(m[0]), masked)
    masked = re.sub(r"\((?:\d{1,2}|[a-z])\)", "   ", masked)
    found, previous, previous_label = [], None, False
    for number in parse_numbers(masked):
        before, after = masked[max(0, number.start - 15):number.start], masked[number.end:number.end + 8]
        in_range = previous is not None and re.fullmatch(r"\s?[-–]\s?", masked[previous.end:number.start])
        label = bool(LABEL_WORD.search(before) or LABEL_AFTER.search(after) or (in_range and previous_label))
        previous, previous_label = number, label
        if label:
            continue  # positions 128-511: both ends are labels
        bare = number.kind == "plain" and "." not in number.text and float(number.value).is_integer()
        if bare and "," not in number.text and 1800 <= abs(number.value) <= 2099:
            continue  # a year
        if bare and abs(number.value) <= 10 and not HEDGE.search(before) and not COUNT_UNIT.search(after):
            continue  # a small count: two layers, 4 days
        found.append(number)
    return found
