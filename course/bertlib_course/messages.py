"""Feedback and figure labels in the learner's language: English, or Chinese in the Chinese edition.

The two editions share their code cells byte for byte (`coursekit.i18n`), so a check cell or a plot cell
says the same thing in both. What the learner reads is chosen at run time:

- `language()` is what `BERTLIB_LANG` says (`zh`, `zh_CN`, `en`, ...) when it is set, else the language the running
  notebook's metadata names (`"bertlib": {"lang": "zh"}`, written by `coursekit i18n build`; see
  `notebook_language`), else "zh" when the kernel's folder is `notebooks/zh`, `solutions/zh` or `exercises/zh`,
  else "en". So a Chinese notebook speaks Chinese by itself, on Colab too; any failure to find or read the
  notebook leaves English.
- `message(key, **fields)` formats one of the check messages of `MESSAGES` in that language.
- `pgettext(context, english)` gives a sentence the course composes for a result (a verdict of
  `bertlib_course.evidence`, a reason `bertlib_course.audit` refuses) in that language: a template whose named
  `{fields}` the caller fills in after, so the Chinese may put them in another order.
- `check_text(text)` gives the Chinese of a text a check received (its name, its hint, the expected and got texts
  of `check_true`): the catalogue's entry whose msgid is that English as the notebook's cell writes it, looked up
  before `bertlib_course.checks` puts it into a message of `MESSAGES`. Only a text that a cell formatted itself
  (an f-string name) is matched against the catalogue's templates, its fields kept as they came.
- `formatted(template, **fields)` gives a template of the course's own code (an explorer's caption, a widget's
  label: "head {h}") in that language, looked up before its fields are filled.
- `translate(text)` gives the Chinese of an English string of the course's figures listed in the course's catalogue
  (a plot title or label the chapter hands in, perhaps formatted by the chapter's code), the English unchanged when
  it is not listed or the language is English.
- `use_plot_language(lang)` (called by `course.set_plot_style`) gives matplotlib a CJK font for the Chinese edition,
  whose figure text the chapters mark with `_()` where they write it (and this package's own plotting code passes
  through `translate`); with no CJK font on the machine it says how to install one. Nothing of matplotlib is
  patched: a string drawn without `_()` is drawn as it is.

The Chinese lives in one gettext catalogue, `locale/zh/LC_MESSAGES/bertlib_course.po` (translators open it in
Poedit or Weblate): a check message is the entry whose msgctxt is its key in `MESSAGES`, a composed sentence the
entry whose msgctxt names its module ("evidence", "audit"), a figure string or a check's name, hint or expected/got
text the entry without msgctxt whose msgid is the English as the notebook writes it (an f-string as its template,
`"[MASK] share {where}"`; `tests/course/test_check_language.py` fails on a check text that has none). The course
reads the compiled `.mo` beside it with the standard `gettext` module; `coursekit i18n build` compiles it and
`coursekit i18n check` fails when the two differ.
"""

import functools
import gettext
import json
import os
import re
import stat
import sys
import threading
import unicodedata
import warnings
from pathlib import Path

LANGUAGES = ("en", "zh")
EDITION_FOLDERS = ("notebooks", "solutions", "exercises")
# CJK fonts, best first: Debian's fonts-noto-cjk (installed by `make`), then what macOS and Windows ship.
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Serif CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei",
             "WenQuanYi Micro Hei", "PingFang SC", "Heiti SC", "Microsoft YaHei", "SimHei", "Arial Unicode MS")
CJK_SAMPLE = "掩码语言模型"
MAX_NOTEBOOK_BYTES = 50 * 2**20  # as the grader's reader (`grading.plan.read_submission`)
# Where the running notebook's path is found: Jupyter Server >= 2 gives the kernel JPY_SESSION_NAME, ipykernel copies
# it into `__session__`, VS Code sets `__vsc_ipynb_file__`.
SESSION_GLOBALS = ("__session__", "__vsc_ipynb_file__")
COLAB_TIMEOUT_S = 5

# The English of every message `bertlib_course.checks` prints or raises, by key; fields in braces. The Chinese is
# the catalogue's entry with the key as msgctxt.
MESSAGES = {
    "not_expected": "✘ {name} is not what was expected.",
    "expected": "  Expected: {text}",
    "got": "  Got:      {text}",
    "hint": "  Hint:     {text}",
    "passed": "✔ {name}: as expected",
    "exercise_passed": "✔ Exercise {exercise_id} passed",
    "function_matches": "✔ {name} matches the reference on {trials} random inputs",
    # `bertlib_course.locate`: a learner's layer compared with bertlib's, step by step
    "divergence": "✘ First divergence at `{step}` (step {index} of {total}).",
    "divergence_matched": "  Matches up to: {steps}",
    "divergence_nothing_matched": "nothing compared before it",
    "divergence_shapes": "  Shapes:        yours {learner}, reference {reference}",
    "divergence_largest": "  Largest difference: {difference} at index {where}",
    "divergence_hint": "  Hint:          {text}",
    "differs_from_reference": "✘ {name} differs from bertlib's reference.",
    "matches_reference": "✔ {name}: every compared step matches bertlib's reference",
    "trial": "{call} (trial {trial} of {trials})",
    "shape_of": "the shape of {name}",
    "raised": "an error: {error_type}: {error}",
    "number_close_to": "a number close to {expected}",
    "off_by": "{got} (off by {gap})",
    "answer_kind": "an answer of the kind the question asks for",
    "digest_answer": "the right answer (compared through a salted hash; the value is not shown)",
    "elements_differ": "({count} of {size} elements differ; the worst at index {index}: expected {expected}, "
                       "got {got})",
    "not_numbers": "(not numbers: compared exactly, and they differ)",
    # {where} is empty, or "in_where" below (" in [0]") naming the part of the answer that differs
    "expected_dict": "(expected a dict with keys {keys}{where})",
    "expected_sequence": "(expected a {kind} of length {length}{where})",
    "shape_mismatch": "(shape {got}{where}, expected {expected})",
    "in_where": " in {where}",
    "not_comparable": "(this cannot be compared with the expected value: {error_type}: {error})",
    "to_decimals": "{value} (to {digits} decimals; any value that rounds to it)",
    "an_error": "a {error_type}",
    "returned": "no error: it returned {value}",
    "a_result": "a result (your function returned without an error)",
    "learner_raised": "✘ {name}: your code raised an error.\n  Got:      {error_type}: {error}",
    "returned_sequence": "✘ {name} returned a {kind} of {count} values.\n"
                         "  Expected: one array of shape {shape} (the final output), or a dict of named "
                         "steps ({names}).",
    "return_only_output": "return only the output; a function that also returns another value (the chapter's "
                          "attention also returned its probabilities) gives a tuple.",
    # how a value is shown in Expected / Got
    "array_shown": "array of shape {shape}, {dtype}: {values}",
    "items_shown": "a {kind} of {count}: {items}",
    "array_item": "array of shape {shape}",
    "object_shown": "a {kind}",
    "any_size": "any",
}


def normalize_language(value):
    """"zh" for any Chinese locale name (zh, zh_CN, zh-Hans, ...), "en" for English; else a ValueError."""
    text = str(value or "").strip().lower().replace("-", "_")
    if text.startswith("zh"):
        return "zh"
    if text.startswith("en") or text in ("c", "posix"):
        return "en"
    raise ValueError(f"BERTLIB_LANG={value!r} is not a language of the course; use one of {LANGUAGES}")


def language():
    """The learner's language, "en" or "zh" (see the module docstring for where it is read from)."""
    chosen = os.environ.get("BERTLIB_LANG")
    if chosen:
        return normalize_language(chosen)
    found = notebook_language()
    if found:
        return found
    cwd = Path.cwd()
    if cwd.name in LANGUAGES[1:] and cwd.parent.name in EDITION_FOLDERS:
        return cwd.name
    return "en"


def notebook_language():
    """The language the running notebook's metadata names ("en" when it names none), or None when no notebook is found.

    The notebook is the file at `JPY_SESSION_NAME` or at the kernel's `__session__` / `__vsc_ipynb_file__` (a path
    relative to Jupyter's root is looked up from the kernel's folder and its parents); on Colab, where the notebook
    is no file, the open notebook as Colab's frontend gives it (`google.colab._message`, asked once per process).
    Never raises: what cannot be found or read counts as not found.
    """
    try:
        for session in _session_paths():
            for path in _candidates(session):
                found = _file_language(path)
                if found:
                    return found
        if "google.colab" in sys.modules and threading.current_thread() is threading.main_thread():
            return _colab_language()
    except Exception:  # noqa: BLE001 - the language must never break a learner's run
        pass
    return None


def _session_paths():
    paths = [os.environ.get("JPY_SESSION_NAME")]
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    namespace = getattr(shell, "user_ns", None)
    if isinstance(namespace, dict):
        paths += [namespace.get(name) for name in SESSION_GLOBALS]
    return list(dict.fromkeys(path for path in paths if isinstance(path, str) and path.endswith(".ipynb")))


def _candidates(session):
    path = Path(session).expanduser()
    if path.is_absolute():
        return [path]
    cwd = Path.cwd()
    return [folder / path for folder in (cwd, *cwd.parents)] + [cwd / path.name]


def _file_language(path):
    """The language of the notebook file at `path`, or None when it is not a readable notebook."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_NOTEBOOK_BYTES:
        return None
    return _read_language(str(path), info.st_mtime_ns, info.st_size)


@functools.lru_cache(maxsize=16)
def _read_language(path, mtime_ns, size):
    try:
        with open(path, "rb") as file:
            document = json.loads(file.read(MAX_NOTEBOOK_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # ValueError: JSON and UTF-8 errors
        return None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        return None
    return _metadata_language(document)


def _metadata_language(document):
    """The language in a notebook's `metadata.bertlib.lang`: "zh", or "en" when it names none or none we know."""
    metadata = document.get("metadata")
    info = metadata.get("bertlib") if isinstance(metadata, dict) else None
    try:
        return normalize_language(info.get("lang", "en") if isinstance(info, dict) else "en")
    except ValueError:
        return "en"


@functools.lru_cache(maxsize=1)
def _colab_language():
    """The language of the notebook open in Colab, or None when Colab's frontend does not give it."""
    try:
        from google.colab import _message

        reply = _message.blocking_request("get_ipynb", request="", timeout_sec=COLAB_TIMEOUT_S)
        document = reply.get("ipynb") if isinstance(reply, dict) else None
        if isinstance(document, str):
            document = json.loads(document)
        if isinstance(document, dict) and isinstance(document.get("cells"), list):
            return _metadata_language(document)
    except Exception:  # noqa: BLE001 - not Colab after all, no frontend, a timeout, an error reply
        pass
    return None


def message(key, lang=None, **fields):
    """One check message in `lang` (default `language()`), its fields filled in.

    A translation that cannot be filled with the fields of its English (a field the English lacks, a stray brace)
    gives the English message: feedback must never fail on its catalogue (`tests/course/test_language.py` fills
    every entry).
    """
    english = MESSAGES[key]
    try:
        return pgettext(key, english, lang).format(**fields)
    except (KeyError, IndexError, ValueError, AttributeError):
        return english.format(**fields)


def chapter_text(english, lang=None):
    """`english` in `lang` (default `language()`): the catalogue's figure or hint string (the entry without msgctxt
    whose msgid is `english`), or `english` itself in English and where there is no such entry. What a chapter's
    `_()` calls (`bertlib_course._`): a template comes back unfilled, `_("head {head}").format(head=3)`. The Chinese
    comes as a `DisplayText`, so a chapter's column (`f"{_(name):>9}"`) lines up by display width."""
    return DisplayText(catalogue().gettext(english)) if (lang or language()) == "zh" else english


def formatted(english, lang=None, **fields):
    """`english`, a template the catalogue lists (an entry without msgctxt: "head {h}"), in `lang` (default
    `language()`), its fields filled: the lookup comes before the formatting, as gettext's `_("head {h}").format(h=3)`,
    so a field's text is never matched against a template. A field whose text is itself a listed string is looked up
    by the caller first (`formatted("layer {layer}, {head}, ...", head=formatted("head {h}", h=3))`). A translation
    that cannot be filled with the English's fields (a field the English lacks, a stray brace, a spec its value
    refuses) gives the English filled in: nothing the catalogue holds can break an explorer."""
    try:
        return chapter_text(english, lang).format(**fields)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        return english.format(**fields)


def columns(text):
    """How many columns of a terminal or a notebook's monospaced output `text` takes: a wide (CJK) character two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


# A string's format spec as `DisplayText` pads it: [[fill]align][width], and `s` or nothing.
TEXT_SPEC = re.compile(r"(?:(?P<fill>.)?(?P<align>[<>^]))?(?P<width>\d+)s?", re.S)


class DisplayText(str):
    """A translated text that a format spec with a width pads to display columns (`columns`), not characters:
    "不变" takes four columns, so `f"{text:>9}"` puts five spaces before it and the column lines up under "[MASK]".
    `.format` gives a `DisplayText` again, so a label composed from a template pads the same way. Any other spec
    (a precision, no width) formats it as a plain `str`."""

    __slots__ = ()

    def __format__(self, spec):
        match = TEXT_SPEC.fullmatch(spec)
        if not match:
            return format(str(self), spec)
        fill, align, gap = match["fill"] or " ", match["align"] or "<", max(0, int(match["width"]) - columns(self))
        if align == ">":
            return fill * gap + self
        if align == "^":
            return fill * (gap // 2) + self + fill * (gap - gap // 2)
        return self + fill * gap

    def format(self, *args, **kwargs):
        return DisplayText(super().format(*args, **kwargs))


def pgettext(context, english, lang=None):
    """`english` in `lang` (default `language()`): the catalogue's entry with msgctxt `context` and msgid `english`,
    or `english` itself in English and where there is no such entry. A template comes back unfilled: the caller
    formats it, e.g. `pgettext("evidence", "no measurable difference at this scale ({spread})").format(spread=...)`.
    """
    return catalogue().pgettext(context, english) if (lang or language()) == "zh" else english


LOCALE = Path(__file__).resolve().parent / "locale"
DOMAIN = "bertlib_course"


def catalogue_path(lang="zh"):
    """The gettext catalogue (`.po`) of `lang`; its compiled `.mo` lies beside it. `coursekit i18n` reads it."""
    return LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def catalogue(lang="zh"):
    """The compiled catalogue of `lang` (a `gettext.GNUTranslations`); a missing `.mo` is a broken install, raised."""
    return gettext.translation(DOMAIN, LOCALE, languages=[lang])


def strings(lang="zh"):
    """`{english: translation}` of the figure and hint strings of the catalogue (its entries without msgctxt)."""
    return {english: text for english, text in catalogue(lang)._catalog.items()  # gettext has no public listing
            if isinstance(english, str) and english and "\x04" not in english}  # \x04 joins msgctxt and msgid


@functools.lru_cache(maxsize=1)
def _catalogue():
    """Exact strings, and templates as patterns, the most specific first (the most text outside `{fields}`): "layer
    {layer}, {head}, {count} tokens: ..." is tried before "layer {i}", which matches any text after "layer "."""
    listed = strings("zh")
    exact = {english: chinese for english, chinese in listed.items() if not FIELD.search(english)}
    templates = sorted((english for english in listed if FIELD.search(english)),
                       key=lambda english: (-len(FIELD.sub("", english)), english))
    patterns = [(_pattern(english), listed[english]) for english in templates]
    return exact, patterns


# A field of a template as `translate` reads it: a name in braces, with an optional conversion and format spec
# ("{layer}", "{ratio:.1f}"). Any other brace is text: "return {'logits': ...}" is a hint that holds braces.
FIELD = re.compile(r"\{(\w+)(?:![rsa])?(?::[^{}]*)?\}")


def _fill(chinese, values):
    """`chinese` with each field that `values` names replaced by its text, every other brace left as it is.

    `translate` fills a translation with text captured from a formatted English string, so a field's format spec
    has already been applied; `str.format` here would raise on a literal brace ("{'logits': …}") or a field the
    English did not capture.
    """
    return FIELD.sub(lambda match: values.get(match.group(1), match.group(0)), chinese)


def _pattern(template):
    """The regular expression a template's filled-in text matches: each field (`FIELD`) any text, the same text
    where a field comes twice ("steps 1-{steps}, the last {steps}"); every other character, braces too, itself."""
    parts, seen, start = ["^"], set(), 0
    for match in FIELD.finditer(template):
        name = match.group(1)
        parts.append(re.escape(template[start:match.start()]))
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
        seen.add(name)
        start = match.end()
    parts += [re.escape(template[start:]), "$"]
    return re.compile("".join(parts), re.S)


def translate(text, lang=None):
    """The Chinese of a listed English string of a figure or an explorer (title, label, widget text) when the
    language is Chinese; else `text`.

    A listed string may hold `{fields}` that match any text, e.g. "block {layer}, head {head}" matches
    "block 3, head 7" and gives "层 3、头 7"; a field's text that is itself listed, exactly or as a
    template, is translated too ("attends to the {pattern}" with "previous token" gives "关注前一个词元", and
    "layer {layer}, {head}, ..." with "head 3" gives "层 0、头 3，..."). The explorers hand this their labels
    formatted (`translate(f"head {index}")`); a check's texts go through `check_text`, which does not recurse.
    """
    if not isinstance(text, str) or not text or (lang or language()) != "zh":
        return text
    return _from_catalogue(text, lambda value: translate(value, lang))


def check_text(text, lang=None):
    """A name, hint or expected/got text a check received, in `lang` (default `language()`): the catalogue's
    Chinese of it (the entry without msgctxt whose msgid is the English as the notebook writes it), else `text`.

    `bertlib_course.checks` looks every such text up here before it puts it into a message of `MESSAGES`, so a
    field of a template is never formatted with text from the catalogue. A name an f-string of the learner's
    notebook formatted (`f"[MASK] share {where}"`) reaches the check already formatted, since the notebooks of the
    two editions share their code cells byte for byte: only such a text, listed by no entry, is matched against
    the catalogue's templates (`"[MASK] share {where}"`), each field kept as the text it came as, or as that
    text's own entry when it has one ("the end of warmup"); no field is matched again. Nothing is formatted with
    `str.format`, so nothing the catalogue holds can raise: braces that are no field are shown as they are
    ("return {'logits': ...}"), and a template whose Chinese names a field its English lacks gives `text`.
    """
    if not isinstance(text, str) or not text or (lang or language()) != "zh":
        return text
    return _from_catalogue(text, lambda value: _catalogue()[0].get(value, value), complete=True)


def _from_catalogue(text, field_text, complete=False):
    """`text`'s entry, else the first template that matches it filled with `field_text(captured)`, else `text`.
    `complete`: a template's Chinese that names a field its English did not capture gives `text` itself."""
    exact, patterns = _catalogue()
    if text in exact:
        return exact[text]
    for pattern, chinese in patterns:
        match = pattern.match(text)
        if match:
            values = {name: field_text(value) for name, value in match.groupdict().items()}
            if complete and any(field.group(1) not in values for field in FIELD.finditer(chinese)):
                return text
            return _fill(chinese, values)
    return text


def cjk_font():
    """The name of a font matplotlib can use for Chinese, or None when the machine has none."""
    from matplotlib import font_manager

    names = {font.name for font in font_manager.fontManager.ttflist}
    for name in CJK_FONTS:
        if name in names:
            return name
    # Installed after matplotlib built its font cache (e.g. by `make` on a fresh machine): add the files.
    for path in font_manager.findSystemFonts():
        if re.search(r"cjk|wqy|wenquanyi|sourcehan", Path(path).name, re.I):
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):
                continue
    names = {font.name for font in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FONTS if name in names), None)


def use_plot_language(lang=None):
    """Gives matplotlib a font for `lang` (default `language()`); returns the language figures are drawn in.

    Chinese needs a CJK font: the first of `CJK_FONTS` found is listed after DejaVu Sans (Latin letters and digits
    keep their look, Chinese characters come from the CJK font). Without one, the Chinese a chapter marks with
    `_()` would be drawn as empty boxes, so this warns with the command that installs a font and returns "en".
    """
    import matplotlib

    lang = normalize_language(lang) if lang else language()
    if lang == "zh":
        font = cjk_font()
        if font is None:
            warnings.warn("no CJK font found, so the figures' Chinese text cannot be drawn: install Debian's "
                          "fonts-noto-cjk (e.g. `sudo apt-get install fonts-noto-cjk`) and restart the kernel",
                          stacklevel=2)
            return "en"
        # Named one by one: matplotlib falls back glyph by glyph only across the families listed here.
        matplotlib.rcParams["font.family"] = ["DejaVu Sans", font, "sans-serif"]
    return lang
