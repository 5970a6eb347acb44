"""The grades in the files of the tools a class uses: Gradescope's `results.json` and a Canvas gradebook import.

Both come from the same `Grade` rows as grades.csv, so a notebook's points are the same in all three.

- Gradescope (https://gradescope-autograders.readthedocs.io/en/latest/specs/, "Output format"): one test per
  exercise of the submission (`name`, `number`, `score`, `max_score`, `status`, `output`, `visibility`), the total as
  `score`, what isolated the run as `output`. An exercise whose check has hidden tests gets `hidden_visibility`
  (default "after_published", what otter-grader gives hidden tests with `show_hidden`), so its expected values reach
  the learner only when the instructor publishes; the others are "visible".
- Canvas (Canvas guides, "How do I import grades in the Gradebook?"): the columns of Canvas's own gradebook export,
  Student, ID, SIS User ID, SIS Login ID, Section, then one column per assignment (a chapter's solution notebook),
  and the export's "Points Possible" row. The students come from that export (`--roster`); an assignment the export
  already has keeps its header, "Name (Canvas id)", so Canvas updates it; another is a new column, "Name", which
  Canvas offers to create. A student without a submission gets an empty cell, which Canvas leaves as it is.
"""

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

from coursekit.grading.report import display_name, report_files, safe_text

FORMATS = ("csv", "gradescope", "canvas")
GRADESCOPE_VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
ROSTER_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "    Points Possible"  # the second row of Canvas's export, as it writes it
# Canvas's "Download Submissions" names a file <sortable name>_[LATE_]<Canvas user id>_<submission id>_<file name>
CANVAS_DOWNLOAD_NAME = re.compile(r"^[^_]+_(?:late_)?(\d+)_\d+_", re.IGNORECASE)
_CANVAS_ID = re.compile(r"^(.*) \((\d+)\)$")


class FormatError(ValueError):
    """A roster that cannot be read, or submissions that cannot be placed in it; the message names the fix."""


# ---------------------------------------------------------------------------------------------------- Gradescope

def gradescope_results(grades, hidden_visibility="after_published", isolation="", seconds=None):
    """The `results.json` object of one submission (all its notebooks) from its `Grade` rows."""
    if hidden_visibility not in GRADESCOPE_VISIBILITIES:
        raise ValueError(f"hidden_visibility must be one of {GRADESCOPE_VISIBILITIES}, got {hidden_visibility!r}")
    several = len({grade.notebook for grade in grades}) > 1
    tests = []
    for grade in grades:
        title = "the notebook" if grade.exercise == "-" else f"Exercise {grade.exercise}"
        where = f" ({Path(grade.notebook).name})" if several else ""
        output = safe_text(grade.outcome.message).strip() or grade.outcome.status.value
        if grade.note:
            output += f"\n\nNote: {safe_text(grade.note)}"
        test = {"name": safe_text(title + where, keep=""), "score": grade.score, "max_score": grade.max_score,
                "status": "passed" if grade.outcome.passed else "failed", "output": output,
                "visibility": hidden_visibility if grade.hidden else "visible"}
        if grade.exercise != "-":
            test["number"] = safe_text(grade.exercise, keep="")
        tests.append(test)
    results = {"score": sum(grade.score for grade in grades), "output": isolation, "visibility": "visible",
               "stdout_visibility": "hidden", "tests": tests}
    if seconds is not None:
        results["execution_time"] = round(seconds)
    return results


def gradescope_text(grades, **kwargs):
    return json.dumps(gradescope_results(grades, **kwargs), ensure_ascii=False, indent=1) + "\n"


# -------------------------------------------------------------------------------------------------------- Canvas

@dataclass(frozen=True)
class Roster:
    """A Canvas gradebook export: its students (dicts of ROSTER_COLUMNS) and its assignment headers."""

    students: tuple
    assignment_headers: tuple

    def header_for(self, assignment):
        """The export's header of `assignment` ("Name (id)"), else the name alone: a new column."""
        for header in self.assignment_headers:
            match = _CANVAS_ID.match(header)
            if header == assignment or (match and match.group(1) == assignment):
                return header
        return assignment


def read_roster(path):
    """Reads a Canvas gradebook export (CSV); FormatError names what is missing."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as file:
            rows = list(csv.reader(file))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise FormatError(f"--roster {path}: cannot read it ({error}); give the CSV of Canvas's Grades > Export") \
            from error
    if not rows or any(column not in rows[0] for column in ROSTER_COLUMNS):
        raise FormatError(f"--roster {path}: the first row must name the columns {', '.join(ROSTER_COLUMNS)} (the "
                          f"CSV of Canvas's Grades > Export), got {', '.join(rows[0][:6]) if rows else 'nothing'}")
    header = rows[0]
    students = []
    for row in rows[1:]:
        record = dict(zip(header, row + [""] * (len(header) - len(row))))
        if record["Student"].strip() in ("Points Possible", "Student, Test") or not record["ID"].strip():
            continue  # the export's points row, its test student, a row of posting policies
        students.append({column: record[column] for column in ROSTER_COLUMNS})
    if not students:
        raise FormatError(f"--roster {path}: no student in it (export the gradebook with its students)")
    known = set(ROSTER_COLUMNS)
    assignments = tuple(name for name in header if name not in known and _CANVAS_ID.match(name))
    return Roster(tuple(students), assignments)


def match_students(plans, roster, submissions):
    """({notebook: roster student}, {notebook: assignment}) for the `plans` of `submissions` (each notebook by its
    name in the rows, `display_name`), or FormatError naming every notebook that
    matches no student, matches no solution notebook, or is a second notebook of one student for one assignment.

    A notebook matches the student whose SIS Login ID, SIS User ID or ID is the name of its folder below the
    submission folder given (or its file name's stem, for a notebook given alone or lying in that folder), or whose
    ID is the user id in a name of Canvas's "Download Submissions" (`smithjane_12345_67890_03_topic.ipynb`)."""
    roots = [Path(path).resolve() for path in submissions]
    matched, assignments, problems, seen = {}, {}, [], {}
    for plan in plans:
        key = _student_key(Path(plan.path), roots)
        canvas = CANVAS_DOWNLOAD_NAME.match(Path(plan.path).name)
        student = next((row for row in roster.students
                        if key in (row["SIS Login ID"], row["SIS User ID"], row["ID"]) and key
                        or canvas and canvas.group(1) == row["ID"]), None)
        if plan.solution is None:
            problems.append(f"{plan.path} matches no solution notebook")
        elif student is None:
            problems.append(f"{plan.path} matches no student of the roster (its folder, or its name, {key!r}, is "
                            f"no SIS Login ID, SIS User ID or Canvas ID there)")
        else:
            other = seen.setdefault((student["ID"], assignment_of(plan)), plan.path)
            if other != plan.path:
                problems.append(f"{other} and {plan.path} are both {student['Student']}'s {assignment_of(plan)}: "
                                f"keep one")
            matched[display_name(plan.path)] = student
            assignments[display_name(plan.path)] = assignment_of(plan)
    if problems:
        raise FormatError("--format canvas: " + "; ".join(map(safe_text, problems)))
    return matched, assignments


def _student_key(path, roots):
    for root in roots:
        if root.is_dir() and path.resolve().is_relative_to(root):
            parts = path.resolve().relative_to(root).parts
            return parts[0] if len(parts) > 1 else Path(parts[0]).stem
    return path.stem


def assignment_of(plan):
    """An assignment of the class: the chapter's solution notebook, by its stem ("03_toy")."""
    return Path(plan.solution).stem


def canvas_gradebook(grades, roster, students, assignments):
    """The gradebook CSV: `students` {notebook: roster student}, `assignments` {notebook: assignment name}."""
    names = list(dict.fromkeys(assignments[notebook] for notebook in students))
    points, cells = {}, {}
    for grade in grades:
        notebook = grade.notebook
        if notebook not in students:
            continue
        key = (students[notebook]["ID"], assignments[notebook])
        cells[key] = cells.get(key, 0) + grade.score
        points[assignments[notebook]] = max(points.get(assignments[notebook], 0), _possible(grades, grade.notebook))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*ROSTER_COLUMNS, *(roster.header_for(name) for name in names)])
    writer.writerow([POINTS_POSSIBLE, "", "", "", "", *(points[name] for name in names)])
    for student in roster.students:
        writer.writerow([*(student[column] for column in ROSTER_COLUMNS),
                         *(cells.get((student["ID"], name), "") for name in names)])
    return buffer.getvalue()


def _possible(grades, notebook):
    return sum(grade.max_score for grade in grades if grade.notebook == notebook)


# ----------------------------------------------------------------------------------------- what a run writes

@dataclass(frozen=True)
class ReportFormat:
    """What `coursekit grade` writes at --out: `format` one of FORMATS; for canvas the `roster` (a `Roster`); for
    gradescope the visibility of exercises with hidden tests and, where the caller knows better, the `isolation`
    text (the Gradescope autograder's, when it ran without bubblewrap)."""

    format: str = "csv"
    roster: Roster = None
    hidden_visibility: str = "after_published"
    isolation: str = ""

    def __post_init__(self):
        if self.format not in FORMATS:
            raise FormatError(f"--format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        if self.format == "canvas" and self.roster is None:
            raise FormatError("--format canvas needs --roster: the CSV of Canvas's Grades > Export, which names the "
                              "students (Student, ID, SIS User ID, SIS Login ID, Section)")
        if self.hidden_visibility not in GRADESCOPE_VISIBILITIES:
            raise FormatError(f"--hidden-visibility must be one of {', '.join(GRADESCOPE_VISIBILITIES)}, got "
                              f"{self.hidden_visibility!r}")

    def paths(self, out):
        """Every file a run writes for `out`, feedback files aside (checked writable before any work)."""
        out = Path(out)
        if self.format == "gradescope":
            return [out]
        if self.format == "canvas":
            return [out, details_path(out), details_path(out).with_suffix(".md")]
        return [out, out.with_suffix(".md")]

    def files(self, grades, placement=None):
        """The function `report.write_reports` takes: `out` to {path: text}; `placement` is `match_students`'s."""
        if self.format == "gradescope":
            isolation = self.isolation or getattr(grades, "isolation", "")
            return lambda out: {out: gradescope_text(grades, hidden_visibility=self.hidden_visibility,
                                                     isolation=isolation, seconds=getattr(grades, "seconds", None))}
        if self.format == "canvas":
            return lambda out: {out: canvas_gradebook(grades, self.roster, *placement),
                                **report_files(grades, details_path(out))}
        return None


def details_path(out):
    """Where a Canvas run puts grades.csv's rows (and their summary and feedback): beside the gradebook."""
    return Path(out).with_name(f"{Path(out).stem}_grades.csv")
