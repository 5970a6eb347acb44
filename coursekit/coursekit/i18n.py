"""The Chinese edition, built from the English notebooks: `coursekit i18n build|check|todo|update`.

One source, two editions. The English notebooks (`notebooks/`, `solutions/`) stay the only notebooks anyone
edits. The Chinese text of their markdown cells lives next to them in gettext catalogues, one per notebook:

    i18n/zh/notebooks/01_problem_setting.po
    i18n/zh/solutions/01_problem_setting.po

one entry per markdown cell: `msgctxt` the cell id, `msgid` the English the Chinese was written from, `msgstr` the
Chinese, so translators work in Poedit, Weblate or any PO editor. When the English cell changes, its msgid no
longer matches: `check` shows what changed, and `update` writes the gettext state for it (as msgmerge does: the new
English as msgid, `#, fuzzy`, the English the Chinese was written from as `#| msgid`), which the editors show as
needing review; it also adds an empty entry for each cell without one. A fuzzy or empty entry counts as no Chinese.

`build` writes `notebooks/zh/`, `solutions/zh/` and `exercises/zh/`:

- every code cell is copied from the English notebook (source, outputs, metadata), so the code of the two
  editions cannot drift; the outputs are the English run's unless the Chinese notebook holds its own full run of
  exactly this code (`tools/run_notebook.py --full notebooks/zh/...`, `make full`), which are kept
  (`keep_own_run`); `exercises/zh/` is built from `solutions/zh/` by the same function as `exercises/`,
  whose stubs then say `# 在此写下你的代码` and `练习 3.2：在此写下你的代码` where the English say `# YOUR CODE HERE`
  and `Exercise 3.2: write your code here` (the only difference; both raise NotImplementedError);
- every markdown cell gets its Chinese text; a cell without Chinese text, or whose Chinese was written for an
  earlier English text, keeps its English with a one-line note, so the edition is always complete and honest;
- the notebook metadata gets `"<metadata_key>": {"lang": "zh", ...}` (the course's `[tool.coursekit]` key, `"bertlib"`
  here), which `bertlib_course.messages.language()` reads;
- the course's runtime catalogue (the `.po` its `runtime_catalogue(lang)` hook names: check messages, figure and
  hint strings) is compiled to the `.mo` the course reads, when it lies in the repository.

`check` reports (a) markdown cells without Chinese text, (b) Chinese text whose English has changed or that is
marked fuzzy (stale), (c) generated notebooks (and the runtime `.mo`) that differ from what `build` would write,
(d) entries for cells that no longer exist, (e) words the glossary (`docs/glossary.md`) lists as variants not to
use, (f) relative links of the Chinese text that lead to no file from the generated notebook, (g) breaches of the typesetting rules (`typesetting_problems`:
spaces against full-width punctuation, quotes, headings, the 【解读者观点】 marker, emphasis, marks such as
第 05 章, 3-5 or a half-width comma beside Chinese), each naming the
translation file, the cell id and the text. By default it fails only on (c), (e), (f) and malformed files;
`--strict` also fails on (a), (b), (d) and (g), and on an edition that was never built.
"""

import ast
import collections
import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import polib

from coursekit import course, exercises
from coursekit.files import write_changed, write_text_atomically

LANGUAGES = ("zh",)
SOURCE_EDITIONS = ("notebooks", "solutions")  # edited by hand, in English
EXERCISES = "exercises"  # generated from solutions/ (and exercises/zh/ from solutions/zh/)
NOTES = {
    "zh": {
        "missing": "（本段尚无中文译文，暂以英文原文显示。）",
        "stale": "（英文原文已更新，本段中文译文待同步，暂以英文原文显示。）",
    },
}
LOCALES = {"zh": "zh_CN"}  # the PO header's Language
PO_WRAP = 120  # the line width polib wraps msgid and msgstr at (Poedit keeps a file's own wrapping)
GLOSSARY = Path("docs") / "glossary.md"
# Full-width punctuation of Chinese text (no space on either side of it, `typesetting_problems`), then the
# two-character dash and ellipsis, which follow the same rule.
FULL_WIDTH_MARKS = "，。、；：？！“”‘’（）《》〈〉【】「」『』"
DASH_AND_ELLIPSIS = ("——", "……")
# The one form of the marker for our own reading ("Our reading:" in the English), as in the study guide.
OUR_READING = "【解读者观点】"
OUR_READING_VARIANTS = ("我们的解读", "我们的看法", "我们的观点", "笔者认为", "笔者观点", "解读者的观点", "解读者看法")


class TranslationFormatError(ValueError):
    """A translation file that cannot be read as the convention of this module says; the message names it."""


def _text(source):
    return "".join(source) if isinstance(source, list) else str(source)


def translation_path(root, lang, edition, stem):
    """`<root>/i18n/<lang>/<edition>/<stem>.po`, the Chinese text of one English notebook."""
    return Path(root) / "i18n" / lang / edition / f"{stem}.po"


def new_catalogue(lang, project, comment=None):
    """An empty PO catalogue with the header gettext tools require (`msgfmt --check` accepts it); no dates, so
    rewriting a file changes only its entries."""
    catalogue = polib.POFile(wrapwidth=PO_WRAP)
    catalogue.header = comment or (f"The {lang} text of {project}, one entry per markdown cell (msgctxt: the cell "
                                   f"id).\nOpen it in Poedit or Weblate; `coursekit i18n build` writes the edition.")
    catalogue.metadata = {"Project-Id-Version": project, "Language": LOCALES.get(lang, lang), "MIME-Version": "1.0",
                          "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit",
                          "Plural-Forms": "nplurals=1; plural=0;"}
    return catalogue


def read_catalogue(path):
    """The polib catalogue at `path`, or a `TranslationFormatError` naming it."""
    try:
        return polib.pofile(str(path), wrapwidth=PO_WRAP)
    except (OSError, ValueError) as error:  # polib raises OSError on a syntax error
        raise TranslationFormatError(f"{path}: not a readable PO file ({error})") from error


def read_translations(path):
    """`{cell_id: {"en", "zh", "fuzzy", "previous"}}` of the translated entries of one catalogue (`{}` when it does
    not exist): `en` is the msgid, `previous` the `#| msgid` of a fuzzy entry (the English the Chinese was written
    from) or "". Untranslated (empty) and obsolete entries are left out: they hold no Chinese."""
    path = Path(path)
    if not path.exists():
        return {}
    entries, seen = {}, set()
    for entry in read_catalogue(path):
        if entry.obsolete:
            continue
        if not entry.msgctxt:
            raise TranslationFormatError(f"{path}: the entry {entry.msgid[:40]!r} needs a msgctxt (its cell id)")
        if entry.msgctxt in seen:
            raise TranslationFormatError(f"{path}: two entries for the cell {entry.msgctxt!r} (msgctxt)")
        seen.add(entry.msgctxt)
        if entry.msgstr.strip():
            entries[entry.msgctxt] = {"en": entry.msgid, "zh": entry.msgstr, "fuzzy": "fuzzy" in entry.flags,
                                      "previous": entry.previous_msgid or ""}
    return entries


def write_translation(root, lang, edition, stem, cell_id, zh, english_source):
    """Records the Chinese text of one cell, with the English it was written from (used when translating)."""
    path = translation_path(root, lang, edition, stem)
    catalogue = read_catalogue(path) if path.exists() else new_catalogue(lang, f"{edition}/{stem}.ipynb")
    entry = next((entry for entry in catalogue if entry.msgctxt == cell_id and not entry.obsolete), None)
    if entry is None:
        entry = polib.POEntry(msgctxt=cell_id)
        catalogue.append(entry)
    entry.msgid, entry.msgstr = _text(english_source), _text(zh)
    entry.flags = [flag for flag in entry.flags if flag != "fuzzy"]
    entry.previous_msgid = None
    write_text_atomically(path, str(catalogue))
    return path


def update_catalogue(path, lang, project, english):
    """Brings the catalogue at `path` up to date with `english` (`{cell_id: markdown}`, in notebook order), as
    msgmerge does: an entry whose English changed gets it as msgid, `#, fuzzy` and its old msgid as `#| msgid`
    (kept from an earlier change); a cell without entry gets an empty one. Entries of cells that are gone stay
    (`check` lists them). Returns True when the file changed."""
    path = Path(path)
    catalogue = read_catalogue(path) if path.exists() else new_catalogue(lang, project)
    before = str(catalogue)
    entries = {entry.msgctxt: entry for entry in catalogue if not entry.obsolete}
    for cell_id, text in english.items():
        entry = entries.get(cell_id)
        if entry is None:
            catalogue.append(polib.POEntry(msgctxt=cell_id, msgid=text, msgstr=""))
        elif entry.msgid != text:
            if entry.msgstr and "fuzzy" not in entry.flags:
                entry.flags.append("fuzzy")
                entry.previous_msgid = entry.msgid
            entry.msgid = text
    if str(catalogue) == before and path.exists():
        return False
    write_text_atomically(path, str(catalogue))
    return True


@dataclass
class Coverage:
    """What `check` found for one language: counts per edition and one line per problem, by kind."""

    markdown: dict = field(default_factory=dict)  # edition -> markdown cells
    translated: dict = field(default_factory=dict)  # edition -> cells with current Chinese text
    missing: list = field(default_factory=list)
    stale: list = field(default_factory=list)
    orphans: list = field(default_factory=list)
    generated: list = field(default_factory=list)  # generated files that differ, are missing or extra
    not_built: list = field(default_factory=list)
    glossary: list = field(default_factory=list)
    links: list = field(default_factory=list)  # relative links of the Chinese text that lead to no file
    typesetting: list = field(default_factory=list)  # breaches of `typesetting_problems` (fail under --strict)
    untranslated: list = field(default_factory=list)  # figure or hint text the runtime catalogue lacks (--strict)
    unmarked: list = field(default_factory=list)  # figure text written at the call without `_()` (--strict)
    runtime_checked: bool = True  # False: the course names no runtime catalogue (its `runtime_catalogue` hook)

    def failures(self, strict):
        found = self.generated + self.glossary + self.links
        if strict:
            found += (self.missing + self.stale + self.orphans + self.not_built + self.typesetting + self.untranslated
                      + self.unmarked)
        return found

    def summary(self):
        parts = [f"{edition}: {self.translated.get(edition, 0)}/{count} markdown cells translated"
                 for edition, count in self.markdown.items()]
        return (f"{'; '.join(parts)}; {len(self.missing)} missing, {len(self.stale)} stale, "
                f"{len(self.orphans)} orphaned, {len(self.generated)} generated files out of date"
                f"{', edition not built' if self.not_built else ''}, {len(self.glossary)} glossary violations, "
                f"{len(self.links)} broken links, {len(self.typesetting)} typesetting problems, "
                + (f"{len(self.untranslated)} hints and figure texts without Chinese, {len(self.unmarked)} figure "
                   f"texts without _()" if self.runtime_checked
                   else "hints and figure texts not checked (the course's hooks name no runtime_catalogue)"))


def english_notebooks(root, edition):
    folder = Path(root) / edition
    return sorted(folder.glob("*.ipynb")) if folder.is_dir() else []


def translate_notebook(nb, entries, lang="zh"):
    """The `lang` edition of an English notebook (a new object): markdown from `entries`, everything else copied.

    Returns `(notebook, status)` where status maps each markdown cell id to "ok", "missing" or "stale".
    """
    translated = json.loads(json.dumps(nb))  # a deep copy, plain dicts
    status = {}
    for cell in translated["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        english = _text(cell["source"])
        entry = entries.get(cell["id"])
        if entry is None:
            state, text = "missing", f"{NOTES[lang]['missing']}\n\n{english}"
        elif entry["fuzzy"] or entry["en"] != english:
            state, text = "stale", f"{NOTES[lang]['stale']}\n\n{english}"
        else:
            state, text = "ok", unwrap_cjk(entry["zh"])
        status[cell["id"]] = state
        cell["source"] = text
    key = course.setting("metadata_key")
    info = translated["metadata"].get(key)
    translated["metadata"][key] = {**(info if isinstance(info, dict) else {}), "lang": lang}
    return nbformat.from_dict(translated), status


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
        if fenced or lines[0].startswith(("    ", "\t", "|", "```")) or block.count("```") % 2:
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


def expected_edition(root, lang="zh"):
    """`{relative path: text}` of every generated file of the `lang` edition, and `{(edition, stem): status}`."""
    root = Path(root)
    files, statuses = {}, {}
    for edition in SOURCE_EDITIONS:
        for path in english_notebooks(root, edition):
            nb = exercises.read_notebook(path)
            entries = read_translations(translation_path(root, lang, edition, path.stem))
            translated, status = translate_notebook(nb, entries, lang)
            keep_own_run(translated, root / edition / lang / path.name, lang)
            statuses[(edition, path.stem)] = (status, entries, nb)
            files[f"{edition}/{lang}/{path.name}"] = exercises.notebook_text(translated)
            if edition == "solutions":
                exercise = exercises.build_exercise_notebook(translated, str(path), lang)
                exercise.metadata[course.setting("metadata_key")]["lang"] = lang
                files[f"{EXERCISES}/{lang}/{path.name}"] = exercises.notebook_text(exercise)
    return files, statuses


def keep_own_run(translated, own_path, lang="zh"):
    """Gives `translated` the outputs of its own edition's full run (`tools/run_notebook.py --full` on
    `notebooks/zh/...`: figures, printed results and check messages in Chinese), where that run exists, ran in
    `lang` (its run record's `lang`; a record copied from the English run says "en" or nothing) and was made with
    this code (`exercises.outputs_belong`: its `code_sha256`, or a recorded move); else `translated` keeps the English outputs it was copied with.
    Returns True when the edition's own outputs were kept."""
    if not own_path.is_file():
        return False
    own = exercises.read_notebook(own_path)
    key = course.setting("metadata_key")
    run = own.metadata.get(key, {}).get("run", {})
    own_cells = {cell.get("id"): cell for cell in own.cells if cell.cell_type == "code"}
    code_cells = [cell for cell in translated.cells if cell.cell_type == "code"]
    if (run.get("mode") != "full" or run.get("lang") != lang or not exercises.outputs_belong(run, translated)
            or any(cell.get("id") not in own_cells for cell in code_cells)):
        return False
    for cell in code_cells:
        cell.outputs = own_cells[cell.id].outputs
        cell.execution_count = own_cells[cell.id].execution_count
    translated.metadata[key] = {**translated.metadata.get(key, {}), "run": run}
    return True


def build(root=None, lang="zh", out=None):
    """Writes the `lang` edition under `out` (default: the repository), removing stale generated notebooks.

    Returns the paths written or removed.
    """
    root = course.root_or(root)
    out = Path(out or root)
    notebooks, _ = expected_edition(root, lang)
    editions = [f"{edition}/{lang}" for edition in (*SOURCE_EDITIONS, EXERCISES)]
    return write_changed(out, notebooks, stale_folders=editions) + write_changed(out, compiled_catalogues(root, lang))


def update(root=None, lang="zh"):
    """Brings every catalogue up to date with the English (`update_catalogue`), and adds an empty entry to the
    runtime catalogue for each figure or hint string it lacks. Returns the paths written."""
    root = course.root_or(root)
    changed = []
    for edition in SOURCE_EDITIONS:
        for path in english_notebooks(root, edition):
            english = {cell.id: _text(cell.source) for cell in exercises.read_notebook(path).cells
                       if cell.cell_type == "markdown"}
            target = translation_path(root, lang, edition, path.stem)
            if update_catalogue(target, lang, f"{edition}/{path.name}", english):
                changed.append(target)
    runtime = own_runtime_catalogue(root, lang)
    lacking = untranslated_strings(root, lang) if runtime is not None else {}
    if lacking:
        catalogue = read_catalogue(runtime)
        present = {entry.msgid for entry in catalogue if not entry.msgctxt}
        for text in lacking:
            if text not in present:
                catalogue.append(polib.POEntry(msgid=text, msgstr="", flags=["python-brace-format"] * ("{" in text)))
        write_text_atomically(runtime, str(catalogue))
        changed.append(runtime)
    return changed


def check(root=None, lang="zh", glossary_path=None):
    """Returns the `Coverage` of the `lang` edition under `root` (default: the repository)."""
    root = course.root_or(root)
    files, statuses = expected_edition(root, lang)
    coverage = Coverage()
    for (edition, stem), (status, entries, nb) in statuses.items():
        coverage.markdown[edition] = coverage.markdown.get(edition, 0) + len(status)
        coverage.translated[edition] = coverage.translated.get(edition, 0) + sum(s == "ok" for s in status.values())
        english = {cell.id: _text(cell.source) for cell in nb.cells if cell.cell_type == "markdown"}
        for cell_id, state in status.items():
            where = f"{edition}/{stem}.ipynb, cell {cell_id}"
            if state == "missing":
                coverage.missing.append(f"{where}: no Chinese text")
            elif state == "stale":
                entry = entries[cell_id]
                coverage.stale.append(f"{where}: the English changed since the Chinese was written"
                                      f"{_change(entry['previous'] or entry['en'], english[cell_id])}")
        for cell_id in sorted(set(entries) - set(english)):
            coverage.orphans.append(f"{translation_path(root, lang, edition, stem).relative_to(root)}: cell "
                                    f"{cell_id} is no longer a markdown cell of {edition}/{stem}.ipynb")
    for edition in (*SOURCE_EDITIONS, EXERCISES):
        folder = root / edition / lang
        if not folder.is_dir():
            coverage.not_built.append(f"{edition}/{lang}/: not built (run `coursekit i18n build`)")
            continue
        for relative, text in files.items():
            if relative.startswith(f"{edition}/"):
                path = root / relative
                if not path.exists():
                    coverage.generated.append(f"{relative}: missing")
                elif path.read_text(encoding="utf-8") != text:
                    coverage.generated.append(f"{relative}: differs from the build")
        for path in sorted(folder.glob("*.ipynb")):
            if f"{edition}/{lang}/{path.name}" not in files:
                coverage.generated.append(f"{edition}/{lang}/{path.name}: extra (no English notebook of that name)")
    for relative, data in compiled_catalogues(root, lang).items():
        if not (root / relative).is_file() or (root / relative).read_bytes() != data:
            coverage.generated.append(f"{relative}: not compiled from its .po (run `coursekit i18n build`)")
    for (edition, stem), (_, entries, _) in statuses.items():
        for cell_id, entry in entries.items():
            for target in broken_links(entry["zh"], f"{edition}/{lang}", root, files):
                coverage.links.append(f"{edition}/{stem}.ipynb, cell {cell_id}: the link {target!r} leads nowhere "
                                      f"from {edition}/{lang}/ (links to the Chinese edition go to ../../<edition>/{lang}/)")
    terms = read_glossary(glossary_path or root / GLOSSARY)
    for (edition, stem), (_, entries, _) in statuses.items():
        for cell_id, entry in entries.items():
            for problem in glossary_problems(entry["zh"], terms):
                coverage.glossary.append(f"{edition}/{stem}.ipynb, cell {cell_id}: {problem}")
            for problem in typesetting_problems(unwrap_cjk(entry["zh"])):  # the text as the edition shows it
                coverage.typesetting.append(f"{translation_path(root, lang, edition, stem).relative_to(root)}, "
                                            f"cell {cell_id}: {problem}")
    runtime = runtime_catalogue(lang)
    if runtime is None:
        coverage.runtime_checked = False
        return coverage
    for entry in read_catalogue(runtime):  # figures, hints and messages use the glossary's terms too
        for problem in glossary_problems(entry.msgstr, terms) if entry.translated() else ():
            where = f"msgctxt {entry.msgctxt!r}, " if entry.msgctxt else ""
            coverage.glossary.append(f"{runtime.name}, {where}msgid {entry.msgid[:60]!r}: {problem}")
    for text, places in untranslated_strings(root, lang).items():
        coverage.untranslated.append(f"{places[0]}: shown in English (no Chinese in {runtime.name}): {text!r}")
    for text, places in unmarked_figure_text(root).items():
        coverage.unmarked.append(f"{places[0]}: figure text written without _(), so drawn in English in every "
                                 f"edition: {text!r} (write _({text!r}))")
    return coverage


MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def broken_links(text, folder, root, generated):
    """The relative link targets of `text` that name no file, read from `folder` (e.g. "notebooks/zh").

    A target counts when it is a file of `root` or one of the `generated` paths (the edition may not be built).
    """
    broken = []
    for target in MARKDOWN_LINK.findall(text):
        if re.match(r"^[a-z]+:|^#", target):
            continue
        resolved = (Path(folder) / target.split("#")[0]).as_posix()
        parts = []
        for part in resolved.split("/"):
            if part == "..":
                if not parts:
                    parts = None
                    break
                parts.pop()
            elif part not in ("", "."):
                parts.append(part)
        relative = "/".join(parts) if parts is not None else None
        if relative is None or not ((root / relative).exists() or relative in generated):
            broken.append(target)
    return broken


def _change(old, new):
    diff = [line for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    return f": {diff[0][:90]!r} …" if diff else " (whitespace only)"


# ------------------------------------------------------------------------------------------------------ glossary

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

    Code, math and URLs are not read (`_protected`), and a variant inside the term itself is the term: 单元 is
    the variant of 单元格, so 检查单元 counts and 检查单元格 does not.
    """
    shown = _protected(text)
    problems = []
    for term in terms:
        covered = {index for match in re.finditer(re.escape(term.zh), shown)
                   for index in range(match.start(), match.end())}
        for variant in term.avoid:
            found = [match for match in re.finditer(re.escape(variant), shown) if variant
                     and not set(range(match.start(), match.end())) <= covered]
            if found:
                problems.append(f"uses {variant!r} ({len(found)}×, e.g. "
                                f"{_snippet(text, found[0].start(), found[0].end(), 8)!r}); "
                                f"the glossary term for {term.en!r} is {term.zh!r}")
    return problems


# ---------------------------------------------------------------------------------------------------- typesetting

def _protected(text):
    """`text` with what the typesetting rules must not read blanked out, offsets kept: fenced code, inline code,
    math ($...$, $$...$$), HTML tags, link targets and bare URLs become runs of U+E000 (a neutral character)."""
    def blank(match):
        return "".join("\n" if char == "\n" else "\ue000" for char in match.group(0))

    for pattern in (r"(?ms)^\s*```.*?^\s*```[^\n]*$", r"(`+)(?:(?!\1).)+?\1", r"\$\$.+?\$\$", r"(?<![\\$])\$[^$\n]+?\$",
                    r"<[^>\n]+>", r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)", r"https?://[^\s)>\]]+"):
        text = re.sub(pattern, blank, text, flags=re.S)
    return text


def _snippet(text, start, end, margin=12):
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

    Code (fenced and inline), math, HTML tags, link targets and URLs are not read (`_protected`).
    """
    shown = _protected(text)
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
                                f"{_snippet(text, start + match.start(), start + match.end())!r}")
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
MARK_RULES = (
    (r"第\s*\[?0\d", "a zero-padded chapter number (write 第 5 章, not 第 05 章)"),
    (r"第\s*0(?![\d.])(?!\s*章)", "a zero-based index read as an ordinal (write 层 0, 头 2, 位置 0; 第 0 章 is a title)"),
    (r"(?<![A-Za-z0-9._-])\d+(?:\.\d+)*%?-\d", "a hyphen in a number range (write 3–5, with the en dash –)"),
    (r"[”’》]、[“‘《]", "a 顿号 between quoted items or titles (GB/T 15834: none; write “甲”“乙”)"),
    (rf"[{_CJK}”’）》][ \t]*(?:[,;:?]|!(?!\[))|[,;:?!][ \t]*[{_CJK}“‘（《]|[{_CJK}][()]|[()][{_CJK}]",
     "half-width punctuation beside Chinese (use ，；：？！（）)"),
    (r"[＋－＝＜＞＃＄％＆＊／＼＾＿｜＠０-９Ａ-Ｚａ-ｚ]", "a full-width letter, digit or operator (write + = % 0-9 A-Z)"),
)


def _mark_problems(text, line, start):
    """Breaches of `MARK_RULES` on one line (blanked as `_protected` does), quoting the text around each."""
    if not _CJK_TEXT.search(line):
        return []
    return [f"{description}: {_snippet(text, start + match.start(), start + match.end(), 8)!r}"
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
        problems.append(f"corner quotes (use “”): {_snippet(text, start + match.start(), start + match.end())!r}")
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
                            f"{_snippet(text, begin - (2 if spaced_before else 0), end + (2 if spaced_after else 0), 2)!r}")
    return problems


def _our_reading_problems(text, shown):
    problems = []
    for match in re.finditer("解读者观点", shown):
        if shown[match.start() - 1:match.start()] != "【" or shown[match.end():match.end() + 1] != "】":
            problems.append(f"the 'our reading' marker is written {OUR_READING}: "
                            f"{_snippet(text, match.start() - 1, match.end() + 1, 4)!r}")
        elif re.match(r"\s*[：:]", shown[match.end() + 1:]):
            problems.append(f"no colon after {OUR_READING}: {_snippet(text, match.start() - 1, match.end() + 3, 4)!r}")
    for variant in OUR_READING_VARIANTS:
        for match in re.finditer(variant, shown):
            problems.append(f"{variant!r} marks our reading; write {OUR_READING}: "
                            f"{_snippet(text, match.start(), match.end(), 6)!r}")
    return problems


# ----------------------------------------------------------------------------------------------------------- CLI

def todo(root=None, lang="zh", edition=None, stem=None):
    """Lines for a translator: each markdown cell lacking current Chinese text, with its English."""
    root = course.root_or(root)
    _, statuses = expected_edition(root, lang)
    lines = []
    for (cell_edition, cell_stem), (status, _entries, nb) in statuses.items():
        if edition and cell_edition != edition or stem and not cell_stem.startswith(stem):
            continue
        for cell in nb.cells:
            if cell.cell_type == "markdown" and status[cell.id] != "ok":
                lines.append(f"== {cell_edition}/{cell_stem} {cell.id} ({status[cell.id]})")
                lines.append(_text(cell.source))
    return lines


def add_arguments(parser):
    parser.add_argument("action", choices=("build", "check", "todo", "update"),
                        help="build: write notebooks/zh, solutions/zh, exercises/zh from the English notebooks and "
                             "i18n/zh, and compile the runtime catalogue; update: mark the entries whose English "
                             "changed fuzzy and add empty ones for new cells and strings, as msgmerge does; check: report coverage and fail on out-of-date generated files or glossary "
                             "violations; todo: print the English of every cell lacking current Chinese text")
    parser.add_argument("--lang", choices=LANGUAGES, default="zh")
    parser.add_argument("--strict", action="store_true",
                        help="check: also fail on missing or stale Chinese text and on an edition not built")
    parser.add_argument("--report", action="store_true",
                        help="check: list every missing and stale cell (the default prints counts only)")
    parser.add_argument("--root", type=Path, default=None,
                        help="the repository whose notebooks/, solutions/ and i18n/ are read (default: this one)")
    parser.add_argument("--out", type=Path, default=None, help="build: write the edition here (default: --root)")
    parser.add_argument("--edition", choices=SOURCE_EDITIONS, default=None, help="todo: only this edition")
    parser.add_argument("--notebook", default=None, metavar="NN", help="todo: only notebooks whose name starts so")


def run(args):
    try:
        args.root = course.root_or(args.root)
        if args.action == "build":
            changed = build(args.root, args.lang, args.out)
            for path in changed:
                print(f"{'wrote' if path.exists() else 'removed'} {path}")
            print(f"the {args.lang} edition is up to date ({len(changed)} files changed)")
            return 0
        if args.action == "update":
            changed = update(args.root, args.lang)
            for path in changed:
                print(f"updated {path}")
            print(f"{len(changed)} catalogues updated: open them in Poedit or Weblate")
            return 0
        if args.action == "todo":
            print("\n".join(todo(args.root, args.lang, args.edition, args.notebook)))
            return 0
        coverage = check(args.root, args.lang)
    except (TranslationFormatError, exercises.ExerciseFormatError, course.CourseNotFound) as error:
        print(f"error: {error}")
        return 2
    listed = coverage.generated + coverage.glossary + coverage.links
    if args.report or args.strict:
        listed = (coverage.missing + coverage.stale + coverage.orphans + coverage.not_built + coverage.typesetting
                  + coverage.untranslated + listed)
    for line in listed:
        print(line)
    print(f"{args.lang} edition: {coverage.summary()}")
    failures = coverage.failures(args.strict)
    if failures:
        print(f"{len(failures)} problems: run `coursekit i18n update`, write or review the Chinese text in the .po "
              f"files of i18n/{args.lang}/ (Poedit, Weblate; `coursekit i18n todo` lists it), then run "
              f"`coursekit i18n build`")
        return 1
    return 0


# --------------------------------------------------------------------------------- strings shown at run time

# Calls whose positional arguments at these indexes are text a figure or a check shows (a list literal: each item).
LABEL_CALLS = {"set_title": (0,), "set_xlabel": (0,), "set_ylabel": (0,), "suptitle": (0,), "title": (0,),
               "xlabel": (0,), "ylabel": (0,), "text": (2,), "annotate": (0,), "set_xticks": (1,),
               "set_yticks": (1,), "set_xticklabels": (0,), "set_yticklabels": (0,), "show_spread": (1, 2),
               "bar": (0,), "barh": (0,)}  # a bar chart's categories are its tick labels
LABEL_KEYWORDS = ("title", "xlabel", "ylabel", "label", "labels", "hint", "legend_title", "description")
# The gettext keyword a chapter marks its own strings with where it writes them (`_("head {head}")`, as xgettext
# reads `_`): every such literal is a runtime string, whatever call receives it.
MARK_KEYWORD = "_"
# Plotting helpers whose first argument is a dict: its keys name the series, bars or ticks a figure shows.
SERIES_CALLS = ("show_spread", "plot_lines", "plot_bars", "plot_grouped_bars", "plot_heatmaps", "plot_shares")


def _parse(source):
    code = exercises.runnable_code(source)
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def _call_name(node):
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def _label_arguments(call):
    """The argument nodes of `call` that a figure or a check shows (LABEL_CALLS positions, LABEL_KEYWORDS), and the
    literal a chapter marks with `_()` (MARK_KEYWORD)."""
    if isinstance(call.func, ast.Name) and call.func.id == MARK_KEYWORD and call.args:
        marked = call.args[0]  # a literal only: an f-string's msgid would be the text it makes, never listed
        return [marked] if isinstance(marked, ast.Constant) else []
    shown = [call.args[index] for index in LABEL_CALLS.get(_call_name(call), ()) if index < len(call.args)]
    return shown + [keyword.value for keyword in call.keywords if keyword.arg in LABEL_KEYWORDS]


def _shown(texts):
    """The texts with a word in them (two letters outside the `{fields}`): "{value}%" or "n={count}" need none."""
    return [text for text in texts if text and re.search(r"[A-Za-z]{2}", re.sub(r"\{\w+\}", "", text))]


def runtime_strings(source):
    """The English strings a code cell shows through plots and checks: titles, axis labels, ticks, legend labels, hints.

    String literals only; an f-string becomes a template whose `{fields}` are named after its expressions
    (`f"block {layer}"` gives "block {layer}"), the form the runtime catalogue lists it in (its msgid). The keys of
    a dict a cell hands to a plotting helper are found by `series_strings`, over the whole notebook.
    """
    tree = _parse(source)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for value in _label_arguments(node):
            items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            items = [part for item in items for part in ((item.body, item.orelse) if isinstance(item, ast.IfExp)
                                                         else (item,))]
            found += _shown(_template(item) for item in items)
    return list(dict.fromkeys(found))


# What a figure shows as text, by keyword (a check's `hint` and a progress display's `description` are translated by
# the code that shows them).
FIGURE_KEYWORDS = ("title", "xlabel", "ylabel", "label", "labels", "legend_title")


def _is_marked(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == MARK_KEYWORD


def unmarked_strings(source):
    """Figure text a code cell writes as a literal where it is drawn (a title, an axis or tick label, a legend entry,
    a key of the dict handed to a plotting helper) without marking it with `_()`. Nothing patches matplotlib, so
    such text is drawn as it is written, in English in every edition: the gettext rule is to mark it where it is
    written. Text that reaches a figure through a name is marked where the name is given it."""
    tree = _parse(source)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _is_marked(node):
            continue
        name = _call_name(node)
        values = [node.args[index] for index in LABEL_CALLS.get(name, ()) if index < len(node.args)]
        values += [keyword.value for keyword in node.keywords if keyword.arg in FIGURE_KEYWORDS]
        if name in SERIES_CALLS and node.args and isinstance(node.args[0], ast.Dict):
            series = node.args[0]
            values += [key for key in series.keys if key is not None]
            values += [key for value in series.values if isinstance(value, ast.Dict) for key in value.keys if key]
        for value in values:
            items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            items = [part for item in items for part in ((item.body, item.orelse) if isinstance(item, ast.IfExp)
                                                         else (item,))]
            found += _shown(_template(item) for item in items)
    return list(dict.fromkeys(found))


def unmarked_figure_text(root=None):
    """`{english: [where, ...]}` of `unmarked_strings` over the English notebooks under `root`."""
    found = {}
    for edition in SOURCE_EDITIONS:
        for path in english_notebooks(course.root_or(root), edition):
            for cell in exercises.read_notebook(path).cells:
                if cell.cell_type == "code":
                    for text in unmarked_strings(cell.source):
                        found.setdefault(text, []).append(f"{edition}/{path.name}, cell {cell.id}")
    return found


def series_strings(sources):
    """Figure text that reaches a plot through names, over the cells `sources` of one notebook.

    `runtime_strings` reads literals at the call; this follows them one or two steps: a label held by a loop
    variable (`for seconds, label in ((..., "key-value cache"), ...)`, also through `zip`, `enumerate` and a
    tuple named in another cell), and the keys of a dict handed to a plotting helper (`show_spread(effects)`
    with `effects = {...}`, a comprehension, or `effects[name] = ...` in a loop over literals). What flows
    through attributes or function results (`model.name`) is not followed.
    """
    names = _NotebookNames(sources)
    for _ in range(2):  # twice: a loop may read a dict whose keys a later cell's loop binds
        names.bind_loops()
    found = []
    for cell, node in names.cells:
        if isinstance(node, ast.Call):
            found += names.labels(node, cell) + names.series(node, cell)
    return list(dict.fromkeys(_shown(found)))


class _NotebookNames:
    """What the names of one notebook's code hold, as far as `series_strings` follows them: the last value assigned
    to each name (in any cell), and the strings each cell's loops bind to a name. `cells` holds `(cell, node)` for
    every node of every cell that parses."""

    def __init__(self, sources):
        trees = [tree for tree in map(_parse, sources) if tree is not None]
        self.cells = [(index, node) for index, tree in enumerate(trees) for node in ast.walk(tree)]
        self.assigned = {}  # name -> the last value assigned to it, in any cell
        for _, node in self.cells:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    pairs = [(target, node.value)]
                    if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):  # a, b = (...), (...)
                        pairs = list(zip(target.elts, node.value.elts))
                    for name, value in pairs:
                        if isinstance(name, ast.Name):
                            self.assigned[name.id] = value
        self.values = collections.defaultdict(list)  # (cell, name) -> the strings a loop of that cell binds to it

    def elements(self, iterable):
        """The items a `for` over `iterable` yields, as nodes, when they are written in the code."""
        followed = set()  # names = list(shares), shares a dict: unwrap list()/sorted() and names, each name once
        while True:
            if isinstance(iterable, ast.Call) and getattr(iterable.func, "id", "") in ("list", "sorted") and iterable.args:
                iterable = iterable.args[0]
            elif isinstance(iterable, ast.Name) and isinstance(self.assigned.get(iterable.id), (ast.Dict, ast.DictComp)):
                return [ast.Constant(text) for text in self.keys(iterable.id)]  # a dict yields its keys
            elif isinstance(iterable, ast.Name) and iterable.id in self.assigned and iterable.id not in followed:
                followed.add(iterable.id)
                iterable = self.assigned[iterable.id]
            else:
                break
        if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
            return list(iterable.elts)
        if isinstance(iterable, ast.Dict):
            return [key for key in iterable.keys if key is not None]
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
            if iterable.func.attr == "items" and isinstance(iterable.func.value, ast.Name):
                return [ast.Tuple(elts=[ast.Constant(text), None]) for text in self.keys(iterable.func.value.id)]
            if iterable.func.attr == "keys" and isinstance(iterable.func.value, ast.Name):
                return [ast.Constant(text) for text in self.keys(iterable.func.value.id)]
        if isinstance(iterable, ast.Call) and getattr(iterable.func, "id", "") in ("zip", "enumerate"):
            return self._rows(iterable)
        return []

    def _rows(self, call):
        """The tuples a `zip(...)` or `enumerate(...)` yields; a column not written in the code (axes) yields
        unknowns (None), and `enumerate`'s counter is one."""
        columns = [self.elements(arg) for arg in call.args]
        if call.func.id == "enumerate":
            columns = [[], *columns[:1]]
        rows = max(map(len, columns), default=0)
        columns = [column or [None] * rows for column in columns]
        return [ast.Tuple(elts=list(row)) for row in zip(*columns)]

    def texts(self, node, cell):
        """The strings `node` (in cell `cell`) may be: a literal, or a name a loop of that cell binds."""
        if isinstance(node, ast.Name):
            return self.values.get((cell, node.id), [])
        return [text for text in [_template(node)] if text]

    def bind(self, target, item, cell):
        """Records the strings a loop of `cell` binds to the names of `target` when it yields `item`."""
        if isinstance(target, ast.Name) and item is not None:
            self.values[cell, target.id] += self.texts(item, cell)
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(item, (ast.Tuple, ast.List)):
            for part, value in zip(target.elts, item.elts):
                self.bind(part, value, cell)

    def bind_loops(self):
        """Binds the items of every `for` and comprehension of the notebook to its target names."""
        for cell, node in self.cells:
            if isinstance(node, (ast.For, ast.comprehension)):
                for item in self.elements(node.iter):
                    self.bind(node.target, item, cell)

    def keys(self, name):
        """The keys (strings) a dict named `name` gets anywhere in the notebook."""
        found = []
        for cell, node in self.cells:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.Dict):
                        found += self.dict_keys(node.value, cell)
                    elif isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.DictComp):
                        found += self.texts(node.value.key, cell)
                    elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                          and target.value.id == name):
                        found += self.texts(target.slice, cell)
        return found

    def dict_keys(self, node, cell):
        """The strings the keys of the dict literal `node` (in cell `cell`) may be."""
        return [text for key in node.keys if key is not None for text in self.texts(key, cell)]

    def labels(self, call, cell):
        """The strings that label arguments of `call` (`_label_arguments`) hold through names."""
        found = []
        for value in _label_arguments(call):
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") in ("list", "sorted") and value.args:
                found += [_template(item) for item in self.elements(value)]  # set_xticks(..., list(sets))
            elif isinstance(value, ast.Name):  # a loop variable, or a name for a tuple or a dict's keys
                found += self.texts(value, cell) + [_template(item) for item in self.elements(value)]
        return found

    def series(self, call, cell):
        """The keys of the dict a plotting helper (SERIES_CALLS) gets as its first argument: a name, a
        comprehension or a literal, whose values may be dicts too (plot_grouped_bars: {series: {group: value}})."""
        if _call_name(call) not in SERIES_CALLS or not call.args:
            return []
        first = call.args[0]
        if isinstance(first, ast.Name):
            return self.keys(first.id)
        if isinstance(first, ast.DictComp):
            return self.texts(first.key, cell)
        if isinstance(first, ast.Dict):
            return self.dict_keys(first, cell) + [text for value in first.values if isinstance(value, ast.Dict)
                                                  for text in self.dict_keys(value, cell)]
        return []


def _template(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts, used = [], set()
        for index, value in enumerate(node.values):
            if isinstance(value, ast.Constant):
                parts.append(str(value.value).replace("{", "{{").replace("}", "}}"))
            else:
                names = [n.id for n in ast.walk(value) if isinstance(n, ast.Name)]
                name = names[0] if names else f"value{index}"
                name = name if name not in used else f"{name}_{index}"
                used.add(name)
                parts.append("{" + name + "}")
        return "".join(parts)
    return None


def runtime_catalogue(lang="zh"):
    """The course's runtime catalogue (`.po`): its check messages, figure and hint strings, as the course's
    `runtime_catalogue(lang)` hook names it; None for a course without one (its runtime strings are not checked)."""
    path = course.hook("runtime_catalogue", lambda lang: None)(lang)
    return None if path is None else Path(path)


def own_runtime_catalogue(root, lang="zh"):
    """The runtime catalogue when it lies in `root`, else None: `build` and `update` on a copy of the chapters
    elsewhere (as in the tests) leave the installed course alone."""
    path = runtime_catalogue(lang)
    if path is None:
        return None
    path = path.resolve()
    return path if path.is_file() and Path(root).resolve() in path.parents else None


def compiled_catalogues(root, lang="zh"):
    """`{path of the .mo relative to root: its bytes}` of the runtime catalogue in `root` (fuzzy entries left out)."""
    path = own_runtime_catalogue(root, lang)
    if path is None:
        return {}
    return {path.with_suffix(".mo").relative_to(Path(root).resolve()).as_posix(): read_catalogue(path).to_binary()}


def untranslated_strings(root=None, lang="zh"):
    """`{english: [where, ...]}` of runtime strings in the English notebooks that the runtime catalogue does not
    translate (no entry without msgctxt, or an empty or fuzzy one); all of them where the course has none."""
    path = runtime_catalogue(lang)
    listed = {entry.msgid for entry in read_catalogue(path) if not entry.msgctxt and entry.translated()} \
        if path is not None and path.is_file() else set()
    root = course.root_or(root)
    missing = {}
    for edition in SOURCE_EDITIONS:
        for path in english_notebooks(root, edition):
            nb = exercises.read_notebook(path)
            code = [cell for cell in nb.cells if cell.cell_type == "code"]
            for cell in code:
                for text in runtime_strings(cell.source):
                    if text not in listed:
                        missing.setdefault(text, []).append(f"{edition}/{path.name}, cell {cell.id}")
            for text in series_strings([cell.source for cell in code]):
                if text not in listed:
                    missing.setdefault(text, []).append(f"{edition}/{path.name}, through a name")
    return missing
