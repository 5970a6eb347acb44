"""Every section the course cites is a section of the published BERT paper (Devlin et al. 2019, NAACL,
numbered as arXiv v2).

The course's convention (docs/course-notes.md, "Section numbers"): "§N" always means the paper. The study
guide (`shared/guide/bert_study_guide.zh.txt`) numbers its sections its own way (its "§5.5" is the
paper's §5.1, its "appendix A.4.6" the paper's C.2); where the course means the guide it says so in words
("the guide's section 7.5"), never with a bare "§". This test reads the sources of every English notebook
under `notebooks/` and `solutions/` (markdown and code cells) and the Chinese text of `i18n/zh/`, and fails,
naming the file, the cell and the text, on

- a "§" followed by anything that is not a section of the paper (ranges such as "§5.1-5.3" and "§3's text" are
  fine), and
- an appendix-style number that the paper does not have ("A.4.5", "appendix A.4.6").

It can only check that a number exists in the paper, not that it is the right section for the claim.
"""

import json
import re

import pytest

from coursekit import i18n
from tools.repo_paths import REPO_ROOT as REPO

# The sections of the published paper (arXiv v2 = NAACL 2019), appendices included.
SECTIONS = frozenset({
    "1", "2", "2.1", "2.2", "2.3", "3", "3.1", "3.2", "4", "4.1", "4.2", "4.3", "4.4",
    "5", "5.1", "5.2", "5.3", "6", "A", "A.1", "A.2", "A.3", "A.4", "A.5", "B", "B.1", "C", "C.1", "C.2",
})
NUMBER = r"(?:[A-C](?:\.\d+)+|[A-C](?![\w])|\d+(?:\.\d+)*)"
# "§5.1", "§ 3", "§3's", "§C.2", "§5.1-5.3", "§4.1–4.4"; a "§" with no number after it is no citation.
SECTION_SIGN = re.compile(rf"§\s*(?P<first>{NUMBER})(?:\s*[-–]\s*(?P<last>{NUMBER}))?")
# Appendix numbers written without "§": "A.2", "appendix C.1", "A.4.6"; not inside a longer name (np.A.1).
APPENDIX = re.compile(r"(?<![\w.§])(?P<number>[A-C](?:\.\d+)+)(?![\w])")

def bad_citation_matches(text):
    """`(position, citation)` of each citation in `text` that names no section of the paper, in order."""
    found = []
    for match in SECTION_SIGN.finditer(text):
        numbers = [match.group("first")] + ([match.group("last")] if match.group("last") else [])
        if any(number not in SECTIONS for number in numbers):
            found.append((match.start(), match.group(0)))
    for match in APPENDIX.finditer(text):
        if match.group("number") not in SECTIONS:
            found.append((match.start(), match.group(0)))
    return sorted(found)


def bad_citations(text):
    """The citations in `text` that name no section of the paper, in order (the text as written)."""
    return [citation for _, citation in bad_citation_matches(text)]


def english_cells():
    for edition in ("notebooks", "solutions"):
        for path in sorted((REPO / edition).glob("*.ipynb")):
            nb = json.loads(path.read_text(encoding="utf-8"))
            for index, cell in enumerate(nb["cells"]):
                yield path.relative_to(REPO).as_posix(), index, cell.get("id"), "".join(cell["source"])


def chinese_cells():
    for path in sorted((REPO / "i18n" / "zh").glob("*/*.po")):
        for cell_id, entry in i18n.read_translations(path).items():
            yield path.relative_to(REPO).as_posix(), cell_id, entry["zh"]


def _context(text, start, citation):
    return text[max(0, start - 60): start + len(citation) + 40].replace("\n", " ")


@pytest.mark.parametrize("text, expected", [
    # the old text of notebook 00, in the guide's numbering
    ("the introduction (§1) → masked LM (§3.3) → next-sentence prediction (§3.4) → the ablations (§5.5)",
     ["§3.3", "§3.4", "§5.5"]),
    ("chapter 2 (architecture and input, §4.1-4.2), 5 (recipe and fine-tuning, §4.5-4.6)", ["§4.5-4.6"]),
    ("appendix A.4.5: training-steps ablation; Table 8, §C.2", ["A.4.5"]),
    ("mentioned in the guide's §7.5", ["§7.5"]),
    ("(guide §7.5)", ["§7.5"]),
    # the paper's numbering, as the course writes it now
    ("§1, §3, §3.1, §4.1, §5.1, §5.2, A.2, A.4, C.1, C.2", []),
    ("stated in §3's text; the ablations §5.1-5.3 and §4.1–4.4; appendix C.2 (Table 8), §C.2, §A.1", []),
    ("the guide's section 7.5, guide ch. 3, its section 3.3", []),
    ('EVIDENCE = re.compile(r"§\\s*\\d|\\b[A-C]\\.\\d")', []),
    ("np.A.1 and version v1.A.4.5 are no citations", []),
])
def test_bad_citations(text, expected):
    assert bad_citations(text) == expected


def test_english_notebooks_cite_the_papers_sections():
    problems = []
    for path, index, cell_id, text in english_cells():
        for start, citation in bad_citation_matches(text):
            context = _context(text, start, citation)
            problems.append(f"{path}, cell {index} ({cell_id}): {citation!r} in ...{context}...")
    advice = "write the paper's section, or name the guide in words: \"the guide's section 7.5\""
    assert not problems, f"citations of sections the paper does not have ({advice}):\n" + "\n".join(problems)


def test_chinese_text_cites_the_papers_sections():
    problems = [f"{path}, cell {cell_id}: {citation!r} in ...{_context(text, start, citation)}..."
                for path, cell_id, text in chinese_cells() for start, citation in bad_citation_matches(text)]
    assert not problems, "Chinese text citing sections the paper does not have:\n" + "\n".join(problems)
