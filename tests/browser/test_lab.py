"""JupyterLab as a learner meets it: `make lab` starts it, the first chapter runs top to bottom with no
error in the page, and an exercise notebook runs and prints its feedback.

The server is started by `make lab` itself (with flags for a headless run: no browser, a free port, a
token), in fast mode (BERTLIB_FAST=1, as CI runs the notebooks). The notebooks are run in the page and never
saved: autosave is off in a temporary settings folder, and the test checks the files are untouched.
"""

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.request import urlopen

import pytest

from tests.browser.conftest import REPO, PageProblems

CHAPTER = "notebooks/00_big_picture.ipynb"
EXERCISE = "solutions/01_problem_setting.ipynb"
SETTINGS = {
    # Run the notebooks without ever writing them back.
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    # Keep every cell in the page, so the test reads all outputs (by default cells far below are virtual).
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none", "autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}
RUN_TIMEOUT_S = 300
ERROR_TEXT = re.compile(r"Traceback \(most recent call last\)|^\w*(Error|Exception)\b.*:", re.MULTILINE)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop(server):
    """Ends `make lab` and everything it started (JupyterLab, its kernels): they share its process group."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            return
        try:
            server.wait(timeout=30)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def lab(browser):
    """`make lab` on a free port with a token; yields the base URL with the token."""
    with tempfile.TemporaryDirectory(prefix="bertlib-lab-") as scratch:
        scratch = Path(scratch)
        for plugin, values in SETTINGS.items():
            path = scratch / "settings" / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        port, token = free_port(), secrets.token_hex(16)
        flags = (f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 "
                 f"--IdentityProvider.token={token} --LabApp.news_url=None "
                 "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate")
        if os.geteuid() == 0:  # CI runs as root; JupyterLab refuses root without being told
            flags += " --allow-root"
        env = {**os.environ, "BERTLIB_FAST": "1", "JUPYTERLAB_SETTINGS_DIR": str(scratch / "settings"),
               "JUPYTERLAB_WORKSPACES_DIR": str(scratch / "workspaces"), "JUPYTER_RUNTIME_DIR": str(scratch / "runtime")}
        log = open(scratch / "lab.log", "w+")
        server = subprocess.Popen(["make", "--no-print-directory", "lab", f"LAB_FLAGS={flags}"], cwd=REPO, env=env,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    with urlopen(f"{base}/api/status?token={token}", timeout=5) as response:
                        if response.status == 200:
                            break
                except OSError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"`make lab` did not serve on port {port}:\n{log.read()[-3000:]}", pytrace=False)
                time.sleep(1)
            yield base, token
        finally:
            stop(server)
            log.close()


def run_all_cells(browser, lab, notebook, screenshots):
    """Opens `notebook` in JupyterLab, runs every cell from the Run menu, waits, and returns the outputs'
    text per code cell. Fails on a cell that did not run or shows an error."""
    base, token = lab
    stored = (REPO / notebook).read_bytes()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems = PageProblems(page, base, tolerate_outside_images=True)
    page.goto(f"{base}/lab/tree/{notebook}?token={token}&reset")  # reset: a fresh workspace, this notebook only
    # The status bar reads "Python 3 (ipykernel) | Idle" once the kernel has started.
    page.wait_for_function("() => /\\| Idle/.test(document.body.innerText)", timeout=120_000)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-item", has=page.locator(".lm-Menu-itemLabel",
                                                   has_text=re.compile(r"^Run All Cells$"))).click()
    # The stored outputs carry numbered prompts too: wait for the run to start before waiting for its end.
    page.locator(".jp-InputPrompt", has_text="[*]").first.wait_for(timeout=60_000)

    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        state = page.evaluate("""() => {
            const cells = [...document.querySelectorAll(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell")];
            return cells.map(cell => ({
                prompt: (cell.querySelector(".jp-InputPrompt") || {}).textContent || "",
                outputs: [...cell.querySelectorAll(".jp-OutputArea-output")].map(output => output.textContent),
            }));
        }""")
        prompts = [cell["prompt"].strip() for cell in state]
        busy = page.locator(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status='busy']").count()
        if prompts and "[*]:" not in prompts and not busy and prompts[-1] != "[ ]:":
            break
        if any(ERROR_TEXT.search(text) for cell in state for text in cell["outputs"]):
            break
        if time.monotonic() > deadline:
            pytest.fail(f"{notebook}: still running after {RUN_TIMEOUT_S} s; prompts {prompts}")
        time.sleep(1)
    name = notebook.replace("/", "_").removesuffix(".ipynb")
    page.screenshot(path=str(screenshots / f"lab-{name}.png"))
    page.close()

    errors = [f"cell {index}: {text[-1500:]}" for index, cell in enumerate(state)
              for text in cell["outputs"] if ERROR_TEXT.search(text)]
    assert errors == [], f"{notebook}: error output in the page:\n" + "\n".join(errors)
    not_run = [index for index, prompt in enumerate(prompts) if not re.fullmatch(r"\[\d+\]:", prompt)]
    assert not_run == [], f"{notebook}: code cells that did not run: {not_run} (prompts {prompts})"
    counts = [int(prompt[1:-2]) for prompt in prompts]
    assert counts == list(range(counts[0], counts[0] + len(counts))), \
        f"{notebook}: the cells did not run in one pass, top to bottom: {prompts}"
    assert problems.real_errors() == [], f"{notebook}:\n" + "\n".join(problems.real_errors())
    assert (REPO / notebook).read_bytes() == stored, f"{notebook} was written while the test ran it"
    return [" ".join(cell["outputs"]) for cell in state]


def test_first_chapter_runs_in_jupyterlab(browser, lab, screenshots):
    outputs = run_all_cells(browser, lab, CHAPTER, screenshots)
    assert any(outputs), f"{CHAPTER} ran but printed nothing"


def test_exercise_feedback_appears_in_jupyterlab(browser, lab, screenshots):
    notebook = json.loads((REPO / EXERCISE).read_text(encoding="utf-8"))
    exercise_ids = sorted({cell["metadata"]["bertlib"]["exercise"] for cell in notebook["cells"]
                           if cell.get("metadata", {}).get("bertlib", {}).get("role") == "check"})
    assert exercise_ids, f"{EXERCISE} has no check cells"
    text = "\n".join(run_all_cells(browser, lab, EXERCISE, screenshots))
    # bertlib_course.checks.done() closes each check cell with a line naming the exercise and saying it passed.
    missing = [exercise for exercise in exercise_ids
               if not re.search(rf"(✔|✓|pass).*\b{re.escape(exercise)}\b|\b{re.escape(exercise)}\b.*(✔|✓|pass)",
                                text, re.IGNORECASE)]
    assert missing == [], f"no feedback line for exercises {missing} in:\n{text[-2000:]}"
