"""The Chinese edition (`coursekit i18n`): built from the English notebooks, checked against them.

The references are the English notebooks themselves (code cells must be the same bytes), the English exercise
build (`coursekit exercises build`) and the glossary's list of variants. The course's own catalogues, runtime
messages and plots, checked with the kit, are tested in tests/course/test_kit_integration.py.
"""

import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from coursekit import cli, exercises, grading, i18n
from coursekit.i18n.edition import code_comments
from tests.coursekit.conftest import TOYCOURSE

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = ("01_problem_setting.ipynb", "06_self_test.ipynb")  # two real chapters keep the test quick


def copy_chapters(root):
    """Copies of two real chapters (notebooks/, solutions/) and the glossary, in a temporary repository `root`."""
    for edition in i18n.SOURCE_EDITIONS:
        (root / edition).mkdir()
        for name in CHAPTERS:
            shutil.copy(REPO / edition / name, root / edition / name)
    (root / "docs").mkdir()
    shutil.copy(REPO / "docs" / "glossary.md", root / "docs" / "glossary.md")
    copy_kit_catalogue(root)
    return root


def copy_kit_catalogue(root):
    """The kit's Chinese strings (`i18n/zh/coursekit.po`: notes, the stubs' comment and message, title words)."""
    (root / "i18n" / "zh").mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "i18n" / "zh" / "coursekit.po", root / "i18n" / "zh" / "coursekit.po")


@pytest.fixture()
def course(tmp_path, chapters_course):
    return chapters_course(copy_chapters(tmp_path))


def cells_of(path, kind):
    return [cell for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"] if cell["cell_type"] == kind]


def first_markdown(path):
    nb = exercises.read_notebook(path)
    return next(cell for cell in nb.cells if cell.cell_type == "markdown")


def with_english_stubs(cells):
    """Code cells of a Chinese exercise notebook with each stub's comment and message put back in English.

    The one way a Chinese exercise's code may differ from the English: a stub's comment line (`# 在此写下你的代码`
    for `# YOUR CODE HERE`, a whole line, at the stub's indentation) and the message of the line after it
    (`raise NotImplementedError("练习 3.2：在此写下你的代码")` for `raise NotImplementedError("Exercise 3.2: write
    your code here")`, a whole line too). Everything else, the exception's type included, must be the English bytes.
    """
    texts = i18n.exercise_texts(REPO, "zh")
    chinese, english = texts.comment, exercises.ENGLISH_TEXTS.comment
    message = re.escape(texts.message).replace(re.escape("{exercise_id}"), r"(?P<id>\d+\.\d+)")
    raise_line = re.compile(rf'(?P<indent>\s*)raise NotImplementedError\("{message}"\)')
    restored = json.loads(json.dumps(cells))
    for cell in restored:
        lines = "".join(cell["source"]).split("\n")
        lines = [line[:len(line) - len(chinese)] + english if line.strip() == chinese else line for line in lines]
        lines = [raise_line.sub(lambda match: match["indent"] + 'raise NotImplementedError("' +
                                exercises.ENGLISH_TEXTS.message.format(exercise_id=match["id"]) + '")', line)
                 if raise_line.fullmatch(line) else line for line in lines]
        text = "\n".join(lines)
        cell["source"] = text.splitlines(keepends=True) if isinstance(cell["source"], list) else text
    return restored


def test_a_chinese_full_run_keeps_its_own_outputs_while_the_code_is_the_same(course):
    """`make full` runs the Chinese edition too: its outputs (figures, results, check messages in Chinese) stay
    in notebooks/zh/ through every build while its run record's code hash is the code's; a record copied from the
    English run never counts; when the English code changes, the English outputs come back until a new run."""
    i18n.build(course, "zh")
    english_path, chinese_path = course / "notebooks" / CHAPTERS[1], course / "notebooks" / "zh" / CHAPTERS[1]
    english_outputs = [cell["outputs"] for cell in cells_of(english_path, "code")]
    copied = nbformat.read(chinese_path, as_version=4)
    assert copied.metadata["bertlib"]["run"].get("lang") != "zh"  # the English run's record, copied

    def run_in_chinese(record):  # what tools/run_notebook.py --full writes after running notebooks/zh/...
        notebook = nbformat.read(chinese_path, as_version=4)
        for index, cell in enumerate(cell for cell in notebook.cells if cell.cell_type == "code"):
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"中文输出 {index}\n")]
        notebook.metadata["bertlib"]["run"] = {**notebook.metadata["bertlib"]["run"], "mode": "full",
                                               "code_sha256": exercises.code_fingerprint(notebook), **record}
        nbformat.write(notebook, chinese_path)

    def shown():
        return [cell["outputs"] for cell in cells_of(chinese_path, "code")]

    run_in_chinese({"lang": "zh"})
    i18n.build(course, "zh")
    assert "".join(shown()[0][0]["text"]) == "中文输出 0\n" and len(shown()) == len(english_outputs)
    assert i18n.build(course, "zh") == []  # stable: a second build writes nothing
    assert i18n.check(course, "zh").generated == []
    run_in_chinese({"lang": "en"})  # an English record, even with this code's hash, is not the edition's run
    i18n.build(course, "zh")
    assert shown() == english_outputs
    run_in_chinese({"lang": "zh"})
    english = nbformat.read(english_path, as_version=4)
    next(cell for cell in english.cells if cell.cell_type == "code").source += "\n# changed"
    nbformat.write(english, english_path)
    i18n.build(course, "zh")
    assert shown() == [cell["outputs"] for cell in cells_of(english_path, "code")]  # the English outputs again
    assert json.loads(chinese_path.read_text(encoding="utf-8"))["metadata"]["bertlib"]["run"].get("lang") != "zh"


def test_code_cells_are_the_english_bytes_and_markdown_is_replaced(course):
    cell = first_markdown(course / "solutions" / CHAPTERS[0])
    i18n.write_translation(course, "zh", "solutions", Path(CHAPTERS[0]).stem, cell.id, "# 中文标题\n\n正文。",
                           cell.source)
    i18n.build(course, "zh")
    exercises.build(course / "solutions", course / "exercises")  # the English exercises, as the reference
    for edition in (*i18n.SOURCE_EDITIONS, i18n.EXERCISES):
        for name in CHAPTERS:
            english, chinese = course / edition / name, course / edition / "zh" / name
            code = cells_of(chinese, "code")
            if edition == i18n.EXERCISES:  # the stubs' comment and message are Chinese; nothing else differs
                texts, en_texts = i18n.exercise_texts(course, "zh"), exercises.ENGLISH_TEXTS
                assert texts.comment == "# 在此写下你的代码"  # from the kit's catalogue, copied with the chapters
                stub_comments = sum("".join(cell["source"]).count(texts.comment) for cell in code)
                assert stub_comments == sum("".join(cell["source"]).count(en_texts.comment)
                                            for cell in cells_of(english, "code")) > 0
                zh_message, en_message = (t.message.split("{exercise_id}")[1] for t in (texts, en_texts))
                assert sum("".join(cell["source"]).count(zh_message) for cell in code) == stub_comments
                shown = json.dumps(code, ensure_ascii=False)
                assert en_texts.comment not in shown and en_message not in shown
                code = with_english_stubs(code)
            assert json.dumps(code) == json.dumps(cells_of(english, "code")), (edition, name)
            assert len(cells_of(chinese, "markdown")) == len(cells_of(english, "markdown"))
            metadata = json.loads(chinese.read_text(encoding="utf-8"))["metadata"]["bertlib"]
            assert metadata["lang"] == "zh"
            if edition == i18n.EXERCISES:
                assert {k: v for k, v in metadata.items() if k != "lang"} == json.loads(
                    english.read_text(encoding="utf-8"))["metadata"]["bertlib"]
    translated = cells_of(course / "solutions" / "zh" / CHAPTERS[0], "markdown")[0]
    assert "".join(translated["source"]) == "# 中文标题\n\n正文。"
    exercise = cells_of(course / "exercises" / "zh" / CHAPTERS[0], "markdown")[0]
    assert "".join(exercise["source"]) == "# 中文标题\n\n正文。"


def test_missing_and_stale_translations_are_reported_and_strict_fails(course, capsys):
    stem = Path(CHAPTERS[0]).stem
    cell = first_markdown(course / "notebooks" / CHAPTERS[0])
    i18n.write_translation(course, "zh", "notebooks", stem, cell.id, "中文。", cell.source)
    i18n.build(course, "zh")
    coverage = i18n.check(course, "zh")
    total = coverage.markdown["notebooks"]
    commented = sum(len(code_comments(exercises.read_notebook(course / "solutions" / name))) for name in CHAPTERS)
    assert commented > 0  # the solutions' code cells with comments: each one line too (test_i18n_comments.py)
    assert coverage.translated["notebooks"] == 1 and len(coverage.missing) == total - 1 + coverage.markdown[
        "solutions"] + commented
    assert not coverage.stale and not coverage.failures(strict=False)
    assert coverage.failures(strict=True)

    # The English author edits the cell: the Chinese is now stale, and the build shows the English with a note.
    path = course / "notebooks" / CHAPTERS[0]
    nb = json.loads(path.read_text(encoding="utf-8"))
    (english,) = [c for c in nb["cells"] if c.get("id") == cell.id]
    english["source"] = "".join(english["source"]) + "\nOne more English sentence."
    path.write_text(json.dumps(nb), encoding="utf-8")
    coverage = i18n.check(course, "zh")
    assert len(coverage.stale) == 1 and cell.id in coverage.stale[0] and "One more English sentence" in \
        coverage.stale[0]
    assert coverage.translated["notebooks"] == 0
    assert any("notebooks/zh/" in line for line in coverage.generated)  # the built file no longer matches
    assert cli.main(["i18n", "check", "--root", str(course)]) == 1
    i18n.build(course, "zh")
    assert cli.main(["i18n", "check", "--root", str(course)]) == 0
    assert cli.main(["i18n", "check", "--strict", "--root", str(course)]) == 1
    built = cells_of(course / "notebooks" / "zh" / CHAPTERS[0], "markdown")
    shown = "".join(next(c for c in built if c["id"] == cell.id)["source"])
    assert shown.startswith(i18n.notes(course, "zh")["stale"]) and "One more English sentence" in shown
    assert i18n.notes(course, "zh")["stale"] != i18n.NOTES["stale"]  # the kit catalogue's Chinese note
    assert "stale" in capsys.readouterr().out


def test_orphaned_entries_and_glossary_variants_are_reported(course):
    stem = Path(CHAPTERS[1]).stem
    cell = first_markdown(course / "solutions" / CHAPTERS[1])
    i18n.write_translation(course, "zh", "solutions", stem, cell.id, "这里写成了遮蔽语言模型和精调。", cell.source)
    i18n.write_translation(course, "zh", "solutions", stem, "no-such-cell", "一段孤立的译文。", "gone")
    coverage = i18n.check(course, "zh")
    assert len(coverage.orphans) == 1 and "no-such-cell" in coverage.orphans[0]
    assert len(coverage.glossary) == 2
    assert "'遮蔽语言模型'" in coverage.glossary[0] + coverage.glossary[1]
    assert "'精调'" in coverage.glossary[0] + coverage.glossary[1]
    assert coverage.failures(strict=False) == coverage.glossary  # glossary breaches fail even without --strict


# The Chinese of the catalogues before the 2026-12-05 review's term fixes (cell and the review's §4b row beside each):
# one rendering per term, so each losing form must be reported with the term that won.
OLD_RENDERINGS = [
    ("输出矩阵就是词元嵌入表本身（绑定权重），所以解码器的", "绑定", "共享权重"),  # 03/c84, row 1
    ("三次查表，然后同一种块重复 L 次，最后在 `[CLS]` 上接一个全连接层。", "种块", "层"),  # 02/c43, row 2
    ("4. 块随 L·H² 增长，嵌入随 H 增长", "块随", "层"),  # 02/c86, row 2
    ("它的最终隐藏状态 `C` 就是句子级分类器读取的摘要。", "读取的摘要", "聚合表示"),  # 02/c6, row 3
    ("ELMo 的后向网络，1 层：人名的状态依赖于动词吗？", "后向", "反向"),  # 01/c29 output, row 4
    ("CI 用的快速模式微调的轮次更少，缩小得也更少", "轮次", "轮"),  # 03/c80, row 5
    ("两个模型都用 `fit` 训练，每个 epoch 25 步", "epoch", "轮"),  # 03/c47, row 5
    ("泄漏配比的预训练准确率为 99%", "泄漏", "信息泄露"),  # 03/c76 output, row 6
    ("可它填真正的空白时并不比瞎猜强", "瞎猜", "随机水平"),  # 01/c45, row 7
    ("准确率：40% 至 60%（随机猜测 2.5%）", "随机猜测", "随机水平"),  # 03/c77 output, row 7
    ("## 练习 4.6 · 用词元的均值做 NSP 头，写成 Keras 层", "NSP 头", "输出头"),  # sol/04/c18, row 8
    ("两种词表各算一次带预训练头的 LARGE", "预训练头", "输出头"),  # a hint, row 8
    ("购买者的位置上是买家", "买家", "购买者"),  # 01/c20 output, row 10
    ("- **完整的上下文**：仍保留原词元且未被动过的位置所占的比例", "完整的上下文", "完好的上下文"),  # 06/c20, row 11
    ("每条序列的注意力打分矩阵也只有十六分之一", "打分矩阵", "注意力分数"),  # 08/c42, row 13
    ("数据（BERT 用 BooksCorpus + Wikipedia，33 亿词）", "Wikipedia", "维基百科"),  # 07/c78, row 14
    ("Vaswani 等人最大的模型 (6, 1024, 16)", "等人", "et al."),  # 02/c65 output, row 16
    ("选出 15% 的可选词元，再把其中 80% 换成 `[MASK]`", "可选词元", "候选词元"),  # 03/c3
    ("解码器与词嵌入共享权重，只在被遮住的位置上计分", "词嵌入", "词元嵌入"),  # sol/03/c0
]


@pytest.mark.parametrize(("old", "variant", "chosen"), OLD_RENDERINGS)
def test_the_glossary_rejects_each_losing_rendering_of_the_review(old, variant, chosen):
    terms = i18n.read_glossary(REPO / "docs" / "glossary.md")
    found = i18n.glossary_problems(old, terms)
    assert any(f"uses {variant!r}" in problem and repr(chosen) in problem for problem in found), found


def test_the_glossary_lets_the_right_uses_of_a_losing_form_pass():
    """Words that hold a losing form but are right: another sense (文本摘要, 论文的摘要, 16 块芯片, 给开发集打分,
    注意力头), the glossary's allowed phrases (the zh.d2l.ai glosses), the paper's English quotations, code and
    the fields of a runtime template."""
    terms = i18n.read_glossary(REPO / "docs" / "glossary.md")
    good = ("再在文本摘要或翻译上微调；摘要里的四个核心数字。64 块芯片跑 4 天，在 `with` 块内。给开发集打分。"
            "第 2 章的注意力头。掩码语言模型（zh.d2l.ai 译作“掩蔽语言模型”）；分段嵌入（zh.d2l.ai 译作“片段嵌入”）；"
            "批大小（zh.d2l.ai 译作“批量大小”）；H 是隐藏维度（zh.d2l.ai 译作“隐藏大小”）。"
            "“approximately 40 epochs over the 3.3 billion word corpus”（A.2），“BooksCorpus and English Wikipedia”。"
            "`epochs(tokens, corpus_words)` 和 `keys`。第 {epoch} 轮（天真目标的损失首次降到 0.1 nats 以下）。"
            "与词元嵌入共享权重的解码器；NSP 输出头；预训练输出头；随机水平；反向网络；BooksCorpus + 维基百科；"
            "Vaswani et al.；候选词元；完好的上下文；注意力分数矩阵；信息泄露。")
    assert i18n.glossary_problems(good, terms) == []
    # an allowed phrase covers only itself: the bare losing form beside it is still reported
    assert i18n.glossary_problems("zh.d2l.ai 译作“掩蔽语言模型”，我们也写掩蔽语言模型。", terms) != []
    # a quotation that holds Chinese is the course's own text, not the paper's English
    assert i18n.glossary_problems("“每个 epoch 25 步”", terms) != []


def test_the_check_fails_on_an_old_rendering_in_a_catalogue(course):
    stem = Path(CHAPTERS[0]).stem
    cell = first_markdown(course / "notebooks" / CHAPTERS[0])
    i18n.write_translation(course, "zh", "notebooks", stem, cell.id, "ELMo 式的条件化则是两个模型：前向模型用因果掩码，"
                           "后向模型用它的镜像；每个 epoch 25 步。", cell.source)
    coverage = i18n.check(course, "zh")
    assert any("'后向'" in problem and cell.id in problem for problem in coverage.glossary), coverage.glossary
    assert any("'epoch'" in problem for problem in coverage.glossary)
    assert cli.main(["i18n", "check", "--strict", "--root", str(course)]) == 1

def test_links_of_the_chinese_text_must_lead_somewhere_from_the_zh_folder(course):
    cell = first_markdown(course / "solutions" / CHAPTERS[0])
    good = f"[本章](../../notebooks/zh/{CHAPTERS[0]})，[英文版](../../notebooks/{CHAPTERS[0]})，[外部](https://arxiv.org)"
    i18n.write_translation(course, "zh", "solutions", Path(CHAPTERS[0]).stem, cell.id, good, cell.source)
    assert not i18n.check(course, "zh").links  # the zh target counts although the edition is not built
    bad = f"[本章](../notebooks/zh/{CHAPTERS[0]})"  # one level short: wrong from solutions/zh/
    i18n.write_translation(course, "zh", "solutions", Path(CHAPTERS[0]).stem, cell.id, bad, cell.source)
    coverage = i18n.check(course, "zh")
    assert len(coverage.links) == 1 and "../notebooks/zh/" in coverage.links[0]
    assert coverage.failures(strict=False) == coverage.links


def test_the_build_is_deterministic(course, tmp_path_factory):
    cell = first_markdown(course / "notebooks" / CHAPTERS[1])
    i18n.write_translation(course, "zh", "notebooks", Path(CHAPTERS[1]).stem, cell.id, "中文。", cell.source)
    first, second = tmp_path_factory.mktemp("first"), tmp_path_factory.mktemp("second")
    i18n.build(course, "zh", out=first)
    i18n.build(course, "zh", out=second)
    files = sorted(path.relative_to(first) for path in first.rglob("*.ipynb"))
    assert len(files) == 3 * len(CHAPTERS)
    for relative in files:
        assert (first / relative).read_bytes() == (second / relative).read_bytes()
    assert i18n.build(course, "zh", out=first) == []  # nothing to rewrite


def test_a_catalogue_entry_without_its_cell_id_is_refused_with_the_file_name(course, capsys):
    path = i18n.translation_path(course, "zh", "notebooks", Path(CHAPTERS[0]).stem)
    path.parent.mkdir(parents=True)
    path.write_text('msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\nmsgid "English"\n'
                    'msgstr "中文"\n', encoding="utf-8")
    assert cli.main(["i18n", "check", "--root", str(course)]) == 2
    out = capsys.readouterr().out
    assert str(path) in out and "msgctxt" in out
    path.write_text('msgctxt "abc"\nmsgid "English"\nmsgstr "中文"\nnot a PO line\n', encoding="utf-8")
    assert cli.main(["i18n", "check", "--root", str(course)]) == 2
    assert str(path) in capsys.readouterr().out


TRICKY = ('# 标题 "quoted" \\ back\\slash\n\n\tA tab, a very long line ' + "词" * 150 + ' and `code`.\n'
          '- item\n  continued\n\n')


def test_a_catalogue_round_trips_every_character_and_rewrites_itself_identically(course):
    """What is written is what is read back, by polib and by an independent reader (GNU msgunfmt's view: the
    unescaped strings of each entry), and writing the same entry again changes no byte."""
    cell = first_markdown(course / "notebooks" / CHAPTERS[0])
    stem = Path(CHAPTERS[0]).stem
    path = i18n.write_translation(course, "zh", "notebooks", stem, cell.id, TRICKY, cell.source)
    entry = i18n.read_translations(path)[cell.id]
    assert (entry["zh"], entry["en"], entry["fuzzy"], entry["previous"]) == (TRICKY, cell.source, False, "")
    text = path.read_text(encoding="utf-8")
    assert f'msgctxt "{cell.id}"' in text and '"Language: zh\\n"' in text
    msgstr = text.split("msgstr ", 2)[2]  # the entry's msgstr: its quoted lines, joined and unescaped by hand
    quoted = re.findall(r'^"(.*)"$', msgstr, re.M)
    unescaped = "".join(quoted).replace("\\\\", "\0").replace("\\n", "\n").replace("\\t", "\t") \
        .replace('\\"', '"').replace("\0", "\\")
    assert unescaped == TRICKY
    i18n.write_translation(course, "zh", "notebooks", stem, cell.id, TRICKY, cell.source)
    assert path.read_text(encoding="utf-8") == text


# A changed English unit made fuzzy with its previous English: tests/coursekit/test_i18n_catalogues.py


def test_update_of_one_notebook_leaves_every_other_catalogue_as_it_is(course):
    first, second = (Path(name).stem for name in CHAPTERS)
    written = i18n.update(course, "zh", notebook=second[:2])
    assert written and all(second in path.name for path in written if path.suffix == ".po" and "LC_MESSAGES" not in
                           str(path))
    assert not list((course / "i18n").rglob(f"{first}*.po"))  # the other chapter's catalogues were not written
    assert any(first in path.name for path in i18n.update(course, "zh"))  # a plain update writes them


def test_strict_check_fails_on_one_fuzzy_entry_and_on_one_missing_entry(course, capsys):
    import polib

    for edition in i18n.SOURCE_EDITIONS:
        for name in CHAPTERS:
            for cell in exercises.read_notebook(course / edition / name).cells:
                if cell.cell_type == "markdown":
                    i18n.write_translation(course, "zh", edition, Path(name).stem, cell.id, "中文。", cell.source)
    for name in CHAPTERS:  # and the comments of the solutions' code cells (test_i18n_comments.py)
        comments = polib.pofile(str(i18n.translation_path(course, "zh", "solutions", Path(name).stem)))
        for cell_id, texts in code_comments(exercises.read_notebook(course / "solutions" / name)).items():
            for text in texts:
                comments.append(polib.POEntry(msgctxt=cell_id, msgid=text, msgstr="中文。"))
        comments.save()
    i18n.build(course, "zh")
    assert cli.main(["i18n", "check", "--strict", "--root", str(course)]) == 0
    path = i18n.translation_path(course, "zh", "solutions", Path(CHAPTERS[1]).stem)
    catalogue = polib.pofile(str(path))
    catalogue[0].flags.append("fuzzy")  # marked for review, its English unchanged
    catalogue.save()
    i18n.build(course, "zh")
    capsys.readouterr()
    assert cli.main(["i18n", "check", "--strict", "--root", str(course)]) == 1
    assert catalogue[0].msgctxt in capsys.readouterr().out
    catalogue[0].flags.remove("fuzzy")
    removed = catalogue.pop(1)
    catalogue.save()
    i18n.build(course, "zh")
    assert cli.main(["i18n", "check", "--strict", "--root", str(course)]) == 1
    assert f"cell {removed.msgctxt}: no translation" in capsys.readouterr().out
    catalogue.append(removed)
    catalogue.save()
    i18n.build(course, "zh")
    assert cli.main(["i18n", "check", "--strict", "--root", str(course)]) == 0


def test_the_repository_glossary_has_forty_terms_with_english():
    terms = i18n.read_glossary(REPO / "docs" / "glossary.md")
    assert len(terms) >= 40
    by_zh = {term.zh: term for term in terms}
    for chinese, english in (("掩码语言模型", "masked language model"), ("下一句预测", "next-sentence prediction"),
                             ("微调", "fine-tuning"), ("一句话蒸馏", "one-sentence distillation")):
        assert english in by_zh[chinese].en
    # no variant may be a Chinese term of its own, or the check would forbid a word the course must use
    assert not {variant for term in terms for variant in term.avoid} & set(by_zh)


# -------------------------------------------------------------------------------------------------- grading
# On the toy course of conftest.py (its metadata key, its `toycourse.checks`, whose lines follow TOYCOURSE_LANG).

SOLUTION_CELL = "### BEGIN SOLUTION\nanswer = 6 * 7\n### END SOLUTION"
CHECK_CELL = "from toycourse.checks import check_equal, done\ncheck_equal('answer', answer, 42)\ndone('9.1')"


def write_toy(root, monkeypatch):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 09 · Toy\n\nCompute the answer."),
                nbformat.v4.new_code_cell(SOLUTION_CELL, metadata={"toycourse": {"exercise": "9.1", "role": "solution"}}),
                nbformat.v4.new_code_cell(CHECK_CELL, metadata={"toycourse": {"exercise": "9.1", "role": "check"}})]
    for index, cell in enumerate(nb.cells):
        cell.id = f"toy-{index}"
    (root / "solutions").mkdir(parents=True)
    nbformat.write(nb, str(root / "solutions" / "09_toy.ipynb"))
    (root / "docs").mkdir()
    shutil.copy(REPO / "docs" / "glossary.md", root / "docs" / "glossary.md")
    copy_kit_catalogue(root)
    i18n.write_translation(root, "zh", "solutions", "09_toy", "toy-0", "# 09 · 玩具\n\n算出答案。", nb.cells[0].source)
    shutil.copy(TOYCOURSE / "pyproject.toml", root / "pyproject.toml")  # root is a toy course with a Chinese edition
    monkeypatch.setenv("COURSEKIT_ROOT", str(root))
    i18n.build(root, "zh")


def test_a_chinese_submission_runs_the_same_cells_as_the_english_one(tmp_path, toy_course, monkeypatch):
    write_toy(tmp_path, monkeypatch)
    exercises.build(tmp_path / "solutions", tmp_path / "exercises")
    solution_paths = [tmp_path / "solutions" / "09_toy.ipynb"]
    solution = exercises.read_notebook(solution_paths[0])
    for folder in ("solutions", "exercises"):
        english = exercises.read_notebook(tmp_path / folder / "09_toy.ipynb")
        chinese = exercises.read_notebook(tmp_path / folder / "zh" / "09_toy.ipynb")
        if folder == "exercises":  # the same cells, but for the stubs' comment and message
            assert i18n.exercise_texts(REPO, "zh").comment in chinese.cells[1].source
            assert 'raise NotImplementedError("练习 9.1：在此写下你的代码")' in chinese.cells[1].source
            chinese.cells = nbformat.from_dict(with_english_stubs(chinese.cells))
        assert grading.grading_cells(chinese, solution) == grading.grading_cells(english, solution)
        assert grading.identify(tmp_path / folder / "zh" / "09_toy.ipynb", solution_paths).solution == \
            solution_paths[0]
    renamed = tmp_path / "作业.ipynb"  # a learner's renamed copy is still found by the chapter id in its metadata
    shutil.copy(tmp_path / "exercises" / "zh" / "09_toy.ipynb", renamed)
    plan = grading.identify(renamed, solution_paths)
    assert plan.solution == solution_paths[0] and plan.how == "the chapter id in its metadata"


@pytest.mark.slow
def test_coursekit_grade_grades_a_chinese_submission_against_the_english_solutions(tmp_path, toy_course,
                                                                                 monkeypatch):
    write_toy(tmp_path, monkeypatch)
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    # One kernel start (the blank copy's cells are the English exercise's, proven by the test above).
    shutil.copy(tmp_path / "solutions" / "zh" / "09_toy.ipynb", submissions / "作业_09.ipynb")
    wrong = nbformat.read(str(tmp_path / "solutions" / "zh" / "09_toy.ipynb"), as_version=4)
    wrong.cells[1].source = wrong.cells[1].source.replace("6 * 7", "6 * 8")
    nbformat.write(wrong, str(submissions / "错误_09.ipynb"))
    rows = grading.grade([submissions], tmp_path / "grades.csv", solutions_dir=tmp_path / "solutions", timeout=120)
    assert [(Path(row["notebook"]).name, row["exercise"], row["status"], row["score"]) for row in rows] == [
        ("作业_09.ipynb", "9.1", "passed", 1), ("错误_09.ipynb", "9.1", "failed", 0)]
    # The feedback of a Chinese submission is in Chinese: the runner passes the notebook's language to the kernel.
    assert re.search("[\u4e00-\u9fff]", rows[1]["message"]), rows[1]["message"]


def test_runtime_strings_of_a_cell_are_found_as_templates():
    source = ('ax.set_title(f"block {layer}, head {head}: attends to the {pattern}")\n'
              'ax.set(xlabel="epoch", ylabel="training accuracy")\ncheck_equal("x", x, 1, hint="4H with H = 768")\n'
              'plt.plot(x, y, label=f"measured ({len(slots)} tokens)")\n%matplotlib inline')
    assert i18n.runtime_strings(source) == ["block {layer}, head {head}: attends to the {pattern}", "epoch",
                                            "training accuracy", "4H with H = 768", "measured ({len} tokens)"]


def test_runtime_strings_cover_ticks_texts_and_the_spread_plot():
    source = ('evidence.show_spread(d, f"{key}: minus 80/10/10 ({STEPS} steps)", "accuracy (points)")\n'
              'ax.set_xticks(range(2), ["IsNext", "NotNext"])\nax.text(0, 1, "forward stack")\n'
              'ax.errorbar(0, 1, label="median and range" if first else None)\nax.set_xlabel(f"{value}%")')
    assert i18n.runtime_strings(source) == ["{key}: minus 80/10/10 ({STEPS} steps)", "accuracy (points)", "IsNext",
                                            "NotNext", "forward stack", "median and range"]  # "{value}%": no word


def test_strings_marked_with_underscore_are_runtime_strings_wherever_they_go():
    # xgettext's keyword: a literal marked where the chapter writes it, whatever call prints or draws it; a
    # concatenated literal is one msgid, a name or an f-string passed to `_` is no literal, and `_` of a
    # method (`self._`) is not the keyword.
    source = ('print(_("seed {seed}: frozen features ").format(seed=1), x)\nax.set_title(_("the " "title"))\n'
              'for seed in course.progress(SEEDS, description=_("grid runs")):\n    pass\n'
              'print(_(name), _(f"head {h}"), self._("not marked"))\nprint("plain, not marked")')
    assert sorted(i18n.runtime_strings(source)) == ["grid runs", "seed {seed}: frozen features ", "the title"]


def test_figure_text_written_at_the_call_without_underscore_is_found():
    """Nothing patches matplotlib, so a title, label, tick or legend entry written as a literal must be marked with
    `_()` where it is written; what is marked, a name, a number or a hint (which its check translates) is not
    reported."""
    source = (
        'ax.set_title("Pretraining losses"); ax.set_xlabel(_("step")); ax.set_ylabel(f"loss at {n} steps")\n'
        'course.plot_lines({"with NSP": a, _("without NSP"): b}, title=_("NSP"), xlabel=label, ylabel="%")\n'
        'ax.set_xticks(range(2), ["masked LM", _("left-to-right")]); ax.plot(x, y, label="x" if a else "big model")\n'
        'check(value, hint="a hint its check translates")\n')
    assert i18n.unmarked_strings(source) == ["Pretraining losses", "loss at {n} steps", "with NSP", "masked LM",
                                             "big model"]
    assert i18n.unmarked_strings('course.plot_bars({_("MNLI"): 1.0}, title=_("Dev accuracy"))') == []


def test_every_figure_text_of_the_chapters_is_marked():
    """The check `coursekit i18n check --strict` runs over every chapter, solution and exercise."""
    assert i18n.unmarked_figure_text() == {}


def test_series_strings_follow_labels_through_loops_and_dicts_across_cells():
    cells = ['effects = {f"{task.upper()}: No NSP minus NSP": [1] for task in tasks}',
             'effects["MLM accuracy: No NSP minus NSP"] = [2]\nother = {"not shown": 1}',
             'links = {"no keep: trusts less": [1], "H=16": [2]}\nGROUPS = ("feed-forward", "pooler")',
             'show_spread(effects, "t", "y")\nshow_spread(links, title="t", ylabel="y")\n'
             'plot_grouped_bars({"series a": {"group b": 1.0}})',
             # a loop over literals fills a dict that a later cell plots (chapter 01's telephone task)
             'runs = {}\nfor name, causal in (("left-to-right", True), ("bidirectional", False)):\n    runs[name] = 1',
             'plot_lines({name: run for name, run in runs.items()})',
             # a label held by a loop variable, through a tuple of tuples, zip, enumerate and a named tuple
             'for seconds, label in ((a, "key-value cache"), (b, "re-encode")):\n    ax.plot(seconds, label=label)',
             'panels = [("signal", "Signal per token"), ("mask", "Mismatch")]\n'
             'for ax, (key, title) in zip(axes, panels):\n    ax.set(title=title)',
             'for offset, group in enumerate(GROUPS):\n    ax.bar(offset, 1, label=group)',
             'sets = {"Python docs (held out)": 1}\nax.set_xticks(range(1), list(sets))',
             'for name in other:\n    print(name)\nfor model in models:\n    ax.plot(1, label=model.name)',
             'parts, lengths = ("attention scores", "whole backbone"), (128, 512)\nax.bar(parts, [1, 2])',
             'shares = {"random": 0.1, "unchanged": 0.1}\nnames = list(shares)\nax.set_xticks(range(2), names)']
    assert sorted(i18n.series_strings(cells)) == sorted([
        "no keep: trusts less", "series a", "group b", "{task}: No NSP minus NSP", "MLM accuracy: No NSP minus NSP",
        "left-to-right", "bidirectional", "key-value cache", "re-encode", "Signal per token", "Mismatch",
        "feed-forward", "pooler", "Python docs (held out)", "attention scores", "whole backbone", "random",
        "unchanged"])
    # "not shown" is printed, never plotted; a model's name flows through an attribute, which is not followed


def test_unwrapping_keeps_the_markdown_structure_and_removes_gaps_between_chinese_characters():
    """On every Chinese text of the course, rendered by mistune (nbconvert's Markdown renderer)."""
    import re

    mistune = pytest.importorskip("mistune")
    render = mistune.create_markdown(plugins=["table"])
    cjk_break = re.compile(r"[\u2e80-\uffff]\n[\u2e80-\uffff]")
    texts = [entry["zh"] for path in sorted((REPO / "i18n" / "zh").rglob("*.po"))
             for entry in i18n.read_translations(path).values()]
    assert len(texts) > 50
    for text in texts:
        wrapped, unwrapped = render(text), render(i18n.unwrap_cjk(text))
        assert re.findall(r"</?\w+", wrapped) == re.findall(r"</?\w+", unwrapped), text[:80]
        assert not cjk_break.search(re.sub(r"<pre>.*?</pre>", "", unwrapped, flags=re.S)), text[:80]


# --- typesetting (`coursekit i18n check --strict`) -------------------------------------------------------------------

@pytest.mark.parametrize("bad, good", [
    ("BERT 是双向的 。", "BERT 是双向的。"),
    ("见 §3.1 ，这里", "见 §3.1，这里"),
    ("第一句。 第二句", "第一句。第二句"),
    ("论文（§3.1） 说", "论文（§3.1）说"),
    ("这就是 “深层双向”", "这就是“深层双向”"),
    ("模型 —— 它很大", "模型——它很大"),
    ("还有 ……", "还有……"),
    ("全角空格\u3000，", "全角空格，"),
])
def test_typesetting_refuses_a_space_against_full_width_punctuation(bad, good):
    problems = i18n.typesetting_problems(bad)  # one per space ("模型 —— 它": two)
    assert problems and all("full-width punctuation" in problem and bad[:3] in problem for problem in problems)
    assert i18n.typesetting_problems(good) == []


@pytest.mark.parametrize("bad, good", [
    ('它叫"深层双向"。', "它叫“深层双向”。"),
    ("它叫'深层双向'。", "它叫“深层双向”。"),
    ("它叫「深层双向」。", "它叫“深层双向”。"),
    ("它叫“深层双向“。", "它叫“深层双向”。"),
])
def test_typesetting_quotes_chinese_text_with_curly_quotes(bad, good):
    assert any("quote" in problem for problem in i18n.typesetting_problems(bad))
    assert i18n.typesetting_problems(good) == []


@pytest.mark.parametrize("bad, good", [
    ("##练习 1.1 · 注意力掩码", "## 练习 1.1 · 注意力掩码"),
    ("## 练习 1.1·注意力掩码", "## 练习 1.1 · 注意力掩码"),
    ("## 练习 1.1 ・ 注意力掩码", "## 练习 1.1 · 注意力掩码"),
    ("## 学习目标：", "## 学习目标"),
    ("## 学习目标 ##", "## 学习目标"),
    ("## **学习目标**", "## 学习目标"),
    ("学习目标\n--------\n\n正文。", "## 学习目标\n\n正文。"),
])
def test_typesetting_allows_one_heading_form(bad, good):
    (problem,) = i18n.typesetting_problems(bad)
    assert "heading" in problem and "学习目标" in problem or "注意力掩码" in problem
    assert i18n.typesetting_problems(good) == []


@pytest.mark.parametrize("bad", ["解读者观点：论文没有说。", "[解读者观点] 论文没有说。", "**解读者观点**论文没有说。",
                                 "【解读者观点】：论文没有说。", "我们的看法是论文没有说。"])
def test_typesetting_has_one_our_reading_marker(bad):
    (problem,) = i18n.typesetting_problems(bad)
    assert i18n.OUR_READING in problem
    assert i18n.typesetting_problems("一句事实。【解读者观点】论文没有说。") == []
    assert i18n.typesetting_problems("- 【解读者观点】列表里的标记。") == []


@pytest.mark.parametrize("bad, good", [
    ("这是** 重点**。", "这是**重点**。"),
    ("这是**重点 **。", "这是**重点**。"),
    ("这是 **重点** 内容。", "这是**重点**内容。"),
    ("这是 *重点*。", "这是*重点*。"),
    ("第一，**不带** 任何东西。", "第一，**不带**任何东西。"),
])
def test_typesetting_emphasis_has_no_stray_spaces(bad, good):
    (problem,) = i18n.typesetting_problems(bad)
    assert "emphasis" in problem
    assert i18n.typesetting_problems(good) == []


@pytest.mark.parametrize("text", [
    "在读到 **invented the telephone** 之前，模型已经算好了 **Bell** 的表示。",  # Latin keeps its space
    '代码 `print("中文")` 和 `x , y` 不算。',
    "数学 $a , b$ 和 $$\\text{“x” ,}$$ 不算。",
    "链接 [导读](https://example.com/a ,b) 和 https://example.com/“x” 不算。",
    "```python\nprint('中文') ，\n```\n\n正文。",
    "| 列 | 说明 |\n|---|---|\n| 一 | 二。 |",
    "- “列表”开头的引号，\n1. （编号）列表，\n> “引文”。",
    "## L3 · “ELMo 也是双向的”",
    "BERT's 词表 and GPT's 词表。",
    "$2 * 3 * 4$，以及 2 * 3 * 4。",
])
def test_typesetting_leaves_code_math_urls_and_markdown_layout_alone(text):
    assert i18n.typesetting_problems(text) == []


def test_strict_check_names_the_file_the_cell_and_the_text_of_a_typesetting_problem(course):
    cell = first_markdown(course / "solutions" / CHAPTERS[0])
    stem = Path(CHAPTERS[0]).stem
    i18n.write_translation(course, "zh", "solutions", stem, cell.id, "# 标题\n\n这是 “深层双向” 。", cell.source)
    i18n.build(course, "zh")
    coverage = i18n.check(course, "zh")
    assert len(coverage.typesetting) == 3  # the three spaces
    line = i18n.read_entries(i18n.translation_path(course, "zh", "solutions", stem))[0]["line"]
    assert all(text.startswith(f"i18n/zh/solutions/{stem}.po:{line}, cell {cell.id}: ") for text in coverage.typesetting)
    assert "“深层双向”" in coverage.typesetting[0]
    assert not coverage.failures(strict=False) and set(coverage.typesetting) <= set(coverage.failures(strict=True))
    i18n.write_translation(course, "zh", "solutions", stem, cell.id, "# 标题\n\n这是“深层双向”。", cell.source)
    assert i18n.check(course, "zh").typesetting == []


def test_unwrapping_joins_a_line_ending_in_full_width_punctuation_without_a_space():
    assert i18n.unwrap_cjk("第一句。\nBERT 是双向的，\n`x` 也是") == "第一句。BERT 是双向的，`x` 也是"
    assert i18n.unwrap_cjk("the `x`\n值") == "the `x` 值"


def test_unwrapping_leaves_a_fenced_block_inside_a_list_item_alone():
    # zh/05x before this rule: the list item's fence and its two command lines were joined into one line.
    fenced = "  ```\n  gcloud compute tpus tpu-vm ssh NAME \\\n      --command=\"...\"\n  ```"
    text = f"- **有 4 台主机的 TPU Pod 切片**：然后在所有主机上\n  同时运行同一条命令：\n\n{fenced}\n\n  在 Pod 上"
    assert i18n.unwrap_cjk(text) == f"- **有 4 台主机的 TPU Pod 切片**：然后在所有主机上同时运行同一条命令：\n\n{fenced}\n\n  在 Pod 上"


# Each `MARK_RULES` rule on a sentence of the Chinese chapters as they stood before issue 39 (bad) and as corrected.
@pytest.mark.parametrize("bad, good, rule", [
    ("第 07 章会再回到这一点。", "第 7 章会再回到这一点。", "zero-padded chapter"),
    ("这是第 [05](05_recipe.ipynb) 章的两条岔路", "这是第 [5](05_recipe.ipynb) 章的两条岔路", "zero-padded chapter"),
    ("衰减直线从第 0 步起就是", "衰减直线从第一步（`step = 0`）起就是", "zero-based index"),
    ("提升来自预训练目标和规模（第 3-5 章）。", "提升来自预训练目标和规模（第 3–5 章）。", "hyphen in a number range"),
    ("主要结果（§4.1-4.4）", "主要结果（§4.1–4.4）", "hyphen in a number range"),
    ("准确率达到 97-98%", "准确率达到 97%–98%", "hyphen in a number range"),
    ("同时把“Bell”、“invented”和问题里的“who”", "同时把“Bell”“invented”和问题里的“who”", "顿号"),
    ("再加上嵌入，(词表大小 + 512 + 2)·H。", "再加上嵌入，（词表大小 + 512 + 2）·H。", "half-width punctuation"),
    ("`ABSTRACT` 以 (分数, 绝对提升) 的形式", "`ABSTRACT` 以（分数，绝对提升）的形式", "half-width punctuation"),
    ("拼接出的 [左状态; 右状态] 把两者", "拼接出的 [左状态；右状态] 把两者", "half-width punctuation"),
    ("本课程讲 BERT（Devlin et al., 2018,“BERT: Pre-training”）", "本课程讲 BERT（《BERT: Pre-training》，Devlin et al., 2018）",
     "half-width punctuation"),
    ("注意: 这里", "注意：这里", "half-width punctuation"),
    ("GPT：单向＋微调。", "GPT：单向 + 微调。", "full-width letter, digit or operator"),
    ('论文说每个词都能 "see itself"。', "论文说每个词都能“see itself”。", "straight quotes"),
])
def test_typesetting_catches_the_marks_of_issue_39(bad, good, rule):
    assert any(rule in problem for problem in i18n.typesetting_problems(bad)), i18n.typesetting_problems(bad)
    assert i18n.typesetting_problems(good) == []


@pytest.mark.parametrize("text", [
    "放在 Colab TPU v2-8（8 个副本）上", "学习率是 2e-3，SST-2 和 GPT-2 都不算范围。", "代码 `第 05 章` 和 `f(x, y)` 不算。",
    "数学 $1-4$ 和 $(a, b)$ 不算。", "第 0 章是总览。", "按第 12 层词元 3 的状态。", "English only, (a): b; c? 1-4",
    "见 [图](https://example.com/a,b(c)) 和 ![图](x.png)。",
])
def test_the_marks_rules_leave_legitimate_text_alone(text):
    assert i18n.typesetting_problems(text) == []


def test_the_term_list_holds_one_rendering_per_word_and_reads_prose_only():
    terms = i18n.read_glossary(REPO / "docs" / "glossary.md")
    bad = ("检查单元会用你的权重构建。每个编码器块 12H²。见上面的打印。正向模型用因果掩码。生成时用不了 KV 缓存。"
           "`[CLS]` 摘要向量 C。唯一的区别就是 LSTM 对 Transformer。")
    found = i18n.glossary_problems(bad, terms)
    for variant, chosen in (("单元", "单元格"), ("编码器块", "层"), ("的打印", "输出"), ("正向", "前向"),
                            ("KV 缓存", "键值缓存"), ("摘要向量", "聚合表示"), ("LSTM 对 Transformer", "还是用")):
        assert any(f"uses {variant!r}" in problem and chosen in problem for problem in found), (variant, found)
    good = ("检查单元格会用你的权重构建。每个编码器层 12H²。见上面的输出。前向模型用因果掩码。生成时用不了键值缓存。"
            "`[CLS]` 的聚合表示 C。唯一的区别就是用 LSTM 还是用 Transformer。在 `with` 块内，16 块芯片。")
    assert i18n.glossary_problems(good, terms) == []
    # the variant inside the chosen term is the term; code and URLs are not prose
    assert i18n.glossary_problems("运行解答单元格；`KV 缓存` 和 https://example.com/正向 不算。", terms) == []
