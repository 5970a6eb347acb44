"""A notebook's facts: what its code cells print and state, and the sentences it holds.

`notebook_facts` reads a stored notebook (JSON) into `Facts`: the values each code cell prints (`Printed`, a
fraction also as its percentage), the numbers its source states (settings, comments), the section of each code
cell, its printed lines, and every sentence and code line in lower case (what chapter pointers are checked
against).
"""

import re
from dataclasses import dataclass, field

from coursekit.prose.numbers import parse_numbers
from coursekit.prose.sentences import prose_units, strip_markdown


def source_text(value):
    return "".join(value) if isinstance(value, list) else (value or "")


def _output_text(cell):
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(source_text(output.get("text")))
        elif output.get("output_type") in ("execute_result", "display_data"):
            data = output.get("data", {})
            parts.append(source_text(data.get("text/markdown")) or source_text(data.get("text/plain")))
    return "\n".join(parts)


@dataclass
class Printed:
    value: float
    kind: str        # "percent" or "plain" ("times" is read as plain)
    text: str
    cell: int


def printed_kind(number):
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
        source = source_text(cell.get("source"))
        if cell["cell_type"] == "markdown":
            facts.sentences += [unit.text.lower() for unit in prose_units(source)[0]]
        else:
            facts.sentences += source.lower().split("\n") + _output_text(cell).lower().split("\n")
        if cell["cell_type"] == "markdown":
            lines = strip_markdown(source).split("\n")
            section += sum(bool(re.match(r"\s*#{1,6}\s", line)) for line in lines)
        elif cell["cell_type"] == "code":
            facts.code_sections[index] = section
            facts.outputs[index] = _printed(_output_text(cell), index)
            facts.lines[index] = [line for line in _output_text(cell).split("\n") if line.strip()]
            code = re.sub(r"(?<=\d)_(?=\d)", "", source)
            facts.stated += _printed(code, index)
    return facts
