"""Every number the prose quotes agrees with the output it describes (issue 24, item 2).

The rule, for a writer. Each number written with digits in a markdown cell of a chapter is one of:

1. **A result of this run.** A code cell of the same section prints it (a section runs from one heading to
   the next; a section without code of its own, such as "Claim vs fact", the learning objectives or the
   self-check answers, reads every code cell). The prose writes the printed value rounded to the digits it
   shows: a printed 10.0% may be quoted as 10% or 10.0%, never as 12%; a printed 10.9 is "about 11", not
   "about 10". A percentage may quote a printed fraction (0.753 as 75.3%). A sentence that says "above" (or
   "earlier") may quote any output above it, one that says "below" any output below it, and one that names
   another chapter ("chapter 03", "ch. 4") that chapter's outputs.
2. **A setting or a constant the code states**: the number appears in the source of a code cell of the
   notebook, as a literal or in a comment (`STEPS = 1_500`, `# 45 TFLOP/s per chip, our assumption`); a
   percentage as its fraction (15% as 0.15) or with its % sign. A setting is quoted exactly: a hedged number
   ("about 10") is a result and needs an output.
3. **From the paper, the study guide or another source**: its sentence (in a table: its row, left of the
   citation) carries the citation: "§", "Table N", "Figure N", "appendix", A.1-C.2, "guide", "et al.",
   "abstract", "footnote", bench/RESULTS.md ("the paper" alone is no citation: name the section, as
   STYLE.md asks). A number cited once may be repeated later in the notebook without its citation.
4. **Arithmetic written out**: the result of an all-numeric expression in the sentence, "512 × 15% × 80% =
   61.44", "(512/128)² = 16", "512 / 0.28 ≈ 1,800". The checker recomputes it; a wrong result is a finding.
5. **Declared**: listed in an HTML comment of the cell, `<!-- constants: 86,400 seconds in a day -->`, which
   neither JupyterLab nor the book shows. The Chinese edition inherits the declarations of the English cell.
6. **Not a quantity**: counts up to 10 written bare ("2 layers"; but "about 10 passes" and "3 points" are
   checked), years, numbers after a section, table, chapter, exercise, task, step, line, seed, block, head or
   position word, list numbers, numbers inside `code`, headings, names such as L6/H384, v2.0, 80/10/10, 1/3.

The stated rounding of a number is its last written digit; trailing zeros of an integer of 100 or more are
not significant when the number is hedged ("about 3,900 pairs" may quote 3,888). Anything else is a finding:
a **mismatch** when a printed value of the same kind lies near it (the finding names that value and its
cell), **unsourced** otherwise, **arithmetic** when a written-out expression does not give its result.

What the prose says about the numbers is checked too (issue 35, item 3); each is a finding of its own kind:

- **direction**: (a) a sentence that puts two quoted numbers around a comparative (higher, above, below, more
  or less than, beats, under; 高于, 低于, 超过) orders them as the word says; a number that is the gap ("10
  points above") is no operand. (b) A one-sided word (optimistic, compresses, inflates, overstates; 偏乐观,
  压缩) said of a labelled value ("the dev F1", "the measured ratio") agrees with the other value the sentence
  names, as quoted there or printed on one line ("measured x28.8; counted ... x16.00"); the Chinese edition's
  labels (实测, 计数, 开发集, 测试集) stand for the printed English ones. (c) A direction word between two
  items such as 0/20/80 and 80/10/10 whose printed comparison says "no measurable difference", "range
  includes 0" or "no claim" is a finding, unless its clause says so ("not measurably apart", "its median lies
  above") or another measure of the pair prints that direction.
- **quantifier**: "many times" (3×), "by an order of magnitude" (10^0.5), "orders of magnitude", "hundreds of
  times" (许多倍, 一个数量级 ...) need a printed ratio of that size in the nearest code cell that prints one.
- **pointer**: "see chapter NN", "chapter NN's X", "chapter NN shows/measures/runs X" (第 N 章的 X): the
  chapter exists, one of its sentences (or code lines) holds the key term X, and one holds the words of what
  the pointer says it does not show ("but not which segment comes first").
- **extrapolation**: a sentence about a curve's course (keeps, continues, beyond, past, would, still) quotes
  steps, tokens or epochs inside the range the notebook's outputs print for that unit.

The direction and pointer rules read cited sentences too (a citation does not make "81.9 above 83.1" true).

Run it: `python -m coursekit.prose notebooks/0*.ipynb`, or for the Chinese edition
`python -m coursekit.prose notebooks/zh/0*.ipynb --english notebooks`. Pure Python: no Keras import.
"""

import ast
import json
import operator
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Number", "Finding", "parse_numbers", "quantities", "arithmetic", "prose_units", "check_notebook",
           "check_notebooks", "format_findings"]

# ---------------------------------------------------------------------------------------------------------
# Numbers

ASCII_DIGITS = tuple("0123456789")
SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
NUMBER = re.compile(r"""
    (?:(?<![A-Za-z0-9_.])(?P<times>[x×])(?=\d)      # x8, ×16
       |(?<![A-Za-z0-9_.,/\\]))                      # not inside a word, a version, a path or a slash group
    (?P<sign>[+\-−](?=\d))?
    (?P<mantissa>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)
    (?:[eE](?P<exp>[+\-−]?\d+))?
    (?:\s?[×x·]\s?10(?:(?P<sup>[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)|\^(?P<caret>[+\-−]?\d+)))?
    (?P<mult>\s?(?:万|亿)|(?:Ki|[kMB])(?![A-Za-z])|\s(?:thousand|million|billion)\b)?
    (?P<unit>\s?%|×(?!\s?\d)|\s?倍|x(?![A-Za-z0-9]))?
""", re.VERBOSE)
MULTIPLIER = {"k": 1e3, "Ki": 1024, "M": 1e6, "B": 1e9, "万": 1e4, "亿": 1e8, "thousand": 1e3, "million": 1e6,
              "billion": 1e9}
HEDGE = re.compile(r"(?:\babout|\baround|\broughly|\bapproximately|\bnearly|\balmost|\bsome|\bclose to|"
                   r"~|≈|约为?|大约为?|约有|将近|近)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Number:
    """A number as written: its value, its kind ("percent", "times" or "plain") and half its last unit."""

    text: str
    value: float
    kind: str
    half_unit: float
    start: int
    end: int

    def agrees_with(self, printed):
        """Whether `printed` (a value of the same kind) rounds to this number, sign aside."""
        return abs(abs(printed) - abs(self.value)) <= self.half_unit * (1 + 1e-9) + 1e-12


def parse_numbers(text, hedges=True):
    """Every number written in `text`, in order; `hedges` lets "about 3,900" round to the hundred."""
    numbers = []
    for match in NUMBER.finditer(text):
        end = match.end()
        following = text[end:end + 2]
        mantissa = match["mantissa"]
        if mantissa == "10" and not match["sup"] and following[:1] and following[:1] in "⁰¹²³⁴⁵⁶⁷⁸⁹":
            sup = re.match(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+", text[end:])[0]
            end += len(sup)
            number_text = text[match.start():end]
            value = 10.0 ** int(sup.translate(SUPERSCRIPT))
            numbers.append(Number(number_text, value, "plain", value * 1e-9, match.start(), end))
            continue
        if following[:1] in ASCII_DIGITS or (following[:1] in ".," and following[1:2] in ASCII_DIGITS):
            continue  # part of a longer token: 3.15.1, 1,2,3
        if following[:1].isascii() and following[:1].isalpha() and not match["unit"] and not match["mult"]:
            continue  # 4H, 2nd, 12ms: a name or a unit glued on, not a quantity the checker can read
        digits = mantissa.replace(",", "")
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        exponent = int((match["exp"] or "0").replace("−", "-"))
        if match["sup"]:
            exponent += int(match["sup"].translate(SUPERSCRIPT))
        if match["caret"]:
            exponent += int(match["caret"].replace("−", "-"))
        scale = MULTIPLIER[match["mult"].strip()] if match["mult"] else 1.0
        unit_digits = decimals
        hedged = HEDGE.search(text[max(0, match.start() - 25):match.start()])
        if hedges and decimals == 0 and len(digits) >= 3 and hedged:
            unit_digits = -(len(digits) - len(digits.rstrip("0")))  # about 3,900: rounded to the hundred
        value = float(digits) * 10.0 ** exponent * scale
        if match["sign"] in ("-", "−"):
            value = -value
        unit = (match["unit"] or "").strip()
        kind = "percent" if unit == "%" else "times" if (unit or match["times"]) else "plain"
        half_unit = 0.5 * 10.0 ** (exponent - unit_digits) * scale
        numbers.append(Number(text[match.start():end], value, kind, half_unit, match.start(), end))
    return _spread_range_units(text, numbers)


def _spread_range_units(text, numbers):
    """In a range such as 10-40% or 4-5×, the first number takes the unit of the second."""
    spread = list(numbers)
    for index in range(len(spread) - 1):
        first, second = spread[index], spread[index + 1]
        between = text[first.end:second.start]
        if first.kind == "plain" and second.kind != "plain" and re.fullmatch(r"\s?(?:[-–]|to|至)\s?", between):
            spread[index] = Number(first.text, first.value, second.kind, first.half_unit, first.start,
                                   first.end)
    return spread


# ---------------------------------------------------------------------------------------------------------
# Prose: the units a citation covers (sentences, table cells)

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
COUNT_UNIT = re.compile(r"^\s*(?:points?|passes|epochs|times|个百分点|分)\b")


@dataclass
class Unit:
    """A sentence (or a table cell) of a markdown cell, with what its numbers may draw on."""

    text: str
    section: int          # headings seen before it in the notebook
    cited: bool
    row_cited: bool = False


def _strip_markdown(source):
    """The prose of a markdown cell: no code, comments, HTML, links' targets or emphasis marks."""
    text = re.sub(r"```.*?```", " ", source, flags=re.DOTALL)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.DOTALL)
    text = re.sub(r"<[^>\n]+>", " ", text)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)
    text = re.sub(r"\[(\d+)\]\([^)]*\)", r"[\1](", text)  # keep "[02](" for chapter references
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"``?[^`\n]+``?", " CODE ", text)
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

    for line in _strip_markdown(source).split("\n"):
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


# ---------------------------------------------------------------------------------------------------------
# Written-out arithmetic

_TOKEN = re.compile(r"(?P<number>PLACEHOLDER\d+)|(?P<op>[×*·/÷+\-−^²³]|(?<=\s)x(?=\s))|(?P<open>\()|"
                    r"(?P<close>\))|(?P<eq>=|≈|~)|(?P<space>\s+)|(?P<other>.)")


def arithmetic(text):
    """`(result Number, holds)` for each all-numeric expression `... = result` or `... ≈ result` in `text`."""
    text = re.sub(r"(?<=[\d)])\s*/\s*(?=[\d(])", " / ", text)  # 512/128 divides here (a label elsewhere)
    numbers = parse_numbers(text, hedges=False)
    placeholder, mapping, position = [], {}, 0
    for index, number in enumerate(numbers):
        placeholder.append(text[position:number.start])
        placeholder.append(f"PLACEHOLDER{index}")
        mapping[f"PLACEHOLDER{index}"] = number
        position = number.end
    placeholder.append(text[position:])
    tokens = [(match.lastgroup, match[0]) for match in _TOKEN.finditer("".join(placeholder))]
    results = []
    for index, (kind, value) in enumerate(tokens):
        if kind != "eq":
            continue
        left = index - 1
        while left >= 0 and tokens[left][0] in ("number", "op", "open", "close", "space"):
            left -= 1
        expression = [token for token in tokens[left + 1:index] if token[0] != "space"]
        right = next((token for token in tokens[index + 1:] if token[0] != "space"), None)
        if right is None or right[0] != "number":
            continue
        while expression and expression[0][0] in ("op", "close") and expression[0][1] not in "+-−":
            expression.pop(0)
        operands = [token for token in expression if token[0] == "number"]
        operators = [token for token in expression if token[0] == "op"]
        if len(operands) < 2 and not any(op[1] in "²³" for op in operators):
            continue
        python = []
        for token_kind, token in expression:
            if token_kind == "number":
                number = mapping[token]
                if number.text[:1] in "+-−" and python and python[-1].endswith(")"):
                    python.append("+")  # 88.5−77.8: the sign is the operator
                python.append(f"({number.value / 100 if number.kind == 'percent' else number.value!r})")
            elif token_kind == "op":
                python.append({"×": "*", "x": "*", "·": "*", "÷": "/", "−": "-", "^": "**", "²": "**2",
                               "³": "**3"}.get(token, token))
            else:
                python.append(token)
        code = "".join(python)
        while code.count("(") > code.count(")") and code.startswith("("):
            code = code[1:]
        computed = _evaluate(code)
        if computed is None:
            continue
        result = mapping[right[1]]
        if value != "=":  # ≈ and ~ round like a hedged number: "≈ 1,800" to the hundred
            half_unit = parse_numbers("about " + result.text)[0].half_unit
            result = Number(result.text, result.value, result.kind, half_unit, result.start, result.end)
        candidates = [computed * 100, computed] if result.kind == "percent" else [computed]
        results.append((result, any(result.agrees_with(candidate) for candidate in candidates)))
    return results


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}


def _evaluate(code):
    """The value of an expression of numbers and + - * / ** (parentheses too); None if it is anything else."""
    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.operand))
        raise ValueError(ast.dump(node))

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "(2.0)(3.0)" warns before it fails
            return value(ast.parse(code, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, TypeError):
        return None


# ---------------------------------------------------------------------------------------------------------
# A notebook's facts: what its code prints and states


def _text(value):
    return "".join(value) if isinstance(value, list) else (value or "")


def _output_text(cell):
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(_text(output.get("text")))
        elif output.get("output_type") in ("execute_result", "display_data"):
            data = output.get("data", {})
            parts.append(_text(data.get("text/markdown")) or _text(data.get("text/plain")))
    return "\n".join(parts)


@dataclass
class Printed:
    value: float
    kind: str        # "percent" or "plain" ("times" is read as plain)
    text: str
    cell: int


def _kind(number):
    return "percent" if number.kind == "percent" else "plain"


def _printed(text, cell):
    values = []
    for number in parse_numbers(text, hedges=False):
        kind = "percent" if number.kind == "percent" else "plain"
        values.append(Printed(number.value, kind, number.text, cell))
        if kind == "plain" and "." in number.text and abs(number.value) <= 1:
            values.append(Printed(number.value * 100, "percent", number.text, cell))  # 0.753 quoted as 75.3%
    return values


@dataclass
class Facts:
    """What a notebook's code cells print (per cell) and state (literals and comments), and its sections."""

    outputs: dict = field(default_factory=dict)   # cell index -> [Printed]
    stated: list = field(default_factory=list)    # [Printed] from code sources
    code_sections: dict = field(default_factory=dict)  # cell index -> section number
    lines: dict = field(default_factory=dict)     # cell index -> its printed lines
    sentences: list = field(default_factory=list)  # lower case: markdown sentences, code lines (for pointers)


def notebook_facts(notebook):
    facts, section = Facts(), 0
    for index, cell in enumerate(notebook["cells"]):
        source = _text(cell.get("source"))
        if cell["cell_type"] == "markdown":
            facts.sentences += [unit.text.lower() for unit in prose_units(source)[0]]
        else:
            facts.sentences += source.lower().split("\n") + _output_text(cell).lower().split("\n")
        if cell["cell_type"] == "markdown":
            lines = _strip_markdown(source).split("\n")
            section += sum(bool(re.match(r"\s*#{1,6}\s", line)) for line in lines)
        elif cell["cell_type"] == "code":
            facts.code_sections[index] = section
            facts.outputs[index] = _printed(_output_text(cell), index)
            facts.lines[index] = [line for line in _output_text(cell).split("\n") if line.strip()]
            code = re.sub(r"(?<=\d)_(?=\d)", "", source)
            facts.stated += _printed(code, index)
    return facts


# ---------------------------------------------------------------------------------------------------------
# Claims about the numbers (issue 35, item 3): directions, quantifiers, chapter pointers, curves' ranges

_UP = (r"higher|above|exceeds?|exceeded|beats?|more than|greater than|larger than|optimistic|inflates?|"
       r"overstates?|高于|超过|大于|偏乐观|偏高")
_DOWN = (r"lower|below|under|less than|smaller than|fewer than|pessimistic|compress(?:es|ed)?|deflates?|"
         r"understates?|低于|小于|偏悲观|偏低|压缩")
DIRECTION = re.compile(rf"(?<![A-Za-z])(?:(?P<up>{_UP})|(?P<down>{_DOWN}))(?![A-Za-z])", re.IGNORECASE)
# Words that say which side of the other one a single named value lies (no second operand after them).
ONE_SIDED = re.compile(r"optimistic|pessimistic|compress|deflate|inflate|overstate|understate|偏乐观|偏悲观|偏高|"
                       r"偏低|压缩", re.IGNORECASE)
# "printed above", "the table below": a place in the notebook, not a direction.
LOCATIONAL = re.compile(r"(?:printed|asserted|shown|see|listed|table|chart|plot|cell|output|as|from|computed|"
                        r"defined|described|run|stated|comparison|figures?|numbers?|check)\s+$", re.IGNORECASE)
# A number right before a direction word that is its size, not an operand: "10 points above", "4× fewer".
AMOUNT = re.compile(r"^\s*(?:(?:percentage\s+)?points?|pp|times|个百分点|倍|分)\b", re.IGNORECASE)
CLAUSE_END = re.compile(r"[;；:：]")
NULL_VERDICT = re.compile(r"no measurable difference|range includes 0|no claim|not clearly (?:above|below)|"
                          r"within noise", re.IGNORECASE)
# A clause that says the difference is not measurable may still say where the median lies.
NULL_ACKNOWLEDGED = re.compile(r"not measurably|no measurable|across zero|includes (?:zero|0)|no claim|"
                               r"within noise|median|不可测|跨过零|跨越零|包含 ?0|中位数|无法区分|没有可测", re.IGNORECASE)
SLASH_ITEM = re.compile(r"(?<![\w./])\d+(?:/\d+){2,}(?![\w/])")
QUANTIFIER = re.compile(r"(?P<ten>by\s+(?:an|one)\s+order\s+of\s+magnitude|(?:an|one)\s+order\s+of\s+magnitude"
                        r"(?=\s+(?:more|less|larger|smaller|higher|lower|faster|slower|above|below|bigger|cheaper))|"
                        r"大一个数量级|高一个数量级)|"
                        r"(?P<many>many\s+times\s+(?:the|more|larger|bigger|higher|lower|smaller|as|that|its)\b|"
                        r"许多倍|好几倍)|(?P<orders>orders\s+of\s+magnitude|几个数量级)|"
                        r"(?P<hundreds>hundreds\s+of\s+times|上百倍|数百倍)", re.IGNORECASE)
QUANTIFIER_SIZE = {"many": 3.0, "ten": 10 ** 0.5, "orders": 10 ** 1.5, "hundreds": 100.0}
PRINTED_RATIO = re.compile(r"(?<![\w.])[x×](\d[\d.,]*)|(\d[\d.,]*)\s*(?:×|x(?![A-Za-z0-9])|\s+times\b|倍)")


def _is_locational(text, match):
    after = text[match.end():match.end() + 2]
    return match[0].lower() in ("above", "below") and (
        LOCATIONAL.search(text[max(0, match.start() - 30):match.start()]) or not after.strip()
        or after[:1] in ").,;:")


def _same_clause(text, start, end):
    return not CLAUSE_END.search(text[start:end])


def _quoted_pair(text, numbers, word):
    """'A above B' with A and B quoted: the pair (A, B), or None where the word has no quoted operand on a side."""
    before = [number for number in numbers if number.end <= word.start() <= number.end + 60
              and _same_clause(text, number.end, word.start()) and not AMOUNT.match(text[number.end:])
              and not (number.kind == "times" and not text[number.end:word.start()].strip())]
    after = [number for number in numbers if word.end() <= number.start <= word.end() + 40
             and not re.search(r"[,;；:：()（）]", text[word.end():number.start])]  # "more than that, x28.8"
    if not before or not after or AMOUNT.match(text[after[0].end:]) or before[-1].kind != after[0].kind:
        return None
    return before[-1], after[0]


def _direction_of_quoted_pairs(text, numbers):
    """Rule (a): a sentence that puts two quoted numbers around a comparative orders them as the word says."""
    wrong = []
    for word in DIRECTION.finditer(text):
        pair = None if _is_locational(text, word) or ONE_SIDED.match(word[0]) else _quoted_pair(text, numbers,
                                                                                               word)
        if pair and pair[0].value != pair[1].value and (pair[0].value > pair[1].value) != bool(word["up"]):
            wrong.append((word[0], f"{pair[0].text} {word[0]} {pair[1].text}"))
    return wrong


STOP_WORDS = frozenset("the and but not for with from into than then that this these those its are was were has "
                       "have had one two all any each every only also our their which what when where while of to "
                       "in on at by as".split())


def _label_value(label, text, numbers, lines, like=None):
    """The value a label names: a quantity quoted within 15 characters after it in the sentence, else the first
    one (of kind `like`) within 40 characters after it in a printed line. `(Number, where)` or None."""
    for number in numbers:
        if 0 <= number.start - label.end <= 15:
            return number, "quoted"
    for line in lines:
        for found in re.finditer(rf"(?<![\w-]){re.escape(label.printed)}(?![\w-])", line, re.IGNORECASE):
            values = [number for number in quantities(line[found.end():found.end() + 40])
                      if like is None or number.kind == like]
            if values:
                return values[0], line.strip()
    return None


@dataclass(frozen=True)
class Label:
    """A word of a sentence that names a value, and the word a printed line names it by."""

    printed: str
    start: int
    end: int


# The Chinese edition's sentences name the values its (English) outputs print: its words for the printed labels.
PRINTED_LABELS_ZH = {"实测": "measured", "计数": "counted", "开发集": "dev", "测试集": "test", "训练集": "train",
                     "朴素": "naive", "天真": "naive"}


def _labels(text, numbers, lines):
    """The words of a sentence that name a value: a quantity follows them in the sentence (15 characters) or in
    a printed line (40)."""
    words = [Label(match[0], match.start(), match.end())
             for match in re.finditer(r"(?<![\w-])[A-Za-z][A-Za-z-]{2,}(?![\w-])", text)
             if match[0].lower() not in STOP_WORDS]
    words += [Label(english, match.start(), match.end()) for chinese, english in PRINTED_LABELS_ZH.items()
              for match in re.finditer(chinese, text)]
    labels = []
    for label in sorted(words, key=lambda label: label.start):
        pattern = re.compile(rf"(?<![\w-]){re.escape(label.printed)}(?![\w-])(.{{0,40}})", re.IGNORECASE)
        if (any(0 <= number.start - label.end <= 15 for number in numbers)
                or any(quantities(found[1]) for line in lines for found in pattern.finditer(line))):
            labels.append(label)
    return labels


def _best_lines(text, lines):
    """The printed lines, the ones sharing the most words with the sentence first."""
    words = set(re.findall(r"[a-z]{3,}", text.lower()))
    return sorted(lines, key=lambda line: -len(words & set(re.findall(r"[a-z]{3,}", line.lower()))))


def _direction_of_labelled_pairs(text, numbers, lines):
    """Rule (b): "the dev F1 is optimistic" against "the test F1 (83.1)", "compresses the measured ratio"
    against a printed "measured x28.8; counted x16.00": the values the two labels name, quoted or printed."""
    wrong = []
    for word in DIRECTION.finditer(text):
        if not ONE_SIDED.match(word[0]):
            continue  # a comparative between two quoted numbers is rule (a)'s
        labels = [label for label in _labels(text, numbers, lines) if _same_clause(
            text, min(label.end, word.end()), max(label.start, word.start()))]
        # An adjective is said of the label before it ("the dev F1 is optimistic"), a verb of its object.
        verb = bool(re.match(r"compress|deflate|inflate|overstate|understate|压缩", word[0], re.IGNORECASE))
        own = [label for label in labels if (label.start > word.end() if verb else label.end < word.start())
               and abs(label.start - word.start()) <= 40]
        if not own:
            continue
        subject = own[0] if verb else own[-1]
        ranked = _best_lines(text, lines)
        mine = _label_value(subject, text, numbers, ranked)
        for other in (label for label in labels if label.printed.lower() != subject.printed.lower()):
            theirs = mine and _label_value(other, text, numbers, ranked, like=mine[0].kind)
            if not theirs or "quoted" == theirs[1] == mine[1] or "quoted" not in (theirs[1], mine[1]) and (
                    theirs[1] != mine[1]):
                continue  # both quoted is rule (a)'s; two printed lines are no printed pair
            if mine[0].value != theirs[0].value and (mine[0].value > theirs[0].value) != bool(word["up"]):
                wrong.append((word[0], f"{subject.printed} {mine[0].text} against {other.printed} "
                                       f"{theirs[0].text}"))
            break
    return wrong


def _null_verdicts_contradicted(text, lines):
    """Rule (b): a printed "no measurable difference" (or "range includes 0", "no claim") for an item such as
    0/20/80 against 80/10/10 forbids a direction word between the two, unless the clause says it is not
    measurable (its median may still lie above)."""
    null_lines = [line for line in lines if NULL_VERDICT.search(line)]
    wrong = []
    for word in DIRECTION.finditer(text):
        if not null_lines or _is_locational(text, word):
            continue
        start = max((end.end() for end in CLAUSE_END.finditer(text, 0, word.start())), default=0)
        end = next((end.start() for end in CLAUSE_END.finditer(text, word.end())), len(text))
        if NULL_ACKNOWLEDGED.search(text[start:end]):
            continue
        before = [item for item in SLASH_ITEM.finditer(text, start, word.start()) if word.start() - item.end() <= 40]
        after = next((item for item in SLASH_ITEM.finditer(text, word.end(), end)
                      if item.start() - word.end() <= 40), None)
        if not before or after is None:
            continue  # a verdict is about a pair: "0/20/80 against 80/10/10"
        item = before[-1][0]
        pair_lines = [line for line in lines if item in line and after[0] in line]
        hits = [line for line in pair_lines if NULL_VERDICT.search(line)]
        # Another measure of the same pair may print the direction the sentence gives: which one it means is
        # not for a pattern to decide.
        sense = "higher" if word["up"] else "lower"
        if hits and not any(re.search(rf":\s*{sense}\b", line) for line in pair_lines):
            wrong.append((word[0], f"{item} {word[0]} {after[0]}; printed: {hits[0].strip()}"))
    return wrong


def _printed_ratios(lines):
    return [float((match[1] or match[2]).replace(",", "")) for line in lines for match in PRINTED_RATIO.finditer(line)
            if re.fullmatch(r"\d+(?:\.\d+)?", (match[1] or match[2]).replace(",", ""))]


def _quantifiers_unsupported(text, ratio_lines):
    """Rule (c): "many times", "an order of magnitude" need a printed ratio of that size in the output they
    describe (the nearest code cell that prints a ratio)."""
    ratios = _printed_ratios(ratio_lines)
    return [(match[0], f"largest printed ratio x{max(ratios):g}") for match in QUANTIFIER.finditer(text)
            if ratios and max(ratios) < QUANTIFIER_SIZE[match.lastgroup]]


POINTER = re.compile(r"\bsee\s+(?:also\s+)?chapters?\s+(?P<see>\d+x?)\b|"
                     r"\bchapter\s+(?P<own>\d+x?)(?:'s|’s)\s+(?P<owned>[^.;:()]*)|"
                     r"\bchapter\s+(?P<does>\d+x?)\s+(?:shows?|showed|measures?|measured|runs?|ran|tests?|tested|"
                     r"trains?|trained|checks?|checked|counts?|counted|asserts?|asserted|times|timed|compares?|"
                     r"compared|finds?|found)\s+(?P<done>[^.;:()]*)|"
                     r"见第\s*(?P<zh_see>\d+x?)\s*章|第\s*(?P<zh_own>\d+x?)\s*章的\s*(?P<zh_owned>[^。；：（）]*)",
                     re.IGNORECASE)
DETERMINER = frozenset("a an the which whether that how what this these".split())
NEGATED = re.compile(r"\b(?:not|never|cannot|fails? to)\s+(?:which|whether|how|what|when|where|if)?\s*"
                     r"(?P<what>[^,.;:()]+)", re.IGNORECASE)
PLAIN_VERBS = frozenset("is are was were does do did comes come goes go gets get tells tell".split())
# The Chinese "but cannot tell which segment comes first": what follows is read as its two-character pieces.
NEGATED_ZH = re.compile(r"(?:分不出|不能|无法|不知道|看不出)(?:哪|是否|什么|谁)?(?P<what>[\u4e00-\u9fff]{2,})")


def _key_term(phrase):
    """The noun phrase a pointer names: its first words up to a function word or a verb (a word followed by an
    article): "NSP head tells a ..." -> ["nsp", "head"]."""
    words = re.findall(r"[A-Za-z][A-Za-z0-9'-]*", phrase.lower())
    while words and words[0] in DETERMINER:
        words.pop(0)
    term = []
    for word, following in zip(words, words[1:] + [""]):
        if word in STOP_WORDS or word in DETERMINER or following in DETERMINER or len(term) == 3:
            break
        term.append(word)
    return term


def _said_in(words, sentences):
    """Whether one sentence (or code line) of a chapter holds every word (by its first five letters)."""
    stems = [word.replace("-", " ")[:5] for word in words]
    return any(all(stem in sentence for stem in stems) for sentence in sentences)


def _pointer_problems(text, folder, facts_of):
    """Rule 2: a pointer names a chapter that exists, and that chapter has a sentence holding the key term the
    pointer names and each thing it says the chapter does not show."""
    problems = []
    for match in POINTER.finditer(text):
        chapter = next(group for group in (match["see"], match["own"], match["does"], match["zh_see"],
                                           match["zh_own"]) if group)
        stems = sorted(Path(folder).glob(f"{chapter.zfill(2) if chapter.isdigit() else chapter}_*.ipynb"))
        if not stems:
            problems.append((match[0], f"no chapter {chapter} in {Path(folder).as_posix()}"))
            continue
        sentences = facts_of(stems[0]).sentences
        phrase = match["owned"] or match["done"] or ""
        terms = [_key_term(phrase)] if phrase else []
        if match["zh_owned"]:
            terms.append(re.findall(r"[A-Za-z][A-Za-z0-9-]+", match["zh_owned"].lower())[:2])
            terms += [[negated["what"][start:start + 2] for start in range(len(negated["what"]) - 1)]
                      for negated in NEGATED_ZH.finditer(match["zh_owned"])]
        for negated in NEGATED.finditer(phrase):
            terms.append([word for word in re.findall(r"[A-Za-z][A-Za-z0-9-]+", negated["what"].lower())
                          if word not in STOP_WORDS | DETERMINER | PLAIN_VERBS])
        for term in terms:
            if term and not _said_in(term, sentences):
                problems.append((match[0], f"chapter {chapter} has no sentence with {' + '.join(term)}"))
    return problems


CURVE = re.compile(r"\b(?:keeps?|kept|continues?|continued|beyond|past|would|still)\b|继续|仍在|之后",
                   re.IGNORECASE)
SERIES_UNIT = re.compile(r"^\s*(?P<unit>steps?|tokens?|epochs?|步|个词元|轮)", re.IGNORECASE)
UNIT_NAMES = {"步": "step", "个词元": "token", "轮": "epoch"}


def _unit_of(name):
    return UNIT_NAMES.get(name, name.lower().rstrip("s"))


def printed_series(lines):
    """Per unit (step, token, epoch), the values the outputs print with it: "1500 steps", "step 1500"."""
    series = {}
    for line in lines:
        for number in parse_numbers(line, hedges=False):
            after = SERIES_UNIT.match(line[number.end:])
            before = re.search(r"(?P<unit>steps?|tokens?|epochs?)\s*[:=]?\s*$", line[:number.start], re.IGNORECASE)
            for found in (after, before):
                if found:
                    series.setdefault(_unit_of(found["unit"]), []).append(abs(number.value))
    return series


def _beyond_the_curve(text, numbers, series):
    """Rule 3: a number of steps, tokens or epochs in a sentence about a curve's course lies inside the range
    the outputs print for that unit."""
    if not CURVE.search(text):
        return []
    wrong = []
    for number in numbers:
        unit = SERIES_UNIT.match(text[number.end:])
        values = series.get(_unit_of(unit["unit"])) if unit else None
        if values and len(set(values)) >= 2 and not min(values) <= abs(number.value) <= max(values):
            wrong.append((number.text, f"printed {_unit_of(unit['unit'])}s run {min(values):g}-{max(values):g}"))
    return wrong


def _nearest_ratio_lines(window, index, facts, below):
    """The printed lines of the code cell nearest the sentence (before it; after it for "below") that print a
    ratio: what a "many times" describes."""
    ordered = [code for code in window if code > index] if below else [code for code in reversed(window)
                                                                         if code < index]
    return next((facts.lines[code] for code in ordered if _printed_ratios(facts.lines[code])), [])


def claim_problems(unit, lines, ratio_lines, series, folder, facts_of):
    """`(kind, what, why)` for each claim of a unit that its outputs (or the chapter it points to) contradict."""
    numbers = quantities(unit.text)
    problems = [("direction", *problem) for problem in (_direction_of_quoted_pairs(unit.text, numbers)
                                                       + _direction_of_labelled_pairs(unit.text, numbers, lines)
                                                       + _null_verdicts_contradicted(unit.text, lines))]
    problems += [("pointer", *problem) for problem in _pointer_problems(unit.text, folder, facts_of)]
    if not (unit.cited or unit.row_cited):  # the paper's own "many times" and its curves are the paper's
        problems += [("quantifier", *problem) for problem in _quantifiers_unsupported(unit.text, ratio_lines)]
        problems += [("extrapolation", *problem) for problem in _beyond_the_curve(unit.text, numbers, series)]
    return problems


# ---------------------------------------------------------------------------------------------------------
# Findings


@dataclass
class Finding:
    path: str
    cell: int
    cell_id: str
    kind: str            # "mismatch", "unsourced", "arithmetic"; claims: "direction", "quantifier", "pointer",
                         # "extrapolation"
    number: str
    sentence: str
    nearest: str = ""    # the printed value it most likely describes, with its cell

    def __str__(self):
        where = f"{self.path} cell {self.cell} ({self.cell_id})"
        label = "printed nearby: " if self.kind in ("mismatch", "unsourced") else ""
        near = f"; {label}{self.nearest}" if self.nearest else ""
        sentence = self.sentence if len(self.sentence) <= 220 else self.sentence[:217] + "..."
        return f"{where}: {self.kind} {self.number!r}{near}\n    {sentence}"


def _agrees(number, candidates, in_points=False):
    """A percentage agrees with printed percentages (or fractions); a count of points with either kind."""
    kinds = {"percent"} if number.kind == "percent" else {"plain", "percent"} if in_points else {"plain"}
    return any(number.agrees_with(candidate.value) for candidate in candidates if candidate.kind in kinds)


def _nearest(number, candidates):
    """The printed value a wrong quote most likely describes: same kind, within 20% (or 3 points of a %)."""
    wanted = "percent" if number.kind == "percent" else "plain"
    limit = max(0.2 * abs(number.value), 3.0 if wanted == "percent" else 0.0)
    def decimals(text):
        return len(re.sub(r"\D+$", "", text.split(".")[1])) if "." in text else 0

    close = [candidate for candidate in candidates if candidate.kind == wanted and candidate.value
             and not re.fullmatch(r"[+\-−]?\d", candidate.text)  # a printed digit (a count, an index)
             and decimals(candidate.text) >= min(decimals(number.text), 1)
             and abs(abs(candidate.value) - abs(number.value)) <= limit]
    if not close:
        return None
    return min(close, key=lambda candidate: abs(abs(candidate.value) - abs(number.value)))


def _chapter_stem(folder, chapter):
    matches = sorted(Path(folder).glob(f"0{chapter}_*.ipynb"))
    return matches[0] if matches else None


def check_notebook(path, declared_from=None, _cache=None):
    """The findings of one stored notebook (a path to an .ipynb), in cell order.

    `declared_from`: another notebook (path) whose cells' `<!-- constants: -->` declarations apply to the
    cells with the same id here, as the Chinese edition inherits the English one's.
    """
    path = Path(path)
    cache = {} if _cache is None else _cache

    def facts_of(notebook_path):
        key = str(Path(notebook_path).resolve())
        if key not in cache:
            cache[key] = notebook_facts(json.loads(Path(notebook_path).read_text(encoding="utf-8")))
        return cache[key]

    notebook = json.loads(path.read_text(encoding="utf-8"))
    facts = facts_of(path)
    inherited = {}
    if declared_from is not None and Path(declared_from).is_file():
        for cell in json.loads(Path(declared_from).read_text(encoding="utf-8"))["cells"]:
            inherited[cell.get("id")] = " ".join(DECLARED.findall(_text(cell.get("source"))))
    findings, cited_before, section = [], [], 0
    code_cells = sorted(facts.outputs)
    series = printed_series([line for code in code_cells for line in facts.lines[code]])
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        source = _text(cell.get("source"))
        declared = parse_numbers(" ".join(DECLARED.findall(source)) + " " + inherited.get(cell.get("id"), ""))
        units, section = prose_units(source, section)
        for unit in units:
            in_section = [code for code in code_cells if facts.code_sections[code] == unit.section]
            # A section without code of its own (objectives, claim vs fact, self-check), and the title's, read
            # every code cell.
            window = in_section if in_section and unit.section > 1 else code_cells
            if ABOVE.search(unit.text):
                window = sorted(set(window) | {code for code in code_cells if code < index})
            if BELOW.search(unit.text):
                window = sorted(set(window) | {code for code in code_cells if code > index})
            printed = [value for code in window for value in facts.outputs[code]]
            for reference in CHAPTER_REFERENCE.finditer(unit.text):
                for chapter in filter(None, reference.groups()):
                    other = _chapter_stem(path.parent, chapter)
                    if other is not None:
                        other_facts = facts_of(other)
                        printed += [value for values in other_facts.outputs.values() for value in values]
            declared_printed, cited_printed = (
                [Printed(number.value, _kind(number), number.text, index) for number in group]
                for group in (declared, cited_before))
            lines = [line for code in window for line in facts.lines[code]]
            ratio_lines = _nearest_ratio_lines(window, index, facts, bool(BELOW.search(unit.text)))
            findings += [Finding(path.as_posix(), index, cell.get("id", ""), kind, what, unit.text, why)
                         for kind, what, why in claim_problems(unit, lines, ratio_lines, series, path.parent,
                                                               facts_of)]
            derived, numbers = set(), quantities(unit.text)
            for result, holds in arithmetic(CITATION_TOKEN.sub(lambda m: " " * len(m[0]), unit.text)):
                if holds:
                    derived.add(result.value)
                elif not (unit.cited or unit.row_cited):
                    findings.append(Finding(path.as_posix(), index, cell.get("id", ""), "arithmetic",
                                            result.text, unit.text))
                    derived.add(result.value)
            if unit.cited or unit.row_cited:
                cited_before += numbers
                continue
            for number in numbers:
                hedged = HEDGE.search(unit.text[max(0, number.start - 25):number.start])
                # Settings and citations are quoted exactly: "about 10 passes" is a result, which neither the
                # code's 10s nor a cited 10% back.
                backing = printed + declared_printed + ([] if hedged else facts.stated + cited_printed)
                in_points = bool(POINTS.match(unit.text[number.end:]))
                if number.value in derived or _agrees(number, backing, in_points):
                    continue
                nearest = _nearest(number, printed)
                findings.append(Finding(path.as_posix(), index, cell.get("id", ""),
                                        "mismatch" if nearest else "unsourced", number.text, unit.text,
                                        f"{nearest.text} (cell {nearest.cell})" if nearest else ""))
    return findings


def check_notebooks(paths, english_folder=None):
    """Findings of several notebooks; for a Chinese notebook, `english_folder` holds its English original."""
    cache, findings = {}, []
    for path in paths:
        original = Path(english_folder) / Path(path).name if english_folder else None
        findings += check_notebook(path, declared_from=original, _cache=cache)
    return findings


def format_findings(findings):
    kinds = {kind: sum(finding.kind == kind for finding in findings)
             for kind in ("mismatch", "arithmetic", "unsourced", "direction", "quantifier", "pointer",
                          "extrapolation")}
    head = f"{len(findings)} findings: " + ", ".join(f"{count} {kind}" for kind, count in kinds.items())
    return "\n".join([head, *map(str, findings)])


def main(argv=None):
    """`python -m coursekit.prose notebooks/0*.ipynb`; exit status 1 when there are findings."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="+", help="stored notebooks (.ipynb) to check")
    parser.add_argument("--english", help="folder of the English originals (a Chinese edition inherits their "
                                          "declarations)")
    args = parser.parse_args(argv)
    findings = check_notebooks(args.notebooks, english_folder=args.english)
    print(format_findings(findings))
    return 1 if findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
