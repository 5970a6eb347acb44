"""Catalogues as translators expect (`coursekit.i18n`): one entry per paragraph, list item, table, heading or fence,
`.pot` templates merged into each language as GNU msgmerge merges them, languages found as folders, malformed
catalogues refused with their file and line before anything is written, and the migration of whole-cell
catalogues that keeps every translation and the built edition byte for byte."""

import json
import shutil
import subprocess
from pathlib import Path

import polib
import pytest

from coursekit import cli, i18n

REPO = Path(__file__).resolve().parents[2]
CHAPTER = "01_problem_setting.ipynb"
STEM = Path(CHAPTER).stem


@pytest.fixture()
def course(tmp_path, chapters_course):
    """One real chapter (notebooks/, solutions/) and the glossary in a temporary repository, a course of its own."""
    for edition in i18n.SOURCE_EDITIONS:
        (tmp_path / edition).mkdir()
        shutil.copy(REPO / edition / CHAPTER, tmp_path / edition / CHAPTER)
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "docs" / "glossary.md", tmp_path / "docs" / "glossary.md")
    return chapters_course(tmp_path)


def markdown_cells(path):
    return [cell for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
            if cell["cell_type"] == "markdown"]


def set_cell(path, cell_id, text):
    nb = json.loads(path.read_text(encoding="utf-8"))
    next(cell for cell in nb["cells"] if cell.get("id") == cell_id)["source"] = text
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


CELL = """# A heading

A first paragraph that says
something over two lines.

- an item
- another item, with `code`

| a | b |
|---|---|
| 1 | 2 |

```python
x = 1  # a fence
```

A last paragraph."""


def test_a_cell_splits_into_units_and_joins_back_byte_for_byte():
    blocks = i18n.split_blocks(CELL)
    assert [block.kind for block in blocks.blocks] == ["heading", "paragraph", "list_item", "list_item", "table",
                                                       "fence", "paragraph"]
    assert blocks.texts[1] == "A first paragraph that says\nsomething over two lines."
    assert blocks.texts[5] == "```python\nx = 1  # a fence\n```" and blocks.blocks[5].info == "python"
    assert blocks.join() == CELL
    assert blocks.join(text.upper() for text in blocks.texts) == CELL.upper()
    for text in ("", "\n\nonly text\n\n", "# title\n", "a\n\n\n\nb\n", "[ref]: https://example.org\n\ntext"):
        assert i18n.split_blocks(text).join() == text
    # every markdown cell of the course comes back byte for byte
    for edition in i18n.SOURCE_EDITIONS:
        for path in sorted((REPO / edition).glob("*.ipynb")):
            for cell in markdown_cells(path):
                text = "".join(cell["source"])
                assert i18n.split_blocks(text).join() == text, (path.name, cell["id"])


def fill(path, translate):
    catalogue = polib.pofile(str(path))
    for entry in catalogue:
        if not entry.obsolete and not entry.msgstr:
            entry.msgstr = translate(entry)
    catalogue.save()


def test_update_writes_templates_and_merges_a_changed_paragraph_as_msgmerge_does(course):
    notebook = course / "notebooks" / CHAPTER
    first = markdown_cells(notebook)[0]
    english = "".join(first["source"])
    written = i18n.update(course, "zh")
    template = i18n.template_path(course, "notebooks", STEM)
    po = i18n.translation_path(course, "zh", "notebooks", STEM)
    assert template in written and po in written and template.suffix == ".pot"
    units = i18n.split_blocks(english).texts
    assert len(units) >= 3
    assert [entry.msgid for entry in polib.pofile(str(template)) if entry.msgctxt == first["id"]] == units
    fill(po, lambda entry: f"中文{len(entry.msgid)}。")
    i18n.build(course, "zh")
    built = markdown_cells(course / "notebooks" / "zh" / CHAPTER)[0]
    assert "".join(built["source"]) == i18n.split_blocks(english).join(f"中文{len(text)}。" for text in units)
    before = po.read_text(encoding="utf-8")

    # The author edits a word of the last paragraph and inserts a paragraph before it.
    edited = units[-1].replace(" ", "  ", 1)
    assert edited != units[-1]
    changed = english[: english.rindex(units[-1])] + "A new paragraph.\n\n" + edited
    set_cell(notebook, first["id"], changed)
    assert po in i18n.update(course, "zh")
    entries = {entry.msgid: entry for entry in polib.pofile(str(po)) if entry.msgctxt == first["id"]}
    for unit in units[:-1]:  # the neighbours keep their translation, not fuzzy
        assert entries[unit].msgstr == f"中文{len(unit)}。" and "fuzzy" not in entries[unit].flags
    assert "fuzzy" in entries[edited].flags and entries[edited].previous_msgid == units[-1]
    assert entries[edited].msgstr == f"中文{len(units[-1])}。"
    assert entries["A new paragraph."].msgstr == ""
    text = po.read_text(encoding="utf-8")
    assert "#, fuzzy" in text and "#| msgid" in text  # what msgmerge writes, what Poedit and Weblate read
    coverage = i18n.check(course, "zh")
    stale = [line for line in coverage.stale if first["id"] in line]
    missing = [line for line in coverage.missing if first["id"] in line]
    assert len(stale) == 1 and f"{po.relative_to(course)}:" in stale[0] and len(missing) == 1
    assert i18n.update(course, "zh") == []  # a second update changes nothing

    msgmerge = shutil.which("msgmerge")
    if not msgmerge:
        pytest.skip("GNU gettext's msgmerge is not installed: the merge is not compared with it")
    if msgmerge:  # the independent reference: GNU gettext merges the same template into the same catalogue
        (course / "before.po").write_text(before, encoding="utf-8")
        subprocess.run([msgmerge, "--quiet", "--previous", "-o", str(course / "gnu.po"), str(course / "before.po"),
                        str(template)], check=True)

        def key(entry):
            return entry.msgctxt, entry.msgid, entry.msgstr, "fuzzy" in entry.flags, entry.previous_msgid, \
                entry.obsolete

        assert sorted(map(key, polib.pofile(str(course / "gnu.po")))) == sorted(map(key, polib.pofile(str(po))))


def test_languages_are_the_folders_of_po_files_and_a_new_one_needs_nothing_else(course, capsys):
    assert i18n.languages(course) == []
    assert cli.main(["i18n", "check", "--root", str(course)]) == 2
    assert "no languages" in capsys.readouterr().out
    assert cli.main(["i18n", "update", "--lang", "fr", "--root", str(course)]) == 0
    assert cli.main(["i18n", "update", "--lang", "zh", "--root", str(course)]) == 0
    assert i18n.languages(course) == ["fr", "zh"]  # templates/ is no language
    assert (course / "i18n" / "templates" / "notebooks" / f"{STEM}.pot").is_file()
    fill(i18n.translation_path(course, "fr", "notebooks", STEM), lambda entry: f"[fr] {entry.msgid}")
    assert cli.main(["i18n", "build", "--root", str(course)]) == 0
    for edition in ("notebooks", "solutions", "exercises"):
        assert (course / edition / "fr" / CHAPTER).is_file() and (course / edition / "zh" / CHAPTER).is_file()
    shown = "".join(markdown_cells(course / "notebooks" / "fr" / CHAPTER)[0]["source"])
    assert shown.startswith("[fr] ")


def test_the_course_settings_name_the_folders(course):
    (course / "pyproject.toml").write_text('[tool.coursekit]\nnotebooks = "chapters"\ntranslations = "locale"\n',
                                           encoding="utf-8")
    (course / "notebooks").rename(course / "chapters")
    i18n.update(course, "zh")
    assert (course / "locale" / "templates" / "notebooks" / f"{STEM}.pot").is_file()
    assert i18n.translation_path(course, "zh", "notebooks", STEM) == course / "locale" / "zh" / "notebooks" / \
        f"{STEM}.po"
    assert not (course / "i18n").exists()
    i18n.build(course, "zh")
    assert (course / "chapters" / "zh" / CHAPTER).is_file() and not (course / "notebooks").exists()


@pytest.mark.parametrize("bad, found", [
    ('msgctxt "c1"\nmsgid "A"\nmsgstr "甲"\n\nmsgctxt "c1"\nmsgid "A"\nmsgstr "乙"\n', "a second entry"),
    ('msgid "A"\nmsgstr "甲"\n', "needs a msgctxt"),
    ('msgctxt "c1"\nmsgid "A"\nmsgstr "甲"\nnot a PO line\n', "not a readable PO file"),
])
def test_a_malformed_catalogue_is_named_with_its_line_and_nothing_is_written(course, capsys, bad, found):
    i18n.update(course, "zh")
    good = i18n.translation_path(course, "zh", "notebooks", STEM)
    fill(good, lambda entry: "中文。")
    broken = i18n.translation_path(course, "zh", "solutions", STEM)
    header = 'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    broken.write_text(header + bad, encoding="utf-8")
    assert cli.main(["i18n", "build", "--root", str(course)]) == 2
    out = capsys.readouterr().out
    assert str(broken) in out and found in out
    if "readable" not in found:
        assert f"{broken}:" in out  # the line of the entry
    assert not (course / "notebooks" / "zh").exists()  # the good catalogue's edition was not half-written


def mark(block, index):
    """A stand-in translation of one unit that keeps its Markdown kind (a fence stays as it is)."""
    return block.text if block.kind in ("fence", "code_block", "html_block") else f"{block.text}【{index}】"


def whole_cell_catalogues(course):
    """Whole-cell catalogues (the format before units) of the chapter, translated unit by unit, with one cell
    whose translation joins two English paragraphs into one."""
    for edition in i18n.SOURCE_EDITIONS:
        for cell in markdown_cells(course / edition / CHAPTER):
            english = "".join(cell["source"])
            blocks = i18n.split_blocks(english)
            translation = blocks.join(mark(block, index) for index, block in enumerate(blocks.blocks))
            i18n.write_translation(course, "zh", edition, STEM, cell["id"], translation, english)
    merged = next(cell for cell in markdown_cells(course / "notebooks" / CHAPTER)
                  if len(i18n.split_blocks("".join(cell["source"])).blocks) >= 3
                  and i18n.split_blocks("".join(cell["source"])).blocks[1].kind == "paragraph"
                  and i18n.split_blocks("".join(cell["source"])).blocks[2].kind == "paragraph")
    english = "".join(merged["source"])
    blocks = i18n.split_blocks(english)
    joined = blocks.separators[0] + "".join(mark(block, index) + separator for index, (block, separator)
                                            in enumerate(zip(blocks.blocks, blocks.separators[1:])) if index != 1)
    i18n.write_translation(course, "zh", "notebooks", STEM, merged["id"], joined, english)
    for path in (course / "i18n" / "zh").rglob("*.po"):  # as the files of before were written: no format header
        catalogue = polib.pofile(str(path))
        del catalogue.metadata["X-Coursekit-Format"]
        catalogue.save()
    return merged["id"], joined


def test_migration_keeps_every_translation_and_the_built_edition_byte_for_byte(course, capsys):
    merged_id, merged_text = whole_cell_catalogues(course)
    i18n.build(course, "zh", out=course / "before")
    old = {path: i18n.read_entries(path) for path in sorted((course / "i18n" / "zh").rglob("*.po"))}
    with pytest.raises(i18n.TranslationFormatError, match="migrate"):  # no merge into whole cells: that loses them
        i18n.update(course, "zh")
    assert not (course / "i18n" / "templates").exists()  # refused before anything was written
    assert cli.main(["i18n", "migrate", "--root", str(course)]) == 0
    out = capsys.readouterr().out
    assert f"cell {merged_id} kept whole" in out
    i18n.build(course, "zh", out=course / "after")
    for path in sorted((course / "before").rglob("*.ipynb")):
        assert path.read_bytes() == (course / "after" / path.relative_to(course / "before")).read_bytes()
    for path, entries in old.items():
        new = i18n.read_entries(path)
        assert len(new) > len(entries)  # cells were split
        for entry in entries:  # each translation is an entry's, or the join of its units' in the English's places
            units = [unit["translation"] for unit in new if unit["cell"] == entry["cell"]]
            blocks = i18n.split_blocks(entry["en"])
            assert entry["translation"] in units or len(units) == len(blocks.blocks) and blocks.join(units) == entry["translation"]
    assert any(unit["translation"] == merged_text for unit in i18n.read_entries(i18n.translation_path(course, "zh",
                                                                                                "notebooks", STEM)))
    # the migrated catalogues then merge with the templates without losing or staling anything, and build the same
    i18n.update(course, "zh")
    assert not i18n.check(course, "zh").stale
    i18n.build(course, "zh", out=course / "updated")
    for path in sorted((course / "before").rglob("*.ipynb")):
        assert path.read_bytes() == (course / "updated" / path.relative_to(course / "before")).read_bytes()
