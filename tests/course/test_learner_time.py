"""tools/learner_time.py: the budgets and the no-blind-wait rule read from a full run's timings and notebooks."""

import importlib.util
import json

import nbformat
import pytest

from bertlib_course.progress import render
from tools.repo_paths import REPO_ROOT as REPO

spec = importlib.util.spec_from_file_location("learner_time", REPO / "tools" / "learner_time.py")
learner_time = importlib.util.module_from_spec(spec)
spec.loader.exec_module(learner_time)


def executed_notebook(path, progress_cells):
    """A markdown cell, then code cells 1-3; those in `progress_cells` carry the course's final progress display, as
    nbclient stores it."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_markdown_cell("# A chapter"))
    for index in range(1, 4):
        cell = nbformat.v4.new_code_cell(f"work_{index}()")
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="done\n")]
        if index in progress_cells:
            plain, markup = render("pretraining steps", 300, 300, 73.9, final=True)
            cell.outputs.append(nbformat.v4.new_output("display_data", data={"text/plain": plain, "text/html": markup}))
        notebook.cells.append(cell)
    nbformat.write(notebook, path)


def write_timings(path, *records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


def record(name, seconds, cells, backend="jax"):
    return {"notebook": name, "backend": backend, "seconds": seconds, "load_average": [1.0, 1.0, 1.0],
            "cells": {str(index): value for index, value in cells.items()}}


def test_a_long_cell_without_a_progress_bar_is_a_blind_wait_and_fails(tmp_path, capsys):
    executed_notebook(tmp_path / "03.ipynb", progress_cells={1})
    write_timings(tmp_path / "timings.jsonl", record("03.ipynb", 120.0, {1: 74.0, 2: 19.9, 3: 0.4}))
    assert learner_time.main([str(tmp_path / "timings.jsonl")]) == 0
    assert "every cell of 20 s or more shows progress" in capsys.readouterr().out

    # the same notebook run again, its cell 2 now 25 s: the last line counts, and cell 2 shows nothing
    with open(tmp_path / "timings.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps(record("03.ipynb", 130.0, {1: 74.0, 2: 25.0, 3: 0.4})) + "\n")
    assert learner_time.main([str(tmp_path / "timings.jsonl")]) == 1
    out = capsys.readouterr().out
    assert "BLIND WAIT: 03.ipynb cell 2 ran 25.0 s and shows no progress (work_2())" in out
    assert "whole_course_minutes: 2.2" in out.splitlines()[-1]


def test_a_display_without_a_total_shows_no_time_left_and_does_not_count(tmp_path):
    executed_notebook(tmp_path / "05.ipynb", progress_cells=set())
    notebook = nbformat.read(tmp_path / "05.ipynb", as_version=4)
    plain, markup = render("steps", 40, None, 30.0, final=True)
    notebook.cells[1].outputs.append(nbformat.v4.new_output("display_data",
                                                            data={"text/plain": plain, "text/html": markup}))
    nbformat.write(notebook, tmp_path / "05.ipynb")
    waits = learner_time.blind_waits(learner_time.read_timings(_timings(tmp_path, {1: 30.0})), tmp_path)
    assert [(name, index) for name, index, _, _ in waits] == [("05.ipynb", 1)]


def _timings(folder, cells, name="05.ipynb", seconds=60.0, backend="jax"):
    write_timings(folder / "timings.jsonl", record(name, seconds, cells, backend))
    return folder / "timings.jsonl"


@pytest.mark.parametrize("backend, minutes, verdict", [("torch", 44.0, "within the budget of 45 min"),
                                                       ("jax", 31.0, "OVER the budget of 30 min"),
                                                       ("tensorflow", 29.5, "within the budget of 30 min")])
def test_the_whole_course_is_weighed_against_its_backends_budget(tmp_path, backend, minutes, verdict):
    records = {f"{n:02d}.ipynb": {"backend": backend, "seconds": minutes * 6, "cells": {1: 100.0 + n}}
               for n in range(10)}
    records["03.ipynb"]["cells"][2] = 181.0
    lines, total = learner_time.report(records)
    assert total == pytest.approx(minutes)
    assert verdict in lines[-2]
    assert lines[-1] == "cells over 180 s: 03.ipynb cell 2 (181.0 s)"


def test_missing_or_mismatched_files_are_errors_that_name_them(tmp_path):
    with pytest.raises(SystemExit, match="no timings file"):
        learner_time.read_timings(tmp_path / "absent.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"notebook": "03.ipynb"}\n', encoding="utf-8")
    with pytest.raises(SystemExit, match=r"bad.jsonl, line 1: not a timings record"):
        learner_time.read_timings(tmp_path / "bad.jsonl")
    timings = _timings(tmp_path, {1: 30.0})
    with pytest.raises(SystemExit, match="05.ipynb: the timings name this notebook, but it is not there"):
        learner_time.blind_waits(learner_time.read_timings(timings), tmp_path)
    executed_notebook(tmp_path / "05.ipynb", progress_cells={1})
    timings = _timings(tmp_path, {9: 30.0})
    with pytest.raises(SystemExit, match="code cell 9, which the notebook does not have"):
        learner_time.blind_waits(learner_time.read_timings(timings), tmp_path)
