"""The grades of a run and the files written from them: the CSV, its Markdown summary, one feedback file per notebook.

All are written atomically, and always (`write_reports` falls back to a new temporary folder, and says so, when the
place asked for cannot be written at the end).
"""

import csv
import io
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from coursekit.files import write_text_atomically
from coursekit.grading.outcome import Outcome

COLUMNS = ("notebook", "exercise", "score", "max_score", "status", "message", "note")


@dataclass(frozen=True)
class Grade:
    """One row of grades.csv: an exercise of a notebook (exercise "-": the notebook as a whole) and its outcome.

    Reads like the CSV row it becomes: `grade["status"]`, `grade["score"]`.
    """

    notebook: str
    exercise: str
    max_score: int
    outcome: Outcome
    note: str = ""
    hidden: bool = False  # the exercise's check has hidden tests (Gradescope shows it with their visibility)

    @property
    def score(self):
        return self.max_score if self.outcome.passed else 0

    def row(self):
        """The CSV row: text made safe for any report (`safe_text`) and for a spreadsheet (`spreadsheet_text`)."""
        return {"notebook": spreadsheet_text(safe_text(self.notebook)),
                "exercise": spreadsheet_text(safe_text(self.exercise)), "score": self.score,
                "max_score": self.max_score, "status": self.outcome.status.value,
                "message": spreadsheet_text(safe_text(self.outcome.one_line())),
                "note": spreadsheet_text(safe_text(self.note))}

    def __getitem__(self, column):
        return self.row()[column]


# What no report may hold as it is: lone surrogates (a file name that is not UTF-8), control characters (a terminal
# escape, a bell, the one-byte CSI \x9b), and the bidirectional overrides that make text display in another order.
_UNSAFE = re.compile("[\ud800-\udfff\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula (OWASP)


def safe_text(text, keep="\n\t"):
    """`text` as any report (and a terminal) can show it: each unsafe character as a visible escape: ESC as \\x1b,
    a byte of a file name that is not UTF-8 as \\xe9, a lone surrogate as \\ud800. Characters of `keep` stay."""

    def escape(match):
        character = match.group()
        code = ord(character)
        if character in keep:
            return character
        if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte it stands for
            return f"\\x{code - 0xDC00:02x}"
        if character in _NAMED:
            return _NAMED[character]
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNSAFE.sub(escape, str(text))


def spreadsheet_text(text):
    """A CSV cell no spreadsheet runs as a formula: one that starts like one gets a leading single quote (OWASP's
    advice on CSV injection). The lone "-" of a notebook's own row is no formula and stays as it is."""
    return f"'{text}" if text.startswith(FORMULA_STARTS) and text != "-" else text


def markdown_text(text):
    """`text` on one line of Markdown (a table cell, a heading, a note): safe, with backslashes, pipes, newlines and
    HTML's `<` escaped, so it can neither end its cell or line nor become markup."""
    text = safe_text(text, keep="").replace("\\", "\\\\")
    return text.replace("|", "\\|").replace("<", "\\<")


def display_name(path):
    return safe_text(str(path))


class GradeResult(list):
    """The grades of a run (a list of `Grade`), and where the reports went."""

    def __init__(self, grades=()):
        super().__init__(grades)
        self.written = []  # paths of the reports written
        self.fallback = None  # a message when the reports could not go where asked
        self.overlaps = []  # unsafe runs seen beside this one (registry.py): its rows are marked
        self.isolation = ""  # what isolated the notebooks, in words (Gradescope's `output`)
        self.seconds = None  # how long the run took

    @property
    def grader_faults(self):
        return [grade for grade in self if grade.outcome.grader_fault]


def write_reports(grades, out, files=None):
    """Writes the CSV `out`, the Markdown summary beside it (.md) and one feedback file per notebook, atomically;
    with `files`, a function of `out` to {path: text}, those files instead (another format, formats.py).

    When `out` cannot be written (it became read-only during the run, the disk filled up), the reports go to a new
    temporary folder instead, and a message on stderr says where. Returns the paths written.
    """
    out = Path(out)
    files = files or (lambda place: report_files(grades, place))
    try:
        written = _write_all(files(out))
    except OSError as error:
        fallback = Path(tempfile.mkdtemp(prefix="coursekit-grades-")) / out.name
        written = _write_all(files(fallback))
        message = (f"could not write the reports to {out} ({error.strerror or error}); they were written to "
                   f"{fallback.parent} instead")
        print(f"warning: {message}", file=sys.stderr)
        if isinstance(grades, GradeResult):
            grades.fallback = message
    if isinstance(grades, GradeResult):
        grades.written = written
    return written


def _write_all(files):
    for path, text in files.items():
        write_text_atomically(path, text)
    return list(files)


def report_files(grades, out):
    """{path: text} of the CSV `out`, its Markdown summary and the feedback files."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(grade.row() for grade in grades)
    files = {out: buffer.getvalue(), out.with_suffix(".md"): markdown_summary(grades)}
    for notebook, path in feedback_paths(grades, out).items():
        files[path] = feedback(notebook, [grade for grade in grades if grade.notebook == notebook])
    return files


def feedback_paths(grades, out):
    """`{notebook: path of its feedback file}`, in `<out stem>_feedback/`, named after the notebook's path."""
    notebooks = list(dict.fromkeys(grade.notebook for grade in grades))
    folder = Path(out).parent / f"{Path(out).stem}_feedback"
    try:
        common = Path(os.path.commonpath([str(Path(name).resolve().parent) for name in notebooks])) if notebooks else None
    except ValueError:
        common = None
    paths = {}
    for notebook in notebooks:
        resolved = Path(notebook).resolve()
        relative = resolved.relative_to(common) if common and resolved.is_relative_to(common) else Path(resolved.name)
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", "__".join(relative.with_suffix("").parts)).strip(".") or "notebook"
        candidate, count = folder / f"{stem[:150]}.md", 2
        while candidate in paths.values():
            candidate, count = folder / f"{stem[:150]}_{count}.md", count + 1
        paths[notebook] = candidate
    return paths


def feedback(notebook, grades):
    """The Markdown feedback for one notebook: its total, then each exercise's score, status and full message."""
    score, maximum = sum(grade.score for grade in grades), sum(grade.max_score for grade in grades)
    name = markdown_text(notebook)
    lines = [f"# Feedback on {markdown_text(Path(safe_text(notebook)).name)}", "", f"Notebook: {name}", "",
             f"**Score: {score} of {maximum}**", ""]
    notes = list(dict.fromkeys(markdown_text(grade.note) for grade in grades if grade.note))
    lines += [f"> Note: {note}" for note in notes] + ([""] if notes else [])
    for grade in grades:
        title = "the notebook" if grade.exercise == "-" else f"Exercise {markdown_text(grade.exercise)}"
        lines += [f"## {title}: {grade.outcome.status.value} ({grade.score} of {grade.max_score})", ""]
        lines += ["```", safe_text(grade.outcome.message).strip().replace("```", "'''"), "```", ""]
    return "\n".join(lines)


def markdown_summary(grades):
    """Per-notebook totals, then every row, as Markdown tables."""
    totals = {}
    for grade in grades:
        total = totals.setdefault(grade.notebook, [0, 0, 0, 0])
        total[0] += grade.score
        total[1] += grade.max_score
        total[2] += grade.outcome.passed
        total[3] += 1
    lines = ["# Grades", "", "| notebook | score | max_score | exercises passed |", "|---|---:|---:|---:|"]
    lines += [f"| {markdown_text(name)} | {score} | {maximum} | {passed} of {count} |"
              for name, (score, maximum, passed, count) in totals.items()]
    lines += ["", "## Exercises", "", "| " + " | ".join(COLUMNS) + " |", "|---|---|---:|---:|---|---|---|"]
    for grade in grades:
        cells = (grade.notebook, grade.exercise, grade.score, grade.max_score, grade.outcome.status.value,
                 grade.outcome.one_line(), grade.note)
        lines.append("| " + " | ".join(markdown_text(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"
