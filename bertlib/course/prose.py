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

Run it: `python -m bertlib.course.prose notebooks/0*.ipynb`, or for the Chinese edition
`python -m bertlib.course.prose notebooks/zh/0*.ipynb --english notebooks`. Pure Python: no Keras import.
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


def notebook_facts(notebook):
    facts, section = Facts(), 0
    for index, cell in enumerate(notebook["cells"]):
        source = _text(cell.get("source"))
        if cell["cell_type"] == "markdown":
            lines = _strip_markdown(source).split("\n")
            section += sum(bool(re.match(r"\s*#{1,6}\s", line)) for line in lines)
        elif cell["cell_type"] == "code":
            facts.code_sections[index] = section
            facts.outputs[index] = _printed(_output_text(cell), index)
            code = re.sub(r"(?<=\d)_(?=\d)", "", source)
            facts.stated += _printed(code, index)
    return facts


# ---------------------------------------------------------------------------------------------------------
# Findings


@dataclass
class Finding:
    path: str
    cell: int
    cell_id: str
    kind: str            # "mismatch", "unsourced" or "arithmetic"
    number: str
    sentence: str
    nearest: str = ""    # the printed value it most likely describes, with its cell

    def __str__(self):
        where = f"{self.path} cell {self.cell} ({self.cell_id})"
        near = f"; printed nearby: {self.nearest}" if self.nearest else ""
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
             for kind in ("mismatch", "arithmetic", "unsourced")}
    head = f"{len(findings)} findings: " + ", ".join(f"{count} {kind}" for kind, count in kinds.items())
    return "\n".join([head, *map(str, findings)])


def main(argv=None):
    """`python -m bertlib.course.prose notebooks/0*.ipynb`; exit status 1 when there are findings."""
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
