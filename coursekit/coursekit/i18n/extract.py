"""The strings code cells show at run time (figure titles, labels, ticks, hints), read from their source as
xgettext reads a program.

`runtime_strings` reads the literals at the call (and every `_()`-marked one), `series_strings` follows them
through a notebook's names (`_NotebookNames`: loop variables, dict keys handed to a plotting helper), and
`unmarked_strings` finds figure text written without `_()`. Over a course's English notebooks,
`untranslated_strings` lists those its runtime catalogue lacks and `unmarked_figure_text` those left unmarked;
`coursekit i18n check --strict` fails on either.
"""

import ast
import collections
import re

from coursekit import course, exercises
from coursekit.i18n.catalogues import SOURCE_EDITIONS, english_notebooks, read_catalogue, runtime_catalogue
from coursekit.i18n.checktexts import check_strings, string_template

# Calls whose positional arguments at these indexes are text a figure or a check shows (a list literal: each item).
LABEL_CALLS = {"set_title": (0,), "set_xlabel": (0,), "set_ylabel": (0,), "suptitle": (0,), "title": (0,),
               "xlabel": (0,), "ylabel": (0,), "text": (2,), "annotate": (0,), "set_xticks": (1,),
               "set_yticks": (1,), "set_xticklabels": (0,), "set_yticklabels": (0,), "show_spread": (1, 2),
               "bar": (0,), "barh": (0,)}  # a bar chart's categories are its tick labels
LABEL_KEYWORDS = ("title", "xlabel", "ylabel", "label", "labels", "hint", "legend_title", "description")
# The gettext keyword a chapter marks its own strings with where it writes them (`_("head {head}")`, as xgettext
# reads `_`): every such literal is a runtime string, whatever call receives it.
MARK_KEYWORD = "_"
# Plotting helpers whose first argument is a dict: its keys name the series, bars or ticks a figure shows.
SERIES_CALLS = ("show_spread", "plot_lines", "plot_bars", "plot_grouped_bars", "plot_heatmaps", "plot_shares")


def _parse(source):
    code = exercises.runnable_code(source)
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def _call_name(node):
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def _label_arguments(call):
    """The argument nodes of `call` that a figure or a check shows (LABEL_CALLS positions, LABEL_KEYWORDS), and the
    literal a chapter marks with `_()` (MARK_KEYWORD)."""
    if isinstance(call.func, ast.Name) and call.func.id == MARK_KEYWORD and call.args:
        marked = call.args[0]  # a literal only: an f-string's msgid would be the text it makes, never listed
        return [marked] if isinstance(marked, ast.Constant) else []
    shown = [call.args[index] for index in LABEL_CALLS.get(_call_name(call), ()) if index < len(call.args)]
    return shown + [keyword.value for keyword in call.keywords if keyword.arg in LABEL_KEYWORDS]


def _shown(texts):
    """The texts with a word in them (two letters outside the `{fields}`): "{value}%" or "n={count}" need none."""
    return [text for text in texts if text and re.search(r"[A-Za-z]{2}", re.sub(r"\{\w+\}", "", text))]


def runtime_strings(source):
    """The English strings a code cell shows through plots and checks: titles, axis labels, ticks, legend labels, hints.

    String literals only; an f-string becomes a template whose `{fields}` are named after its expressions
    (`f"block {layer}"` gives "block {layer}"), the form the runtime catalogue lists it in (its msgid). The keys of
    a dict a cell hands to a plotting helper are found by `series_strings`, over the whole notebook.
    """
    tree = _parse(source)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for value in _label_arguments(node):
            found += _literal_texts(value)
    return list(dict.fromkeys(found))


def _literal_texts(value):
    """The shown texts an argument node writes as literals: each item of a list or tuple, both sides of `a if c else
    b`, an f-string as its template."""
    items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
    items = [part for item in items for part in ((item.body, item.orelse) if isinstance(item, ast.IfExp) else (item,))]
    return _shown(string_template(item) for item in items)


# What a figure shows as text, by keyword (a check's `hint` and a progress display's `description` are translated by
# the code that shows them).
FIGURE_KEYWORDS = ("title", "xlabel", "ylabel", "label", "labels", "legend_title")


def _is_marked(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == MARK_KEYWORD


def unmarked_strings(source):
    """Figure text a code cell writes as a literal where it is drawn (a title, an axis or tick label, a legend entry,
    a key of the dict handed to a plotting helper) without marking it with `_()`. Nothing patches matplotlib, so
    such text is drawn as it is written, in English in every edition: the gettext rule is to mark it where it is
    written. Text that reaches a figure through a name is marked where the name is given it."""
    tree = _parse(source)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _is_marked(node):
            continue
        name = _call_name(node)
        values = [node.args[index] for index in LABEL_CALLS.get(name, ()) if index < len(node.args)]
        values += [keyword.value for keyword in node.keywords if keyword.arg in FIGURE_KEYWORDS]
        if name in SERIES_CALLS and node.args and isinstance(node.args[0], ast.Dict):
            series = node.args[0]
            values += [key for key in series.keys if key is not None]
            values += [key for value in series.values if isinstance(value, ast.Dict) for key in value.keys if key]
        for value in values:
            found += _literal_texts(value)
    return list(dict.fromkeys(found))


def unmarked_figure_text(root=None):
    """`{english: [where, ...]}` of `unmarked_strings` over the English notebooks under `root`."""
    found = {}
    for edition in SOURCE_EDITIONS:
        for path in english_notebooks(course.root_or(root), edition):
            for cell in exercises.read_notebook(path).cells:
                if cell.cell_type == "code":
                    for text in unmarked_strings(cell.source):
                        found.setdefault(text, []).append(f"{edition}/{path.name}, cell {cell.id}")
    return found


def series_strings(sources):
    """Figure text that reaches a plot through names, over the cells `sources` of one notebook.

    `runtime_strings` reads literals at the call; this follows them one or two steps: a label held by a loop
    variable (`for seconds, label in ((..., "key-value cache"), ...)`, also through `zip`, `enumerate` and a
    tuple named in another cell), and the keys of a dict handed to a plotting helper (`show_spread(effects)`
    with `effects = {...}`, a comprehension, or `effects[name] = ...` in a loop over literals). What flows
    through attributes or function results (`model.name`) is not followed.
    """
    names = _NotebookNames(sources)
    for _ in range(2):  # twice: a loop may read a dict whose keys a later cell's loop binds
        names.bind_loops()
    found = []
    for cell, node in names.cells:
        if isinstance(node, ast.Call):
            found += names.labels(node, cell) + names.series(node, cell)
    return list(dict.fromkeys(_shown(found)))


class _NotebookNames:
    """What the names of one notebook's code hold, as far as `series_strings` follows them: the last value assigned
    to each name (in any cell), and the strings each cell's loops bind to a name. `cells` holds `(cell, node)` for
    every node of every cell that parses."""

    def __init__(self, sources):
        trees = [tree for tree in map(_parse, sources) if tree is not None]
        self.cells = [(index, node) for index, tree in enumerate(trees) for node in ast.walk(tree)]
        self.assigned = {}  # name -> the last value assigned to it, in any cell
        for _, node in self.cells:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    pairs = [(target, node.value)]
                    if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):  # a, b = (...), (...)
                        pairs = list(zip(target.elts, node.value.elts))
                    for name, value in pairs:
                        if isinstance(name, ast.Name):
                            self.assigned[name.id] = value
        self.values = collections.defaultdict(list)  # (cell, name) -> the strings a loop of that cell binds to it

    def elements(self, iterable):
        """The items a `for` over `iterable` yields, as nodes, when they are written in the code."""
        followed = set()  # names = list(shares), shares a dict: unwrap list()/sorted() and names, each name once
        while True:
            if isinstance(iterable, ast.Call) and getattr(iterable.func, "id", "") in ("list", "sorted") and iterable.args:
                iterable = iterable.args[0]
            elif isinstance(iterable, ast.Name) and isinstance(self.assigned.get(iterable.id), (ast.Dict, ast.DictComp)):
                return [ast.Constant(text) for text in self.keys(iterable.id)]  # a dict yields its keys
            elif isinstance(iterable, ast.Name) and iterable.id in self.assigned and iterable.id not in followed:
                followed.add(iterable.id)
                iterable = self.assigned[iterable.id]
            else:
                break
        if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
            return list(iterable.elts)
        if isinstance(iterable, ast.Dict):
            return [key for key in iterable.keys if key is not None]
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
            if iterable.func.attr == "items" and isinstance(iterable.func.value, ast.Name):
                return [ast.Tuple(elts=[ast.Constant(text), None]) for text in self.keys(iterable.func.value.id)]
            if iterable.func.attr == "keys" and isinstance(iterable.func.value, ast.Name):
                return [ast.Constant(text) for text in self.keys(iterable.func.value.id)]
        if isinstance(iterable, ast.Call) and getattr(iterable.func, "id", "") in ("zip", "enumerate"):
            return self._rows(iterable)
        return []

    def _rows(self, call):
        """The tuples a `zip(...)` or `enumerate(...)` yields; a column not written in the code (axes) yields
        unknowns (None), and `enumerate`'s counter is one."""
        columns = [self.elements(arg) for arg in call.args]
        if call.func.id == "enumerate":
            columns = [[], *columns[:1]]
        rows = max(map(len, columns), default=0)
        columns = [column or [None] * rows for column in columns]
        return [ast.Tuple(elts=list(row)) for row in zip(*columns)]

    def texts(self, node, cell):
        """The strings `node` (in cell `cell`) may be: a literal, or a name a loop of that cell binds."""
        if isinstance(node, ast.Name):
            return self.values.get((cell, node.id), [])
        return [text for text in [string_template(node)] if text]

    def bind(self, target, item, cell):
        """Records the strings a loop of `cell` binds to the names of `target` when it yields `item`."""
        if isinstance(target, ast.Name) and item is not None:
            self.values[cell, target.id] += self.texts(item, cell)
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(item, (ast.Tuple, ast.List)):
            for part, value in zip(target.elts, item.elts):
                self.bind(part, value, cell)

    def bind_loops(self):
        """Binds the items of every `for` and comprehension of the notebook to its target names."""
        for cell, node in self.cells:
            if isinstance(node, (ast.For, ast.comprehension)):
                for item in self.elements(node.iter):
                    self.bind(node.target, item, cell)

    def keys(self, name):
        """The keys (strings) a dict named `name` gets anywhere in the notebook."""
        found = []
        for cell, node in self.cells:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.Dict):
                        found += self.dict_keys(node.value, cell)
                    elif isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.DictComp):
                        found += self.texts(node.value.key, cell)
                    elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                          and target.value.id == name):
                        found += self.texts(target.slice, cell)
        return found

    def dict_keys(self, node, cell):
        """The strings the keys of the dict literal `node` (in cell `cell`) may be."""
        return [text for key in node.keys if key is not None for text in self.texts(key, cell)]

    def labels(self, call, cell):
        """The strings that label arguments of `call` (`_label_arguments`) hold through names."""
        found = []
        for value in _label_arguments(call):
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") in ("list", "sorted") and value.args:
                found += [string_template(item) for item in self.elements(value)]  # set_xticks(..., list(sets))
            elif isinstance(value, ast.Name):  # a loop variable, or a name for a tuple or a dict's keys
                found += self.texts(value, cell) + [string_template(item) for item in self.elements(value)]
        return found

    def series(self, call, cell):
        """The keys of the dict a plotting helper (SERIES_CALLS) gets as its first argument: a name, a
        comprehension or a literal, whose values may be dicts too (plot_grouped_bars: {series: {group: value}})."""
        if _call_name(call) not in SERIES_CALLS or not call.args:
            return []
        first = call.args[0]
        if isinstance(first, ast.Name):
            return self.keys(first.id)
        if isinstance(first, ast.DictComp):
            return self.texts(first.key, cell)
        if isinstance(first, ast.Dict):
            return self.dict_keys(first, cell) + [text for value in first.values if isinstance(value, ast.Dict)
                                                  for text in self.dict_keys(value, cell)]
        return []


def untranslated_strings(root, lang):
    """`{english: [where, ...]}` of runtime strings in the English notebooks that the runtime catalogue does not
    translate (no entry without msgctxt, or an empty or fuzzy one); all of them where the course has none. The
    texts the notebooks hand to the course's checks (`checktexts.check_strings`) are runtime strings too."""
    path = runtime_catalogue(lang)
    listed = {entry.msgid for entry in read_catalogue(path) if not entry.msgctxt and entry.translated()} \
        if path is not None and path.is_file() else set()
    root = course.root_or(root)
    missing = {}
    for edition in SOURCE_EDITIONS:
        for path in english_notebooks(root, edition):
            nb = exercises.read_notebook(path)
            code = [cell for cell in nb.cells if cell.cell_type == "code"]
            for cell in code:
                for text in runtime_strings(cell.source):
                    if text not in listed:
                        missing.setdefault(text, []).append(f"{edition}/{path.name}, cell {cell.id}")
            for text in series_strings([cell.source for cell in code]):
                if text not in listed:
                    missing.setdefault(text, []).append(f"{edition}/{path.name}, through a name")
    for text, places in check_strings(root).items():
        if text not in listed:
            missing.setdefault(text, []).extend(places)
    return missing
