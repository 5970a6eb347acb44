"""The glossary of a translation (`docs/glossary.md`): its terms, and the variants a text uses instead of them.

`read_glossary` reads the glossary's tables (`| 中文 | English | 不用 | note |`); `glossary_problems` names each
variant a Chinese text uses, with the term to write instead. Code, math and URLs are not read (`typesetting.protected`).
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


def read_glossary(path):
    """The terms of `docs/glossary.md`: every row of its tables with a Chinese term, English and variants to avoid.

    A row is `| 中文 | English | 不用 | note |`; the third column lists variants separated by `、`.
    """
    path = Path(path)
    if not path.is_file():
        raise TranslationFormatError(f"{path}: the glossary is missing")
    terms = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 3 or set(cells[0]) <= set("-: ") or cells[0] == "中文":
            continue
        avoid = tuple(variant.strip(" `") for variant in re.split(r"[、,，]", cells[2]) if variant.strip(" `—-"))
        terms.append(Term(zh=cells[0].strip("`"), en=cells[1].strip("`"), avoid=avoid))
    return terms


def glossary_problems(text, terms):
    """One line per glossary variant found in `text` (Chinese prose), naming the term to use instead.

    Code, math and URLs are not read (`protected`), and a variant inside the term itself is the term: 单元 is
    the variant of 单元格, so 检查单元 counts and 检查单元格 does not.
    """
    shown = protected(text)
    problems = []
    for term in terms:
        covered = {index for match in re.finditer(re.escape(term.zh), shown)
                   for index in range(match.start(), match.end())}
        for variant in term.avoid:
            found = [match for match in re.finditer(re.escape(variant), shown) if variant
                     and not set(range(match.start(), match.end())) <= covered]
            if found:
                problems.append(f"uses {variant!r} ({len(found)}×, e.g. "
                                f"{snippet(text, found[0].start(), found[0].end(), 8)!r}); "
                                f"the glossary term for {term.en!r} is {term.zh!r}")
    return problems
