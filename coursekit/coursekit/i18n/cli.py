"""The `coursekit i18n` command line: `build`, `update`, `check [--strict] [--report]`, `todo` and `migrate`.

Each action runs for `--lang`, else for every language of the course (`languages`: the folders of PO files under
its translations folder).
"""

from pathlib import Path

from coursekit import course, exercises, files
from coursekit.i18n.catalogues import (
    SOURCE_EDITIONS,
    TranslationFormatError,
    english_notebooks,
    languages,
    translation_path,
    translations_folder,
)
from coursekit.i18n.check import check, todo
from coursekit.i18n.edition import build, update
from coursekit.i18n.migrate import Migration, migrate_catalogue


def add_arguments(parser):
    parser.add_argument("action", choices=("build", "check", "todo", "update", "migrate"),
                        help="build: write each translated edition (notebooks/<lang>, solutions/<lang>, "
                             "exercises/<lang>) from the English notebooks and the catalogues, and compile the runtime "
                             "catalogue; update: write the .pot templates and merge them into the catalogues as "
                             "msgmerge does (changed English fuzzy, new units empty); check: report coverage and fail "
                             "on out-of-date generated files or glossary violations; todo: print the English of every "
                             "unit lacking a current translation; migrate: cut whole-cell entries into one entry per "
                             "paragraph, list item, table, heading or fence where the translation pairs with the English")
    parser.add_argument("--lang", default=None,
                        help="one language (a folder under the translations folder; update creates a new one); "
                             "default: every language")
    parser.add_argument("--strict", action="store_true",
                        help="check: also fail on missing or stale translations and on an edition not built")
    parser.add_argument("--report", action="store_true",
                        help="check: list every missing and stale unit (the default prints counts only)")
    parser.add_argument("--root", type=Path, default=None,
                        help="the repository whose notebooks, solutions and translations are read (default: this one)")
    parser.add_argument("--out", type=Path, default=None, help="build: write the edition here (default: --root)")
    parser.add_argument("--edition", choices=SOURCE_EDITIONS, default=None, help="todo: only this edition")
    parser.add_argument("--notebook", default=None, metavar="NN", help="todo and update: only notebooks whose name starts so")


def run(args):
    try:
        args.root = course.root_or(args.root)
        langs = [args.lang] if args.lang else languages(args.root)
        if not langs:
            print(f"error: no languages: {translations_folder(args.root)} holds no folder of PO files; start one "
                  f"with `coursekit i18n update --lang <code>`")
            return 2
        return max(_run_one(args, lang) for lang in langs)
    except (TranslationFormatError, exercises.ExerciseFormatError, course.CourseNotFound) as error:
        print(f"error: {error}")
        return 2


def _run_one(args, lang):
    if args.action == "build":
        changed = build(args.root, lang, args.out)
        files.print_changed(changed)
        print(f"the {lang} edition is up to date ({len(changed)} files changed)")
        return 0
    if args.action == "update":
        changed = update(args.root, lang, args.notebook)
        for path in changed:
            print(f"updated {path}")
        print(f"{len(changed)} {lang} catalogues and templates updated: open the .po files in Poedit or Weblate")
        return 0
    if args.action == "todo":
        print("\n".join(todo(args.root, lang, args.edition, args.notebook)))
        return 0
    if args.action == "migrate":
        return _migrate(args.root, lang)
    return _check(args, lang)


def _migrate(root, lang):
    report = Migration()
    for edition in SOURCE_EDITIONS:
        for path in english_notebooks(root, edition):
            catalogue = translation_path(root, lang, edition, path.stem)
            if catalogue.exists():
                migrate_catalogue(catalogue, report)
    for line in report.kept_whole:
        print(line)
    print(f"{lang}: {report.split} cells split into units, {len(report.kept_whole)} kept whole (listed above), "
          f"{len(report.changed)} catalogues rewritten; next: `coursekit i18n update`, `coursekit i18n build`")
    return 0


def _check(args, lang):
    coverage = check(args.root, lang)
    listed = coverage.generated + coverage.glossary + coverage.links
    if args.report or args.strict:
        listed = (coverage.missing + coverage.stale + coverage.orphans + coverage.not_built + coverage.typesetting
                  + coverage.untranslated + coverage.unmarked + listed)
    for line in listed:
        print(line)
    print(f"{lang} edition: {coverage.summary()}")
    failures = coverage.failures(args.strict)
    if failures:
        print(f"{len(failures)} problems: run `coursekit i18n update`, write or review the translations in the .po "
              f"files of {translations_folder(args.root).relative_to(args.root)}/{lang}/ (Poedit, Weblate; "
              f"`coursekit i18n todo` lists them), then run `coursekit i18n build`")
        return 1
    return 0
