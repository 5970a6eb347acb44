"""The findings of a notebook's prose: each quoted number matched with a source, each claim with the outputs.

`check_notebook` walks the markdown cells of one stored notebook: for each unit (`sentences`) it gathers what
may back its numbers (the outputs of its section, or above, below or of the chapter it names; settings the code
states; declarations; citations), recomputes its arithmetic, and adds the claims' findings; a number with no
agreeing source is a `Finding` ("mismatch" when a printed value of its kind lies near it, else "unsourced").
`check_notebooks` covers several (a Chinese edition inheriting its English declarations) and
`format_findings` writes them for a person.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

from coursekit.prose.arithmetic import arithmetic
from coursekit.prose.claims import claim_problems, nearest_ratio_lines, printed_series, topic_pointer_problems
from coursekit.prose.facts import Printed, notebook_facts, printed_kind, source_text
from coursekit.prose.labels import rating_problems
from coursekit.prose.numbers import HEDGE, parse_numbers
from coursekit.prose.sentences import (
    ABOVE,
    BELOW,
    CHAPTER_REFERENCE,
    CITATION_TOKEN,
    DECLARED,
    POINTS,
    SPREAD,
    prose_units,
    quantities,
)


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


def _spread_numbers(text, numbers):
    """(the course's own, the cited) numbers of a sentence that cites a source: a median and range over seeds
    ("read against §5.1: median -3.3 points, range -7.7 to -1.6") is never a cited figure, so it is checked."""
    spreads = [match.span() for match in SPREAD.finditer(text)]
    ours = [number for number in numbers if any(start <= number.start < end for start, end in spreads)]
    return ours, [number for number in numbers if number not in ours]


def _chapter_stem(folder, chapter):
    matches = sorted(Path(folder).glob(f"0{chapter}_*.ipynb"))
    return matches[0] if matches else None


def _cell_findings(path, index, cell_id, source, facts_of):
    """The findings read on a markdown cell as written: pointers to a topic, and ratings (`labels`)."""
    return [Finding(path.as_posix(), index, cell_id, kind, what, source, why)
            for kind, problems in (("pointer", topic_pointer_problems(source, path.parent, facts_of)),
                                   ("rating", rating_problems(source)))
            for what, why in problems]


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
            inherited[cell.get("id")] = " ".join(DECLARED.findall(source_text(cell.get("source"))))
    findings, cited_before, section = [], [], 0
    code_cells = sorted(facts.outputs)
    every_line = [line for code in code_cells for line in facts.lines[code]]
    series = printed_series(every_line)
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        source = source_text(cell.get("source"))
        declared = parse_numbers(" ".join(DECLARED.findall(source)) + " " + inherited.get(cell.get("id"), ""))
        units, section = prose_units(source, section)
        findings += _cell_findings(path, index, cell.get("id", ""), source, facts_of)
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
                [Printed(number.value, printed_kind(number), number.text, index) for number in group]
                for group in (declared, cited_before))
            lines = [line for code in window for line in facts.lines[code]]
            ratio_lines = nearest_ratio_lines(window, index, facts, bool(BELOW.search(unit.text)))
            findings += [Finding(path.as_posix(), index, cell.get("id", ""), kind, what, unit.text, why)
                         for kind, what, why in claim_problems(unit, lines, ratio_lines, series, path.parent,
                                                               facts_of, every_line)]
            derived, numbers = set(), quantities(unit.text)
            for result, holds in arithmetic(CITATION_TOKEN.sub(lambda m: " " * len(m[0]), unit.text)):
                if holds:
                    derived.add(result.value)
                elif not (unit.cited or unit.row_cited):
                    findings.append(Finding(path.as_posix(), index, cell.get("id", ""), "arithmetic",
                                            result.text, unit.text))
                    derived.add(result.value)
            if unit.cited or unit.row_cited:
                numbers, cited = _spread_numbers(unit.text, numbers)
                cited_before += cited
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
                          "extrapolation", "rating", "label", "column")}
    head = f"{len(findings)} findings: " + ", ".join(f"{count} {kind}" for kind, count in kinds.items())
    return "\n".join([head, *map(str, findings)])
