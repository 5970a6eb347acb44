"""The comments of a solution notebook's code cells as translation units (`coursekit i18n update|build`).

A comment is never executed, so no run-time lookup can reach it: like a paragraph of markdown, it is translated
where the edition is built. Each block of whole-line comments that the learner's exercise copy shows (outside the
`### BEGIN SOLUTION` and `### BEGIN HIDDEN TESTS` regions; the region markers and nbval's `# NBVAL_...` directives
are code, not text) is one entry of the notebook's catalogue: msgctxt its cell id, msgid its text without the `# `
of each line (so a translator in Poedit or Weblate reads prose, and a line's own hanging indentation stays), and a
translator's note saying it is a code comment. The edition writes each translated line back as `# ` and the line,
at the block's indentation; the code lines stay the English bytes.
"""

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


def comment_texts(source):
    """The msgids of a code cell's comment blocks, in order, each once."""
    return list(dict.fromkeys(text for _, _, _, text in comment_blocks(source)))


def translate_comments(source, translations):
    """`source` with each comment block whose text `translations` (`{english: translation}`) holds written in its
    translation (`# ` before each line, at the block's indentation); every other line unchanged."""
    lines = source.split("\n")
    for first, last, indent, text in reversed(comment_blocks(source)):
        translation = translations.get(text)
        if translation:
            lines[first:last + 1] = [f"{indent}# {line}".rstrip() if line.strip() else f"{indent}#"
                                     for line in translation.strip("\n").split("\n")]
    return "\n".join(lines)
