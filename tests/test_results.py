"""bench/RESULTS.md is rendered from bench/records.jsonl, and every bench writes its record.

The committed page must be what `tools/results.py render` gives for the committed records (as `coursekit exercises
check` holds exercises/ to solutions/); each bench script's headline goes through bench/_record.py's `headline`;
the table shows the newest record per (script, figure, host kind, backend) and keeps other hosts' rows.
"""

import ast
import json
from pathlib import Path

import pytest

from tools import results

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
SCRIPTS = sorted(path for path in BENCH.glob("*.py") if not path.name.startswith("_"))


def test_committed_results_page_is_rendered_from_the_committed_records():
    expected = results.render(results.load(BENCH / "records.jsonl"))
    assert (BENCH / "RESULTS.md").read_text(encoding="utf-8") == expected, \
        "bench/RESULTS.md is stale or edited by hand: run `python tools/results.py render`"
    assert len(expected.splitlines()) <= 300


def headline_calls(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name) and node.func.id == "headline"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_every_bench_script_records_its_headline(script):
    # A bench is a script with a main guard; its last line comes from `headline`, which also appends the record,
    # and RESULTS.md has a paragraph saying what its figure means.
    source = script.read_text(encoding="utf-8")
    assert 'if __name__ == "__main__"' in source
    assert "from _record import headline" in source, f"{script.name} does not import bench/_record.py's headline"
    assert headline_calls(script), f"{script.name} prints its headline without a record"
    assert script.name in results.BENCHES, f"{script.name} has no paragraph in tools/results.py's BENCHES"


def test_the_static_check_fails_on_a_script_that_only_prints(tmp_path):
    printing = tmp_path / "printing.py"
    printing.write_text('def main():\n    print(f"speed: {1.0:.1f}")\n')
    assert headline_calls(printing) == []


def test_every_record_names_a_bench_with_a_paragraph():
    for record in results.load(BENCH / "records.jsonl"):
        assert record["script"] in results.BENCHES
        if record["script"].endswith(".py") and "/" not in record["script"]:
            assert (BENCH / record["script"]).exists(), record["script"]


def test_headline_prints_the_last_line_and_appends_a_record(tmp_path, monkeypatch, capsys):
    records = tmp_path / "records.jsonl"
    monkeypatch.setenv("BERTLIB_BENCH_RECORDS", str(records))
    monkeypatch.setattr("sys.argv", ["bench/step_time.py", "--rounds", "5"])
    from _record import headline  # tools.results put bench/ on the path

    headline("speedup_vs_keras_hub", 1.17249, unit="x", digits=3, details={"precision": "f32"})
    headline("hostile_inputs_clear_or_correct", 120, unit="of 121 cases", shown="120/121")
    assert capsys.readouterr().out.splitlines() == ["speedup_vs_keras_hub: 1.172",
                                                    "hostile_inputs_clear_or_correct: 120/121"]
    first, second = (json.loads(line) for line in records.read_text().splitlines())
    assert (first["script"], first["figure"], first["value"], first["unit"]) == \
        ("step_time.py", "speedup_vs_keras_hub", 1.17249, "x")
    assert first["args"] == ["--rounds", "5"] and first["details"] == {"precision": "f32"}
    assert first["host"]["cores"] >= 1 and first["host"]["kind"] and not first["imported"]
    assert first["date"].endswith("Z") and len(first["commit"]) == 12
    assert first["versions"]["keras"]
    assert second["value"] == 120


def test_a_value_that_is_not_a_number_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTLIB_BENCH_RECORDS", str(tmp_path / "records.jsonl"))
    from _record import headline

    for value in (float("nan"), "1.2", None, True):
        with pytest.raises(ValueError, match="finite number"):
            headline("tiny_step_ms", value, unit="ms")
    assert not (tmp_path / "records.jsonl").exists()


def record(date, value, kind="2-core AVX2", backend="tensorflow", **fields):
    return {"script": "tiny_step.py", "figure": "tiny_step_ms", "value": value, "unit": "ms", "details": {},
            "host": {"kind": kind}, "backend": backend, "commit": "abcdef0123", "date": date, **fields}


def test_the_page_shows_the_newest_record_per_host_and_backend():
    rows = [record("2026-12-01T10:00:00Z", 30.0), record("2026-12-03T10:00:00Z", 25.5),
            record("2026-12-02T10:00:00Z", 28.0),                       # older, written later: not shown
            record("2026-11-01", 41.25, kind="NVIDIA H200"),             # another host keeps its row
            record("2026-12-03T10:00:00Z", 19.5, backend="torch", imported=True, note="by hand")]
    page = results.render(rows)
    section = page.split("## `tiny_step.py`")[1].split("\n## ")[0]
    table = [line for line in section.splitlines() if line.startswith("| `tiny_step_ms`")]
    assert len(table) == 3
    assert "**25.5** ms | 2-core AVX2 | tensorflow | 2026-12-03 abcdef0 |" in section
    assert "**41.25** ms | NVIDIA H200 |" in section
    assert "**19.5** ms | 2-core AVX2 | torch | 2026-12-03 abcdef0 † | by hand |" in section
    assert "**30** ms" not in section and "**28** ms" not in section
    # A bench without records says so; the page never invents a figure.
    assert "## `step_time.py`" in page and "No record yet." in page.split("## `step_time.py`")[1].split("\n## ")[0]


def test_a_script_without_a_paragraph_and_a_broken_line_are_named(tmp_path):
    with pytest.raises(ValueError, match="no paragraph for new_bench.py"):
        results.render([{**record("2026-12-01", 1.0), "script": "new_bench.py"}])
    broken = tmp_path / "records.jsonl"
    broken.write_text(json.dumps(record("2026-12-01", 1.0)) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"records.jsonl:2: not JSON"):
        results.load(broken)
    broken.write_text(json.dumps({"script": "tiny_step.py", "figure": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"records.jsonl:1: a record needs value"):
        results.load(broken)


def test_add_appends_a_record_and_renders_the_page(tmp_path):
    records, page = tmp_path / "records.jsonl", tmp_path / "RESULTS.md"
    argv = ["--records", str(records), "--results", str(page)]
    assert results.main([*argv, "add", "--script", "make test", "--figure", "make_test_minutes", "--value", "27.5",
                         "--unit", "minutes", "--backend", "tensorflow", "--date", "2026-12-06",
                         "--commit", "0123456789ab", "--detail", "stages=9", "--host-kind", "2-core AVX2",
                         "--flags", "avx2", "--imported"]) == 0
    added = json.loads(records.read_text())
    assert (added["value"], added["details"], added["imported"], added["host"]["flags"]) == \
        (27.5, {"stages": 9}, True, ["avx2"])
    assert "| `make_test_minutes` | **27.5** minutes | 2-core AVX2 | tensorflow | 2026-12-06 0123456 † | stages 9 |" \
        in page.read_text()
    assert results.main([*argv, "check"]) == 0
    page.write_text(page.read_text() + "a line by hand\n")
    assert results.main([*argv, "check"]) == 1
    with pytest.raises(SystemExit, match="unknown script"):
        results.main([*argv, "add", "--script", "nope.py", "--figure", "f", "--value", "1", "--unit", "x"])
