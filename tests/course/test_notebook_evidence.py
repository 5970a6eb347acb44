"""The evidence a learner sees in the stored notebooks (issue 10).

(a) every chapter notebook stores the outputs of a full run (`tools/run_notebook.py --full`, `make full`),
    recorded in its metadata, and no error output;
(b) no stored output contradicts itself: a printed score at or below the majority or chance figure printed
    beside it fails (the `bertlib_course.evidence.score_line` format, and "accuracy X ... chance/majority Y"
    lines);
(c) no assertion of a claim hides behind `if not FAST:` (CI runs the fast mode and would never check it);
(d) no assertion on wall-clock time: timings are shown, and asserted only through
    `evidence.timing_claim`, which asserts in full mode alone;
(e) nothing stray under a result: no return value of a printing or plotting helper (`<Axes: ...>`, `True`, the
    score again), no figure drawn twice, no TensorFlow log warning;
(f) the Chinese edition's printed lines keep the typesetting rule of its prose: no half-width , ; : ? ! ( )
    beside a Chinese character (a line the course composes as "{name}: {verdict}" in English needs its own
    catalogue template, so that the Chinese reads "{name}：{verdict}").

The checkers are tested first on small known-bad and known-good inputs, so a checker that cannot fail shows.
"""

import ast
import json
import re
from pathlib import Path

import pytest

from bertlib_course import evidence
from coursekit.exercises import body_fingerprint, outputs_belong, runnable_code
from coursekit.i18n.typesetting import HALF_WIDTH_BESIDE_CHINESE
from tools.repo_paths import REPO_ROOT
from tools.run_notebook import code_fingerprint

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
# The Chinese edition: its own full run where it has one (coursekit.i18n.keep_own_run), else the English
# outputs and run record; either way they must belong to its code.
CHINESE = sorted((REPO_ROOT / "notebooks" / "zh").glob("*.ipynb"))

# ---------------------------------------------------------------------------------------------------------
# Readers of a stored notebook


def load(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def code_cells(notebook):
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def source_of(cell):
    text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    return runnable_code(text)  # IPython magics and shell escapes blanked, line numbers kept


def output_text(cell):
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            text = output.get("text", "")
        else:
            text = output.get("data", {}).get("text/plain", "")
        parts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------------------
# (b) contradictions in printed scores

NUMBER = r"\d+(?:\.\d+)?%|\b[01]\.\d+\b"
SCORE_LINE = re.compile(r"^(?P<name>[^:\n]+): (?P<value>\d+(?:\.\d+)?)% \((?P<baseline_name>[^()\n]*?) "
                        r"(?P<baseline>\d+(?:\.\d+)?)%(?P<suffix>[^()\n]*)\)\s*$")
BASELINE_WORD = re.compile(r"\b(chance|majority)\b", re.IGNORECASE)


def fraction(text):
    return float(text[:-1]) / 100 if text.endswith("%") else float(text)


def contradictions(text):
    """Lines of `text` where a score is printed at or below the baseline printed beside it."""
    found = []
    for line in text.splitlines():
        match = SCORE_LINE.match(line.strip())
        if match:
            if match["suffix"] == evidence.NOT_ABOVE_SUFFIX:
                continue  # the line itself says the score is not above its baseline, and why
            if float(match["value"]) <= float(match["baseline"]):
                found.append(line.strip())
            continue
        accuracy = re.search(r"\baccuracy\b", line, re.IGNORECASE)
        baseline_word = BASELINE_WORD.search(line, accuracy.end()) if accuracy else None
        if not baseline_word:
            continue
        value = re.search(NUMBER, line[accuracy.end():baseline_word.start()])
        baseline = re.search(NUMBER, line[baseline_word.end():])
        if value and baseline and fraction(value[0]) <= fraction(baseline[0]):
            found.append(line.strip())
    return found


def test_contradiction_check_reads_both_formats():
    # The stored lines of issue 10 (chapters 04 and 08 before the fix) must be caught...
    assert contradictions("NSP accuracy on 3888 fresh pairs after 120 steps: 49.8% (chance 50%; the paper's "
                          "final model: 97-98%, §3.4)")
    assert contradictions("no keep branch: cloze accuracy 2% (chance 2.5%): it had not started to learn yet")
    assert contradictions("QNLI accuracy (with NSP): 46.6% (majority 53.4%)")
    assert contradictions("SST-2 dev accuracy 0.509 on 872 sentences (always answering the majority class "
                          "would score 0.509)")
    # ...and honest lines must pass.
    assert not contradictions("QNLI dev accuracy: 57.6% (majority 53.4%)")
    assert not contradictions("SST-2 dev accuracy 0.751 on 872 sentences after 4,000 training sentences "
                              "(always answering the majority class would score 0.509; BERT_BASE: 93.5)")
    assert not contradictions("majority class     dev accuracy 0.505")
    assert not contradictions("copy model: 6.0% (chance 6.3%" + evidence.NOT_ABOVE_SUFFIX + ")")


def test_score_line_is_what_the_check_parses(capsys):
    assert evidence.score_line("QNLI dev accuracy", 0.576, 0.534) == 0.576
    assert evidence.score_line("NSP accuracy", 0.49, 0.5, "chance", above=False) == 0.49
    evidence.score_line("NSP on fresh pairs", 0.48, 0.5, "chance")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "QNLI dev accuracy: 57.6% (majority 53.4%)"
    assert [bool(contradictions(line)) for line in lines] == [False, False, True]
    with pytest.raises(ValueError, match="NaN"):
        evidence.score_line("QNLI dev accuracy", float("nan"), 0.534)
    with pytest.raises(AssertionError, match="margin"):
        evidence.score_line("QNLI dev accuracy", 0.55, 0.534, margin=0.05)
    with pytest.raises(AssertionError, match="should not be"):
        evidence.score_line("copying model", 0.2, 0.0625, "chance", above=False, margin=0.0625)


# ---------------------------------------------------------------------------------------------------------
# (c) assertions that only full mode runs, (d) assertions on wall-clock time

def _mentions_fast(node):
    return (isinstance(node, ast.Name) and node.id == "FAST") or (isinstance(node, ast.Attribute)
                                                                  and node.attr == "FAST")


def _full_only(test):  # true only when FAST is off
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _mentions_fast(test.operand)
    return isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and any(map(_full_only, test.values))


def _fast_only(test):
    if _mentions_fast(test):
        return True
    return isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and any(map(_fast_only, test.values))


def _is_assertion(node):
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Call):
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        return name.startswith("assert")
    return False


def _assertions_in(statements):
    return [node for statement in statements for node in ast.walk(statement) if _is_assertion(node)]


def full_mode_only_assertions(source):
    """Line numbers of assertions that run only when FAST is off."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.If, ast.IfExp)):
            hidden = []
            if _full_only(node.test):
                hidden += _assertions_in(node.body if isinstance(node, ast.If) else [node.body])
            if _fast_only(node.test):
                hidden += _assertions_in(node.orelse if isinstance(node, ast.If) else [node.orelse])
            lines += [assertion.lineno for assertion in hidden]
    return sorted(set(lines))


CLOCKS = {"perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "process_time", "timeit", "repeat"}
TIMING_NAME = re.compile(r"seconds|elapsed|duration|wall|timing|speedup|per_second", re.IGNORECASE)


def _reads_clock(node):
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            function = call.func
            if (isinstance(function, ast.Attribute) and function.attr in CLOCKS
                    and isinstance(function.value, ast.Name) and function.value.id in {"time", "timeit"}):
                return True
            if isinstance(function, ast.Name) and function.id in {"perf_counter", "perf_counter_ns", "monotonic"}:
                return True
    return False


def _names(node):
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _targets(node):
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def timing_assertions(sources):
    """(cell index, line) of assertions that read a wall-clock measurement, across a notebook's cells.

    A name is a timing if its value comes from a clock (time.perf_counter() ...), from another timing, or if
    its name says so (seconds, elapsed, ...). `evidence.timing_claim` is the allowed way to assert one.
    """
    trees = [ast.parse(source) for source in sources]
    tainted = set()
    changed = True
    while changed:  # to a fixed point: values flow between cells and around loops
        changed = False
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if _reads_clock(node.value) or _names(node.value) & tainted:
                        new = set().union(*(_targets(target) for target in targets)) - tainted
                        tainted |= new
                        changed |= bool(new)
                elif isinstance(node, (ast.For, ast.comprehension)) and (_names(node.iter) & tainted):
                    new = _targets(node.target) - tainted
                    tainted |= new
                    changed |= bool(new)
    found = []
    for index, tree in enumerate(trees):
        for node in ast.walk(tree):
            if _is_assertion(node):
                names = _names(node)
                if names & tainted or any(TIMING_NAME.search(name) for name in names) or _reads_clock(node):
                    found.append((index, node.lineno))
    return found


def test_fast_guard_check_catches_hidden_assertions():
    old_04 = "assert 0.0 <= nsp_accuracy <= 1.0\nif not FAST:  # too short\n    assert nsp_accuracy > 0.6\n"
    assert full_mode_only_assertions(old_04) == [3]
    assert full_mode_only_assertions("if not course.FAST and x:\n    np.testing.assert_allclose(a, b)\n") == [2]
    assert full_mode_only_assertions("if FAST:\n    n = 1\nelse:\n    assert n > 3\n") == [4]
    assert full_mode_only_assertions("if FAST:\n    assert n > 3\nassert m\n") == []
    assert full_mode_only_assertions("STEPS = course.pick(fast=10, full=100)\nassert STEPS > 0\n") == []


def test_timing_check_catches_wall_clock_assertions():
    old_05 = ["import time\nstart = time.perf_counter()\nf()\nparts = {'a': time.perf_counter() - start}\n",
              "ratios = {k: parts[k] / base for k in parts}\n", "assert ratios['attention scores'] > 8\n"]
    assert timing_assertions(old_05) == [(2, 1)]
    assert timing_assertions(["t0 = time.time()\n", "for x in [t0]:\n    y = x\n", "assert y < 1\n"]) == [(2, 1)]
    assert timing_assertions(["assert elapsed_seconds < 60\n"]) == [(0, 1)]
    counted = ["flops = 2 * n * d\nstart = time.perf_counter()\nseconds = time.perf_counter() - start\n",
               "assert flops > 100\nevidence.timing_claim(seconds < 1, 'fast enough')\n"]
    assert timing_assertions(counted) == []


# ---------------------------------------------------------------------------------------------------------
# (e) stray outputs

OBJECT_REPR = re.compile(r"^(<(Axes|Figure|matplotlib\.[\w.]+)\b.*>|True|False)$", re.S)
PRINTING_HELPER = re.compile(r"^(score_line|timing_claim|plot_\w+|show_\w+)$")


def _last_call_name(source):
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    if body and isinstance(body[-1], ast.Expr) and isinstance(body[-1].value, ast.Call):
        func = body[-1].value.func
        return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return None


def stray_outputs(cell):
    """What a stored cell shows that nobody meant to show: a helper's or an object's return value (a trailing
    `;` hides it), the same figure twice (a returned Figure is drawn again), TensorFlow's log warnings."""
    found = []
    outputs = cell.get("outputs", [])
    images = ["".join(output["data"]["image/png"]) for output in outputs if "image/png" in output.get("data", {})]
    if len(images) != len(set(images)):
        found.append("the same figure twice")
    helper = PRINTING_HELPER.match(_last_call_name(source_of(cell)) or "")
    for output in outputs:
        if output.get("output_type") == "execute_result":
            text = "".join(output.get("data", {}).get("text/plain", "")).strip()
            if helper or OBJECT_REPR.match(text):
                found.append(f"a return value shown: {text[:60]!r}")
        if output.get("output_type") == "stream" and "WARNING:tensorflow" in "".join(output.get("text", "")):
            found.append("a TensorFlow log warning")
    return found


# Function notation, P(负面) or XOR(左, 右), is mathematics in a printed line: its brackets and comma stay half-width.
_NOTATION = re.compile(r"[A-Za-z]+\([^()\n]*\)")


def half_width_beside_chinese(text):
    """The printed lines of `text` that have Chinese in them and a half-width , ; : ? ! ( ) beside it."""
    return [line for line in text.splitlines() if re.search(r"[\u3400-\u9fff]", line)
            and re.search(HALF_WIDTH_BESIDE_CHINESE, _NOTATION.sub("f(x)", line))]


def test_half_width_check_catches_a_joined_english_separator():
    assert half_width_beside_chinese("无随机分支：更易上当: 方向符合预期\n完形填空准确率 49%, 相信正确的词 100%") == [
        "无随机分支：更易上当: 方向符合预期", "完形填空准确率 49%, 相信正确的词 100%"]
    assert half_width_beside_chinese("  [MASK]: 占被选中词元的 79.96%") == ["  [MASK]: 占被选中词元的 79.96%"]
    # What is right passes: full-width marks, English lines, function notation, numbers beside Chinese.
    assert half_width_beside_chinese("无随机分支：更易上当：方向符合预期（中位数 +95.6）\nloss: 0.52, accuracy: 0.8\n"
                                     "P(负面) = 0.017，P(正面) = 0.983\n在 XOR(左, 右) 上的准确率 1.000\n"
                                     "每句 56.7 个片段，[UNK] 0.00%") == []


def _cell(source, *outputs):
    return {"cell_type": "code", "source": source, "outputs": list(outputs)}


def _result(text, image=None):
    data = {"text/plain": text, **({"image/png": image} if image else {})}
    return {"output_type": "execute_result", "data": data}


def test_stray_output_check_catches_return_values_double_figures_and_warnings():
    drawn = {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure size 630x360>"}}
    printed = {"output_type": "stream", "name": "stdout", "text": "QNLI dev accuracy: 57.6% (majority 53.4%)\n"}
    assert stray_outputs(_cell("course.plot_lines(curves)", drawn, _result("<Axes: title={'center': 'x'}>"))) == [
        "a return value shown: \"<Axes: title={'center': 'x'}>\""]
    assert stray_outputs(_cell("score_line('QNLI dev accuracy', 0.576, 0.534)", printed, _result("0.576"))) == [
        "a return value shown: '0.576'"]
    assert stray_outputs(_cell("evidence.timing_claim(r > 2, 'x')", _result("True"))) == [
        "a return value shown: 'True'"]
    assert stray_outputs(_cell("course.plot_heatmaps(panels)", drawn, _result("<Figure size 918x306>", "iVBOR"))) == [
        "the same figure twice", "a return value shown: '<Figure size 918x306>'"]
    warning = {"output_type": "stream", "name": "stdout", "text": "WARNING:tensorflow:5 out of the last 5 calls"}
    assert stray_outputs(_cell("finetune.train_and_evaluate(task)", warning)) == ["a TensorFlow log warning"]
    # What is meant to be shown is not stray: a hidden return value, an explorer's line, a value asked for.
    assert stray_outputs(_cell("course.plot_lines(curves);", drawn)) == []
    assert stray_outputs(_cell("explore.masking(tokenizer, 'a sentence')", _result("2 of 14 tokens selected"))) == []
    assert stray_outputs(_cell("flops = 6 * n * d\nflops", _result("4.26e+10"))) == []


# ---------------------------------------------------------------------------------------------------------
# The stored notebooks

@pytest.mark.parametrize("path", NOTEBOOKS + CHINESE, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_stored_outputs_come_from_a_full_run(path):
    notebook = load(path)
    run = notebook["metadata"].get("bertlib", {}).get("run", {})
    assert run.get("mode") == "full", (
        f"{path.name}: its stored outputs are not from a full run (metadata bertlib.run = {run or 'missing'}). "
        f"Re-run it with `python tools/run_notebook.py --full {path.relative_to(path.parents[1])}` (or `make full`).")
    assert run.get("date") and run.get("commit") and run.get("seconds", 0) > 0, run
    assert outputs_belong(run, notebook), (
        f"{path.name}: its code cells changed since the stored outputs were made (run at {run.get('commit')}"
        f"{'; more than the imports and module names of the move it records' if run.get('moved') else ''}); "
        f"re-run it with `python tools/run_notebook.py --full {path.relative_to(path.parents[1])}`.")
    errors = [index for index, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "code"
              and any(output.get("output_type") == "error" for output in cell.get("outputs", []))]
    assert not errors, f"{path.name}: cells {errors} stored an error output"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_no_printed_score_contradicts_its_baseline(path):
    found = [(index, line) for index, cell in enumerate(load(path)["cells"]) if cell["cell_type"] == "code"
             for line in contradictions(output_text(cell))]
    assert not found, (f"{path.name}: a printed score is at or below the baseline printed beside it "
                       f"(cell index, line): {found}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_no_claim_is_asserted_only_in_full_mode(path):
    found = [(index, line) for index, cell in enumerate(load(path)["cells"]) if cell["cell_type"] == "code"
             for line in full_mode_only_assertions(source_of(cell))]
    assert not found, (f"{path.name}: assertions under `if not FAST` never run in CI (cell index, line): {found}. "
                       "Assert the claim on a smaller experiment in fast mode instead.")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_no_wall_clock_assertion(path):
    cells = [cell for cell in load(path)["cells"] if cell["cell_type"] == "code"]
    found = timing_assertions([source_of(cell) for cell in cells])
    assert not found, (f"{path.name}: assertions on measured time (code cell number, line): {found}. Assert "
                       "counted work, and wall-clock claims only through evidence.timing_claim.")


@pytest.mark.parametrize("path", NOTEBOOKS + CHINESE, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_nothing_stray_under_a_result(path):
    found = [(index, what) for index, cell in enumerate(load(path)["cells"]) if cell["cell_type"] == "code"
             for what in stray_outputs(cell)]
    assert not found, (f"{path.name}: outputs nobody meant to show (cell index, what): {found}. End the cell's "
                       "last call with `;` (or print what it returns), then run the notebook again in full.")


@pytest.mark.parametrize("path", CHINESE, ids=lambda path: path.stem)
def test_chinese_printed_lines_keep_full_width_punctuation(path):
    found = [(index, line) for index, cell in enumerate(load(path)["cells"]) if cell["cell_type"] == "code"
             for line in half_width_beside_chinese(output_text(cell))]
    assert not found, (f"{path.name}: printed lines with half-width punctuation beside Chinese (cell index, line): "
                       f"{found}. Compose the line through one _() template (\"{{name}}: {{verdict}}\"), not by "
                       "joining English separators, and run the chapter again in full.")


# ---------------------------------------------------------------------------------------------------------
# bertlib_course.evidence itself

def test_spread_and_describe_claim_a_direction_only_when_the_range_excludes_zero():
    assert evidence.spread([3.0, -1.0, 2.0]) == evidence.Spread(2.0, -1.0, 3.0, 3)
    assert evidence.spread([1.0, 2.5, 0.5]).direction == 1 and evidence.spread([-1.0, -0.1, -3]).direction == -1
    assert evidence.spread([-1.0, -0.1]).direction == 0  # fewer than MIN_SEEDS seeds: no direction
    assert evidence.describe(evidence.spread([2.0])).startswith("no direction claimed from 1 seed")
    assert evidence.describe(evidence.spread([-1.0, 2.0, 0.5])).startswith("no measurable difference at this scale")
    assert evidence.describe(evidence.spread([1.0, 2.0, 0.5]), higher="No NSP higher").startswith("No NSP higher")
    with pytest.raises(ValueError, match="NaN"):
        evidence.spread([1.0, float("nan")])


def test_timing_claim_asserts_only_in_full_mode(monkeypatch, capsys):
    monkeypatch.setattr(evidence.course, "FAST", True)
    assert evidence.timing_claim(False, "cache 8x faster") is False  # reported, not asserted
    assert "does NOT hold" in capsys.readouterr().out
    monkeypatch.setattr(evidence.course, "FAST", False)
    with pytest.raises(AssertionError, match="cache 8x faster"):
        evidence.timing_claim(False, "cache 8x faster")


def test_tiny_model_key_covers_every_setting(monkeypatch):
    base = evidence.tiny_settings()
    keys = {evidence.tiny_key(base)}
    for name, value in base.items():
        changed = {**base, name: (not value) if isinstance(value, bool) else
                   (value + 1 if isinstance(value, int) else
                    (value * 0.5 or 0.1) if isinstance(value, float) else None if value is not None else 1000)}
        keys.add(evidence.tiny_key(changed))
    assert len(keys) == len(base) + 1  # every setting changes the key
    import keras

    backend = keras.backend.backend()
    others = [name for name in ("tensorflow", "jax", "torch") if name != backend]
    for other in others:  # a model trained on one backend is never loaded on another
        monkeypatch.setattr(keras.backend, "backend", lambda other=other: other)
        keys.add(evidence.tiny_key(base))
    assert len(keys) == len(base) + 1 + len(others)
    with pytest.raises(TypeError, match="unknown setting"):
        evidence.tiny_settings(stepz=10)


def test_tiny_model_is_trained_once_when_two_callers_race(tmp_path, monkeypatch):
    import threading
    import time

    monkeypatch.setenv("BERTLIB_CACHE", str(tmp_path))
    calls = []

    def slow_pretrain(folder, settings):
        calls.append(folder)
        time.sleep(0.5)  # long enough for the other caller to arrive while this one trains
        (folder / "settings.json").write_text(json.dumps(settings))
        (folder / "marker").write_text("trained")

    monkeypatch.setattr(evidence, "_pretrain_into", slow_pretrain)
    monkeypatch.setattr(evidence, "_load", lambda folder, settings, cached: (folder, cached))
    results = []
    threads = [threading.Thread(target=lambda: results.append(evidence.tiny_pretrained(verbose=False, steps=7)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1, calls  # one trained, the other waited and loaded
    assert sorted(cached for _, cached in results) == [False, True]
    folder = results[0][0]
    assert (folder / "marker").read_text() == "trained"
    assert not [path for path in folder.parent.iterdir() if path.name.endswith(".tmp")]  # no staging left


def test_a_recorded_move_keeps_outputs_only_when_imports_and_module_names_changed():
    old = {"cells": [_cell("from bertlib import corpora, training\nimport numpy as np"),
                     _cell("documents = corpora.python_docs()\nresult = training.pretrain(steps=3)")]}
    run = {"code_sha256": code_fingerprint(old),
           "moved": {"renames": {"training": "pretraining"}, "body_sha256": body_fingerprint(old)}}
    assert outputs_belong(run, old)
    moved = {"cells": [_cell("from bertlib.text import corpora\nfrom bertlib.train import pretraining\n"
                             "import numpy as np"),
                       _cell("documents = corpora.python_docs()\nresult = pretraining.pretrain(steps=3)")]}
    assert code_fingerprint(moved) != code_fingerprint(old) and outputs_belong(run, moved)
    # Anything else that changed is caught: an argument, a rename the record does not list, a new statement.
    for changed in ("result = pretraining.pretrain(steps=4)", "result = training2.pretrain(steps=3)",
                    "result = pretraining.pretrain(steps=3)\nprint(result)"):
        other = {"cells": [moved["cells"][0], _cell("documents = corpora.python_docs()\n" + changed)]}
        assert not outputs_belong(run, other), changed
    assert not outputs_belong({"code_sha256": code_fingerprint(old)}, moved)  # no record, no pass


def test_code_fingerprint_sees_code_cells_and_only_them():
    notebook = {"cells": [{"cell_type": "markdown", "source": "# prose"},
                          {"cell_type": "code", "source": ["x = 1\n", "print(x)"], "outputs": []}]}
    before = code_fingerprint(notebook)
    notebook["cells"][0]["source"] = "# other prose"
    notebook["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    assert code_fingerprint(notebook) == before
    notebook["cells"][1]["source"] = "x = 2\nprint(x)"
    assert code_fingerprint(notebook) != before
    notebook["cells"][1]["source"] = "x = 1\nprint(x)"  # a list or one string: the same code
    assert code_fingerprint(notebook) == before


def test_tiny_model_key_reads_code_not_docstrings():
    code = 'def f(x):\n    """Doubles."""\n    return 2 * x  # twice\n'
    assert evidence.code_of(code) == evidence.code_of('def f(x):\n    """Twice x."""\n    return 2 * x\n')
    assert evidence.code_of(code) == evidence.code_of('def f(x):\n    return 2 * x\n')
    assert evidence.code_of(code) != evidence.code_of('def f(x):\n    """Doubles."""\n    return 3 * x\n')
    # a statement that is only a string does nothing, wherever it stands
    assert evidence.code_of('def f():\n    x = 1\n    "a"\n') == evidence.code_of('def f():\n    x = 1\n    "b"\n')
    assert evidence.code_of('"""Module."""\nA = 1\n') == evidence.code_of('"""Other words."""\nA = 1\n')
    assert evidence.code_of('class C:\n    "doc"\n    x = 1\n') == evidence.code_of('class C:\n    x = 1\n')
    assert evidence.code_of('x = 1  # one\n\n\n') == evidence.code_of('x = 1\n')
    assert evidence.code_of('x = "a"\n') != evidence.code_of('x = "b"\n')  # a string that is a value is code
    assert evidence.code_of('if a:\n    b()\nc()\n') != evidence.code_of('if a:\n    b()\n    c()\n')  # blocks count
    for name in ("train/pretraining.py", "text/data.py"):  # the library's own files, every docstring reworded
        source = (Path(evidence.__file__).parents[2] / "bertlib" / name).read_text(encoding="utf-8")
        reworded = _reword_docstrings(source)
        assert reworded.count('"""Reworded."""') > 5
        assert evidence.code_of(reworded) == evidence.code_of(source)
        assert evidence.code_of(reworded.replace(" == ", " != ", 1)) != evidence.code_of(source)


def _reword_docstrings(source):
    """`source` with each docstring (found by Python's own parser) replaced by another one."""
    lines = source.encode("utf-8").splitlines(keepends=True)
    spans = [node.body[0] for node in ast.walk(ast.parse(source))
             if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
             and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
             and isinstance(node.body[0].value.value, str)]
    for doc in sorted(spans, key=lambda node: (node.lineno, node.col_offset), reverse=True):
        head, tail = lines[doc.lineno - 1][:doc.col_offset], lines[doc.end_lineno - 1][doc.end_col_offset:]
        lines[doc.lineno - 1:doc.end_lineno] = [head + b'"""Reworded."""' + tail]
    return b"".join(lines).decode("utf-8")
