"""The comments of a solution notebook's code cells as translation units (`coursekit i18n update|build`).

A comment is never executed, so no run-time lookup can reach it: like a paragraph of markdown, it is translated
where the edition is built. Each block of whole-line comments that the learner's exercise copy shows (outside the
`### BEGIN SOLUTION` and `### BEGIN HIDDEN TESTS` regions; the region markers and nbval's `# NBVAL_...` directives
are code, not text) is one entry of the notebook's catalogue: msgctxt its cell id, msgid its text without the `# `
of each line (so a translator in Poedit or Weblate reads prose, and a line's own hanging indentation stays), and a
translator's note saying it is a code comment. The edition writes each translated line back as `# ` and the line,
at the block's indentation; the code lines stay the English bytes.

A docstring the learner's copy shows (of a function or class whose `def` lies outside those regions, such as a stub's
"(batch, seq) padding mask -> (batch, 1, seq, seq) boolean") is an entry the same way: its text as `inspect.cleandoc`
reads it, written back between the same triple quotes at the same indentation. A translation that could not stand
between them (a triple quote, a backslash) leaves the English.
"""

import ast
import inspect
import io
import tokenize

from coursekit.exercises.convention import BEGIN_HIDDEN, BEGIN_MARKER, END_HIDDEN, END_MARKER
from coursekit.exercises.notebooks import runnable_code

KIND = "comment of a code cell: names, numbers and code in it stay as they are"
_OPEN, _CLOSE = (BEGIN_MARKER, BEGIN_HIDDEN), (END_MARKER, END_HIDDEN)


def _comment_lines(source):
    """0-based numbers of the lines of `source` that are a comment and nothing else (tokenize's reading, so a `#`
    line inside a string is no comment); an empty set where the cell does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(runnable_code(source)).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return set()
    return {token.start[0] - 1 for token in tokens
            if token.type == tokenize.COMMENT and token.line.strip().startswith("#")}


def comment_blocks(source):
    """`[(first line, last line, indentation, text)]` of each translatable block of whole-line comments of a code
    cell's `source` (0-based line numbers, inclusive): see the module docstring for which."""
    lines, comments = source.split("\n"), _comment_lines(source)
    blocks, current, region = [], [], False
    for number, line in enumerate(lines):
        marker = line.strip()
        text = number in comments and not region and not marker.startswith(("###", "# NBVAL"))
        if text:
            current.append(number)
            continue
        if current:
            blocks.append(current)
            current = []
        region = True if marker in _OPEN else False if marker in _CLOSE else region
    if current:
        blocks.append(current)
    found = []
    for block in blocks:
        first = lines[block[0]]
        indent = first[: len(first) - len(first.lstrip())]
        texts = [lines[number].strip()[1:] for number in block]
        texts = [text[1:] if text.startswith(" ") else text for text in texts]
        found.append((block[0], block[-1], indent, "\n".join(texts)))
    return found


def _regions(lines):
    """0-based numbers of the lines inside a solution or hidden-test region, markers included."""
    inside, region = set(), False
    for number, line in enumerate(lines):
        marker = line.strip()
        if marker in _OPEN:
            region = True
        if region:
            inside.add(number)
        if marker in _CLOSE:
            region = False
    return inside


def docstring_blocks(source):
    """`[(first line, last line, indentation, text)]` of each docstring of a code cell's `source` that the learner's
    copy shows: a `def` or `class` outside the solution and hidden-test regions whose body opens with a string on
    lines of its own (0-based, inclusive; the text as `inspect.cleandoc` reads it)."""
    try:
        tree = ast.parse(runnable_code(source))
    except SyntaxError:
        return []
    lines, hidden, found = source.split("\n"), _regions(source.split("\n")), []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.lineno - 1 in hidden:
            continue
        first = node.body[0]
        if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)):
            continue
        start, end = first.lineno - 1, first.end_lineno - 1
        opening, closing = lines[start].lstrip(), lines[end].rstrip()
        if start in hidden or not (opening.startswith('"""') and closing.endswith('"""')):
            continue  # inside a region, or another quoting (''', r""", a string after code): left as written
        indent = lines[start][: len(lines[start]) - len(opening)]
        found.append((start, end, indent, inspect.cleandoc(first.value.value)))
    return sorted(found)


def comment_texts(source):
    """The msgids of a code cell's comment blocks and docstrings, in order, each once."""
    blocks = sorted(comment_blocks(source) + docstring_blocks(source))
    return list(dict.fromkeys(text for _, _, _, text in blocks))


def _docstring(indent, translation):
    lines = translation.strip("\n").split("\n")
    body = [lines[0]] + [f"{indent}{line}".rstrip() for line in lines[1:]]
    if len(lines) > 1:
        return [f'{indent}"""{body[0]}', *body[1:-1], f'{body[-1]}"""']
    return [f'{indent}"""{body[0]}"""']


def translate_comments(source, translations):
    """`source` with each comment block and docstring whose text `translations` (`{english: translation}`) holds
    written in its translation (a comment with `# ` before each line, a docstring between its triple quotes, at the
    block's indentation); every other line unchanged."""
    lines = source.split("\n")
    comments = [(block, False) for block in comment_blocks(source)]
    docstrings = [(block, True) for block in docstring_blocks(source)]
    for (first, last, indent, text), is_docstring in sorted(comments + docstrings, reverse=True):
        translation = translations.get(text)
        if not translation:
            continue
        if is_docstring:
            if '"""' in translation or "\\" in translation or translation.rstrip().endswith('"'):
                continue
            lines[first:last + 1] = _docstring(indent, translation)
        else:
            lines[first:last + 1] = [f"{indent}# {line}".rstrip() if line.strip() else f"{indent}#"
                                     for line in translation.strip("\n").split("\n")]
    return "\n".join(lines)
