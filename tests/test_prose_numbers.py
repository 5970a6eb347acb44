"""Every number the chapters' prose quotes from the course's own runs agrees with the output it describes
(issue 24, item 2; the rule is in the docstring of `bertlib.course.prose`).

(a) the checker on small known-bad and known-good notebooks, so a checker that cannot fail shows;
(b) every stored chapter notebook, English and Chinese: expected to fail until the second edition lands
    (today's notebooks hold the mismatches issue 24 lists); strict, so a chapter that becomes clean must leave
    the list;
(c) excerpts of the notebooks as stored when issue 24 was filed (commit 9196b83), with the mismatches the
    issue and its review name: the checker must report each one, and pass the corrected sentence.
"""

import json
from pathlib import Path

import pytest

from bertlib.course import prose

REPO = Path(__file__).resolve().parents[1]
ENGLISH = sorted((REPO / "notebooks").glob("0*.ipynb"))
CHINESE = sorted((REPO / "notebooks" / "zh").glob("0*.ipynb"))


def write_notebook(folder, name, cells):
    """A stored notebook from ("md", text) and ("code", source, printed) cells."""
    notebook = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    for index, cell in enumerate(cells):
        stored = {"id": f"c{index}", "metadata": {}, "source": cell[1]}
        if cell[0] == "md":
            stored["cell_type"] = "markdown"
        else:
            outputs = [{"output_type": "stream", "name": "stdout", "text": cell[2]}] if len(cell) > 2 else []
            stored.update(cell_type="code", outputs=outputs, execution_count=index)
        notebook["cells"].append(stored)
    path = Path(folder) / name
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


def findings_of(tmp_path, cells, name="01_test.ipynb"):
    return prose.check_notebook(write_notebook(tmp_path, name, cells))


def quoted(findings):
    return [(finding.kind, finding.number) for finding in findings]


# ---------------------------------------------------------------------------------------------------------
# (a) the pieces, and the checker on small notebooks

@pytest.mark.parametrize("text, expected", [
    ("12% at 512 and 10.0%", [("12%", 12.0, "percent"), ("512", 512.0, "plain"), ("10.0%", 10.0, "percent")]),
    ("1.28 × 10¹¹ tokens, 8.5e19 FLOPs, 10¹⁵ FLOP/s",
     [("1.28 × 10¹¹", 1.28e11, "plain"), ("8.5e19", 8.5e19, "plain"), ("10¹⁵", 1e15, "plain")]),
    ("22.7M parameters, 392k examples, 3.3 billion words, 100 万步",
     [("22.7M", 22.7e6, "plain"), ("392k", 392e3, "plain"), ("3.3 billion", 3.3e9, "plain"),
      ("100 万", 1e6, "plain")]),
    ("x9.4, 4.4x and 16×; 10-40% of peak",
     [("x9.4", 9.4, "times"), ("4.4x", 4.4, "times"), ("16×", 16.0, "times"), ("10", 10.0, "percent"),
      ("40%", 40.0, "percent")]),
    ("keras 3.15.1, L6/H384, SQuAD v2.0, 4H, w00, e.g. 1,2,3", []),
])
def test_numbers_are_read_with_their_value_and_kind(text, expected):
    assert [(number.text, number.value, number.kind) for number in prose.parse_numbers(text)] == expected


def test_quantities_leave_out_citations_labels_and_small_counts():
    numbers = prose.quantities("§5.1 (Table 5): QNLI drops 3.5 points over 2 layers in chapter 04, seed 1, 2019.")
    assert [number.text for number in numbers] == ["3.5"]


def test_the_stated_rounding_is_the_last_written_digit():
    texts = ("12%", "10.0", "about 3,900", "3,900")
    twelve, ten, hedged, exact = (prose.parse_numbers(text)[0] for text in texts)
    assert not twelve.agrees_with(10.0) and twelve.agrees_with(11.6) and not twelve.agrees_with(12.6)
    assert ten.agrees_with(10.04) and not ten.agrees_with(10.06)
    assert hedged.agrees_with(3888) and not hedged.agrees_with(3840)  # about 3,900: to the hundred
    assert not exact.agrees_with(3888)
    assert prose.parse_numbers("约为 3,900 对")[0].agrees_with(3888)  # the Chinese hedge too


@pytest.mark.parametrize("text, holds", [
    ("512 × 15% × 80% = 61.44", True), ("(512/128)² = 16", True), ("15% x 10% = 1.5%", True),
    ("12·6·384² ≈ 10.6M", True), ("512 / 0.28 ≈ 1,800", True), ("256 × 512 = 131,072", True),
    ("88.5 − 77.8 = 10.1", False), ("512 × 15% × 80% = 61.6", False), ("2 × 3 = 7", False),
])
def test_written_out_arithmetic_is_recomputed(text, holds):
    assert [ok for _, ok in prose.arithmetic(text)] == [holds]


ATTENTION_SHARE = ("code", "for n in (128, 512):\n    print(f'n={n}: attention share {share(n):.1%}')",
                   "n=128: attention share 2.7%\nn=512: attention share 10.0%\n")


def test_a_quote_that_disagrees_with_its_output_is_a_mismatch_naming_the_printed_value(tmp_path):
    found = findings_of(tmp_path, [("md", "## Cost"), ATTENTION_SHARE,
                                   ("md", "Attention is 3% of the cost at 128 tokens and 12% at 512.")])
    assert quoted(found) == [("mismatch", "12%")]
    assert found[0].nearest == "10.0% (cell 1)" and found[0].cell == 2 and "12% at 512" in found[0].sentence
    assert not findings_of(tmp_path, [("md", "## Cost"), ATTENTION_SHARE,
                                      ("md", "Attention is 3% of the cost at 128 tokens and 10% at 512.")])


def test_a_result_quoted_from_another_section_needs_a_stated_window(tmp_path):
    cells = [("md", "## Cost"), ATTENTION_SHARE, ("md", "## Later"), ("code", "x = 1"),
             ("md", "Attention was 10% of the cost at 512 tokens.")]
    assert quoted(findings_of(tmp_path, cells)) == [("unsourced", "10%")]
    cells[-1] = ("md", "Attention was 10% of the cost at 512 tokens (printed above).")
    assert not findings_of(tmp_path, cells)
    # A section without code of its own (claim vs fact, the self-check answers) reads every code cell.
    assert not findings_of(tmp_path, cells[:3] + [("md", "Attention: 10% of the cost at 512 tokens.")])


def test_citations_declarations_and_settings_back_a_number(tmp_path):
    code = ("code", "STEPS = 1_500\nPEAK = 45e12  # 45 TFLOP/s per chip, our assumption\nrate = 0.15")
    uncited = ("md", "Without NSP SQuAD F1 falls to 87.9. A day has 86,400 s.")
    assert quoted(findings_of(tmp_path, [("md", "## A"), code, uncited])) == [("unsourced", "87.9"),
                                                                              ("unsourced", "86,400")]
    cited = ("md", "Without NSP SQuAD F1 falls to 87.9 (§5.1, Table 5). A day has 86,400 s.\n"
                   "<!-- constants: 86,400 seconds in a day -->\n"
                   "Later the same 87.9 again, without its citation.")
    assert not findings_of(tmp_path, [("md", "## A"), code, cited])
    # Settings the code states: literals, comments, a percentage as its fraction.
    settings = ("md", "We train 1,500 steps at 45 per chip; 15% masked.")
    assert not findings_of(tmp_path, [("md", "## A"), code, settings])


def test_a_hedged_number_is_a_result_and_needs_an_output(tmp_path):
    cells = [("md", "## Epochs"),
             ("code", "for _ in range(10): pass\nprint(f'{passes:.1f} passes')", "10.9 passes\n"),
             ("md", "The model reads about 10 passes counted in tokens.")]
    # The code's 10 does not back "about 10": a hedged number is a result.
    assert quoted(findings_of(tmp_path, cells)) == [("mismatch", "10")]
    cells[-1] = ("md", "The model reads about 11 passes counted in tokens.")
    assert not findings_of(tmp_path, cells)


def test_arithmetic_in_the_prose_backs_its_result_and_a_wrong_one_is_reported(tmp_path):
    cells = [("md", "## Window"), ("code", "SEQUENCE_LENGTH = 512"),
             ("md", "A 512-token window holds 512 / 0.28 ≈ 1,800 English characters.")]
    assert not findings_of(tmp_path, cells)
    cells[-1] = ("md", "A 512-token window holds 512 / 0.28 ≈ 2,400 English characters.")
    assert quoted(findings_of(tmp_path, cells)) == [("arithmetic", "2,400")]


def test_labels_years_small_counts_and_code_are_not_quantities(tmp_path):
    text = ("See chapter 03, exercise 2.4, task 2, line 2 and §5.1-5.3 (Table 5; appendix C.2). "
            "Vaswani et al. (2017) used 6 layers; positions 128-511, seed 2, block 0 head 9, "
            "`round(0.15 × 512)`, the 80/10/10 and 0/20/80 mixtures, 1/3 of the words, L6/H384, SQuAD v2.0.")
    assert not findings_of(tmp_path, [("md", "## A"), ("code", "x = 1"), ("md", text)])


def test_a_table_row_is_cited_left_of_its_citation(tmp_path):
    table = ("| claim | source | what we checked |\n|---|---|---|\n"
             "| 15% selected, 1.5% random | §3.1, A.1 | measured 15.2% (asserted) |\n")
    found = findings_of(tmp_path, [("md", "## Claim vs fact"), ("md", table)])
    assert quoted(found) == [("unsourced", "15.2%")]  # the paper's side is cited; ours must be printed


def test_a_sentence_naming_another_chapter_may_quote_its_outputs(tmp_path):
    write_notebook(tmp_path, "03_other.ipynb", [("md", "## X"), ("code", "print(61.74)", "mean 61.74\n")])
    cells = [("md", "## Y"), ("code", "x = 1"), ("md", "Chapter 03 measured a mean of 61.74.")]
    assert not findings_of(tmp_path, cells, "06_this.ipynb")
    cells[-1] = ("md", "Another run measured a mean of 61.74.")
    assert quoted(findings_of(tmp_path, cells, "06_this.ipynb")) == [("unsourced", "61.74")]


def test_the_chinese_edition_is_read_and_inherits_the_english_declarations(tmp_path):
    english, chinese = tmp_path / "en", tmp_path / "zh"
    english.mkdir()
    chinese.mkdir()
    write_notebook(english, "05_x.ipynb", [("md", "## A"), ATTENTION_SHARE,
                                           ("md", "A day has 86,400 s. <!-- constants: 86,400 -->")])
    path = write_notebook(chinese, "05_x.ipynb", [("md", "## 甲"), ATTENTION_SHARE,
                                                  ("md", "一天有 86,400 秒。注意力在 512 时占 12%。")])
    found = prose.check_notebooks([path], english_folder=english)
    assert quoted(found) == [("mismatch", "12%")]


# ---------------------------------------------------------------------------------------------------------
# (b) the stored chapters

# Chapters whose stored prose still quotes numbers that disagree with their outputs (issue 24). Remove a
# chapter from the set when its second edition lands: the test then checks it (and fails while it is listed).
NOT_YET_REVISED = set()
PENDING = pytest.mark.xfail(strict=True, reason="second edition (issue 24) not landed: the stored prose "
                                                "quotes numbers that disagree with the outputs beside them")


# English chapters whose second edition has landed while their Chinese edition is still the first (issue 25
# retranslates them): the Chinese notebook stays pending until then.
NOT_YET_RETRANSLATED = set()


def _chapters(paths, edition):
    pending = NOT_YET_REVISED | (NOT_YET_RETRANSLATED if edition == "zh" else set())
    return [pytest.param(path, id=f"{edition}/{path.stem}",
                         marks=[PENDING] if path.stem in pending else []) for path in paths]


@pytest.mark.parametrize("path", _chapters(ENGLISH, "en") + _chapters(CHINESE, "zh"))
def test_every_number_in_a_chapter_agrees_with_its_source(path):
    english = REPO / "notebooks" if path.parent.name == "zh" else None
    findings = prose.check_notebooks([path], english_folder=english)
    rule = "numbers the prose quotes without a source that agrees (the rule: bertlib.course.prose)"
    assert not findings, f"{rule}:\n{prose.format_findings(findings)}"


def test_every_chapter_is_checked():
    chapters = {f"0{number}" for number in range(9)}
    assert {path.name[:2] for path in ENGLISH} >= chapters and {path.name[:2] for path in CHINESE} >= chapters


# ---------------------------------------------------------------------------------------------------------
# (c) the mismatches of issue 24 and its review, in excerpts of the notebooks as stored at commit 9196b83

EXCERPTS = {
    "08_capstone, cell 31": (
        [("md", "### 3c. The 128 → 512 saving"),
         ("code", "H, BATCH = 768, 256\nfor n in (128, 512):\n    print(f'n={n}: ... {share:.1%}')",
          "n=128: 14.55 MFLOPs per token per block, attention share 2.7%\n"
          "n=512: 15.73 MFLOPs per token per block, attention share 10.0%\n"
          "a step at 128 costs 23.1% of a step at 512 (4x fewer tokens, each 92.5% as dear)\n"
          "90% of the steps at 128 + 10% at 512 costs 30.8% of all-512 (a saving of 69.2%)\n"),
         ("md", "The curriculum costs about 31% of running every step at 512 (counted, and asserted; "
                "the timing agrees): a saving of roughly two thirds. Most of it comes from processing 4× "
                "fewer tokens per step, not from the quadratic term: at H=768 attention is only 3% of a "
                "token's cost at 128 tokens and 12% at 512.")],
        ("mismatch", "12%", "10.0%"), ("12% at", "10% at")),
    "06_self_test, cell 13": (
        [("md", "## L1 · How many tokens become [MASK]?"),
         ("code", "print(f'[MASK] per row:   mean {masks_per_row.mean():.2f} ± {standard_error:.2f}')",
          "selected per row: [77.] (every row)\n[MASK] per row:   mean 61.61 ± 0.02 over 20000 rows\n"),
         ("md", "The measured mean is about 61.5. Is that the paper's 61.44 (§3.1)? Not quite.")],
        ("mismatch", "61.5", "61.61"), ("about 61.5", "about 61.6")),
    "06_self_test, cell 13 (standard error)": (
        [("md", "## L1"), ("code", "rows = 20_000  # standard error about 0.03",
                           "[MASK] per row:   mean 61.61 ± 0.02 over 20000 rows\n"),
         ("md", "We mask 20,000 rows: the standard error of the mean is then about 0.03.")],
        ("unsourced", "0.03", ""), ("about 0.03", "about 0.02")),
    "06_self_test, cell 25": (
        [("md", "## L2 · What if the mask rate were 50% (or 5%)?"),
         ("code", "print(...)",
          "rate  15%:  19.0 targets/seq | [MASK] in input  11.9% | intact context  85.3% | "
          "targets with both neighbours intact  73.7%\n"
          "rate  50%:  64.0 targets/seq | [MASK] in input  40.0% | intact context  50.4% | "
          "targets with both neighbours intact  25.4%\n"),
         ("md", "Only about a quarter of the targets still have both neighbours intact (against about 72% "
                "at 15%).")],
        ("mismatch", "72%", "73.7%"), ("about 72%", "about 74%")),
    "05_recipe_and_finetuning, cell 12": (
        [("md", "## The token arithmetic (A.2)"),
         ("code", "print(...)",
          "epochs over 3.3B words then:     12.9\n"
          "epochs counted in WordPiece tokens (x1.18 per word): 32.7 at 512 throughout, "
          "10.9 with the 128/512 curriculum\n"),
         ("md", "With the length curriculum the model sees roughly 13 passes over the corpus counted in "
                "words and about 10 counted in WordPiece tokens.")],
        ("mismatch", "10", "10.9"), ("about 10 counted", "about 11 counted")),
    "05_recipe_and_finetuning, cell 19": (
        [("md", "## What the run cost: 6N FLOPs per token"),
         ("code", "print(...)",
          "BERT_BASE  all at 512: 9.39e+19 FLOPs =  1.09 PF/s-days; 16 chips x 4 days offer 2.49e+20 "
          "-> 38% of peak\n"
          "BERT_BASE  90% at 128: 2.93e+19 FLOPs =  0.34 PF/s-days; 16 chips x 4 days offer 2.49e+20 "
          "-> 12% of peak\n"
          "BERT_LARGE all at 512: 2.87e+20 FLOPs =  3.32 PF/s-days; 64 chips x 4 days offer 9.95e+20 "
          "-> 29% of peak\n"
          "BERT_LARGE 90% at 128: 9.00e+19 FLOPs =  1.04 PF/s-days; 64 chips x 4 days offer 9.95e+20 "
          "-> 9% of peak\n"),
         ("md", "Under that assumption the paper's run used roughly 10% (with the 128/512 curriculum) to 40% "
                "(if every step were at 512) of the chips' peak.")],
        ("mismatch", "10%", "9%"), ("roughly 10% (with the 128/512 curriculum) to 40%",
                                    "9-12% (with the 128/512 curriculum) to 29-38%")),
}


@pytest.mark.parametrize("name", list(EXCERPTS))
def test_the_mismatches_of_issue_24_are_caught_and_their_corrections_pass(tmp_path, name):
    cells, (kind, number, printed), (wrong, right) = EXCERPTS[name]
    found = findings_of(tmp_path, cells)
    assert (kind, number) in quoted(found), prose.format_findings(found)
    assert any(finding.nearest.startswith(printed) for finding in found if finding.number == number)
    corrected = cells[:-1] + [("md", cells[-1][1].replace(wrong, right))]
    assert not findings_of(tmp_path, corrected), prose.format_findings(findings_of(tmp_path, corrected))
