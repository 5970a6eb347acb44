"""Every number the prose quotes agrees with the output it describes (issue 24, item 2).

The rule, for a writer. Each number written with digits in a markdown cell of a chapter is one of:

1. **A result of this run.** A code cell of the same section prints it (a section runs from one heading to
   the next; a section without code of its own, such as "Claim vs fact", the learning objectives or the
   self-check answers, reads every code cell). The prose writes the printed value rounded to the digits it
   shows: a printed 10.0% may be quoted as 10% or 10.0%, never as 12%; a printed 10.9 is "about 11", not
   "about 10". A percentage may quote a printed fraction (0.753 as 75.3%). A sentence that says "above" (or
   "earlier") may quote any output above it, one that says "below" any output below it, and one that names
   another chapter ("chapter 03", "ch. 4") that chapter's outputs.
2. **A setting or a constant the code states**: the number appears in the source of a code cell of the
   notebook, as a literal or in a comment (`STEPS = 1_500`, `# 45 TFLOP/s per chip, our assumption`); a
   percentage as its fraction (15% as 0.15) or with its % sign. A setting is quoted exactly: a hedged number
   ("about 10") is a result and needs an output.
3. **From the paper, the study guide or another source**: its sentence (in a table: its row, left of the
   citation) carries the citation: "§", "Table N", "Figure N", "appendix", A.1-C.2, "guide", "et al.",
   "abstract", "footnote", bench/RESULTS.md ("the paper" alone is no citation: name the section, as
   STYLE.md asks). A number cited once may be repeated later in the notebook without its citation. A median
   and range over seeds ("median -3.6 points, range -7.6 to -1.8", `evidence.describe`'s words) is the
   course's own result and is checked even in a sentence that cites the paper.
4. **Arithmetic written out**: the result of an all-numeric expression in the sentence, "512 × 15% × 80% =
   61.44", "(512/128)² = 16", "512 / 0.28 ≈ 1,800". The checker recomputes it; a wrong result is a finding.
5. **Declared**: listed in an HTML comment of the cell, `<!-- constants: 86,400 seconds in a day -->`, which
   neither JupyterLab nor the book shows. The Chinese edition inherits the declarations of the English cell.
6. **Not a quantity**: counts up to 10 written bare ("2 layers"; but "about 10 passes" and "3 points" are
   checked), years, numbers after a section, table, chapter, exercise, task, step, line, seed, block, head or
   position word, list numbers, numbers inside `code`, headings, names such as L6/H384, v2.0, 80/10/10, 1/3.

The stated rounding of a number is its last written digit; trailing zeros of an integer of 100 or more are
not significant when the number is hedged ("about 3,900 pairs" may quote 3,888). Anything else is a finding:
a **mismatch** when a printed value of the same kind lies near it (the finding names that value and its
cell), **unsourced** otherwise, **arithmetic** when a written-out expression does not give its result.

What the prose says about the numbers is checked too (issue 35, item 3); each is a finding of its own kind:

- **direction**: (a) a sentence that puts two quoted numbers around a comparative (higher, above, below, more
  or less than, beats, under; 高于, 低于, 超过) orders them as the word says; a number that is the gap ("10
  points above") is no operand. (b) A one-sided word (optimistic, compresses, inflates, overstates; 偏乐观,
  压缩) said of a labelled value ("the dev F1", "the measured ratio") agrees with the other value the sentence
  names, as quoted there or printed on one line ("measured x28.8; counted ... x16.00"); the Chinese edition's
  labels (实测, 计数, 开发集, 测试集) stand for the printed English ones. (c) A direction word between two
  items such as 0/20/80 and 80/10/10 whose printed comparison says "no measurable difference", "range
  includes 0" or "no claim" is a finding, unless its clause says so ("not measurably apart", "its median lies
  above") or another measure of the pair prints that direction.
- **quantifier**: "many times" (3×), "by an order of magnitude" (10^0.5), "orders of magnitude", "hundreds of
  times" (许多倍, 一个数量级 ...) need a printed ratio of that size in the nearest code cell that prints one.
- **pointer**: "see chapter NN", "chapter NN's X", "chapter NN shows/measures/runs X" (第 N 章的 X): the
  chapter exists, one of its sentences (or code lines) holds the key term X, and one holds the words of what
  the pointer says it does not show ("but not which segment comes first").
- **extrapolation**: a sentence about a curve's course (keeps, continues, beyond, past, would, still) quotes
  steps, tokens or epochs inside the range the notebook's outputs print for that unit.
- **pointer** to a topic: "..., which chapter 07 comes back to", "is taken up in chapter 7" (第 7 章会再回到):
  one sentence of that chapter holds the clause's `code` terms and one of its longer words.
- **rating** (`labels`): a paragraph that gives one star (★, "one star", 一颗星) while it names an ablation
  contradicts the legend the course grades with (★★★ strong experimental support, ★★ ablation only, ★ argument
  only).
- **column** (`labels`): a column or row the prose quotes ("the "reading" column", “解读”一列) is printed by the
  notebook's outputs, in the same edition; a sentence citing the paper names the paper's table.
- **label** (`labels`): a sentence that sets MLM against LTR and quotes Table 5 quotes the rows that differ only
  in the objective (No NSP 87.9 against LTR & No NSP 77.8), not BERT_BASE's 88.5, which keeps NSP.

The direction and pointer rules read cited sentences too (a citation does not make "81.9 above 83.1" true).

Run it: `python -m coursekit.prose notebooks/0*.ipynb`, or for the Chinese edition
`python -m coursekit.prose notebooks/zh/0*.ipynb --english notebooks`. Pure Python: no Keras import.

The parts: `numbers` (numbers as written), `sentences` (the units a citation covers, and their quantities),
`arithmetic` (written-out arithmetic recomputed), `facts` (what a notebook's code prints and states), `claims`
(directions, quantifiers, pointers, curves' ranges), `labels` (ratings and Table 5's rows), `check` (the
findings of a notebook) and `cli`.
"""

from coursekit.prose.arithmetic import arithmetic
from coursekit.prose.check import Finding, check_notebook, check_notebooks, format_findings
from coursekit.prose.cli import main
from coursekit.prose.numbers import Number, parse_numbers
from coursekit.prose.sentences import prose_units, quantities

__all__ = ["Number", "Finding", "parse_numbers", "quantities", "arithmetic", "prose_units", "check_notebook",
           "check_notebooks", "format_findings", "main"]
