"""tools/run_notebook.py on another backend: the kernel runs it, the record says so, the stored outputs stay."""

import importlib.util
import json
import os

import nbformat
import pytest

from tools.repo_paths import REPO_ROOT as REPO

spec = importlib.util.spec_from_file_location("run_notebook", REPO / "tools" / "run_notebook.py")
run_notebook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_notebook)


def tiny_notebook(path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("import keras\nprint(keras.backend.backend())")]
    nbformat.write(notebook, path)
    return path.read_text()


def test_another_backend_never_writes_over_the_stored_outputs(tmp_path):
    stored = tiny_notebook(tmp_path / "chapter.ipynb")
    with pytest.raises(ValueError, match="a jax run needs --output-dir"):
        run_notebook.run(tmp_path / "chapter.ipynb", backend="jax")
    with pytest.raises(ValueError, match="Unknown backend 'mxnet'"):
        run_notebook.run(tmp_path / "chapter.ipynb", backend="mxnet", output_dir=tmp_path / "out")
    assert (tmp_path / "chapter.ipynb").read_text() == stored


@pytest.mark.slow
def test_a_jax_run_goes_to_the_output_folder_and_records_its_backend(tmp_path):
    pytest.importorskip("jax")
    stored = tiny_notebook(tmp_path / "chapter.ipynb")
    run_notebook.run(tmp_path / "chapter.ipynb", fast=True, output_dir=tmp_path / "jax", backend="jax", timeout=300)
    executed = json.loads((tmp_path / "jax" / "chapter.ipynb").read_text())
    assert "".join(executed["cells"][0]["outputs"][0]["text"]).strip() == "jax"
    assert executed["metadata"]["bertlib"]["run"]["backend"] == "jax"
    assert executed["metadata"]["bertlib"]["run"]["lang"] == "en"  # a notebook without a language is English
    assert (tmp_path / "chapter.ipynb").read_text() == stored


def test_the_run_record_names_the_edition_it_ran_in():
    """The Chinese edition's own run is told from a copy of the English record by its `lang`
    (coursekit.i18n.keep_own_run keeps only the former)."""
    assert run_notebook.run_record(False, 1.0, "abc", code="sha", lang="zh")["lang"] == "zh"
    assert run_notebook.run_record(False, 1.0, "abc", code="sha")["lang"] == "en"


@pytest.mark.slow
def test_the_runner_leaves_its_own_environment_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    monkeypatch.delenv("BERTLIB_FAST", raising=False)
    tiny_notebook(tmp_path / "chapter.ipynb")
    run_notebook.run(tmp_path / "chapter.ipynb", fast=True, output_dir=tmp_path / "torch", backend="torch", timeout=300)
    executed = json.loads((tmp_path / "torch" / "chapter.ipynb").read_text())
    assert "".join(executed["cells"][0]["outputs"][0]["text"]).strip() == "torch"
    assert os.environ["KERAS_BACKEND"] == "tensorflow" and "BERTLIB_FAST" not in os.environ
