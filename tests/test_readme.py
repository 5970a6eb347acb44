"""The README works as written: its size, the make targets, commands and paths it names, and its install line.

The commands are read from the README's code (fenced blocks and `code spans`): every `make X` is a target of the
Makefile, every `bertlib ...` and `coursekit ...` command line parses with that command's own parser, every
repository path and link exists (with its #anchor), and the library's install line, run verbatim from the root of
a copy of the library's sources in a fresh virtual environment, installs a `bertlib` that imports and runs.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from bertlib import cli as bertlib_cli
from coursekit import cli as coursekit_cli

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")


def code_of(text):
    """(fenced blocks as (language, body), prose without them, code spans, command lines)."""
    fenced = re.findall(r"^ *```(\w*)\n(.*?)^ *```", text, re.S | re.M)
    prose = re.sub(r"^ *```.*?^ *```", "", text, flags=re.S | re.M)
    spans = re.findall(r"`([^`\n]+)`", prose)
    lines = [line.split("#")[0].strip() for language, block in fenced if language in ("bash", "sh", "")
             for line in block.splitlines()] + spans  # shell, not Python
    return fenced, prose, spans, lines


FENCED, PROSE, SPANS, COMMAND_LINES = code_of(TEXT)
GENERATED = ("build/", ".venv/")  # written by the commands the README gives


def test_readme_is_a_front_door():
    # The library's own page is the wheel's description, not the course's front page.
    assert 'readme = "bertlib/README.md"' in (ROOT / "pyproject.toml").read_text()
    assert len(TEXT.splitlines()) <= 250
    for heading in ("## Start here (learners)", "## Two commands", "## The chapters", "## Three packages",
                    "## Where to go next"):
        assert heading in TEXT
    # What a learner on a root shell or on another backend needs to know, said on the front page.
    assert "as root" in TEXT and "KERAS_BACKEND=jax make lab" in TEXT


def makefile_targets():
    targets = set()
    for line in (ROOT / "Makefile").read_text().splitlines():
        match = re.match(r"^([^\s#=:][^=:]*?)\s*:(?![=])", line)
        if match and "$(" not in match.group(1):
            targets.update(match.group(1).split())
    return targets


def make_invocations():
    """The targets of each `make ...` in the README: the words after `make` up to the first that is not one
    (a VAR=value is passed over; a placeholder such as test-<stage> ends the list)."""
    found = set()
    for line in COMMAND_LINES:
        words = line.split()
        for start in (index + 1 for index, word in enumerate(words) if word == "make"):
            for word in words[start:]:
                if re.fullmatch(r"\w+=\S*", word) or word.startswith(('"', "--")) or word.endswith('"'):
                    continue  # a variable and its (quoted) value
                if not re.fullmatch(r"[\w.-]+", word):
                    break
                found.add(word)
    return found


def test_every_make_target_the_readme_names_exists():
    named = make_invocations()
    assert {"lab", "test"} <= named
    missing = named - makefile_targets()
    assert not missing, f"README names make targets the Makefile lacks: {sorted(missing)}"


def test_the_target_reader_finds_what_the_makefile_defines_and_nothing_else():
    targets = makefile_targets()
    assert {"lab", "test", "book", "full", "test-nbval-jax", "full-jax", "full-torch"} <= targets
    assert not {"VENV", "PYTHON", "BIN", "labs"} & targets


def commands(program, lines=COMMAND_LINES):
    """Each `program ...` command line of the README, split as a shell would, alternatives (a|b) expanded."""
    found = []
    for line in lines:
        match = re.search(rf"(?:^|\s|/){program}\s+([a-z].*)$", line)
        if not match:
            continue
        words = shlex.split(match.group(1))
        alternatives = [words[:index] + [choice] + words[index + 1:] for index, word in enumerate(words)
                        if "|" in word for choice in word.split("|")]
        found.extend(alternatives or [words])
    return found


@pytest.mark.parametrize("readme, program, module", [
    ("README.md", "bertlib", bertlib_cli), ("README.md", "coursekit", coursekit_cli),
    ("bertlib/README.md", "bertlib", bertlib_cli), ("coursekit/README.md", "coursekit", coursekit_cli)])
def test_every_command_the_readmes_name_parses(readme, program, module):
    named = commands(program, code_of((ROOT / readme).read_text(encoding="utf-8"))[3])
    assert named, f"{readme} names no {program} command"
    for words in named:
        assert words[0] in module.COMMANDS, f"`{program} {' '.join(words)}`: no command {words[0]!r}"
        if len(words) > 1:  # a whole command line: its arguments must parse as written
            try:
                module.build_parser(words[0]).parse_args(words)
            except SystemExit as error:
                pytest.fail(f"`{program} {' '.join(words)}` does not parse (exit {error.code})")


def test_the_command_reader_rejects_what_does_not_exist():
    with pytest.raises(SystemExit):
        bertlib_cli.build_parser("download").parse_args(["download", "--no-such-flag"])
    assert "serve" not in coursekit_cli.COMMANDS


def slug(heading):
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    return {slug(line.lstrip("#")) for line in path.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")}


def repository_paths():
    links = re.findall(r"\]\(([^)\s]+)\)", PROSE)
    paths = [link for link in links if not re.match(r"\w+://|#|mailto:", link)]
    paths += [span for span in SPANS if re.fullmatch(r"\.?[\w.-]+(/[\w.-]*)+|[\w.-]+\.(md|py|toml|yml|json|sh)", span)]
    for language, block in FENCED:  # the layout block: folder names ending in /
        if not language:
            paths += re.findall(r"(?:^|\s)([\w.-]+/(?:[\w.-]+/)*)", block)
    return [path for path in paths if not path.startswith(GENERATED)]


def test_every_repository_path_and_link_the_readme_names_exists():
    paths = repository_paths()
    assert "bench/RESULTS.md" in paths and "docs/data.md" in paths and "notebooks/zh/" in paths
    for path in paths:
        file, _, anchor = path.partition("#")
        assert (ROOT / file).exists(), f"README names {path}, which does not exist"
        if anchor:
            assert anchor in anchors(ROOT / file), f"README links to {path}: no such heading"
    # The chapter table names notebooks by stem.
    stems = re.findall(r"^\| `(\d\dx?_\w+)`", TEXT, re.M)
    assert len(stems) == len(list((ROOT / "notebooks").glob("*.ipynb"))) == 10
    for stem in stems:
        assert (ROOT / "notebooks" / f"{stem}.ipynb").exists(), stem


def install_line():
    lines = [line.split("#")[0].strip() for language, block in FENCED if language == "bash"
             for line in block.splitlines() if line.strip().startswith("pip install .")]
    assert lines, "the README gives no `pip install .` line for the library"
    return lines[0]


@pytest.mark.slow
def test_the_library_install_line_works_verbatim_in_a_fresh_environment(tmp_path):
    line = install_line()
    # A clone's library sources: what pyproject.toml builds from (its package and its readme).
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy(ROOT / "pyproject.toml", clone)
    shutil.copytree(ROOT / "bertlib", clone / "bertlib", ignore=shutil.ignore_patterns("__pycache__"))
    # A fresh environment whose dependencies are already there (this one's packages, as plain path entries: the
    # editable installs' .pth files of this environment are not processed, so `import bertlib` can only find the
    # copy the README's line installs). Nothing is downloaded: no index, and setuptools from this environment.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    (venv / "bin" / "pip").write_text(f"#!{python}\nimport sys\nfrom pip._internal.cli.main import main\n"
                                      "sys.exit(main())\n")  # pip's own console script, for this environment
    (venv / "bin" / "pip").chmod(0o755)
    environment = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "PIP_NO_INDEX": "1",
                   "PIP_NO_BUILD_ISOLATION": "0",  # pip reads this as "no isolation" (pypa/pip#5735)
                   "PIP_DISABLE_PIP_VERSION_CHECK": "1", "KERAS_BACKEND": "jax", "PYTHONPATH": ""}
    installed = subprocess.run(["bash", "-c", line], cwd=clone, env=environment, capture_output=True, text=True,
                               timeout=300)
    assert installed.returncode == 0, f"`{line}` failed:\n{installed.stdout[-3000:]}\n{installed.stderr[-3000:]}"
    imported = subprocess.run([python, "-c", "import bertlib; print(bertlib.__file__, bertlib.__version__)"],
                              cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300)
    assert imported.returncode == 0, imported.stderr[-3000:]
    location = Path(imported.stdout.split()[0])
    assert location.is_relative_to(venv) and not location.is_relative_to(ROOT), location
    helped = subprocess.run([venv / "bin" / "bertlib", "--help"], cwd=tmp_path, env=environment,
                            capture_output=True, text=True, timeout=300)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: bertlib"), helped.stderr[-3000:]
    for command in bertlib_cli.COMMANDS:
        assert command in helped.stdout
