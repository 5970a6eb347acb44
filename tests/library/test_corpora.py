"""Corpora: documents of sentences (paper §3.1), deterministic, with clear errors for bad files and missing extras."""

import hashlib
import json
import os
import subprocess
import sys
import types

import pytest

from bertlib.io import downloads
from bertlib.text import corpora


def fingerprint(documents):
    return hashlib.sha256(json.dumps(documents).encode()).hexdigest()


def test_python_docs_is_a_document_level_corpus():
    documents = corpora.python_docs()
    sentences = [sentence for document in documents for sentence in document]
    assert len(documents) >= 300
    assert len(sentences) >= 5_000
    assert all(len(document) >= 2 for document in documents)  # next-sentence prediction needs two
    assert all(len(sentence.split()) >= 4 and sentence == sentence.strip() for sentence in sentences)
    # Code is left out: no doctest prompts and no grammar rules.
    assert not any(">>>" in sentence or "::=" in sentence for sentence in sentences)
    # Real prose from both sources: a language reference topic and a module docstring.
    assert "Assert statements are a convenient way to insert debugging assertions into a program:" in sentences
    assert "Dict subclass for counting hashable items." in sentences  # collections.Counter


def test_python_docs_is_deterministic_and_returns_copies():
    first = corpora.python_docs()
    pristine = fingerprint(first)
    assert fingerprint(corpora.python_docs()) == pristine  # the same corpus on every call
    # A caller changes the returned lists, outer and inner, in place; the next call is the untouched corpus.
    first[0].append("changed by the caller")
    first[1][0] = "replaced by the caller"
    first.pop()
    assert fingerprint(corpora.python_docs()) == pristine


def fresh_process_fingerprint(first=""):
    # Another hash seed, so an order that came from a set or a dict of strings would show.
    script = (f"{first}; import hashlib, importlib.util, json, sys; "
              "spec = importlib.util.spec_from_file_location('corpora', sys.argv[1]); "
              "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); "
              "print(hashlib.sha256(json.dumps(module.python_docs()).encode()).hexdigest())")
    result = subprocess.run([sys.executable, "-c", script, corpora.__file__], capture_output=True, text=True,
                            env={**os.environ, "PYTHONHASHSEED": "12345"}, check=True)
    return result.stdout.strip().splitlines()[-1]


def test_python_docs_is_the_same_in_a_fresh_process():
    assert fresh_process_fingerprint("pass") == fingerprint(corpora.python_docs())


def test_python_docs_does_not_depend_on_what_else_was_imported():
    """`import torch` (the PyTorch backend) replaces `inspect.getfile` with its own; the corpus must still
    hold the standard library's docstring, or the course would train on another text on that backend."""
    pytest.importorskip("torch")
    assert fresh_process_fingerprint("import torch") == fresh_process_fingerprint("pass")
    sentences = {sentence for document in corpora.python_docs() for sentence in document}
    assert "Work out which source or compiled file an object was defined in." in sentences  # inspect.getfile


def test_documents_from_text_rules():
    text = (
        "The title\n*********\n\n"
        "First sentence of the section is here. Second sentence follows it! Short one.\n"
        "A sentence can span\ntwo lines of the source.\n\n"
        "   for item in range(10):\n       print(item)\n\n"
        ">>> print('a doctest line with enough words.')\n\n"
        "Another title\n=============\n\nOnly one sentence in this section here.\n\n"
        "Last title\n----------\n\nThis section has two sentences in it. Yes, exactly two of them.\n"
    )
    assert corpora.documents_from_text(text) == [
        ["First sentence of the section is here.", "Second sentence follows it!",
         "A sentence can span two lines of the source."],
        ["This section has two sentences in it.", "Yes, exactly two of them."],
    ]


def test_split_sentences():
    assert corpora.split_sentences("It works. Does it?  Yes!\n(Really.) e.g. this one stays") == [
        "It works.", "Does it?", "Yes!", "(Really.) e.g. this one stays"]


def test_text_files_reads_bert_pretraining_format(tmp_path):
    (tmp_path / "a.txt").write_text("Doc one, line one.\nDoc one, line two.\n\n\nDoc two, only line.\n",
                                    encoding="utf-8")
    (tmp_path / "b.txt").write_bytes("\ufeffWindows line one.\r\n  Windows line two.  \r\n   \r\n".encode())
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    (tmp_path / "blank.txt").write_text("\n \n\t\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("Not a .txt file.\n", encoding="utf-8")
    expected = [["Doc one, line one.", "Doc one, line two."], ["Doc two, only line."],
                ["Windows line one.", "Windows line two."]]
    assert corpora.text_files(tmp_path) == expected  # a folder: its *.txt files, sorted
    assert corpora.text_files([tmp_path / "b.txt", str(tmp_path / "a.txt")]) == expected[2:] + expected[:2]
    assert corpora.text_files(tmp_path / "empty.txt") == []


def test_text_files_names_the_file_and_offset_of_bad_bytes(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("Café au lait.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.txt is not UTF-8.*0xe9 at byte offset 3"):
        corpora.text_files([path])
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        corpora.text_files(tmp_path / "missing.txt")


@pytest.mark.parametrize("loader", [corpora.bookcorpus_wikipedia])
def test_real_corpora_explain_a_missing_datasets_package(monkeypatch, loader):
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(ImportError, match=r"of bertlib's 'datasets' extra, which is not installed\. Install it: "
                                          r"pip install 'datasets>=2\.19'$"):
        loader()


@pytest.mark.parametrize("loader", [corpora.bookcorpus_wikipedia])
def test_real_corpora_explain_being_offline(monkeypatch, loader):
    def load_dataset(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'Salesforce/wikitext' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    with pytest.raises(RuntimeError, match="internet connection.*python_docs"):
        loader()


@pytest.fixture
def no_data(tmp_path, monkeypatch):
    """No dataset on this machine (no BERTLIB_DATA, no ../shared, an empty cache) and downloads that fail at once."""
    monkeypatch.setenv("BERTLIB_SHARED", str(tmp_path / "no-shared"))
    monkeypatch.setenv("BERTLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BERTLIB_DATA_MIRROR", "http://127.0.0.1:9")  # the discard port: connection refused
    monkeypatch.delenv("BERTLIB_DATA", raising=False)
    monkeypatch.delenv("BERTLIB_DATA_REGISTRY", raising=False)
    monkeypatch.setattr(downloads, "DOWNLOAD_RETRIES", 0)
    return tmp_path


def test_wikitext103_groups_lines_into_articles(no_data, monkeypatch):
    # The layout of wikitext-103-raw-v1: " = Title = " starts an article, " = = Section = = " does not.
    rows = [" = Valkyria Chronicles III = \n", "", " Senjō no Valkyria 3 is a video game. It was released in 2011.\n",
            " = = Gameplay = = \n", " The game plays like its predecessors. Squads fight in turns.\n",
            " = Tower Building = \n", " A stub with one sentence.\n",
            " = Third Article = \n", " First line here. Second line here.\n"]
    folder = no_data / "mine" / "wikitext-103-raw"
    folder.mkdir(parents=True)
    (folder / "wiki.train.raw").write_text("".join(row or "\n" for row in rows), encoding="utf-8")
    monkeypatch.setenv("BERTLIB_DATA", str(no_data / "mine"))
    assert corpora.wikitext103() == [
        ["Senjō no Valkyria 3 is a video game.", "It was released in 2011.",
         "The game plays like its predecessors.", "Squads fight in turns."],
        ["First line here.", "Second line here."],
    ]
    assert corpora.wikitext103(max_documents=1) == corpora.wikitext103()[:1]
    with pytest.raises(ValueError, match="'valid'.*'validation'"):
        corpora.wikitext103("valid")


def test_wikitext103_offline_names_the_dataset_and_the_command(no_data):
    with pytest.raises(FileNotFoundError, match=r"(?s)'wikitext103'.*wikitext-103-raw-v1\.zip.*bertlib download "
                                                r"wikitext103"):
        corpora.wikitext103()
