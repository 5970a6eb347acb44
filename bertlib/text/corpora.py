"""Pretraining corpora as BERT wants them: documents of sentences (paper §3.1, "Pre-training data"; guide ch. 5).

The paper insists on a *document-level* corpus (BooksCorpus and English Wikipedia, not a shuffled pile of
sentences) so that next-sentence prediction can draw a real next sentence from the same document and long
contiguous sequences exist. Every function here returns the same shape: a list of documents, each a list of
sentence strings, the input of `bertlib.text.data.create_nsp_instances`.

- `python_docs()`: a small English corpus that is on every machine: the Python standard library's own
  documentation (the language reference topics behind `help("assert")`, and docstrings of standard modules).
- `text_files(paths)`: your own text, in the input format of BERT's `create_pretraining_data.py`.
- `wikitext103()`: the real thing, found or downloaded once by `bertlib.io.downloads` (`bertlib download wikitext103`).
- `bookcorpus_wikipedia()`: English Wikipedia, streamed through the optional `datasets` package.
"""

import functools
import importlib
import inspect
import os
import re
import stat
from pathlib import Path

# Pure standard-library modules whose docstrings are prose. Importing them has no side effects (no `this`,
# `antigravity`, `tkinter` or `idlelib`); one missing from a minimal Python build is skipped.
DOCSTRING_MODULES = (
    "abc", "argparse", "ast", "base64", "bisect", "calendar", "cmd", "codecs", "collections", "colorsys",
    "configparser", "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "dis",
    "email.message", "enum", "filecmp", "fileinput", "fnmatch", "fractions", "functools", "getopt", "gettext",
    "glob", "graphlib", "gzip", "hashlib", "heapq", "hmac", "html.parser", "http.client", "inspect", "io",
    "ipaddress", "itertools", "json", "keyword", "linecache", "locale", "logging", "mailbox", "math",
    "mimetypes", "numbers", "operator", "optparse", "os", "pathlib", "pickle", "pkgutil", "platform", "plistlib",
    "pprint", "queue", "random", "re", "reprlib", "sched", "secrets", "selectors", "shelve", "shlex", "shutil",
    "smtplib", "socket", "socketserver", "statistics", "string", "struct", "subprocess", "tarfile", "tempfile",
    "textwrap", "threading", "time", "timeit", "tokenize", "traceback", "types", "typing", "unittest.case",
    "urllib.parse", "urllib.request", "uuid", "warnings", "weakref", "xml.dom.minidom", "xml.etree.ElementTree",
    "zipfile",
)

# A sentence ends at ".", "!" or "?" followed by space and a capital, a digit, a quote or a bracket. Simple, and
# wrong only on abbreviations before a capital ("Mr. Smith"), which are rare in the Python documentation.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_UNDERLINE = re.compile(r"^([*=\-~^\"#+])\1{2,}$")
MIN_WORDS_PER_SENTENCE = 4
MIN_SENTENCES_PER_DOCUMENT = 2


def split_sentences(paragraph):
    """One paragraph of prose -> its sentences, whitespace collapsed (the rule is `_SENTENCE_END` above)."""
    text = " ".join(paragraph.split())
    return [sentence for sentence in _SENTENCE_END.split(text) if sentence]


def _is_prose(sentence):
    """Keep sentences of at least 4 words, mostly letters, that end like a sentence; code and signatures don't."""
    if len(sentence.split()) < MIN_WORDS_PER_SENTENCE or sentence[-1] not in ".!?:":
        return False
    visible = [char for char in sentence if not char.isspace()]
    return sum(char.isalpha() for char in visible) >= 0.75 * len(visible)


def _is_code(paragraph):
    """Doctests, grammar rules and indented code blocks are not prose."""
    lines = paragraph.strip("\n").split("\n")
    first = lines[0].lstrip()
    return (first.startswith((">>>", "...", "$ ")) or "::=" in paragraph
            or any(line.lstrip().startswith(">>>") for line in lines))


def documents_from_text(text):
    """Plain reStructuredText-like documentation -> documents of sentences, one document per titled section.

    The rule, applied to the pydoc topics and to docstrings: a title (a line underlined with `***`, `===`,
    `---`, ...) starts a new document; paragraphs are separated by blank lines; code paragraphs (`_is_code`)
    are dropped; paragraphs are split into sentences (`split_sentences`) and only prose sentences
    (`_is_prose`) are kept; documents with fewer than 2 sentences are dropped (next-sentence prediction needs
    two).
    """
    documents, sentences, paragraph = [], [], []
    lines = text.split("\n") + [""]

    def end_paragraph():
        block = "\n".join(paragraph)
        paragraph.clear()
        if block.strip() and not _is_code(block):
            sentences.extend(sentence for sentence in split_sentences(block) if _is_prose(sentence))

    def end_document():
        end_paragraph()
        if len(sentences) >= MIN_SENTENCES_PER_DOCUMENT:
            documents.append(list(sentences))
        sentences.clear()

    for index, line in enumerate(lines):
        next_line = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if _UNDERLINE.match(line.strip()):
            continue
        if line.strip() and _UNDERLINE.match(next_line) and len(next_line) >= len(line.strip()):
            end_document()  # `line` is a title
        elif line.strip():
            paragraph.append(line)
        else:
            end_paragraph()
    end_document()
    return documents


def _module_documents(module):
    """Docstrings of one module: one document for the module and its functions, one per public class."""
    texts = [module.__doc__ or ""]
    class_texts = []
    patched = _patched_functions(module)
    for name, member in sorted(vars(module).items()):
        if name in patched:
            texts.append(patched[name])
            continue
        if name.startswith("_") or getattr(member, "__module__", None) != module.__name__:
            continue  # private, or imported from elsewhere (documented there)
        if getattr(member, "__name__", None) != name:
            continue  # an alias: documented under its own name
        if inspect.isclass(member):
            methods = [method.__doc__ or "" for method_name, method in sorted(vars(member).items())
                       if not method_name.startswith("_") and _is_routine(method)]
            class_texts.append("\n\n".join([member.__doc__ or ""] + methods))
        elif callable(member):
            texts.append(member.__doc__ or "")
    documents = []
    for text in ["\n\n".join(texts)] + class_texts:
        documents.extend(documents_from_text(inspect.cleandoc(text)))
    return documents


def _is_routine(member):
    return callable(member) or isinstance(member, (property, classmethod, staticmethod))


def _patched_functions(module):
    """{name: docstring} of the module's own public functions that another package has replaced at run time
    (`import torch` swaps `inspect.getfile` for its own), read from the module's source, so the corpus does
    not depend on what else the process imported."""
    replaced = {name for name, member in vars(module).items()
                if not name.startswith("_") and inspect.isroutine(member)
                and getattr(member, "__module__", module.__name__) != module.__name__
                and getattr(member, "__name__", None) != name}
    source = getattr(module, "__file__", None)
    if not replaced or not source or not source.endswith(".py"):
        return {}
    import ast

    with open(source, "rb") as file:
        tree = ast.parse(file.read())
    return {node.name: ast.get_docstring(node, clean=False) or "" for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in replaced}


@functools.lru_cache(maxsize=1)
def _python_docs():
    from pydoc_data.topics import topics

    documents = []
    for name in sorted(topics):
        documents.extend(documents_from_text(topics[name]))
    for module_name in DOCSTRING_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # a Python built without it (e.g. no _ssl): the corpus is then a little smaller
            continue
        documents.extend(_module_documents(module))
    return tuple(tuple(document) for document in documents)


def python_docs():
    """The default corpus: the Python documentation installed with Python, as documents of sentences.

    Sources, in this order: every `pydoc` topic (`pydoc_data.topics`, the language reference behind
    `help("if")`), one document per titled section; then, for each module of `DOCSTRING_MODULES`, the module
    docstring with its functions' docstrings, and each public class with its methods' docstrings. Members are
    visited in sorted order, so the result is the same on every call and every run of the same Python version
    on the same operating system (a few docstrings, such as `os`'s, differ between systems).
    Code, signatures and sentences of fewer than 4 words are dropped (see `documents_from_text`).

    Returns a fresh list of lists (callers may change it); the work is done once per process. With Python 3.11:
    519 documents, 8,282 sentences, 125,390 words (199 documents from the topics).
    """
    return [list(document) for document in _python_docs()]


def text_files(paths):
    """Your own text files -> documents of sentences, in the input format of BERT's create_pretraining_data.py.

    Each file is UTF-8 with one sentence per line; a blank line ends a document, and so does the end of a file.
    Blank documents and empty files are skipped. Lines are stripped of surrounding whitespace.

    Args:
        paths: a path (str or Path) or a list of them. A folder stands for the `*.txt` files in it, sorted.

    Raises:
        FileNotFoundError: a path does not exist.
        ValueError: a path is not a regular file or folder (a FIFO, a device), or a file is not UTF-8 (the
            message names the file and the byte offset).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    documents = []
    for path in map(Path, paths):
        files = sorted(path.glob("*.txt")) if path.is_dir() else [path]
        for file in files:
            problem = not_a_text_file(file)
            if problem:
                raise (FileNotFoundError if not file.exists() else ValueError)(problem + ".")
            documents.extend(_read_documents(file))
    return documents


SPECIAL_FILES = ((stat.S_ISFIFO, "a FIFO (named pipe): reading it waits for a writer, maybe forever"),
                 (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_a_text_file(path, folders=False):
    """Why `path` cannot be read as a corpus file (or, with `folders`, a folder of them); None when it can.
    Only a regular file is read: a FIFO or a device never ends, or blocks until something writes to it."""
    path = Path(path)
    if not path.exists():
        return f"{path} not found"
    if path.is_file() or (folders and path.is_dir()):
        return None
    if path.is_dir():
        return f"{path} is a folder; expected a text file"
    mode = path.stat().st_mode
    kind = next((kind for is_kind, kind in SPECIAL_FILES if is_kind(mode)), "not a regular file")
    return f"{path} is {kind}; expected a regular text file{' or a folder of them' if folders else ''}"


def _read_documents(path):
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 text: byte 0x{data[error.start]:02x} at byte offset {error.start} "
                         "cannot be decoded. Re-save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`).") from error
    if "\x00" in text:  # valid UTF-8 can still be a binary file; text never holds NUL bytes
        raise ValueError(f"{path} holds NUL bytes at offset {text.index(chr(0))}: it looks like a binary file, "
                         "not text (expected one sentence per line, UTF-8).")
    documents, sentences = [], []
    for line in text.lstrip("\ufeff").splitlines():
        line = line.strip()
        if line:
            sentences.append(line)
        elif sentences:
            documents.append(sentences)
            sentences = []
    if sentences:
        documents.append(sentences)
    return documents


# Real pretraining corpora (optional: bertlib's datasets extra) ----------------------------------------------

def _load_dataset(*args, **kwargs):
    from bertlib._lazy import import_extra

    datasets = import_extra("datasets", "datasets", "Reading a real corpus from the Hugging Face Hub (python_docs() "
                                                    "and text_files(...) need nothing)")
    try:
        return datasets.load_dataset(*args, **kwargs)
    except Exception as error:  # offline, hub down, dataset renamed: the library's own errors vary by version
        raise RuntimeError(
            f"Could not load the dataset {args[0]!r} with datasets.load_dataset: {error}. It is downloaded from "
            "the Hugging Face Hub on first use, so this needs an internet connection (or a filled cache, "
            "HF_DATASETS_CACHE). Offline, use bertlib.text.corpora.python_docs() or text_files(...).") from error


WIKITEXT_FILES = {"train": "wiki.train.raw", "validation": "wiki.valid.raw", "test": "wiki.test.raw"}


def wikitext103(split="train", max_documents=None):
    """WikiText-103 (Merity et al., 2016; raw text of 28k Wikipedia articles) as documents of sentences.

    Each article (a line ` = Title = `) is a document; its paragraphs are split into sentences with
    `split_sentences`. The files are found by `bertlib.io.downloads.find("wikitext103")`; the first time, with
    nothing on this machine, that downloads the 192 MB archive (`bertlib download wikitext103` does it ahead).

    Args:
        split: "train", "validation" or "test".
        max_documents: int or None, stop after this many articles.
    """
    from bertlib.io import downloads

    if split not in WIKITEXT_FILES:
        raise ValueError(f"Unknown WikiText-103 split {split!r}; expected one of {list(WIKITEXT_FILES)}.")
    documents, sentences = [], []
    for row in _lines(downloads.find("wikitext103") / WIKITEXT_FILES[split]):
        line = row.strip()
        if re.fullmatch(r"= [^=].* =", line):  # a top-level title: a new article
            if len(sentences) >= MIN_SENTENCES_PER_DOCUMENT:
                documents.append(sentences)
                if max_documents and len(documents) >= max_documents:
                    return documents
            sentences = []
        elif line and not line.startswith("="):
            sentences.extend(split_sentences(line))
    if len(sentences) >= MIN_SENTENCES_PER_DOCUMENT:
        documents.append(sentences)
    return documents[:max_documents] if max_documents else documents


def _lines(path):
    with open(path, encoding="utf-8") as handle:  # streamed: wiki.train.raw is 540 MB
        yield from handle


def bookcorpus_wikipedia(max_documents=None, wikipedia_config="20231101.en"):
    """English Wikipedia, the larger part of BERT's pretraining corpus (§3.1), as documents of sentences.

    Each article is a document; its paragraphs are split into sentences with `split_sentences`. The copy of
    BooksCorpus on the Hugging Face Hub lost its book boundaries (one sentence per row), so it cannot give
    documents and is not used: the paper's point that the corpus must be document-level rules it out.
    Streams the data (no 20 GB download before the first document); needs `datasets` and the internet.

    Args:
        max_documents: int or None, stop after this many articles (recommended: the full dump has 6.4M).
        wikipedia_config: str, the dump of `wikimedia/wikipedia` to read.
    """
    rows = _load_dataset("wikimedia/wikipedia", wikipedia_config, split="train", streaming=True)
    documents = []
    for row in rows:
        sentences = [sentence for paragraph in row["text"].split("\n") for sentence in split_sentences(paragraph)]
        if len(sentences) >= MIN_SENTENCES_PER_DOCUMENT:
            documents.append(sentences)
            if max_documents and len(documents) >= max_documents:
                break
    return documents
