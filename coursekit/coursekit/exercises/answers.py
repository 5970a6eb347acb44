"""The catalogue of wrong (and other right) answers that measures an exercise's checks.

`solutions/wrong_answers/NN_<topic>.py` defines `WRONG_ANSWERS` (`{exercise_id: {description: answer}}`, at
least `MIN_WRONG_ANSWERS` an exercise) and optionally `RIGHT_ANSWERS`; an answer is the whole source of the
solution cell, or `(old, new)` replacements applied to the reference (`wrong_answer_source`).
"""

import runpy
from pathlib import Path

from coursekit.exercises.convention import ExerciseFormatError

MIN_WRONG_ANSWERS = 3


def wrong_answers_path(solution_path):
    """`solutions/wrong_answers/NN_<topic>.py`: the catalogue of wrong answers for one solution notebook."""
    solution_path = Path(solution_path)
    return solution_path.parent / "wrong_answers" / f"{solution_path.stem}.py"


def load_wrong_answers(path):
    """Reads a catalogue: a Python file whose `WRONG_ANSWERS` is `{exercise_id: {description: wrong answer}}`.

    A wrong answer is the whole source of the exercise's solution cell (a string), or a list of `(old, new)`
    replacements applied to the reference solution cell (each `old` must occur in it).
    """
    path = Path(path)
    if not path.is_file():
        raise ExerciseFormatError(f"{path}: no catalogue of wrong answers (every exercise needs at least "
                                  f"{MIN_WRONG_ANSWERS})")
    catalogue = runpy.run_path(str(path)).get("WRONG_ANSWERS")
    if not isinstance(catalogue, dict):
        raise ExerciseFormatError(f"{path}: defines no WRONG_ANSWERS dict")
    for exercise_id, answers in catalogue.items():
        if not isinstance(answers, dict):
            raise ExerciseFormatError(f"{path}: WRONG_ANSWERS[{exercise_id!r}] must map descriptions to answers")
        for description, wrong in answers.items():
            valid = isinstance(wrong, str) or (isinstance(wrong, list) and wrong and all(
                isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(text, str) for text in pair)
                for pair in wrong))
            if not valid:
                raise ExerciseFormatError(f"{path}: {exercise_id} {description!r}: a wrong answer is a source string "
                                          f"or a list of (old, new) string pairs")
    return catalogue


def load_right_answers(path):
    """The catalogue's `RIGHT_ANSWERS` (optional): `{exercise_id: {description: answer}}`, answers written as wrong
    answers are (`load_wrong_answers`), each right in another way than the reference: the value unrounded where the
    question states a rounding and the reference rounds it, or rounded where the reference does not. Each must pass
    the public checks and the hidden tests alike."""
    catalogue = runpy.run_path(str(path)).get("RIGHT_ANSWERS", {})
    if not isinstance(catalogue, dict) or not all(isinstance(answers, dict) for answers in catalogue.values()):
        raise ExerciseFormatError(f"{path}: RIGHT_ANSWERS must map exercise ids to {{description: answer}} dicts")
    return catalogue


def wrong_answer_source(reference_source, wrong, where="wrong answer"):
    """The solution cell source of a wrong answer (see `load_wrong_answers`)."""
    if isinstance(wrong, str):
        return wrong
    source = reference_source
    for old, new in wrong:
        if old not in source:
            raise ExerciseFormatError(f"{where}: {old!r} does not occur in the reference solution cell")
        source = source.replace(old, new)
    return source
