"""The English texts that the course's notebooks hand to the checks of `bertlib_course.checks`: the kit's own
extraction (`coursekit.i18n.checktexts.check_strings`, which `coursekit i18n check` and `update` read too), with this
course's checks and the arguments a learner reads (`bertlib_course.kit.check_arguments`), so the test and the kit
agree by construction."""

from pathlib import Path

from bertlib_course.kit import check_arguments
from coursekit.i18n.checktexts import check_strings, is_prose  # noqa: F401 (test_check_language reads is_prose)

ROOT = Path(__file__).resolve().parents[2]


def check_texts(root=ROOT):
    """`{english: [where, ...]}` of the prose texts the English notebooks and solutions hand to the checks."""
    return check_strings(root, check_arguments())
