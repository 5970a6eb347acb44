"""The course's set-up: importing `bertlib_course` changes nothing; `course.setup()` is the one call that does."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tools.repo_paths import REPO_ROOT as REPO

SET_BY_SETUP = ("TF_CPP_MIN_LOG_LEVEL", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS",
                "OMP_WAIT_POLICY")


def _run(script, backend="tensorflow"):
    environment = {key: value for key, value in os.environ.items() if key not in SET_BY_SETUP}
    environment.update(KERAS_BACKEND=backend, PYTHONPATH=str(REPO))
    completed = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                               env=environment, cwd=REPO, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed


def test_importing_the_course_changes_no_global_state():
    script = """
        import json, logging, os, sys, warnings
        before = (dict(os.environ), logging.getLogger("tensorflow").level, list(warnings.filters))
        import bertlib_course as course
        import bertlib_course.colab
        after = (dict(os.environ), logging.getLogger("tensorflow").level, list(warnings.filters))
        print(json.dumps({"same": before == after, "keras": "keras" in sys.modules,
                          "tensorflow": "tensorflow" in sys.modules}))
    """
    assert json.loads(_run(script).stdout.splitlines()[-1]) == {"same": True, "keras": False, "tensorflow": False}


def test_setup_quiets_seeds_sizes_threads_and_says_what_runs():
    script = f"""
        import json, logging, os, random, warnings
        import bertlib_course as course
        report = course.setup(seed=3)  # first, as in every chapter: importing bertlib imports Keras
        from bertlib.train import host
        first = random.random()
        course.setup(seed=3)
        print(json.dumps({{"report": report, "repeat": first == random.random(),
                          "env": {{name: os.environ.get(name) for name in {SET_BY_SETUP!r}}},
                          "usable": host.usable_cpus(),
                          "tf_logger": logging.getLogger("tensorflow").level,
                          "ignored": sorted(str(f[1].pattern) for f in warnings.filters
                                            if f[0] == "ignore" and f[1] is not None)}}))
    """
    completed = _run(script)
    result = json.loads(completed.stdout.splitlines()[-1])
    assert completed.stdout.splitlines()[0].startswith("bertlib course: tensorflow backend (keras 3.")
    assert "one-device with 1 replica(s) on CPU" in completed.stdout.splitlines()[0]
    assert result["report"]["backend"] == "tensorflow" and result["report"]["replicas"] == 1
    assert result["repeat"]  # seeded
    assert result["env"]["TF_CPP_MIN_LOG_LEVEL"] == "3"
    assert result["env"]["OMP_WAIT_POLICY"] == "PASSIVE"  # PyTorch's OpenMP threads do not spin
    # set before TensorFlow started, so its pools are made with them (tests/library/test_cpu_setup.py)
    assert result["env"]["TF_NUM_INTRAOP_THREADS"] == result["env"]["TF_NUM_INTEROP_THREADS"] == str(result["usable"])
    assert result["tf_logger"] == 40  # logging.ERROR
    assert "Gradients do not exist for variables" in result["ignored"]
    assert "CUDA" not in completed.stderr  # TensorFlow's failed CUDA probe stays out of the outputs


def test_setup_on_jax_and_torch_reports_that_backend():
    for backend, name in (("jax", "one-device"), ("torch", "torch")):
        line = _run("import bertlib_course as course\ncourse.setup()", backend).stdout.splitlines()[0]
        assert line.startswith(f"bertlib course: {backend} backend (keras 3.") and f"{name} with 1 replica(s)" in line


def test_tensorflow_warnings_stay_out_of_a_notebook_after_setup():
    """In a notebook kernel (an interactive shell), TensorFlow's `tf.get_logger()` sets its logger to INFO at its
    first call, after `course.setup()` set ERROR; chapter 07's stored run showed a retracing warning so. The
    warning stays out, the error still shows."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in (
        "import bertlib_course as course\ncourse.setup()",
        "import logging, sys, tensorflow as tf\nprint('interactive', hasattr(sys, 'ps1'))\n"
        "tf.get_logger().warning('a TensorFlow warning')\ntf.get_logger().error('a TensorFlow error')")]
    environment = {key: value for key, value in os.environ.items() if key not in SET_BY_SETUP}
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute(
        env={**environment, "KERAS_BACKEND": "tensorflow", "PYTHONPATH": str(REPO)})
    printed = "".join(output.get("text", "") for output in notebook.cells[1].outputs)
    assert "interactive True" in printed  # what makes TensorFlow lower its level
    assert "a TensorFlow error" in printed
    assert "a TensorFlow warning" not in printed


def test_an_exercise_notebooks_set_up_cells_print_no_tensorflow_line():
    """A learner's JupyterLab has no TF_CPP_MIN_LOG_LEVEL: TensorFlow 2.19+ logs its start-up (oneDNN, "Could not
    find cuda drivers", six lines) through absl before absl is initialised, whatever that variable says; setup()
    filters them. The set-up cells print setup()'s one line and nothing else."""
    import nbformat
    from nbclient import NotebookClient

    exercise = nbformat.read(REPO / "exercises" / "01_problem_setting.ipynb", as_version=4)
    set_up = [cell for cell in exercise.cells if cell.cell_type == "code"][:2]
    assert "course.setup(" in set_up[1].source and not set_up[1].metadata.get("bertlib")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(cell.source) for cell in set_up]
    # ipykernel forwards what the process writes to its stderr (where C++ code logs) to the cell's output, as a
    # learner sees it, except under pytest (PYTEST_CURRENT_TEST): that variable stays out of the kernel.
    environment = {key: value for key, value in os.environ.items()
                   if key not in SET_BY_SETUP and not key.startswith("PYTEST_")}
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute(
        env={**environment, "KERAS_BACKEND": "tensorflow", "PYTHONPATH": str(REPO)})
    printed = [line for cell in notebook.cells for output in cell.outputs
               for line in output.get("text", "").splitlines()]
    assert printed and printed[0].startswith("bertlib course: tensorflow backend"), printed
    assert printed[1:] == [], printed  # no oneDNN notice, no CUDA probe, no absl preamble


@pytest.mark.slow
def test_chapter_00_reports_eight_replicas_on_eight_simulated_jax_devices():
    """A Colab TPU v2-8 has 8 cores; with 8 simulated CPU devices chapter 00's set-up and environment cells
    say "jax-data-parallel with 8 replica(s)"."""
    pytest.importorskip("jax")
    import nbformat
    from nbclient import NotebookClient

    chapter = nbformat.read(REPO / "notebooks" / "00_big_picture.ipynb", as_version=4)
    code = [cell for cell in chapter.cells if cell.cell_type == "code"]
    environment_cell = next(cell for cell in code if "course.environment_report()" in cell.source)
    chapter.cells = code[:2] + [environment_cell]  # install (nothing off Colab), set-up, environment
    NotebookClient(chapter, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(REPO / "notebooks")}}).execute(
        env={**os.environ, "KERAS_BACKEND": "jax", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(REPO),
             "OMP_WAIT_POLICY": "PASSIVE", "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
             "BERTLIB_FAST": "1"})
    printed = "".join(output.get("text", "") for cell in chapter.cells for output in cell.outputs)
    assert "jax-data-parallel with 8 replica(s) on CPU" in printed  # the set-up line
    assert "strategy     jax-data-parallel with 8 replica(s)" in printed  # the environment cell
    assert not any(output.output_type == "error" for cell in chapter.cells for output in cell.outputs)
