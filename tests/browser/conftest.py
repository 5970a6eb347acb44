"""The browser harness: Debian's Chromium driven by Playwright, with every request outside this machine blocked.

`make test` builds the book and runs these tests as their own step (`make browser`), with
BERTLIB_REQUIRE_BROWSER=1: there a missing Chromium or an unbuilt book fails the run. A plain `pytest` on a
machine without them skips these tests and says why.
"""

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

from tools.repo_paths import REPO_ROOT as REPO

CHROMIUM = Path(os.environ.get("BERTLIB_CHROMIUM", "/usr/bin/chromium"))
BOOK_HTML = Path(os.environ.get("BERTLIB_BOOK_HTML", REPO / "build" / "book" / "html"))
SCREENSHOTS = Path(os.environ.get("BERTLIB_SCREENSHOTS", REPO / "build" / "browser" / "screenshots"))
# Without the background-networking flags Chromium keeps calling home (updates, safe browsing, field trials).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REQUIRED = os.environ.get("BERTLIB_REQUIRE_BROWSER") == "1"


def unavailable(reason):
    """Fails under `make test` (BERTLIB_REQUIRE_BROWSER=1), skips elsewhere."""
    if REQUIRED:
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    """Chromium for one test module; module scope so that a test driving its own Playwright can run between."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed: pip install -e '.[dev]' (make test does this)")
    if not CHROMIUM.is_file():
        unavailable(f"{CHROMIUM} not found: `make chromium` installs Debian's chromium and fonts-noto-cjk "
                    "(make test does this)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def screenshots():
    """A fresh screenshot folder. Under pytest-xdist (`make browser` runs two workers) every worker shares it, so
    none may empty it: `make browser` empties it before the run."""
    if SCREENSHOTS.exists() and "PYTEST_XDIST_WORKER" not in os.environ:
        shutil.rmtree(SCREENSHOTS)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="session")
def site():
    """The built book served on a free local port; yields its base URL."""
    if not (BOOK_HTML / "index.html").is_file():
        unavailable(f"the book is not built ({BOOK_HTML / 'index.html'} is missing): run `make book`")
    handler = functools.partial(QuietHandler, directory=str(BOOK_HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


class PageProblems:
    """Collects what went wrong while a page loaded: console errors, page errors, failed or blocked requests."""

    def __init__(self, page, allowed_prefix, tolerate_outside_images=False):
        self.errors = []
        self.allowed_prefix = allowed_prefix
        # JupyterLab shows a notebook's markdown as written, and the notebooks' Colab badge is an image on the
        # web: blocked there like every outside request, but not a failure of the page.
        self.tolerate_outside_images = tolerate_outside_images
        self.outside_images = []
        page.route("**/*", self._route)
        page.on("console", lambda message: message.type == "error" and self.errors.append(
            f"console error: {message.text} ({message.location.get('url')})"))
        page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))
        page.on("requestfailed", lambda request: request.url not in self.outside_images and self.errors.append(
            f"request failed: {request.url} ({request.failure})"))
        page.on("response", lambda response: response.status >= 400 and self.errors.append(
            f"HTTP {response.status}: {response.url}"))

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.allowed_prefix) or url.startswith("data:") or url.startswith("blob:"):
            route.continue_()
            return
        if self.tolerate_outside_images and route.request.resource_type == "image":
            self.outside_images.append(url)
        else:
            self.errors.append(f"blocked request outside the site: {url}")
        route.abort()

    def real_errors(self):
        """The errors, less the console's report of a tolerated image that was blocked."""
        return [error for error in self.errors
                if not (error.startswith("console error: Failed to load resource")
                        and any(url in error for url in self.outside_images))]


def pytest_terminal_summary(terminalreporter):
    if SCREENSHOTS.is_dir() and any(SCREENSHOTS.iterdir()):
        terminalreporter.write_line(f"browser screenshots: {SCREENSHOTS}")
