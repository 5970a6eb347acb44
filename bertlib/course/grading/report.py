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

from bertlib.course.grading.outcome import Outcome
from bertlib.files import write_text_atomically

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

    @property
    def score(self):
        return self.max_score if self.outcome.passed else 0

    def row(self):
        return {"notebook": safe_text(self.notebook), "exercise": safe_text(self.exercise), "score": self.score,
                "max_score": self.max_score, "status": self.outcome.status.value,
                "message": safe_text(self.outcome.one_line()), "note": safe_text(self.note)}

    def __getitem__(self, column):
        return self.row()[column]


_SURROGATES = re.compile("[\ud800-\udfff]")


def safe_text(text):
    """`text` as any report can hold it: a byte of a file name that is not UTF-8 as \\xe9, a lone surrogate of a
    learner's message as \\ud800."""

    def escape(match):
        code = ord(match.group())
        return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"

    return _SURROGATES.sub(escape, str(text))


def display_name(path):
    return safe_text(str(path))


class GradeResult(list):
    """The grades of a run (a list of `Grade`), and where the reports went."""

    def __init__(self, grades=()):
        super().__init__(grades)
        self.written = []  # paths of the reports written
        self.fallback = None  # a message when the reports could not go where asked

    @property
    def grader_faults(self):
        return [grade for grade in self if grade.outcome.grader_fault]


def write_reports(grades, out):
    """Writes the CSV `out`, the Markdown summary beside it (.md) and one feedback file per notebook, atomically.

    When `out` cannot be written (it became read-only during the run, the disk filled up), the reports go to a new
    temporary folder instead, and a message on stderr says where. Returns the paths written.
    """
    out = Path(out)
    try:
        written = _write_reports(grades, out)
    except OSError as error:
        fallback = Path(tempfile.mkdtemp(prefix="bertlib-grades-")) / out.name
        written = _write_reports(grades, fallback)
        message = (f"could not write the reports to {out} ({error.strerror or error}); they were written to "
                   f"{fallback.parent} instead")
        print(f"warning: {message}", file=sys.stderr)
        if isinstance(grades, GradeResult):
            grades.fallback = message
    if isinstance(grades, GradeResult):
        grades.written = written
    return written


def _write_reports(grades, out):
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(grade.row() for grade in grades)
    write_text_atomically(out, buffer.getvalue())
    write_text_atomically(out.with_suffix(".md"), markdown_summary(grades))
    written = [out, out.with_suffix(".md")]
    for notebook, path in feedback_paths(grades, out).items():
        write_text_atomically(path, feedback(notebook, [grade for grade in grades if grade.notebook == notebook]))
        written.append(path)
    return written


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
    notebook = safe_text(notebook)
    lines = [f"# Feedback on {Path(notebook).name}", "", f"Notebook: `{notebook}`", "",
             f"**Score: {score} of {maximum}**", ""]
    notes = list(dict.fromkeys(safe_text(grade.note) for grade in grades if grade.note))
    lines += [f"> Note: {note}" for note in notes] + ([""] if notes else [])
    for grade in grades:
        title = "the notebook" if grade.exercise == "-" else f"Exercise {grade.exercise}"
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

    def cell(value):
        return str(value).replace("|", "\\|")

    lines = ["# Grades", "", "| notebook | score | max_score | exercises passed |", "|---|---:|---:|---:|"]
    lines += [f"| {cell(name)} | {score} | {maximum} | {passed} of {count} |"
              for name, (score, maximum, passed, count) in totals.items()]
    lines += ["", "## Exercises", "", "| " + " | ".join(COLUMNS) + " |", "|---|---|---:|---:|---|---|---|"]
    lines += ["| " + " | ".join(cell(grade.row()[column]) for column in COLUMNS) + " |" for grade in grades]
    return "\n".join(lines) + "\n"
