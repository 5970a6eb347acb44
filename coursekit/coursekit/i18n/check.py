"""What a translated edition lacks or breaks (`coursekit i18n check|todo`), counted in a `Coverage`.

`check` compares the catalogues with the English notebooks (missing, stale and orphaned entries), the generated
files with what `build` would write, and lints the translations: glossary variants, relative links that lead
nowhere from the edition, typesetting, and the figure and hint texts the runtime catalogue lacks or that are
written without `_()`. `Coverage.failures` says which of these fail a check, with and without `--strict`; `todo`
lists the English of every cell that lacks a current translation, for a translator.
"""

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from coursekit import course
from coursekit.i18n.catalogues import (
    SOURCE_EDITIONS,
    compiled_catalogues,
    folder,
    read_catalogue,
    runtime_catalogue,
    translation_path,
)
from coursekit.i18n.edition import EXERCISES, expected_edition
from coursekit.i18n.extract import unmarked_figure_text, untranslated_strings
from coursekit.i18n.glossary import GLOSSARY, glossary_problems, read_glossary
from coursekit.i18n.typesetting import typesetting_problems, unwrap_cjk


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
                + (f"{len(self.untranslated)} hints and figure texts without translation, {len(self.unmarked)} figure "
                   f"texts without _()" if self.runtime_checked
                   else "hints and figure texts not checked (the course's hooks name no runtime_catalogue)"))


def check(root, lang, glossary_path=None):
    """Returns the `Coverage` of the `lang` edition under `root` (default: the repository)."""
    root = course.root_or(root)
    files, statuses = expected_edition(root, lang)
    coverage = Coverage()
    for (edition, stem), (status, entries, nb, units) in statuses.items():
        coverage.markdown[edition] = coverage.markdown.get(edition, 0) + len(status)
        coverage.translated[edition] = coverage.translated.get(edition, 0) + sum(s == "ok" for s in status.values())
        catalogue = translation_path(root, lang, edition, stem).relative_to(root)
        _unit_problems(coverage, f"{edition}/{stem}.ipynb", catalogue, units)
        cells = {cell.id for cell in nb.cells if cell.cell_type == "markdown"} | set(units)  # and commented code
        for cell_id in sorted({entry["cell"] for entry in entries if entry["translation"].strip()} - cells):
            coverage.orphans.append(f"{catalogue}: cell {cell_id} is no longer a markdown cell of "
                                    f"{edition}/{stem}.ipynb")
    _generated_problems(coverage, root, lang, files)
    terms = read_glossary(glossary_path or root / GLOSSARY)
    _text_problems(coverage, root, lang, statuses, files, terms)
    return _runtime_problems(coverage, root, lang, terms)


def _unit_problems(coverage, where, catalogue, units):
    """The missing and stale units of one notebook, a line each (the unit's number where the cell has several; a
    stale one's catalogue file and line). A cell whose units all lack a translation, or all come from one whole-cell
    entry written for other English, is one line."""
    for cell_id, cell_units in units.items():
        if len({(state, id(entry)) for state, _, entry in cell_units}) == 1 and len(cell_units) > 1:
            cell_units = [(cell_units[0][0], "\n\n".join(text for _, text, _ in cell_units), cell_units[0][2])]
        for index, (state, english, entry) in enumerate(cell_units, 1):
            place = f"{where}, cell {cell_id}" + (f", paragraph {index}" if len(cell_units) > 1 else "")
            if state == "missing":
                coverage.missing.append(f"{place}: no translation")
            elif state == "stale":
                coverage.stale.append(f"{place} ({catalogue}:{entry['line']}): the English changed since the "
                                      f"translation was written{_change(entry['previous'] or entry['en'], english)}")


def _generated_problems(coverage, root, lang, files):
    for edition in (*SOURCE_EDITIONS, EXERCISES):
        name = folder(root, edition)
        path = root / name / lang
        if not path.is_dir():
            coverage.not_built.append(f"{name}/{lang}/: not built (run `coursekit i18n build`)")
            continue
        for relative, text in files.items():
            if relative.startswith(f"{name}/"):
                path = root / relative
                if not path.exists():
                    coverage.generated.append(f"{relative}: missing")
                elif path.read_text(encoding="utf-8") != text:
                    coverage.generated.append(f"{relative}: differs from the build")
        for generated in sorted(path.glob("*.ipynb")):
            if f"{name}/{lang}/{generated.name}" not in files:
                coverage.generated.append(f"{name}/{lang}/{generated.name}: extra (no English notebook of that name)")
    for relative, data in compiled_catalogues(root, lang).items():
        if not (root / relative).is_file() or (root / relative).read_bytes() != data:
            coverage.generated.append(f"{relative}: not compiled from its .po (run `coursekit i18n build`)")


CODE_RUN = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")  # ASCII from its first to its last mark


def _text_problems(coverage, root, lang, statuses, files, terms):
    """Links, glossary variants and typesetting of every translated entry, each line naming its file and line."""
    for (edition, stem), (_, entries, nb, _) in statuses.items():
        catalogue = translation_path(root, lang, edition, stem).relative_to(root)
        out = f"{folder(root, edition)}/{lang}"
        code_cells = {cell.id for cell in nb.cells if cell.cell_type == "code"}
        for entry in entries:
            if not entry["translation"].strip():
                continue
            cell_id = entry["cell"]
            # a code comment's names and literals are code (`epochs_of_corpus`, `{"text": float}`): only its prose
            # is checked, each run of ASCII standing for one Latin word
            text = CODE_RUN.sub("x", entry["translation"]) if cell_id in code_cells else entry["translation"]
            for target in broken_links(entry["translation"], out, root, files):
                coverage.links.append(f"{edition}/{stem}.ipynb, cell {cell_id}: the link {target!r} leads nowhere "
                                      f"from {out}/ (links to the {lang} edition go to ../../<edition>/{lang}/)")
            for problem in glossary_problems(text, terms):
                coverage.glossary.append(f"{edition}/{stem}.ipynb, cell {cell_id}: {problem}")
            for problem in typesetting_problems(unwrap_cjk(text)):  # the text as the edition shows it
                coverage.typesetting.append(f"{catalogue}:{entry['line']}, cell {cell_id}: {problem}")


def _runtime_problems(coverage, root, lang, terms):
    runtime = runtime_catalogue(lang)
    if runtime is None:
        coverage.runtime_checked = False
        return coverage
    for entry in read_catalogue(runtime):  # figures, hints and messages use the glossary's terms too
        for problem in glossary_problems(entry.msgstr, terms) if entry.translated() else ():
            where = f"msgctxt {entry.msgctxt!r}, " if entry.msgctxt else ""
            coverage.glossary.append(f"{runtime.name}, {where}msgid {entry.msgid[:60]!r}: {problem}")
    for text, places in untranslated_strings(root, lang).items():
        coverage.untranslated.append(f"{places[0]}: shown in English (no {lang} text in {runtime.name}): {text!r}")
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


def todo(root, lang, edition=None, stem=None):
    """Lines for a translator: each unit of a markdown cell lacking a current translation, with its English."""
    root = course.root_or(root)
    _, statuses = expected_edition(root, lang)
    lines = []
    for (cell_edition, cell_stem), (_status, _entries, _nb, units) in statuses.items():
        if edition and cell_edition != edition or stem and not cell_stem.startswith(stem):
            continue
        for cell_id, cell_units in units.items():
            for state, english, _entry in cell_units:
                if state != "ok":
                    lines += [f"== {cell_edition}/{cell_stem} {cell_id} ({state})", english]
    return lines
