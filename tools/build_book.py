"""Builds the course book (`make book`): a static HTML site from the notebooks' stored outputs.

    python tools/build_book.py [--out build/book] [--mathjax build/vendor/mathjax/es5]

Nothing is executed. The script lays out a Sphinx source folder under OUT/src in the repository's own layout
and runs Sphinx (myst-nb, sphinx-book-theme; configuration in book/conf.py) into OUT/html:

- book/ (configuration, landing page, API reference, styles);
- notebooks/*.ipynb as they are stored, except that the Colab badge image points at a copy inside the site;
- exercises/NN_*.ipynb, the learner's copy, with each solution cell of solutions/NN_*.ipynb inserted after
  its stub behind a "Show the solution" toggle (myst-nb's hide-input);
- the Chinese edition (notebooks/zh, exercises/zh with solutions/zh) the same way, at the same paths as in the
  repository (so Colab opens the right file), with its landing page at zh/index; every chapter and exercise
  page links to its counterpart in the other language;
- bench/RESULTS.md with the plots in bench/ appended, and docs/*.md;
- MathJax 3 (from the npm package, fetched by `make book`) and a subset of Noto Sans CJK holding the CJK
  characters the book uses, so the site needs no network and no CJK font on the reader's machine.

After the build, each download link serves the notebook as stored (an exercise page: the learner's copy).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
SOLUTION_PROMPTS = {"code_prompt_show": "Show the solution", "code_prompt_hide": "Hide the solution"}
# Debian's fonts-noto-cjk; the simplified-Chinese face of each collection is picked by its family name.
CJK_FONTS = {"regular": Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"),
             "bold": Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc")}
CJK_FAMILY = "Noto Sans CJK SC"
CJK_CHAR = re.compile(r"[\u2e80-\u2fff\u3000-\u303f\u3040-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
# The combined MathJax components the site does not load; everything else under es5/ is copied, since MathJax
# loads fonts, TeX extensions and accessibility parts from beside its script on demand.
UNUSED_MATHJAX = re.compile(r"^(mml-|tex-mml-|tex-svg|tex-chtml-full|node-main)")


def fail(message):
    sys.exit(f"build_book: {message}")


def read_notebook(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def write_notebook(nb, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def cell_text(cell):
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def local_badge(nb, depth):
    """Points the Colab badge at the site's own copy: an image from outside would not load offline."""
    badge = "../" * depth + "_static/colab-badge.svg"
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown" and COLAB_BADGE in cell_text(cell):
            cell["source"] = cell_text(cell).replace(COLAB_BADGE, badge)
    return nb


def language_switch(nb, other_page, to_chinese):
    """Adds a link to the same page in the other language under the notebook's title."""
    link = (f"**Language · 语言:** English · [中文]({other_page})" if to_chinese
            else f"**语言 · Language:** [English]({other_page}) · 中文")
    first = next(cell for cell in nb["cells"] if cell["cell_type"] == "markdown")
    title, _, rest = cell_text(first).partition("\n")
    first["source"] = f"{title}\n\n{link}\n{rest}"
    return nb


def exercise_page(exercise_path, solution_path):
    """The learner's copy with each solution cell after its stub, behind a toggle."""
    exercise, solution = read_notebook(exercise_path), read_notebook(solution_path)
    if len(exercise["cells"]) != len(solution["cells"]):
        fail(f"{exercise_path} has {len(exercise['cells'])} cells but {solution_path} has "
             f"{len(solution['cells'])}; run `coursekit exercises build` to regenerate exercises/")
    cells = []
    for stub, answer in zip(exercise["cells"], solution["cells"]):
        cells.append(stub)
        if answer.get("metadata", {}).get("bertlib", {}).get("role") == "solution":
            shown = {"cell_type": "code", "execution_count": None, "outputs": [], "source": cell_text(answer),
                     "id": f"{answer.get('id', len(cells))}-solution",
                     "metadata": {"tags": ["hide-input"], "mystnb": dict(SOLUTION_PROMPTS)}}
            cells.append(shown)
    exercise["cells"] = cells
    return exercise


def results_page(bench):
    """bench/RESULTS.md, then every plot in bench/ that the text does not already show."""
    text = (bench / "RESULTS.md").read_text(encoding="utf-8")
    plots = [plot for plot in sorted(bench.glob("*.png")) if plot.name not in text]
    if plots:
        text += "\n## Plots\n"
        for plot in plots:
            script = plot.with_suffix(".py").name
            text += f"\n```{{figure}} {plot.name}\n:alt: {plot.stem}\n\n`{plot.name}`, written by `bench/{script}`.\n```\n"
    return text


def subset_cjk_fonts(src, static):
    """Writes woff2 subsets of Noto Sans CJK SC holding every CJK character used in the book's sources."""
    from fontTools import subset, ttLib

    characters = set()
    for path in src.rglob("*"):
        if path.suffix in {".md", ".ipynb", ".rst"}:
            characters.update(CJK_CHAR.findall(path.read_text(encoding="utf-8")))
    if not characters:
        return 0
    for weight, collection in CJK_FONTS.items():
        if not collection.is_file():
            fail(f"{collection} not found: the book ships a subset of Noto Sans CJK so Chinese headings render "
                 "everywhere. Install it with `apt-get install fonts-noto-cjk` (make book does this).")
        faces = ttLib.TTCollection(str(collection)).fonts
        matches = [index for index, face in enumerate(faces) if face["name"].getDebugName(1) == CJK_FAMILY]
        if not matches:
            fail(f"{collection} holds no face named {CJK_FAMILY!r}")
        options = subset.Options()
        options.flavor = "woff2"
        options.font_number = matches[0]
        options.layout_features = ["*"]
        font = subset.load_font(str(collection), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(text="".join(sorted(characters)))
        subsetter.subset(font)
        (static / "fonts").mkdir(parents=True, exist_ok=True)
        subset.save_font(font, str(static / "fonts" / f"bertlib-cjk-{weight}.woff2"), options)
    return len(characters)


def copy_mathjax(es5, static):
    if not (es5 / "tex-chtml.js").is_file():
        fail(f"MathJax 3 not found at {es5} (expected {es5 / 'tex-chtml.js'}). `make book` fetches it from the "
             "npm registry (npm pack mathjax@3); or pass --mathjax DIR pointing at a MathJax 3 es5/ folder.")
    shutil.copytree(es5, static / "mathjax", ignore=lambda folder, names: [
        name for name in names if Path(folder) == es5 and UNUSED_MATHJAX.match(name)])


def lay_out_sources(src, mathjax):
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(REPO / "book", src)
    for edition, depth in (("", 1), ("zh", 2)):
        chinese = edition == "zh"
        for path in sorted((REPO / "notebooks" / edition).glob("[0-9][0-9]*_*.ipynb")):  # 05x: optional
            nb = local_badge(read_notebook(path), depth)
            other = REPO / "notebooks" / ("" if chinese else "zh") / path.name
            if other.is_file():
                nb = language_switch(nb, f"../{path.name}" if chinese else f"zh/{path.name}", not chinese)
            write_notebook(nb, src / "notebooks" / edition / path.name)
        for path in sorted((REPO / "solutions" / edition).glob("[0-9][0-9]_*.ipynb")):
            exercise = REPO / "exercises" / edition / path.name
            if not exercise.is_file():
                fail(f"{exercise} is missing for {path}; run `coursekit exercises build` (and `coursekit i18n "
                     "build` for the Chinese edition)")
            nb = local_badge(exercise_page(exercise, path), depth)
            other = REPO / "exercises" / ("" if chinese else "zh") / path.name
            if other.is_file():
                nb = language_switch(nb, f"../{path.name}" if chinese else f"zh/{path.name}", not chinese)
            write_notebook(nb, src / "exercises" / edition / path.name)
    (src / "bench").mkdir()
    for plot in (REPO / "bench").glob("*.png"):
        shutil.copy2(plot, src / "bench" / plot.name)
    (src / "bench" / "RESULTS.md").write_text(results_page(REPO / "bench"), encoding="utf-8")
    (src / "docs").mkdir()
    for page in (REPO / "docs").glob("*.md"):
        shutil.copy2(page, src / "docs" / page.name)
    characters = subset_cjk_fonts(src, src / "_static")
    copy_mathjax(mathjax, src / "_static")
    return characters


def serve_stored_notebooks(html):
    """Each page's download button gives the notebook as the repository stores it: a chapter as it is (the
    page's source differs by the badge's address), an exercise as the learner's copy, with no solutions."""
    for folder in ("notebooks", "exercises", "notebooks/zh", "exercises/zh"):
        for path in sorted((REPO / folder).glob("[0-9][0-9]*_*.ipynb")):
            target = html / "_sources" / folder / path.name
            if target.is_file():
                shutil.copy2(path, target)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "book")
    parser.add_argument("--mathjax", type=Path, default=REPO / "build" / "vendor" / "mathjax" / "es5")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    src, html = args.out / "src", args.out / "html"
    characters = lay_out_sources(src, args.mathjax.resolve())
    if html.exists():
        shutil.rmtree(html)
    # -W: a warning fails the build (a malformed docstring renders as a broken link in the API pages);
    # --keep-going lists them all first.
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going",
               "-d", str(args.out / "doctrees"), str(src), str(html)]
    result = subprocess.run(command, cwd=REPO, env={**os.environ, "BERTLIB_REPO_ROOT": str(REPO)})
    if result.returncode != 0:
        fail(f"sphinx-build failed (exit {result.returncode}); its warnings are above")
    serve_stored_notebooks(html)
    print(f"book: {html / 'index.html'} ({characters} CJK characters in the font subset)")
    print(f"book_build_seconds: {time.perf_counter() - start:.1f}")


if __name__ == "__main__":
    main()
