"""The attention explorer in a real JupyterLab, in headless Chromium, offline: it renders, moving the head selector
changes the picture, and hovering a token names what it attends to.

Self-contained (its own JupyterLab server and browser), so it needs only Playwright and Debian's Chromium; it
skips without them. Every request that leaves 127.0.0.1 is blocked and fails the test: no CDN.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a JupyterLab server, a kernel and a browser: about a minute on 2 cores

CHROMIUM = Path(os.environ.get("BERTLIB_CHROMIUM", "/usr/bin/chromium"))
TOKEN = "bertlib-explore-test"
CELL = """\
import keras
from bertlib import BertBackbone, BertConfig
from bertlib_course import paths
from bertlib_course import explore
from bertlib.text.tokenizer import WordPieceTokenizer

tokenizer = WordPieceTokenizer.from_vocab_file(paths.minilm_dir() / "vocab.txt")
keras.utils.set_random_seed(0)
backbone = BertBackbone(BertConfig(vocabulary_size=tokenizer.vocabulary_size, num_layers=2, num_heads=4,
                                   hidden_dim=32, intermediate_dim=64, dropout=0.0))
explore.attention(backbone, tokenizer, "The cat sat on the mat.", "It was tired.")
"""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def lab(tmp_path, minilm_dir):
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "id": "explorer", "metadata": {},
                           "outputs": [], "source": CELL}],
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "explore.ipynb").write_text(json.dumps(notebook))
    port = free_port()
    jupyter = Path(sys.executable).parent / "jupyter"
    server = subprocess.Popen(
        [str(jupyter), "lab", "--no-browser", "--allow-root", f"--port={port}", "--ip=127.0.0.1",
         f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={tmp_path}",
         "--LabApp.expose_app_in_browser=True"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "PATH": f"{jupyter.parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start within 60 s")
        yield f"{base}/lab/tree/explore.ipynb?token={TOKEN}", base
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_attention_explorer_in_jupyterlab(lab):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} not found (apt-get install chromium)")
    url, base = lab
    outside = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1200, "height": 1000})

        def only_local(route):
            if route.request.url.startswith(base) or route.request.url.startswith(("data:", "blob:")):
                route.continue_()
            else:
                outside.append(route.request.url)
                route.abort()

        page.route("**/*", only_local)
        page.goto(url)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget "
                               "&& window.jupyterapp.shell.currentWidget.sessionContext.session", timeout=60_000)
        page.wait_for_timeout(2_000)
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        canvas = page.wait_for_selector(".jp-OutputArea canvas", timeout=180_000)
        page.wait_for_timeout(500)
        before = canvas.screenshot()
        head = page.locator(".jp-OutputArea select").nth(1)  # the second dropdown: Layer, Head

        def picture_after(label, previous):
            """Select a head, then wait (up to 30 s: the kernel answers) for the canvas to change."""
            head.select_option(label=label)
            for _ in range(60):
                page.wait_for_timeout(500)
                picture = canvas.screenshot()
                if picture != previous:
                    return picture
            raise AssertionError(f"choosing {label!r} did not change the picture")

        after = picture_after("head 1", before)
        picture_after("all heads: grid", after)
        head.select_option(label="head 0")
        page.wait_for_timeout(1_500)
        box = canvas.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_timeout(500)
        info = page.locator(".bertlib-attention-info").inner_text()
        assert "attends to:" in info, info
        if os.environ.get("BERTLIB_SCREENSHOTS"):
            page.screenshot(path=str(Path(os.environ["BERTLIB_SCREENSHOTS"]) / "explore_attention_lab.png"))
        browser.close()
    assert outside == [], f"requests left the machine (a CDN?): {outside}"
