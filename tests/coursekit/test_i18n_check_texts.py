"""The texts a notebook hands to its course's checks are runtime strings the kit extracts (`checktexts`): which calls
are checks is the course's (`check_arguments` hook); the toy course names none, so the tests name them here."""

import shutil

import nbformat

from coursekit.i18n.checktexts import check_arguments, check_strings
from tests.coursekit.conftest import selected

CODE = '''from toycourse import _
HINT = "sum, then divide"
where = _("(rates {rates})").format(rates=0.1)
for statement in ["the first statement", "the second statement"]:
    check(statement, True)
check(f"share {where}", 1, hint=HINT)
check("softmax", 1)
check(name="the mean", hint="{'logits': array}")
check(where, 1)
other("not a check", hint="not read")
'''


def test_check_texts_follow_names_marks_and_f_strings_and_leave_code_out(toy_course_root, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(toy_course_root, root)
    (root / "solutions").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(CODE, id="checks")]
    nbformat.write(nb, root / "solutions" / "01_toy.ipynb")
    with selected(root):
        assert check_arguments() == {} and check_strings(root) == {}  # a course without the hook has no checks
        found = check_strings(root, {"check": ((0,), ("name", "hint"))})
    # a name's literals, a `_()` mark's literal (its template, never a formatted text), an f-string's template; not
    # code ("softmax", a dict literal), not the arguments of a call that is no check
    assert sorted(found) == ["(rates {rates})", "share {where}", "sum, then divide", "the first statement", "the mean",
                             "the second statement"]
    assert found["share {where}"] == ["solutions/01_toy.ipynb, cell checks"]
