"""coursekit: tools for the authors and instructors of a notebook course, generic over the course.

- `exercises`: exercise notebooks generated from solution notebooks, and mutation tests of their checks (every
  wrong answer of the catalogue must be rejected, by the public and the hidden checks alike);
- `grading`: a sandboxed grader (bubblewrap) that runs each submission in its own kernel and writes its reports;
- `prose`: the numbers a text quotes, checked against the outputs beside it;
- `i18n`: translated editions built from their catalogues, with a typesetting lint;
- `course`: where a course's files are (`[tool.coursekit]` of its pyproject.toml).

Command line: `coursekit exercises|grade|i18n`.
"""

__version__ = "0.2.0"
