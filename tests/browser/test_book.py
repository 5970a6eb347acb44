"""The built book (`make book`) as a reader's browser sees it, with no network.

Each page loads with no console error and no failed or outside request, shows every image and its math,
and fits a phone's width. Links and the table of contents resolve, search finds the API, the chapter pages
launch on Colab and download their notebook, the solutions sit behind a toggle, and Chinese renders in the
site's own CJK font. A screenshot of each page goes to build/browser/screenshots (printed at the end).
"""

import json
import re
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag, urljoin, urlparse
from urllib.request import urlopen

import pytest

from tests.browser.conftest import BOOK_HTML, REPO, PageProblems

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
CHAPTERS = sorted(path.stem for path in (REPO / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
EXERCISES = sorted(path.stem for path in (REPO / "solutions").glob("[0-9][0-9]*_*.ipynb"))
COLAB = "https://colab.research.google.com/github/bertlib-course/bertlib/blob/main/"


def site_pages():
    if not BOOK_HTML.is_dir():
        return ["index.html"]  # the `site` fixture then says the book is not built
    return sorted(str(path.relative_to(BOOK_HTML)) for path in BOOK_HTML.rglob("*.html")
                  if not path.relative_to(BOOK_HTML).parts[0].startswith("_"))


def screenshot_name(page_path, kind):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", page_path.removesuffix(".html")) + f"-{kind}.png"


def settle(page):
    """Waits for the page's images, web fonts and MathJax; lazy images are loaded first."""
    page.wait_for_load_state("load")
    page.evaluate("""async () => {
        const images = [...document.images];
        images.forEach(image => { image.loading = "eager"; });
        await Promise.all(images.map(image => image.complete ? null :
            new Promise(resolve => { image.onload = image.onerror = resolve; })));
        await document.fonts.ready;
        if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
    }""")


def overflowing_elements(page):
    """Elements sticking out to the right of the viewport that no scroll container holds."""
    return page.evaluate("""() => {
        const width = document.documentElement.clientWidth;
        const scrolls = element => {
            for (let node = element.parentElement; node; node = node.parentElement) {
                const overflow = getComputedStyle(node).overflowX;
                if (overflow === "auto" || overflow === "scroll" || overflow === "hidden") return true;
            }
            return false;
        };
        return [...document.body.querySelectorAll("*")]
            .filter(element => element.getBoundingClientRect().right > width + 1 && !scrolls(element))
            .slice(0, 5)
            .map(element => element.tagName.toLowerCase() + "." + [...element.classList].join(".") + " " +
                            Math.round(element.getBoundingClientRect().right) + "px");
    }""")


@pytest.fixture(scope="module")
def reader(site, browser):
    """One tab for all pages (a new tab per page costs a renderer process each); problems are reset per page."""
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    problems = PageProblems(page, site)
    yield page, problems
    context.close()


@pytest.mark.parametrize("page_path", site_pages())
def test_page_renders_offline(page_path, site, reader, screenshots):
    page, problems = reader
    page.set_viewport_size(DESKTOP)
    problems.errors.clear()
    page.goto(site + page_path)
    settle(page)

    broken_images = page.evaluate(
        "() => [...document.images].filter(image => !(image.naturalWidth > 0)).map(image => image.src)")
    assert broken_images == [], f"{page_path}: images that did not load: {broken_images}"

    math = page.evaluate("""() => ({
        sources: document.querySelectorAll("span.math, div.math").length,
        rendered: document.querySelectorAll("span.math mjx-container, div.math mjx-container").length,
        errors: [...document.querySelectorAll("mjx-merror")].map(element => element.textContent),
        raw: [...document.querySelectorAll("span.math, div.math")].filter(element =>
            !element.querySelector("mjx-container")).map(element => element.textContent.slice(0, 80)),
    })""")
    assert math["errors"] == [], f"{page_path}: MathJax could not typeset {math['errors']}"
    assert math["raw"] == [], f"{page_path}: math left as TeX source (MathJax did not run): {math['raw']}"
    page.screenshot(path=str(screenshots / screenshot_name(page_path, "desktop")))

    page.set_viewport_size(PHONE)
    page.wait_for_timeout(200)
    page.screenshot(path=str(screenshots / screenshot_name(page_path, "phone")))
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], (f"{page_path}: at {PHONE['width']} px the page scrolls sideways "
                                    f"({widths[0]} > {widths[1]} px); outside any scroll box: "
                                    f"{overflowing_elements(page)}")
    assert problems.errors == [], f"{page_path}:\n" + "\n".join(problems.errors)


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.hrefs.append(attrs["href"])


def parse(path):
    parser = Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_internal_links_and_toc_resolve(site):
    """Crawls the site from the landing page: every internal link and #anchor resolves, and every page
    is reachable (so the table of contents holds them all)."""
    parsed, broken = {}, []
    queue, seen = ["index.html"], {"index.html"}
    while queue:
        page_path = queue.pop()
        parsed[page_path] = parse(BOOK_HTML / page_path)
        for href in parsed[page_path].hrefs:
            url = urljoin(site + page_path, href)
            if not url.startswith(site):
                continue
            target, fragment = urldefrag(url)
            relative = unquote(urlparse(target).path).lstrip("/") or "index.html"
            if relative.endswith("/"):
                relative += "index.html"
            with urlopen(target) as response:  # raises on 404: a broken link fails here
                assert response.status == 200, f"{page_path}: {href} answered {response.status}"
            if relative.endswith(".html") and relative not in seen:
                seen.add(relative)
                queue.append(relative)
            if fragment and relative.endswith(".html"):
                ids = parsed[relative].ids if relative in parsed else parse(BOOK_HTML / relative).ids
                if fragment not in ids:
                    broken.append(f"{page_path}: {href} (no id {fragment!r} in {relative})")
    assert broken == [], "broken anchors:\n" + "\n".join(broken)
    unreachable = sorted(set(site_pages()) - seen - {"search.html"})  # search.html: the search button
    assert unreachable == [], f"pages no link leads to: {unreachable}"
    sidebar = " ".join(parsed["index.html"].hrefs)
    missing = [name for name in [*(f"notebooks/{c}" for c in CHAPTERS), *(f"exercises/{e}" for e in EXERCISES),
                                 "bench/RESULTS", "api/index"] if f"{name}.html" not in sidebar]
    assert missing == [], f"the landing page's table of contents lacks {missing}"


def test_search_finds_the_api(site, browser):
    page = browser.new_page()
    problems = PageProblems(page, site)
    page.goto(site + "search.html?q=NextSentenceHead")
    results = page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=30_000)
    texts = results.all_inner_texts()
    links = [results.nth(i).locator("a").first.get_attribute("href") for i in range(results.count())]
    assert any("NextSentenceHead" in text for text in texts), texts
    assert any("bertlib.model" in link for link in links), links
    page.close()
    assert problems.errors == [], "\n".join(problems.errors)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_launches_on_colab_and_downloads(chapter, site):
    html = (BOOK_HTML / "notebooks" / f"{chapter}.html").read_text(encoding="utf-8")
    assert f'href="{COLAB}notebooks/{chapter}.ipynb"' in html
    download = f"../_sources/notebooks/{chapter}.ipynb"
    assert f'href="{download}"' in html
    with urlopen(urljoin(site + "notebooks/", download)) as response:
        assert response.read() == (REPO / "notebooks" / f"{chapter}.ipynb").read_bytes(), \
            "the download differs from the stored notebook"


@pytest.mark.parametrize("exercise", EXERCISES)
def test_exercise_page_hides_each_solution(exercise, site, browser):
    """Every solution cell is on the page, closed; opening its toggle shows the code. The download is the
    learner's copy from exercises/, with no solution in it."""
    solution = json.loads((REPO / "solutions" / f"{exercise}.ipynb").read_text(encoding="utf-8"))
    answers = ["".join(cell["source"]) for cell in solution["cells"]
               if cell.get("metadata", {}).get("bertlib", {}).get("role") == "solution"]
    page = browser.new_page()
    problems = PageProblems(page, site)
    page.goto(site + f"exercises/{exercise}.html")
    toggles = page.locator("details.hide.above-input")
    assert toggles.count() == len(answers)
    first_line = next(line for line in answers[0].splitlines() if line.strip() and "SOLUTION" not in line)
    code = toggles.first.locator("pre")
    assert not code.is_visible(), "the first solution is shown before its toggle is opened"
    toggles.first.locator("summary").click()
    assert code.is_visible() and first_line.strip() in code.inner_text()
    page.close()
    assert problems.errors == [], "\n".join(problems.errors)
    with urlopen(f"{site}_sources/exercises/{exercise}.ipynb") as response:
        assert response.read() == (REPO / "exercises" / f"{exercise}.ipynb").read_bytes()


def test_chinese_headings_use_the_shipped_font(site, browser):
    """The headings' Chinese is drawn with the CJK subset served by the site, whatever fonts the reader has."""
    page = browser.new_page()
    problems = PageProblems(page, site)
    page.goto(site + f"notebooks/{CHAPTERS[0]}.html")
    settle(page)
    heading = page.locator("h1").first.inner_text()
    chinese = "".join(re.findall(r"[\u4e00-\u9fff]", heading))
    assert chinese, f"the first chapter's title has no Chinese: {heading!r}"
    loaded = page.evaluate("""text => [...document.fonts].filter(face =>
        face.family.includes("Bertlib CJK") && face.status === "loaded").length > 0
        && document.fonts.check('700 32px "Bertlib CJK"', text)""", chinese)
    assert loaded, "the shipped CJK font did not load for the heading"
    page.close()
    assert problems.errors == [], "\n".join(problems.errors)


CODE_LINE = 100  # characters a code line may have and still show whole on a laptop (issue 24)


def test_a_100_character_code_line_shows_whole_at_1280_px(site, browser):
    """On a 1280-pixel screen every code cell whose lines have at most 100 characters (a CJK character counts two)
    shows them without a horizontal scroll bar (the theme's column clipped such lines at 84 characters). Measured
    on every chapter and exercise page: a 100-character probe line fits the code box's text area, and no such cell
    scrolls sideways."""
    page = browser.new_page(viewport=DESKTOP)
    problems = PageProblems(page, site)
    pages = [f"notebooks/{chapter}.html" for chapter in CHAPTERS] + [f"exercises/{name}.html" for name in EXERCISES]
    measured = 0
    for page_path in pages:
        page.goto(site + page_path)
        settle(page)
        found = page.evaluate("""limit => {
            const boxes = [...document.querySelectorAll("div.cell div.cell_input div.highlight pre")];
            const pre = boxes[0];
            const probe = document.createElement("span");
            probe.textContent = "x".repeat(limit);
            pre.appendChild(probe);
            const style = getComputedStyle(pre);
            const textRight = pre.getBoundingClientRect().right - parseFloat(style.paddingRight)
                              - parseFloat(style.borderRightWidth);
            const probeRight = probe.getBoundingClientRect().right;
            probe.remove();
            // Columns as a terminal counts them: a CJK character takes two (it is drawn about 1.7 wide).
            const columns = line => [...line].reduce((sum, char) => sum + (/[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/.test(char) ? 2 : 1), 0);
            const widest = box => Math.max(...box.textContent.split("\\n").map(columns));
            const scrolling = boxes.filter(box => widest(box) <= limit && box.scrollWidth > box.clientWidth)
                                   .map(box => box.textContent.split("\\n")[0].slice(0, 60));
            const longest = Math.max(...boxes.map(box => Math.max(...box.textContent.split("\\n").map(columns)
                                                                       .filter(width => width <= limit))));
            return {probeRight, textRight, scrolling, cells: boxes.length, longest, font: style.fontSize};
        }""", CODE_LINE)
        assert found["probeRight"] <= found["textRight"] + 0.5, (
            f"{page_path}: at {DESKTOP['width']} px a {CODE_LINE}-character line ends at {found['probeRight']:.0f} px, "
            f"past the code box's text area ({found['textRight']:.0f} px; code font {found['font']})")
        assert found["scrolling"] == [], (f"{page_path}: code cells with lines of at most {CODE_LINE} characters "
                                          f"scroll sideways at {DESKTOP['width']} px: {found['scrolling']}")
        measured += found["cells"]
        assert found["longest"] >= 80, f"{page_path}: no long line to measure (longest {found['longest']})"
    page.close()
    assert measured > 100 and problems.errors == [], "\n".join(problems.errors)
