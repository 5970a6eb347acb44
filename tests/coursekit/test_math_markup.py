"""Typeset formulas ($...$ inline, $$...$$ display, as in the chapters' markdown) are neither read as prose
numbers by the prose check nor touched by the Chinese typesetting rules and line joining."""

from coursekit import i18n
from coursekit.prose.sentences import strip_markdown
from tests.coursekit.test_prose_numbers import findings_of

# A display formula over several lines, with numbers no output prints (the form amsmath environments take).
DISPLAY = ("$$\n"
           r"\eta_t = \begin{cases} \eta\, t / 10000 & t < 10000, \\" "\n"
           r"\eta\,(1 - t/1000000) & \text{otherwise} \end{cases}" "\n"
           "$$")


def test_display_math_over_several_lines_is_not_prose(tmp_path):
    text = f"The rate at step $t$ is\n\n{DISPLAY}\n\nwith a peak of 1e-4."
    stripped = strip_markdown(text)
    assert "10000" not in stripped and "1000000" not in stripped and "cases" not in stripped
    assert "1e-4" in stripped  # the prose around the formula is still read
    # The old rule ($...$ within one line only) left the inner lines as prose: 10000 and 1000000 were unsourced.
    assert not findings_of(tmp_path, [("md", "## A"), ("code", "peak = 1e-4"), ("md", text)])


def test_inline_and_one_line_display_math_are_not_prose():
    text = r"Per block $12H^2$; in all $$N \approx 12\,L H^2 + (30522 + 512 + 2)\,H,$$ as 02 counts it."
    stripped = strip_markdown(text)
    assert "30522" not in stripped and "12H" not in stripped and "as 02 counts it" in stripped


def test_typesetting_leaves_math_alone():
    text = ("缩放点积注意力（Vaswani et al., 2017）：\n\n"
            r"$$\mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}}\Big)V, \qquad d_k = H/A,$$"
            "\n\n其中 $d_k = H/A$，填充位置的键的分数在 softmax 之前设为 $-\\infty$。")
    assert i18n.typesetting_problems(text) == []
    assert i18n.unwrap_cjk(text) == text  # nothing to join, and the display block stays its own paragraph
    # Inside math a half-width comma beside a Chinese character is not a typesetting breach; outside it is.
    assert i18n.typesetting_problems("其中 $\\text{词元},x$ 是输入。") == []
    assert i18n.typesetting_problems("其中词元,x 是输入。")
    # A formula wrapped onto the next line is joined with a space, its text unchanged.
    assert i18n.unwrap_cjk("权重衰减为\n$\\lambda\\theta$，即") == "权重衰减为 $\\lambda\\theta$，即"

