"""A markdown cell cut into the units a translator translates: paragraphs, list items, tables, headings, fences.

`split_blocks` reads the cell with markdown-it-py (the CommonMark parser, with GFM tables), so a `#` inside a
fence or a blank line inside a list item is read as a Markdown renderer reads it, not by a regular expression of
ours. Each top-level block is one unit, except lists, whose items are one unit each. The text between units (the
blank lines) is kept, so `join_blocks(split_blocks(text))` gives `text` back byte for byte; a translated cell is
the translated units joined by the English cell's own separators.
"""

from dataclasses import dataclass

from markdown_it import MarkdownIt

_PARSER = MarkdownIt("commonmark").enable("table")
_LISTS = ("bullet_list_open", "ordered_list_open")


@dataclass(frozen=True)
class Block:
    text: str  # the unit's own lines, without the newline after its last line
    kind: str  # "heading", "paragraph", "list_item", "table", "fence", "code_block", "blockquote", "html_block", ...
    info: str = ""  # a fence's info string ("python")


@dataclass(frozen=True)
class Blocks:
    """A cell as units and the text around them: `separators[0]` before the first unit, `separators[i]` after the
    i-th unit (so one more separator than units)."""

    blocks: tuple
    separators: tuple

    @property
    def texts(self):
        return [block.text for block in self.blocks]

    def join(self, texts=None):
        """The cell with `texts` (default: the units' own) in the units' places."""
        texts = self.texts if texts is None else list(texts)
        if len(texts) != len(self.blocks):
            raise ValueError(f"{len(texts)} texts for {len(self.blocks)} blocks")
        return self.separators[0] + "".join(text + separator for text, separator in zip(texts, self.separators[1:]))


def _ranges(tokens):
    """`(first line, end line, kind, info)` of each unit: top-level blocks, and the items of top-level lists."""
    found = []
    for index, token in enumerate(tokens):
        if token.map is None or token.nesting == -1:
            continue
        if token.level == 0 and token.type not in _LISTS:
            found.append((*token.map, token.type.removesuffix("_open"), token.info.strip()))
        elif token.level == 1 and token.type == "list_item_open" and _in_top_list(tokens, index):
            found.append((*token.map, "list_item", ""))
    return found


def _in_top_list(tokens, index):
    depth = 0
    for token in reversed(tokens[:index]):
        depth -= token.nesting
        if depth < 0:
            return token.type in _LISTS and token.level == 0
    return False


def split_blocks(text):
    """The `Blocks` of a markdown cell's source. Lines no block claims (a link reference definition) that hold
    text are a unit of their own ("other"); blank lines go to the separators."""
    lines = text.splitlines(keepends=True)
    spans = []
    covered = 0
    for start, end, kind, info in sorted(_ranges(_PARSER.parse(text))):
        start = max(start, covered)
        while end > start and not lines[end - 1].strip():
            end -= 1  # a loose list item's map runs over the blank line after it
        if end <= start:
            continue
        if any(line.strip() for line in lines[covered:start]):
            spans.append((covered, start, "other", ""))
        spans.append((start, end, kind, info))
        covered = end
    if any(line.strip() for line in lines[covered:]):
        spans.append((covered, len(lines), "other", ""))
    if not spans:
        return Blocks((), (text,))
    blocks, separators, position, pending = [], [], 0, ""
    for start, end, kind, info in spans:
        separators.append(pending + "".join(lines[position:start]))
        body = "".join(lines[start:end])
        pending = "\n" if body.endswith("\n") else ""
        blocks.append(Block(body[:len(body) - len(pending)], kind, info))
        position = end
    separators.append(pending + "".join(lines[position:]))
    return Blocks(tuple(blocks), tuple(separators))
