"""The Makefile's first-minute targets, read with `make -n` (nothing is installed or started): `make lab` installs
the backend KERAS_BACKEND names and starts JupyterLab as root too; `make book` installs what rendering needs."""

import os
import re
import shutil
import subprocess

import pytest

from tools.repo_paths import REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")


def dry_run(target, tmp_path, uid="1000", **variables):
    """The commands `make -n -B target` would run, with `id -u` answering `uid`."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (fake / "id").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", **variables}
    completed = subprocess.run(["make", "-n", "-B", target], cwd=REPO_ROOT, env=env, capture_output=True,
                               text=True, timeout=60)
    return completed


def pip_installs(commands):
    return [line for line in commands.splitlines() if "-m pip install" in line and "--upgrade pip" not in line]


@pytest.mark.parametrize("backend, package", [("tensorflow", None), ("jax", "jax"), ("torch", "'torch==")])
def test_lab_installs_the_backend_keras_backend_names(backend, package, tmp_path):
    completed = dry_run("lab", tmp_path, KERAS_BACKEND=backend)
    assert completed.returncode == 0, completed.stderr
    extra = [line for line in pip_installs(completed.stdout) if "course[lab]" not in line and "--no-deps" not in line]
    if package is None:
        assert extra == []  # TensorFlow comes with the course
    else:
        assert len(extra) == 1 and extra[0].split("--quiet ")[1].startswith(package), extra
    torch_version = re.search(r"^TORCH_VERSION \?= (\S+)$", (REPO_ROOT / "Makefile").read_text(), re.M).group(1)
    if backend == "torch":
        assert f"'torch=={torch_version}'" in extra[0]


def test_lab_refuses_a_backend_it_cannot_install_before_installing_anything(tmp_path):
    completed = dry_run("lab", tmp_path, KERAS_BACKEND="numpy")
    assert completed.returncode != 0 and completed.stdout == ""
    assert "KERAS_BACKEND=numpy: make lab installs tensorflow, jax or torch" in completed.stderr


@pytest.mark.parametrize("uid, flag", [("0", True), ("1000", False)])
def test_lab_starts_jupyterlab_as_root_too(uid, flag, tmp_path):
    completed = dry_run("lab", tmp_path, uid=uid, KERAS_BACKEND="tensorflow")
    (start,) = [line for line in completed.stdout.splitlines() if "jupyter lab" in line]
    assert ("--allow-root" in start.split()) == flag, start


def test_book_installs_what_rendering_needs_not_the_dev_stack(tmp_path):
    completed = dry_run("book", tmp_path)
    assert completed.returncode == 0, completed.stderr
    installs = pip_installs(completed.stdout)
    assert installs == [".venv/bin/python -m pip install --quiet -e . -e ./coursekit -e './course[book]'"], installs
    assert "tools/build_book.py" in completed.stdout
