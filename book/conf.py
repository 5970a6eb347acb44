"""Sphinx configuration of the course book (`make book`).

`tools/build_book.py` lays the sources out under build/book/src in the repository's own layout
(notebooks/, exercises/, bench/, docs/) next to this file, vendors MathJax and a CJK font subset into
_static, then runs Sphinx. Nothing is executed: the pages show the outputs stored in the notebooks.
"""

import os
import sys

# bertlib is imported from the working tree for the API reference; importing it needs no data.
sys.path.insert(0, os.path.abspath(os.environ.get("BERTLIB_REPO_ROOT", "../../..")))

from bertlib_course import BRANCH, REPOSITORY  # noqa: E402

project = "Learn BERT by building it"
author = "the bertlib course"
copyright = "the bertlib course authors, Apache-2.0"
language = "en"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
]

# The stored outputs are the evidence; the book never re-runs a notebook.
nb_execution_mode = "off"
# Markdown printed by a cell (tables, math) is read as MyST, like the markdown cells.
nb_render_markdown_format = "myst"
nb_merge_streams = True
# An explorer cell stores a widget view and a static picture of its first state; a static page can only show
# the picture (the widget needs a live kernel), so the widget view is never chosen.
nb_mime_priority_overrides = [("*", "application/vnd.jupyter.widget-view+json", None)]
# ...and the page never loads the widget manager (from a CDN by default): the book works offline.
nb_ipywidgets_js = {}
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "html_image", "smartquotes"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

exclude_patterns = ["_build", "**/.ipynb_checkpoints"]
templates_path = ["_templates"]

autosummary_generate = True
autodoc_member_order = "bysource"
autodoc_typehints = "none"
# Keras' own docstrings (compile, from_config, ...) are Markdown written for keras.io; show only ours.
autodoc_inherit_docstrings = False
# bertlib's docstrings mark code with single backquotes, as Markdown does.
default_role = "literal"
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# MathJax 3 is served from the site itself (copied from the npm package at build time), never from a CDN.
mathjax_path = "mathjax/tex-chtml.js"

html_theme = "sphinx_book_theme"
html_title = "Learn BERT by building it"
html_static_path = ["_static"]
html_css_files = ["bertlib-book.css"]
html_last_updated_fmt = None
html_theme_options = {
    "repository_url": f"https://github.com/{REPOSITORY}",
    "repository_branch": BRANCH,
    "path_to_docs": "",
    "use_repository_button": True,
    "use_download_button": True,
    "launch_buttons": {"colab_url": "https://colab.research.google.com"},
    "home_page_in_toc": True,
    "show_toc_level": 2,
}
# Without it the theme logs "invalid theme mode" to the console on a reader's first visit.
html_context = {"default_mode": "auto"}


def indent_examples(app, what, name, obj, options, lines):
    """bertlib's docstrings write `Example:` with the `>>>` lines flush under it; napoleon reads a section's
    body only when it is indented, so indent it (before napoleon runs)."""
    for index, line in enumerate(lines):
        if line.strip() not in ("Example:", "Examples:"):
            continue
        indent = len(line) - len(line.lstrip())
        following = index + 1
        while following < len(lines) and lines[following].strip() and \
                len(lines[following]) - len(lines[following].lstrip()) == indent:
            lines[following] = "    " + lines[following]
            following += 1


def setup(app):
    app.connect("autodoc-process-docstring", indent_examples, priority=400)
