"""The glossary of a translation (`docs/glossary.md`): its terms, and the variants a text uses instead of them.

`read_glossary` reads the glossary's tables (`| 中文 | English | 不用 | note |`) and its table of allowed uses
(`| 允许 | 含 | note |`: a phrase in which a variant is right, such as 文本摘要 or the gloss 译作“掩蔽语言模型”);
`glossary_problems` names each variant a Chinese text uses, with the term to write instead. Code, math, URLs and
English quotations (the paper's words, kept in English) are not read.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from coursekit.i18n.catalogues import TranslationFormatError
from coursekit.i18n.typesetting import protected, snippet

GLOSSARY = Path("docs") / "glossary.md"


@dataclass
class Term:
    """One glossary row: the Chinese term, its English form, and variants the course does not use."""

    zh: str
    en: str
    avoid: tuple = ()
    allowed: tuple = ()  # phrases that hold a variant and are right (the glossary's table of allowed uses)


def read_glossary(path):
    """The terms of `docs/glossary.md`: every row of its term tables with a Chinese term, English and variants to
    avoid, each with the allowed phrases that hold one of its variants.

    A term row is `| 中文 | English | 不用 | note |` under a header whose first cell is 中文; the third column lists
    variants separated by `、`. A row of the table whose header starts `| 允许 | 含 |` is a phrase in which the
    variant of its second column is right: 文本摘要 holds 摘要 and names the summarization task.
    """
    path = Path(path)
    if not path.is_file():
        raise TranslationFormatError(f"{path}: the glossary is missing")
    terms, allowed, header = [], [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells[0]
            continue
        if len(cells) < 3 or set(cells[0]) <= set("-: "):
            continue
        if header == "允许":
            allowed.append((cells[0].strip("`"), cells[1].strip("`")))
        elif header == "中文":
            avoid = tuple(variant.strip(" `") for variant in re.split(r"[、,，]", cells[2]) if variant.strip(" `—-"))
            terms.append(Term(zh=cells[0].strip("`"), en=cells[1].strip("`"), avoid=avoid))
    for term in terms:
        term.allowed = tuple(phrase for phrase, variant in allowed if variant in term.avoid and variant in phrase)
    return terms


# A quotation in “” with no Chinese in it: the paper's words, which the course keeps in English ("approximately 40
# epochs over the 3.3 billion word corpus"), so the English variants of the glossary (epoch, Wikipedia) are not read.
ENGLISH_QUOTE = re.compile(r"“[^“”\u2e80-\u9fff\uff00-\uffef]*”")
# A field of a runtime catalogue's template ("第 {epoch} 轮"): a name the code fills in, not a word of the text.
FORMAT_FIELD = re.compile(r"\{\w+(?:![rsa])?(?::[^{}]*)?\}")


def glossary_problems(text, terms):
    """One line per glossary variant found in `text` (Chinese prose), naming the term to use instead.

    Code, math, URLs and English quotations are not read (`protected`, `ENGLISH_QUOTE`), and a variant inside the
    term itself or inside one of its allowed phrases is no variant: 单元 is the variant of 单元格, so 检查单元
    counts and 检查单元格 does not; 摘要 counts in “读取的摘要” and not in 文本摘要.
    """
    shown = protected(text)
    for unread in (ENGLISH_QUOTE, FORMAT_FIELD):
        shown = unread.sub(lambda match: "\ue000" * len(match.group(0)), shown)
    problems = []
    for term in terms:
        covered = {index for written in (term.zh, *term.allowed) for match in re.finditer(re.escape(written), shown)
                   for index in range(match.start(), match.end())}
        for variant in term.avoid:
            found = [match for match in re.finditer(re.escape(variant), shown) if variant
                     and not set(range(match.start(), match.end())) <= covered]
            if found:
                problems.append(f"uses {variant!r} ({len(found)}×, e.g. "
                                f"{snippet(text, found[0].start(), found[0].end(), 8)!r}); "
                                f"the glossary term for {term.en!r} is {term.zh!r}")
    return problems
