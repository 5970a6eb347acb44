"""Every number the chapters' prose quotes from the course's own runs agrees with the output it describes
(issue 24, item 2; the rule is in the docstring of `coursekit.prose`).

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

from coursekit import prose
from tools.repo_paths import REPO_ROOT as REPO

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
    write_notebook(tmp_path, "03_other.ipynb", [("md", "## X")])  # the chapter the sentence points to
    assert not findings_of(tmp_path, [("md", "## A"), ("code", "x = 1"), ("md", text)])


def test_a_spread_over_seeds_is_checked_in_a_sentence_that_cites_the_paper(tmp_path):
    """A median and range over seeds is the course's own result, even beside a citation (a miss found in 04)."""
    spread = ("code", "print(describe(spread))",
              "No NSP lower (median -3.6 points, range -7.6 to -1.8 over 3 seeds)\n")
    stale = ("md", "What the run shows, read against §5.1: the model without NSP scored lower in every seed "
                   "(median −3.3 points, range −7.7 to −1.6), not the −3.5 of QNLI (Table 5).")
    found = findings_of(tmp_path, [("md", "## Pairs"), spread, stale])
    assert quoted(found) == [("mismatch", "−3.3"), ("mismatch", "−7.7"), ("mismatch", "−1.6")]
    current = ("md", stale[1].replace("−3.3", "−3.6").replace("−7.7", "−7.6").replace("−1.6", "−1.8"))
    assert not findings_of(tmp_path, [("md", "## Pairs"), spread, current])  # the cited −3.5 stays the paper's
    chinese = ("md", "对照 §5.1：不带 NSP 的模型每个种子都更低（中位数 −3.3 个百分点，范围 −7.6 至 −1.8）。")
    assert quoted(findings_of(tmp_path, [("md", "## Pairs"), spread, chinese])) == [("mismatch", "−3.3")]


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
    rule = "numbers the prose quotes without a source that agrees (the rule: coursekit.prose)"
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


# ---------------------------------------------------------------------------------------------------------
# (d) claims about the numbers (issue 35, item 3): directions, quantifiers, chapter pointers, curves' ranges

CLAIMS = {"direction", "quantifier", "pointer", "extrapolation"}


def claims_of(tmp_path, cells, name="01_test.ipynb"):
    return [(finding.kind, finding.number) for finding in findings_of(tmp_path, cells, name)
            if finding.kind in CLAIMS]


SCORES = ("code", "print(scores)", "dev F1 81.9\ntest F1 83.1\n")


@pytest.mark.parametrize("text, expected", [
    ("The dev F1 81.9 is below the test F1 83.1.", []),
    ("The dev F1 83.1 is below the test F1 81.9.", [("direction", "below")]),
    ("The test F1 83.1 is higher than the dev F1 81.9.", []),
    ("The test F1 81.9 is higher than the dev F1 83.1.", [("direction", "higher")]),
    ("开发集 F1 81.9 低于测试集 F1 83.1。", []),
    ("开发集 F1 83.1 低于测试集 F1 81.9。", [("direction", "低于")]),
    # A number that is the size of the gap is no operand: 83.1 is more than 1 point above 81.9.
    ("The test F1 83.1 is more than 1 point above the dev F1 81.9.", []),
    ("The test F1 81.9 is more than 1 point above the dev F1 83.1.", [("direction", "above")]),
])
def test_two_quoted_numbers_around_a_comparative_are_ordered_as_it_says(tmp_path, text, expected):
    assert claims_of(tmp_path, [("md", "## Scores"), SCORES, ("md", text)]) == expected


TIMINGS = ("code", "print(ratios)", "attention: measured x28.8; counted 0.20 -> 3.22 GFLOPs, x16.00\n")


@pytest.mark.parametrize("cells, text, expected", [
    ([TIMINGS], "The counted FLOPs grow 16×, and at 128 tokens the CPU idles, which compresses the measured ratio.",
     [("direction", "compresses")]),
    ([TIMINGS], "The counted FLOPs grow 16×, and at 512 tokens the caches overflow, which inflates the measured ratio.",
     []),
    ([TIMINGS], "按计数变为 16 倍，128 时 CPU 利用率低，这压缩了实测的倍数。", [("direction", "压缩")]),
    ([SCORES], "τ is tuned on dev, so the dev F1 is optimistic, and the test F1 (83.1) is the fair one.",
     [("direction", "optimistic")]),
    ([("code", "print(scores)", "dev F1 84.0\n")],
     "τ is tuned on dev, so the dev F1 is optimistic, and the test F1 (83.1) is the fair one.", []),
])
def test_a_one_sided_word_agrees_with_the_pair_its_labels_name(tmp_path, cells, text, expected):
    assert claims_of(tmp_path, [("md", "## Timing"), *cells, ("md", text)]) == expected


VERDICTS = ("code", "print(verdicts)",
            "frozen, 0/20/80 against 80/10/10: no measurable difference (median +4.1, range -7.4 to +6.0)\n"
            "frozen, 100/0/0 against 80/10/10: lower (median -46.8, range -60.7 to -44.0)\n")


@pytest.mark.parametrize("text, expected", [
    ("On frozen features 0/20/80 lies slightly above 80/10/10.", [("direction", "above")]),
    ("冻结特征上 0/20/80 略高于 80/10/10。", [("direction", "高于")]),
    ("On frozen features 0/20/80 is not measurably apart from 80/10/10 (its median lies above).", []),
    ("On frozen features 100/0/0 lies below 80/10/10.", []),
    ("Both 80/10/10 and 0/20/80 beat 100/0/0 (printed above).", []),
])
def test_a_printed_no_measurable_difference_forbids_a_direction_for_that_pair(tmp_path, text, expected):
    assert claims_of(tmp_path, [("md", "## Grid"), VERDICTS, ("md", text)]) == expected


def test_a_direction_another_measure_of_the_pair_prints_is_left_alone(tmp_path):
    verdicts = ("code", "print(verdicts)",
                "feature-based, 0/20/80 against 80/10/10: higher (median +0.5, range +0.2 to +1.0)\n"
                "fine-tuned, 0/20/80 against 80/10/10: no measurable difference (median +0.0, range -0.1 to +0.1)\n")
    assert claims_of(tmp_path, [("md", "## Grid"), verdicts, ("md", "0/20/80 lands slightly above 80/10/10.")]) == []
    assert claims_of(tmp_path, [("md", "## Grid"), verdicts, ("md", "0/20/80 lands slightly below 80/10/10.")]) == [
        ("direction", "below")]


@pytest.mark.parametrize("printed, text, expected", [
    ("final losses: naive 0.0002, masked LM 0.0003 nats, 2 times the naive loss\n",
     "The masked LM's loss stays many times the naive one (printed above).", [("quantifier", "many times the")]),
    ("final losses: naive 0.0002, masked LM 0.0003 nats, 2 times the naive loss\n",
     "掩码语言模型的损失始终是天真模型的许多倍（见上面的输出）。", [("quantifier", "许多倍")]),
    ("final losses: naive 0.0001, masked LM 0.0043 nats, 43 times the naive loss\n",
     "The masked LM's loss stays many times the naive one (printed above).", []),
    ("attention x1.8, backbone x1.2\n", "The measured time grows by an order of magnitude.",
     [("quantifier", "by an order of magnitude")]),
    ("attention x28.8 at 4x the length\n", "The measured time grows by an order of magnitude.", []),
])
def test_a_quantifier_needs_a_printed_ratio_of_its_size(tmp_path, printed, text, expected):
    cells = [("md", "## Losses"), ("code", "print(losses)", printed), ("md", text)]
    assert claims_of(tmp_path, cells) == expected


def test_a_pointer_names_a_chapter_that_holds_what_it_points_to(tmp_path):
    write_notebook(tmp_path, "04_nsp.ipynb", [("md", "## NSP"), ("md", "The NSP head tells a same-document pair "
                                                                   "from a random one. Segments are cut at random.")])
    def pointer(text):
        return claims_of(tmp_path, [("md", "## Rating"), ("md", text)], "08_this.ipynb")

    assert pointer("Chapter 04's NSP head tells a same-document pair from a random one.") == []
    assert pointer("See chapter 04 for the NSP head.") == []
    wrong = "chapter 04's NSP head tells a same-document pair from a random one, but not which segment comes first"
    assert pointer(f"Topic matching solves it: {wrong}.") == [("pointer", wrong)]
    assert pointer("Chapter 04's pooler gradient is zero.") == [("pointer", "Chapter 04's pooler gradient is zero")]
    assert pointer("See chapter 07 for the details.") == [("pointer", "See chapter 07")]


def test_a_chinese_pointer_is_checked_against_the_chinese_chapter(tmp_path):
    write_notebook(tmp_path, "04_nsp.ipynb", [("md", "## NSP"), ("md", "NSP 输出头能分辨同一文档的句对和随机句对。")])
    def pointer(text):
        return claims_of(tmp_path, [("md", "## 评级"), ("md", text)], "08_this.ipynb")

    assert pointer("第 4 章的 NSP 输出头能分辨同一文档的句对和随机句对。") == []
    assert pointer("第 4 章的 NSP 输出头能分辨同一文档的句对和随机句对，却分不出哪一段在前。") == [
        ("pointer", "第 4 章的 NSP 输出头能分辨同一文档的句对和随机句对，却分不出哪一段在前")]
    assert pointer("第 4 章的 MLM 输出头。") == [("pointer", "第 4 章的 MLM 输出头")]


@pytest.mark.parametrize("printed, text, expected", [
    ("step 500: loss 2.10\nstep 1500: loss 1.70\n", "The loss keeps improving past 10,000 steps.",
     [("extrapolation", "10,000")]),
    ("step 500: loss 2.10\nstep 1500: loss 1.70\n", "The loss keeps improving up to 1,500 steps.", []),
    ("128 tokens: attention share 2.7%\n256 tokens: attention share 5.3%\n",
     "The share would keep growing at 512 tokens.", [("extrapolation", "512")]),
    ("128 tokens: attention share 2.7%\n512 tokens: attention share 10.0%\n",
     "The share would keep growing at 256 tokens.", []),
    ("step 500: loss 2.10\n", "The loss keeps improving past 10,000 steps.", []),  # one point is no curve
])
def test_a_claim_about_a_curve_stays_inside_the_range_it_printed(tmp_path, printed, text, expected):
    cells = [("md", "## Curve"), ("code", "print(curve)", printed), ("md", text)]
    assert claims_of(tmp_path, cells) == expected


OLD_CLAIMS = json.loads((REPO / "tests" / "data" / "prose_old_claims.json").read_text(encoding="utf-8"))


def write_cells(folder, name, cells):
    notebook = {"cells": [{"metadata": {}, **cell} for cell in cells], "metadata": {}, "nbformat": 4,
                "nbformat_minor": 5}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell.setdefault("execution_count", None)
            cell.setdefault("outputs", [])
    path = Path(folder) / name
    path.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", OLD_CLAIMS["cases"], ids=lambda case: f"{case['edition']}/{case['chapter']}")
def test_the_claims_issue_35_fixed_by_hand_are_caught_in_the_old_text(tmp_path, case):
    """The four direction and quantifier claims and the chapter pointer of issue 35, item 3, as the chapters
    stored them before commit e9e3bd9: each is found with its kind; the corrected cell has no such finding."""
    for stem, cells in OLD_CLAIMS["chapters"][case["edition"]].items():
        write_cells(tmp_path, f"{stem}.ipynb", cells)
    def claims(text):
        cells = [{"id": "heading", "cell_type": "markdown", "source": "## Section"}, *case["code"],
                 {"id": case["cell_id"], "cell_type": "markdown", "source": text}]
        found = prose.check_notebook(write_cells(tmp_path, f"{case['chapter']}.ipynb", cells))
        return [finding for finding in found if finding.kind in CLAIMS]

    old = claims(case["old"])
    assert [(finding.kind, finding.cell_id) for finding in old] == [(case["kind"], case["cell_id"])], \
        prose.format_findings(old)
    assert not claims(case["fixed"]), prose.format_findings(claims(case["fixed"]))


# ---------------------------------------------------------------------------------------------------------
# (e) claims about the paper's evidence (issue 56, item 5): a pointer to a topic, a rating against its legend, a
# Table 5 figure against its row. Each old text is a cell as it was stored before these rules (git show
# 23a3465:notebooks/...), with its correction beside it.

OLD_ATTENTION_CAPTION = ("Below is the same checkpoint. The caption gives the share of attention that goes to `[CLS]` "
                         "and `[SEP]`, which chapter 07 comes back to. Type any sentence or pair and press Run.")
OLD_NSP_RATING = ("The one change: **NSP down from two stars to one**. The paper's own table shows a clear loss only "
                  "on QNLI (§5.1), and the guide's section 7.5 notes that later work (RoBERTa) removed NSP without "
                  "harm. The masking-recipe claims of C.2, which the guide did not rate, would get one star from us: "
                  "the appendix shows differences within noise for fine-tuning.")
OLD_MLM_ROW = ("| 1 | Deep bidirectional pretraining matters | ★★★ | §5.1 ablation (Table 5): MLM against \"LTR & No "
               "NSP\", SQuAD F1 88.5 → 77.8 under the same data and recipe | ch. 1, ch. 3 |")


def kinds_of(tmp_path, text, name="08_this.ipynb", kinds=("pointer", "rating", "label")):
    return [(finding.kind, finding.number) for finding in findings_of(tmp_path, [("md", "## Here"), ("md", text)], name)
            if finding.kind in kinds]


def test_a_pointer_to_a_topic_needs_the_topic_in_that_chapter(tmp_path):
    write_notebook(tmp_path, "07_reading.ipynb", [("md", "## Reading"), (
        "md", "`[CLS]` and `[SEP]` are learned in pretraining. A causal model caches keys and values when generating; "
              "a bidirectional encoder cannot.")])
    assert kinds_of(tmp_path, OLD_ATTENTION_CAPTION, "02_this.ipynb") == [("pointer", "which chapter 07 comes back to")]
    assert kinds_of(tmp_path, OLD_ATTENTION_CAPTION.replace(", which chapter 07 comes back to", ""),
                    "02_this.ipynb") == []
    assert kinds_of(tmp_path, "The cost of bidirectional attention, no cache when generating, is taken up in "
                              "chapter 7.", "02_this.ipynb") == []
    assert kinds_of(tmp_path, "The share on `[PAD]`, which chapter 07 comes back to.", "02_this.ipynb") == [
        ("pointer", "which chapter 07 comes back to")]
    assert kinds_of(tmp_path, "图注给出落在 `[CLS]` 和 `[SEP]` 上的注意力份额，第 7 章会再回到这一点。",
                    "02_this.ipynb") == [("pointer", "第 7 章会再回到")]
    assert kinds_of(tmp_path, "The share, which chapter 09 comes back to.", "02_this.ipynb") == [
        ("pointer", "which chapter 09 comes back to")]


def test_the_old_attention_caption_is_caught_against_the_real_chapter_07(tmp_path):
    (tmp_path / "07_critical_reading.ipynb").write_bytes((REPO / "notebooks/07_critical_reading.ipynb").read_bytes())
    assert kinds_of(tmp_path, OLD_ATTENTION_CAPTION, "02_this.ipynb") == [("pointer", "which chapter 07 comes back to")]


def test_a_one_star_rating_of_an_ablation_contradicts_the_legend(tmp_path):
    assert kinds_of(tmp_path, OLD_NSP_RATING) == [("rating", "stars to one"), ("rating", "one star")]
    fixed = ("No rating changes, and NSP keeps its two stars. By the legend, an ablation earns ★★, and Table 5 is "
             "one: its one clear loss is on QNLI (§5.1). The claims of C.2 would get two stars from us.")
    assert kinds_of(tmp_path, fixed) == []
    assert kinds_of(tmp_path, "The guide rates this choice one star: the paper never compares poolings (§3.1).") == []
    assert kinds_of(tmp_path, "★★★ strong experimental support, ★★ ablation only, ★ argument only.") == []
    assert kinds_of(tmp_path, "| 3. NSP is useful | ★★ | ★ | §5.1: its one large effect is QNLI -3.5 |") == [
        ("rating", "★")]
    assert kinds_of(tmp_path, "导读没有评级的 C.2 中关于掩码配方的主张，我们会给一颗星。") == [("rating", "一颗星")]


def test_a_table_5_figure_agrees_with_the_row_the_sentence_gives_it(tmp_path):
    assert kinds_of(tmp_path, OLD_MLM_ROW) == [("label", "88.5")]
    assert kinds_of(tmp_path, OLD_MLM_ROW.replace("MLM against \"LTR & No NSP\", SQuAD F1 88.5",
                                                  "with NSP removed from both, MLM against LTR, SQuAD F1 87.9")) == []
    # BERT_BASE named, or the No NSP figure beside it: the sentence says what differs
    assert kinds_of(tmp_path, "The LTR model without NSP loses 10.7 SQuAD F1 against BERT_BASE (88.5 → 77.8) "
                              "(§5.1).") == []
    assert kinds_of(tmp_path, "The left-to-right ablation loses 10.7 (88.5 to 77.8), 10.1 of them against the "
                              "bidirectional model without NSP (87.9) (§5.1).") == []
    assert kinds_of(tmp_path, "§5.1（MLM 对 LTR & No NSP，SQuAD F1 88.5 对 77.8）。") == [("label", "88.5")]


def test_a_quoted_column_is_printed_in_the_same_edition(tmp_path):
    # zh/03/c79 and zh/08/c41 before issue 57: the prose named English columns the Chinese outputs no longer print.
    printed = ("code", "print(table)", "       中位数    范围    种子数  解读\n100/0/0  -51.4  -59.7 到 -49.2  3  范围不含 0\n")
    def kinds(text):
        return [(finding.kind, finding.number) for finding in findings_of(tmp_path, [("md", "## 表"), printed,
                                                                                        ("md", text)])
                if finding.kind == "column"]

    assert kinds("差异才算一个方向（“reading”一列会注明）。") == [("column", "“reading”一列")]
    assert kinds("差异才算一个方向（“解读”一列会注明）。") == []
    assert kinds('A difference has a direction only where the "verdict" column says so.') == [
        ("column", '"verdict" column')]
    assert kinds("Table 1's \"Average\" column leaves WNLI out (§4.1).") == []  # the paper's table, cited
