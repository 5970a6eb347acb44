"""The texts a course's notebooks hand to its checks (a check's name, hint, and expected and got texts), read from
the code cells as xgettext reads a program (an AST walk, no code run): `check_strings`, which `untranslated_strings`
adds to the runtime strings the runtime catalogue must translate.

Which calls are checks, and which of their arguments a learner reads, is the course's (its `check_arguments` hook:
`{call name: (positional indexes, keywords)}`); a course without the hook has none. A text is what the call writes
as a literal (or marks with `_()`, `.format` after it or not), an f-string as its template (`f"[MASK] share
{where}"` gives "[MASK] share {where}", fields named as `extract` names them, the form the runtime catalogue lists
it in), or the literals a name given to the call holds in the same notebook: an assignment (`HINT = "..."`), a
loop over a list, tuple or dict (`for statement, answer in zip(STATEMENTS, ...)`), a subscript of a dict
(`BOUNDARY_HINTS[place]`), the parameter of a notebook function called with literals (`first_wrong("schedule",
...)`). Texts that are code (`softmax`, `replica_plan{case}`, `pool(sequence_output, kernel, bias)`: they parse as
a Python expression) or have no word in them are left out: they read the same in every language.
"""

import ast
import re

from coursekit import course, exercises
from coursekit.i18n.catalogues import SOURCE_EDITIONS, english_notebooks, source_text


def string_template(node):
    """The msgid of a string node: a constant's text, or an f-string's with each field named after its first name
    (`f"head {h}"` gives "head {h}"; literal braces doubled); None for any other node."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts, used = [], set()
        for index, value in enumerate(node.values):
            if isinstance(value, ast.Constant):
                parts.append(str(value.value).replace("{", "{{").replace("}", "}}"))
            else:
                names = [n.id for n in ast.walk(value) if isinstance(n, ast.Name)]
                name = names[0] if names else f"value{index}"
                name = name if name not in used else f"{name}_{index}"
                used.add(name)
                parts.append("{" + name + "}")
        return "".join(parts)
    return None


def _call_name(node):
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def _marked(node):
    """The literal of `_("...")` or `_("...").format(...)` (gettext's mark, as xgettext reads it), else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and isinstance(node.func.value, ast.Call)):
        node = node.func.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_" and node.args:
        return node.args[0] if isinstance(node.args[0], ast.Constant) else None
    return None


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
            return [string_template(node)]
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
        marked = _marked(node)
        if marked is not None:  # translated where it is written: the check gets it in the reader's language
            return self.texts(marked, seen)
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


def check_arguments():
    """`{call name: (positional indexes, keywords)}` of the course's checks (its `check_arguments` hook), or {}."""
    return dict(course.hook("check_arguments", dict)())


def check_strings(root=None, arguments=None):
    """`{english: [where, ...]}` of the prose texts the English notebooks and solutions under `root` hand to the
    checks `arguments` names (default: the course's, `check_arguments`)."""
    arguments = check_arguments() if arguments is None else arguments
    found = {}
    if not arguments:
        return found
    root = course.root_or(root)
    for edition in SOURCE_EDITIONS:
        for path in english_notebooks(root, edition):
            trees = []
            for cell in exercises.read_notebook(path).cells:
                if cell.cell_type == "code":
                    try:
                        trees.append((cell.get("id"), ast.parse(exercises.runnable_code(source_text(cell.source)))))
                    except SyntaxError:
                        continue
            names = _Names([tree for _, tree in trees])
            for cell_id, tree in trees:
                for node in ast.walk(tree):
                    if isinstance(node, ast.Call) and _call_name(node) in arguments:
                        for text in _argument_texts(node, arguments[_call_name(node)], names):
                            found.setdefault(text, []).append(f"{edition}/{path.name}, cell {cell_id}")
    return found


def _argument_texts(node, shown, names):
    indexes, keywords = shown
    values = [node.args[index] for index in indexes if index < len(node.args)
              and not isinstance(node.args[index], ast.Starred)]
    values += [keyword.value for keyword in node.keywords if keyword.arg in keywords]
    return [text for value in values for text in names.texts(value) if is_prose(text)]
