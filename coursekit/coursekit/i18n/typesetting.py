"""The typesetting of a translation's Chinese Markdown: the rules it keeps, and the joining of its wrapped lines.

`typesetting_problems` lists each breach of the course's rules (spaces against full-width punctuation, quotes,
headings, the 【解读者观点】 marker, emphasis, and marks such as 第 05 章, 3-5 or a half-width comma beside Chinese),
quoting the text; `unwrap_cjk` joins the lines a translator wrapped, so that no line break shows as a gap between
two Chinese characters. `protected` (code, math, links blanked) and `snippet` are shared with the glossary lint.
"""

import re

# Full-width punctuation of Chinese text (no space on either side of it, `typesetting_problems`), then the
# two-character dash and ellipsis, which follow the same rule.
FULL_WIDTH_MARKS = "，。、；：？！“”‘’（）《》〈〉【】「」『』"
DASH_AND_ELLIPSIS = ("——", "……")
# The one form of the marker for our own reading ("Our reading:" in the English), as in the study guide.
OUR_READING = "【解读者观点】"
OUR_READING_VARIANTS = ("我们的解读", "我们的看法", "我们的观点", "笔者认为", "笔者观点", "解读者的观点", "解读者看法")


BLOCK_START = re.compile(r"^\s*([-*+] |\d+[.)] |#|\||<|>|```)")


def unwrap_cjk(text):
    """Joins the lines of each Markdown paragraph and list item, so that no line break falls between two Chinese
    characters.

    A line break inside a paragraph is shown as a space, and a space between two Chinese characters is a visible
    gap in most browsers; translators may still wrap their text. Fenced and indented code, tables, HTML lines and
    headings are left as they are. Example: "第一行\n第二行" becomes "第一行第二行", "the `x`\n值" becomes "the `x` 值",
    and "结束。\nBERT" becomes "结束。BERT" (no space against full-width punctuation, `typesetting_problems`).
    """
    output, fenced = [], False
    for block in text.split("\n\n"):
        lines = block.split("\n")
        if fenced or lines[0].startswith(("    ", "\t", "|")) or lines[0].lstrip().startswith("```") \
                or block.count("```") % 2:  # a fence may be indented, inside a list item
            fenced = fenced != bool(block.count("```") % 2)
            output.append(block)
            continue
        items = []
        for line in lines:
            if not items or BLOCK_START.match(line) or items[-1].lstrip().startswith(("#", "|", "<")):
                items.append(line)
            else:
                previous, following = items[-1].rstrip(), line.strip()
                wide_pair = _is_wide(previous[-1:]) and _is_wide(following[:1])
                against_punctuation = previous[-1:] in FULL_WIDTH_MARKS or following[:1] in FULL_WIDTH_MARKS
                joiner = "" if wide_pair or against_punctuation else " "
                items[-1] = previous + joiner + following
        output.append("\n".join(items))
    return "\n\n".join(output)


def _is_wide(char):
    return bool(char) and ord(char) > 0x2E7F  # CJK characters and full-width punctuation


def protected(text):
    """`text` with what the typesetting rules must not read blanked out, offsets kept: fenced code, inline code,
    math ($...$, $$...$$), HTML tags, link targets and bare URLs become runs of U+E000 (a neutral character)."""
    def blank(match):
        return "".join("\n" if char == "\n" else "\ue000" for char in match.group(0))

    for pattern in (r"(?ms)^\s*```.*?^\s*```[^\n]*$", r"(`+)(?:(?!\1).)+?\1", r"\$\$.+?\$\$", r"(?<![\\$])\$[^$\n]+?\$",
                    r"<[^>\n]+>", r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)", r"https?://[^\s)>\]]+"):
        text = re.sub(pattern, blank, text, flags=re.S)
    return text


def snippet(text, start, end, margin=12):
    return text[max(start - margin, 0):end + margin].replace("\n", "⏎")


_MARKS = "[" + re.escape(FULL_WIDTH_MARKS) + "]"
_PUNCTUATION_AHEAD = "(?=" + _MARKS + "|" + "|".join(DASH_AND_ELLIPSIS) + ")"
_PUNCTUATION_BEHIND = "(?:(?<=" + _MARKS + ")|" + "|".join(f"(?<={mark})" for mark in DASH_AND_ELLIPSIS) + ")"
# A line's Markdown prefix (indent, list marker, quote, heading hashes): its spaces are not typesetting.
_LINE_PREFIX = re.compile(r"^[ \t]*(?:(?:[-*+>]|\d+[.)]|#{1,6})[ \t]+)*")
# Spaces beside a table's `|` and those of a heading's " · " separator are layout, not typesetting.
_SPACE_BEFORE = re.compile(r"(?<=[^\s|·])[ \t\u3000]+" + _PUNCTUATION_AHEAD)
_SPACE_AFTER = re.compile(_PUNCTUATION_BEHIND + r"[ \t\u3000]+(?=[^\s|·])")
_CJK_TEXT = re.compile(r"[\u3400-\u9fff]")
_CJK_OR_MARK = re.compile(r"[\u3400-\u9fff" + re.escape(FULL_WIDTH_MARKS) + "]")


def typesetting_problems(text):
    """One line per breach of the Chinese typesetting rules in `text` (Chinese Markdown), quoting the text.

    1. spacing: no space (nor U+3000) on either side of full-width punctuation (，。：“”（） ...), ——, or …… ;
       the spaces of a line's Markdown prefix (list marker, quote, heading) and beside a table's `|` are layout;
    2. quotes: Chinese text is quoted with “ ”, never with straight quotes ("..." or '...') or 「」『』,
       and a text's “ and ” pair up;
    3. headings: one form, `#` to `######`, one space, the title, with no closing hashes, no final 。：；，、,
       no emphasis around the whole title, " · " (a space each side) as the separator; no underlined headings;
    4. our reading: the marker is written 【解读者观点】, with no colon after it; other forms and wordings
       (解读者观点 without its brackets, 我们的看法, ...) are not used;
    5. emphasis: no space just inside `*` or `**`, and none between emphasised Chinese and the Chinese text or
       punctuation beside it (emphasised Latin text or digits keep the usual space from Chinese);
    6. marks (`MARK_RULES`, on lines with Chinese in them): 第 5 章 (not 第 05 章), zero-based indices as labels
       (层 0, not 第 0 层), 3–5 with the en dash (not 3-5), no 顿号 between quoted items, no half-width , ; : ? ! ( )
       beside Chinese, no full-width letters, digits or operators (＋), no straight double quotes.

    Code (fenced and inline), math, HTML tags, link targets and URLs are not read (`protected`).
    """
    shown = protected(text)
    problems = []
    offset = 0
    lines = shown.split("\n")
    starts = []
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    for number, line in enumerate(lines):
        start = starts[number]
        prefix = _LINE_PREFIX.match(line).end()
        for pattern, side in ((_SPACE_BEFORE, "before"), (_SPACE_AFTER, "after")):
            for match in pattern.finditer(line, prefix):
                problems.append(f"a space {side} full-width punctuation: "
                                f"{snippet(text, start + match.start(), start + match.end())!r}")
        problems += _quote_problems(text, line, start)
        problems += _mark_problems(text, line, start)
        problems += _heading_problems(text, lines, number, start)
        problems += _emphasis_problems(text, line, start, prefix)
    problems += _our_reading_problems(text, shown)
    if shown.count("“") != shown.count("”"):
        problems.append(f"the quotes “ and ” do not pair up ({shown.count('“')} “, {shown.count('”')} ”)")
    return problems


# Marks of Chinese text the course writes one way (`_mark_problems`): each pattern, read on a line that has
# Chinese characters in it (outside code, math and URLs), and what to write instead.
_CJK = "\u3400-\u9fff"
# , ; : ? ! ( ) written half-width against Chinese text (an image's `![` is not a "!"); also read in the
# Chinese edition's printed lines (tests/course/test_notebook_evidence.py).
HALF_WIDTH_BESIDE_CHINESE = (rf"[{_CJK}”’）》][ \t]*(?:[,;:?]|!(?!\[))|[,;:?!][ \t]*[{_CJK}“‘（《]|[{_CJK}][()]"
                             rf"|[()][{_CJK}]")
MARK_RULES = (
    (r"第\s*\[?0\d", "a zero-padded chapter number (write 第 5 章, not 第 05 章)"),
    (r"第\s*0(?![\d.])(?!\s*章)", "a zero-based index read as an ordinal (write 层 0, 头 2, 位置 0; 第 0 章 is a title)"),
    (r"(?<![A-Za-z0-9._-])\d+(?:\.\d+)*%?-\d", "a hyphen in a number range (write 3–5, with the en dash –)"),
    (r"[”’》]、[“‘《]", "a 顿号 between quoted items or titles (GB/T 15834: none; write “甲”“乙”)"),
    (HALF_WIDTH_BESIDE_CHINESE, "half-width punctuation beside Chinese (use ，；：？！（）)"),
    (r"[＋－＝＜＞＃＄％＆＊／＼＾＿｜＠０-９Ａ-Ｚａ-ｚ]", "a full-width letter, digit or operator (write + = % 0-9 A-Z)"),
)


def _mark_problems(text, line, start):
    """Breaches of `MARK_RULES` on one line (blanked as `protected` does), quoting the text around each."""
    if not _CJK_TEXT.search(line):
        return []
    return [f"{description}: {snippet(text, start + match.start(), start + match.end(), 8)!r}"
            for pattern, description in MARK_RULES for match in re.finditer(pattern, line)]


def _quote_problems(text, line, start):
    problems = []
    for pattern in (r'(?<![A-Za-z0-9])"([^"]*)"', r"(?<![A-Za-z0-9])'([^']*)'(?![A-Za-z0-9])"):
        for match in re.finditer(pattern, line):
            # A double-quoted text is Chinese typesetting when the line is Chinese, whatever it quotes.
            if _CJK_TEXT.search(match.group(1)) or match.group(0)[0] == '"' and _CJK_TEXT.search(line):
                problems.append(f"Chinese text in straight quotes (use “”): "
                                f"{text[start + match.start():start + match.end()]!r}")
    for match in re.finditer(r"[「」『』]", line):
        problems.append(f"corner quotes (use “”): {snippet(text, start + match.start(), start + match.end())!r}")
    return problems


def _heading_problems(text, lines, number, start):
    line = lines[number]
    original = text[start:start + len(line)]
    if re.fullmatch(r" {0,3}(=+|-+)[ \t]*", line) and number > 0 and lines[number - 1].strip() and \
            not re.match(r"\s*([-*+>#|]|\d+[.)])", lines[number - 1]):
        return [f"an underlined heading (write it as `## title`): {lines[number - 1].strip()!r}"]
    if not re.match(r" {0,3}#+(\s|$)", line) and not re.match(r" {0,3}#{1,6}[^\s#]", line):
        return []
    problems = []
    rules = ((r" {0,3}#{1,6} [^\s]", "one space after the hashes"),
             (r"(?!.*\s#+\s*$)", "no closing hashes"),
             (r"(?!.*[。：；，、:]\s*$)", "no final 。：；，、"),
             (r"(?! {0,3}#+ \*\*?[^*]+\*\*?\s*$)", "no emphasis around the whole title"),
             (r"(?!.*(?:[^ ]·|·[^ ]|[・•]))", "\" · \" (a space each side) between a label and its title"))
    for rule, description in rules:
        if not re.match(rule, line):
            problems.append(f"a heading not in the course's form ({description}): {original.strip()!r}")
    return problems


def _emphasis_problems(text, line, start, prefix):
    problems = []
    for match in re.finditer(r"(?<![*\\])(\*\*?)(?!\*)(.+?)(?<![*\\])\1(?!\*)", line[prefix:]):
        marker, inner = match.group(1), match.group(2)
        begin, end = start + prefix + match.start(), start + prefix + match.end()
        quoted = text[begin:end]
        inside = (inner[:1].isspace(), inner[-1:].isspace())
        if inside[0] != inside[1] or all(inside) and _CJK_TEXT.search(inner):
            problems.append(f"a space inside the emphasis markers: {quoted!r}")
            continue
        if any(inside):
            continue  # "2 * 3 * 4": not emphasis
        before = line[:prefix + match.start()]
        after = line[prefix + match.end():]
        # Chinese against Chinese only: a space between Chinese and Latin text or digits is the course's habit.
        spaced_before = before.endswith(" ") and len(before.rstrip()) > prefix and \
            _CJK_OR_MARK.match(before.rstrip()[-1]) and _CJK_TEXT.match(inner[0])
        spaced_after = after.startswith(" ") and after.strip() and _CJK_OR_MARK.match(after.lstrip()[0]) and \
            _CJK_TEXT.match(inner[-1])
        if spaced_before or spaced_after:
            problems.append(f"a space between {marker}emphasis{marker} and the Chinese text beside it: "
                            f"{snippet(text, begin - (2 if spaced_before else 0), end + (2 if spaced_after else 0), 2)!r}")
    return problems


def _our_reading_problems(text, shown):
    problems = []
    for match in re.finditer("解读者观点", shown):
        if shown[match.start() - 1:match.start()] != "【" or shown[match.end():match.end() + 1] != "】":
            problems.append(f"the 'our reading' marker is written {OUR_READING}: "
                            f"{snippet(text, match.start() - 1, match.end() + 1, 4)!r}")
        elif re.match(r"\s*[：:]", shown[match.end() + 1:]):
            problems.append(f"no colon after {OUR_READING}: {snippet(text, match.start() - 1, match.end() + 3, 4)!r}")
    for variant in OUR_READING_VARIANTS:
        for match in re.finditer(variant, shown):
            problems.append(f"{variant!r} marks our reading; write {OUR_READING}: "
                            f"{snippet(text, match.start(), match.end(), 6)!r}")
    return problems
