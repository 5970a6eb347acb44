"""Three distributions for three users, built here as wheels: each holds its own package and nothing else, so
`pip install bertlib` gives an engineer the library without a grader, a notebook helper or a Chinese catalogue."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

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
