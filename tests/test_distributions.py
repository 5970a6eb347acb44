"""Three distributions for three users, built here as wheels: each holds its own package and nothing else, so
`pip install bertlib` gives an engineer the library without a grader, a notebook helper or a Chinese catalogue;
and the three together run a chapter with nothing of the repository in sight."""

import json
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

REPO = Path(__file__).resolve().parent.parent
DISTRIBUTIONS = {  # folder of the pyproject.toml -> (wheel name, the one top-level package it ships)
    ".": ("bertlib", "bertlib"),
    "course": ("bertlib_course", "bertlib_course"),
    "coursekit": ("coursekit", "coursekit"),
}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheels")
    for folder, (_, package) in DISTRIBUTIONS.items():
        # Built from a copy (setuptools leaves build/ beside the sources), without build isolation: setuptools is
        # in the test environment, and nothing is fetched at test time.
        source = tmp_path_factory.mktemp("source")
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(REPO / folder / name, source / name)
        shutil.copytree(REPO / folder / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                        "--wheel-dir", str(out), str(source)], check=True, capture_output=True, timeout=600, cwd=out)
    return out


def top_packages(wheel):
    """The top-level folders a wheel installs into site-packages (its .dist-info aside)."""
    return {member.split("/")[0] for member in zipfile.ZipFile(wheel).namelist()
            if not member.split("/")[0].endswith(".dist-info")}


@pytest.mark.slow
@pytest.mark.parametrize("folder", DISTRIBUTIONS)
def test_each_wheel_ships_its_own_package_and_nothing_else(wheels, folder):
    name, package = DISTRIBUTIONS[folder]
    [wheel] = wheels.glob(f"{name}-*.whl")
    members = zipfile.ZipFile(wheel).namelist()
    assert top_packages(wheel) == {package}, f"{wheel.name} ships {sorted(top_packages(wheel))}"
    if package == "bertlib":
        python = [member for member in members if member.endswith(".py")]
        assert not [member for member in python
                    if any(part in member for part in ("course", "grading", "i18n", "exercises", "prose"))]
        assert "bertlib/io/registry.json" in members and "bertlib/text/vocab/bert-uncased.txt" in members
    if package == "bertlib_course":
        assert "bertlib_course/assets/attention_view.js" in members  # the explorer's canvas, no CDN


def test_the_wheel_check_sees_a_stray_package(tmp_path):
    wheel = tmp_path / "bertlib-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("bertlib/__init__.py", "")
        archive.writestr("bertlib_course/__init__.py", "")
        archive.writestr("bertlib-0.dist-info/METADATA", "")
    assert top_packages(wheel) == {"bertlib", "bertlib_course"}


# The shortest chapter in fast mode (about 60 s on 2 cores; 01_problem_setting takes about 100 s).
CHAPTER = REPO / "notebooks" / "06_self_test.ipynb"
WHEEL_PACKAGES = ("bertlib", "bertlib_course", "coursekit")
TERMINAL_COLOURS = re.compile(r"\x1b\[[0-9;]*m")  # in a kernel's tracebacks


@pytest.fixture(scope="module")
def wheel_venv(wheels, tmp_path_factory):
    """A virtualenv holding the three wheels and nothing else of ours; the rest (Keras, TensorFlow, ipykernel, ...)
    comes from this test's environment, whose site-packages a .pth file adds as a plain folder: the .pth files in
    it, the editable installs' import hooks among them, are not run there."""
    venv = tmp_path_factory.mktemp("wheel_venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True,
                   timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", "--no-cache-dir", *map(str, sorted(wheels.glob("*.whl")))],
                   check=True, capture_output=True, timeout=300)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    ours = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    (Path(site) / "test-environment.pth").write_text("".join(f"{path}\n" for path in sorted(ours)))
    return venv


def location_check(venv):
    """The source of a first cell: our three packages come from `venv`, no folder of the repository other than the
    test environment's site-packages is on sys.path, and no editable install's import hook was loaded."""
    allowed = sorted({sysconfig.get_paths()[key] for key in ("purelib", "platlib")})
    return f"""import importlib, sys
from pathlib import Path
venv, repo = Path({str(venv.resolve())!r}), Path({str(REPO)!r})
for name in {WHEEL_PACKAGES!r}:
    where = Path(importlib.import_module(name).__file__).resolve()
    assert where.is_relative_to(venv), f"{{name}} imported from {{where}}, not from the wheel in {{venv}}"
allowed = [Path(path).resolve() for path in {allowed!r}]
seen = [path for path in sys.path
        if Path(path).resolve().is_relative_to(repo) and Path(path).resolve() not in allowed]
assert not seen, f"the repository is on sys.path: {{seen}}"
hooks = sorted(name for name in sys.modules if name.startswith("__editable__"))
assert not hooks, f"the editable installs' import hooks ran: {{hooks}}"
"""


def kernel_spec(venv, jupyter_path):
    """A kernel spec, `wheels`, whose kernel runs `venv`'s python."""
    folder = jupyter_path / "kernels" / "wheels"
    folder.mkdir(parents=True)
    spec = {"argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "the course from its wheels", "language": "python"}
    (folder / "kernel.json").write_text(json.dumps(spec))
    return "wheels"


@pytest.mark.slow
def test_a_chapter_runs_from_the_wheels_alone(wheel_venv, tmp_path, monkeypatch):
    work = tmp_path / "work"  # the chapter runs outside the repository, as it does for a learner
    work.mkdir()
    shutil.copy(CHAPTER, work / CHAPTER.name)
    for name, value in (("KERAS_BACKEND", "tensorflow"), ("BERTLIB_FAST", "1"), ("TF_CPP_MIN_LOG_LEVEL", "2"),
                        ("JUPYTER_PATH", str(tmp_path / "jupyter"))):
        monkeypatch.setenv(name, value)
    for name in ("PYTHONPATH", "PYTHONHOME", "BERTLIB_SHARED", "JUPYTER_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    notebook = nbformat.read(work / CHAPTER.name, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(location_check(wheel_venv)))
    client = NotebookClient(notebook, timeout=600, kernel_name=kernel_spec(wheel_venv, tmp_path / "jupyter"),
                            resources={"metadata": {"path": str(work)}})
    try:
        client.execute()
    except CellExecutionError as error:
        failed = next(index for index, cell in enumerate(notebook.cells)
                      if any(output.get("output_type") == "error" for output in cell.get("outputs", ())))
        where = "the location check" if failed == 0 else f"its cell {failed} (from 1, markdown cells counted)"
        pytest.fail(f"{CHAPTER.name}, run from the wheels, failed in {where}:\n"
                    f"{TERMINAL_COLOURS.sub('', str(error))}", pytrace=False)


def test_the_location_check_sees_the_editable_installs(tmp_path):
    # This test's own environment imports the packages from the repository (editable installs): the check refuses.
    run = subprocess.run([sys.executable, "-c", location_check(tmp_path)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode != 0 and f"bertlib imported from {REPO / 'bertlib'}" in run.stderr, run.stderr
