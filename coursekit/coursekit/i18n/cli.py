"""The `coursekit i18n` command line: `build`, `update`, `check [--strict] [--report]` and `todo`."""

from pathlib import Path

from coursekit import course, exercises, files
from coursekit.i18n.catalogues import SOURCE_EDITIONS, TranslationFormatError
from coursekit.i18n.check import check, todo
from coursekit.i18n.edition import build, update

LANGUAGES = ("zh",)


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
    parser.add_argument("--notebook", default=None, metavar="NN", help="todo and update: only notebooks whose name starts so")


def run(args):
    try:
        args.root = course.root_or(args.root)
        if args.action == "build":
            changed = build(args.root, args.lang, args.out)
            files.print_changed(changed)
            print(f"the {args.lang} edition is up to date ({len(changed)} files changed)")
            return 0
        if args.action == "update":
            changed = update(args.root, args.lang, args.notebook)
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
                  + coverage.untranslated + coverage.unmarked + listed)
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
