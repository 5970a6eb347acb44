"""The English texts that the course's notebooks hand to the checks of `bertlib_course.checks`, read from the code
cells as xgettext reads a program (an AST walk, no code run): each check's name, hint, and the expected and got
texts of `check_true`.

A text is what the call writes as a literal, an f-string as its template (`f"[MASK] share {where}"` gives
"[MASK] share {where}", fields named as `coursekit.i18n.extract` names them, the form the runtime catalogue lists
it in), or the literals a name given to the call holds in the same notebook: an assignment (`HINT = "..."`), a
loop over a list, tuple or dict (`for statement, answer in zip(STATEMENTS, ...)`), a subscript of a dict
(`BOUNDARY_HINTS[place]`), the parameter of a notebook function called with literals (`first_wrong("schedule",
...)`). Texts that are code (`softmax`, `replica_plan{case}`, `pool(sequence_output, kernel, bias)`: they parse as
a Python expression) or have no word in them are left out: they read the same in every language.
"""

import ast
import json
import re
from pathlib import Path

from coursekit.i18n.extract import _template  # an f-string as the runtime catalogue lists it

ROOT = Path(__file__).resolve().parents[2]
EDITIONS = ("notebooks", "solutions")
# check -> (positional indexes, keywords) of the arguments a learner reads in its ✔/✘ line
CHECK_ARGUMENTS = {
    "check_equal": ((0,), ("name", "hint")), "check_close": ((0,), ("name", "hint")),
    "check_rounded": ((0,), ("name", "hint")), "check_shape": ((0,), ("name", "hint")),
    "check_array_close": ((0,), ("name", "hint")), "check_digest": ((0,), ("name", "hint")),
    "check_true": ((0, 2, 3), ("name", "expected_text", "got_text", "hint")),
    "check_function": ((0,), ("name", "hint")), "checked_call": ((0,), ("name", "hint")),
    "check_raises": ((0,), ("name", "hint")), "check_compiled_step": ((0,), ("name", "hint")),
}


def runnable_code(source):
    """A cell's source as plain Python: IPython's `%` and `!` lines blanked (as `coursekit.exercises` runs it)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))


def _call_name(node):
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


class _Names:
    """What each name of one notebook may hold: the expression nodes assigned or iterated into it, and, for a
    parameter of a notebook function, the arguments of that function's calls."""

    def __init__(self, trees):
        self.values, functions, calls = {}, {}, []
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        self._bind(target, node.value)
                elif isinstance(node, (ast.For, ast.comprehension)):
                    self._bind(node.target, node.iter, iterated=True)
                elif isinstance(node, ast.FunctionDef):
                    functions[node.name] = [argument.arg for argument in node.args.args]
                elif isinstance(node, ast.Call):
                    calls.append(node)
        for call in calls:
            parameters = functions.get(_call_name(call), [])
            for parameter, argument in zip(parameters, call.args):
                self.values.setdefault(parameter, []).append(argument)
            for keyword in call.keywords:
                if keyword.arg in parameters:
                    self.values.setdefault(keyword.arg, []).append(keyword.value)

    def _bind(self, target, value, iterated=False):
        if isinstance(target, ast.Name):
            self.values.setdefault(target.id, []).append(ast.Starred(value=value) if iterated else value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, ast.Call) and _call_name(value) == "zip" and iterated:
                for item, source in zip(target.elts, value.args):
                    self._bind(item, source, iterated=True)
            elif isinstance(value, ast.Call) and _call_name(value) == "items" and iterated and len(target.elts) == 2:
                mapping = value.func.value if isinstance(value.func, ast.Attribute) else value
                self._bind(target.elts[0], ast.Call(func=ast.Name("keys"), args=[mapping], keywords=[]))
                self._bind(target.elts[1], ast.Call(func=ast.Name("values"), args=[mapping], keywords=[]))
            elif isinstance(value, (ast.Tuple, ast.List)) and not iterated:
                for item, source in zip(target.elts, value.elts):
                    self._bind(item, source)
            else:  # unpacked from something read element by element: each element may hold any of its texts
                for item in target.elts:
                    self._bind(item, value, iterated=iterated)

    def texts(self, node, seen=frozenset()):
        """The literal texts `node` may evaluate to (strings only; an f-string as its template)."""
        if isinstance(node, ast.Constant):
            return [node.value] if isinstance(node.value, str) else []
        if isinstance(node, ast.JoinedStr):
            return [_template(node)]
        if isinstance(node, ast.IfExp):
            return self.texts(node.body, seen) + self.texts(node.orelse, seen)
        if isinstance(node, ast.Name):
            if node.id in seen:
                return []
            return [text for value in self.values.get(node.id, []) for text in self.texts(value, seen | {node.id})]
        if isinstance(node, ast.Starred):  # the items of an iterated container
            return self.items(node.value, seen)
        if isinstance(node, ast.Subscript):
            return self.items(node.value, seen, keys=False)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("keys", "values"):
            return self.items(node.args[0], seen, keys=node.func.id == "keys")
        return []

    def items(self, node, seen, keys=True):
        if isinstance(node, ast.Name) and node.id not in seen:
            return [text for value in self.values.get(node.id, [])
                    for text in self.items(value, seen | {node.id}, keys)]
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [text for item in node.elts for text in self.texts(item, seen)]
        if isinstance(node, ast.Dict):
            chosen = node.keys if keys else node.values
            return [text for item in chosen if item is not None for text in self.texts(item, seen)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("keys", "values"):
            return self.items(node.args[0], seen, keys=node.func.id == "keys")
        return []


def is_prose(text):
    """Whether a learner reads `text` as words to translate: a word in it, and not a Python expression."""
    plain = re.sub(r"\{\w*\}", "x", text.replace("{{", "{").replace("}}", "}"))
    if not re.search(r"[A-Za-z]{2}", re.sub(r"\{\w*\}", "", text)):
        return False
    try:
        ast.parse(plain.strip(), mode="eval")
    except SyntaxError:
        return True
    return False


def check_texts(root=ROOT):
    """`{english: [where, ...]}` of the prose texts the English notebooks and solutions hand to the checks."""
    found = {}
    for edition in EDITIONS:
        for path in sorted((Path(root) / edition).glob("*.ipynb")):
            cells = [cell for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
                     if cell["cell_type"] == "code"]
            trees = []
            for cell in cells:
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                try:
                    trees.append((cell.get("id"), ast.parse(runnable_code(source))))
                except SyntaxError:
                    continue
            names = _Names([tree for _, tree in trees])
            for cell_id, tree in trees:
                for node in ast.walk(tree):
                    if not isinstance(node, ast.Call) or _call_name(node) not in CHECK_ARGUMENTS:
                        continue
                    indexes, keywords = CHECK_ARGUMENTS[_call_name(node)]
                    arguments = [node.args[index] for index in indexes if index < len(node.args)
                                 and not isinstance(node.args[index], ast.Starred)]
                    arguments += [keyword.value for keyword in node.keywords if keyword.arg in keywords]
                    for argument in arguments:
                        for text in names.texts(argument):
                            if is_prose(text):
                                found.setdefault(text, []).append(f"{edition}/{path.name}, cell {cell_id}")
    return found
