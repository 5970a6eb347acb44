"""bench/RESULTS.md, rendered from the records the bench scripts append to bench/records.jsonl.

    python tools/results.py render     # write bench/RESULTS.md: the latest record per (script, figure, host, backend)
    python tools/results.py check      # exit 1 when bench/RESULTS.md is not what `render` would write
    python tools/results.py add --script step_time.py --figure speedup_vs_keras_hub --value 1.172 --unit x \
        --note "quiet" --detail mfu=0.60        # a figure measured by hand; renders RESULTS.md again

A record is one JSON line (bench/_record.py writes them: figure, value, unit, host, backend, versions, commit,
date). Records are never edited or removed: a new run appends a line and the table shows the newest; how a figure
moved is the file's history and git's. Each bench's paragraph below says what its figure means and which decision
it supports; a script with records and no paragraph is an error, so a new bench gets its paragraph when it lands.
"""

import argparse
import datetime
import json
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import _record  # noqa: E402  (bench/_record.py: the one writer of records)

RESULTS = ROOT / "bench" / "RESULTS.md"
REQUIRED = ("script", "figure", "value", "unit", "host", "backend", "commit", "date")

# What each bench's figure means and the decision it supports, in the order RESULTS.md lists them.
BENCHES = {
    "step_time.py": (
        "the pretraining step, bertlib against keras-hub",
        "One masked-LM training step (L4/H256/A4, batch 32 x 128, AdamW, `train_on_batch`) of bertlib and of "
        "keras-hub, alternating in one process. `speedup_vs_keras_hub` is keras-hub's median step over bertlib's "
        "(above 1: bertlib is faster); details give MFU and bfloat16 over float32. It decides whether a change to "
        "`bertlib/model` may stay: the library must not be slower than keras-hub at the same work."),
    "step_time_parts.py": (
        "the step's parts, one at a time",
        "Embeddings, attention, one encoder block and the masked-LM head, each forward and backward, bertlib "
        "against keras-hub. `block_speedup_vs_keras_hub` above 1 means bertlib's block is faster. It locates a gap "
        "that `step_time.py` shows before anyone rewrites a layer."),
    "step_time_ab.py": (
        "old code against new, alternating",
        "The same step (or `pretrain`'s loop) in two source trees, ABBA, one process each. "
        "`bertlib_f32_step_new_over_old` is bertlib/keras-hub in the new tree over the old: above 1, the new "
        "code is faster. It decides whether a speed-up pays enough to keep (the note names the change)."),
    "profile_step.py": (
        "where the step's time goes outside the matmuls",
        "The TensorFlow profiler over `step_time.py`'s step, op time split by category. "
        "`non_matmul_ms_per_step_f32` is the step's wall time minus the time the matmuls hold the cores: what "
        "any cut other than the matmuls can win. It tells which parts are worth a change."),
    "threads.py": (
        "CPU thread settings",
        "The same step under several thread settings, each in a fresh process. `bertlib_spread_percent` is the "
        "worst spread (slowest round over fastest, minus 1) under bertlib's settings. It supports "
        "`bertlib.train.host.configure_cpu` and switching tf.data's autotuner off on CPU-only machines."),
    "tiny_step.py": (
        "a step of the chapters' toy model",
        "One `fit` step of the 2-layer toy pretrainer the chapters train (batch 64 x 16). At that size a step "
        "is per-op overhead. `tiny_step_ms` decides the course's per-backend choices for toy runs "
        "(one PyTorch thread, compiled steps on TensorFlow and JAX)."),
    "tiny_pretrain.py": (
        "the course's shared tiny model through `pretrain`",
        "`tiny_pretrain_step_ms`: a steady step of the tiny model that chapters 03, 04 and 07 pretrain through "
        "`bertlib.train.pretraining.pretrain`. It decides the tiny models' dropout and XLA settings, which set how "
        "long those chapters take."),
    "backend_step.py": (
        "a chapter-sized step on each backend",
        "A chapter-03-sized step on TensorFlow, JAX and PyTorch, each in a fresh process. "
        "`torch_passive_speedup` is PyTorch's step with OpenMP's default spinning over the same step with "
        "`OMP_WAIT_POLICY=PASSIVE`. It is why `configure_cpu` sets the passive policy."),
    "pipeline.py": (
        "does the input pipeline keep up?",
        "`pipeline_over_training`: batches a second of the tf.data pretraining pipeline (dynamic masking) over "
        "steps a second of tiny-preset training. Above 10 the pipeline is not what a run waits for; it supports "
        "masking inside tf.data rather than ahead of time."),
    "tokenizer.py": (
        "the tokenizer",
        "`tokenizer_fast_sentences_per_second`: `WordPieceTokenizer.encode_batch` on SST-2 train from an empty "
        "word cache (details: the readable path, the checkpoint's Rust tokenizer). It is why the fast path "
        "exists beside the readable one, with the same ids."),
    "pretrain_curve.py": (
        "the default pretraining run learns",
        "`mlm_accuracy_over_unigram`: masked-LM accuracy at the end of `bertlib pretrain`'s default run on the "
        "embedded corpus, over always guessing the most frequent target (above 1: the model learned more than "
        "word frequencies). It backs the default run the README and chapter 00 show."),
    "finetune_sst2.py": (
        "a real checkpoint on real GLUE",
        "`sst2_dev_accuracy`: all-MiniLM-L6-v2 fine-tuned by `bertlib finetune` on all of SST-2 train, one epoch, "
        "on a CPU (target 0.88). It shows that the fine-tuning path gives a checkpoint's known quality."),
    "precision_sst2.py": (
        "fine-tuning in mixed bfloat16",
        "The figure: SST-2 dev accuracy in mixed bfloat16 minus float32, in points, same "
        "seed and data (aim: within 0.5 points). It lets `precision=\"auto\"` pick bfloat16 on CPUs with "
        "bfloat16 units."),
    "pretrain_mfu.py": (
        "pretraining on an accelerator",
        "`mfu`: BERT-BASE pretraining through `pretrain` (batch 256 x 128, mixed bfloat16): the step's counted "
        "FLOPs over step time over the device's published dense BF16 peak. `bench/accelerator.sh` runs it on a "
        "lent GPU; it sizes the full-size run of docs/full_size_pretraining.md."),
    "explore_redraw.py": (
        "the attention explorer's redraw",
        "`attention_redraw_browser_ms_512`: the browser's time to draw one head's 512 x 512 heatmap when a "
        "learner picks another head (headless Chromium, the shipped module). Under about 100 ms a redraw "
        "feels immediate, so the explorer needs no build step or canvas library."),
    "hostile_inputs.py": (
        "bad input",
        "`hostile_inputs_clear_or_correct`: of the catalogue's bad inputs to the command line, the library and "
        "the grader, how many end in a clear error or a correct result (no traceback, hang, loss, silent wrong "
        "answer or sandbox escape). Every case must; a new failure mode becomes a new case."),
    "grade_solutions.py": (
        "grading the solutions",
        "`grade_solutions_seconds`: `coursekit grade` on the solution notebooks, fast mode, `--jobs 2`, each in "
        "its sandbox; every exercise must score full marks. It prices the sandbox for a class."),
    "tools/learner_time.py": (
        "the whole course in full mode",
        "`whole_course_minutes`: every chapter in full mode, one after another, from an empty model cache, "
        "as a learner's Run All (budgets: 30 minutes on TensorFlow and JAX, 45 on PyTorch). It decides "
        "whether a chapter's experiment may grow."),
    "make test": (
        "CI on two cores",
        "`make_test_minutes`: every stage of `make test`, tools installed. It must stay near 40 minutes on 2 "
        "cores, which decides whether a new test or notebook run fits."),
}


def load(path=None):
    """The records, in file order; a bad line is an error naming the file and line."""
    path = Path(path or _record.records_path())
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}: not JSON ({error})") from None
        missing = [key for key in REQUIRED if key not in record]
        if missing or "kind" not in record.get("host", {}):
            raise ValueError(f"{path}:{number}: a record needs {', '.join(missing or ['host.kind'])}")
        records.append(record)
    return records


def latest(records):
    """The newest record per (script, figure, host kind, backend); among equal dates the later line wins."""
    newest = {}
    for index, record in enumerate(records):
        key = (record["script"], record["figure"], record["host"]["kind"], record["backend"] or "")
        if key not in newest or (record["date"], index) >= (newest[key][0]["date"], newest[key][1]):
            newest[key] = (record, index)
    return sorted((record for record, _ in newest.values()),
                  key=lambda r: (r["figure"], r["host"]["kind"], r["backend"] or ""))


def number(value):
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return str(value) if isinstance(value, int) else f"{value:.4g}"


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def row(record):
    value = f"**{number(record['value'])}** {record['unit']}".strip()
    details = ", ".join(f"{name} {number(v) if isinstance(v, (int, float)) else v}"
                        for name, v in record.get("details", {}).items())
    notes = "; ".join(part for part in (details, record.get("note", "")) if part)
    commit = (record["commit"] or "?")[:7] + ("+" if record.get("dirty") else "")
    run = f"{record['date'][:10]} {commit}" + (" †" if record.get("imported") else "")
    return f"| `{record['figure']}` | {value} | {record['host']['kind']} | {record['backend'] or '-'} | " \
           f"{run} | {cell(notes)} |"


def hosts_table(records):
    newest = {}
    for record in records:
        newest[record["host"]["kind"]] = record["host"]
    lines = ["| host kind | CPU | usable cores | vector flags | accelerator |", "|---|---|---|---|---|"]
    for kind in sorted(newest):
        host = newest[kind]
        lines.append(f"| {kind} | {cell(host.get('cpu') or 'not recorded')} | {host.get('cores') or '?'} | "
                     f"{', '.join(host.get('flags') or []) or 'not recorded'} | {host.get('accelerator') or '-'} |")
    return lines


HEADER = """# Benchmark results

<!-- Generated by `python tools/results.py render` from bench/records.jsonl: do not edit by hand. -->

Each script in `bench/` prints its headline as its last line (`name: value`) and appends one record to
`bench/records.jsonl` (`bench/_record.py`: figure, value, host, backend, versions, commit, date). This page
shows the newest record per script, figure, host kind and backend; the older ones stay in the file and in git.
Speed is never asserted in unit tests: these runs are the record. Figures from different host kinds do not compare.
A figure measured by hand is added with `python tools/results.py add` (`--help` lists its fields).

† imported from the hand-written RESULTS.md this page replaced (in git history): the date and commit are the ones its
text gave, the host as it described it; the details and note are its words.
"""


def render(records):
    """RESULTS.md's text; ValueError for a script that has records but no paragraph in BENCHES."""
    unknown = sorted({record["script"] for record in records} - set(BENCHES))
    if unknown:
        raise ValueError(f"no paragraph for {', '.join(unknown)}: add what its figure means to BENCHES in "
                         f"tools/results.py")
    shown = latest(records)
    lines = [HEADER, "## Hosts", "", *hosts_table(shown), ""]
    for script, (title, paragraph) in BENCHES.items():
        rows = [record for record in shown if record["script"] == script]
        lines += [f"## `{script}`: {title}", "", textwrap.fill(paragraph, 116, break_on_hyphens=False), ""]
        if not rows:
            lines += ["No record yet.", ""]
            continue
        lines += ["| figure | value | host | backend | run | details and notes |", "|---|---|---|---|---|---|"]
        lines += [row(record) for record in rows] + [""]
    return "\n".join(lines).rstrip() + "\n"


def write_atomically(path, text):
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


def parse_details(pairs):
    details = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"--detail takes NAME=VALUE; got {pair!r}")
        try:
            details[name] = int(value) if value.lstrip("-").isdigit() else float(value)
        except ValueError:
            details[name] = value
    return details


def add(args):
    """One record from the command line; the host is this machine's unless --host-kind describes another."""
    if args.script not in BENCHES:
        raise SystemExit(f"unknown script {args.script!r}: one of {', '.join(BENCHES)} "
                         f"(a new bench needs its paragraph in tools/results.py)")
    record = _record.make_record(args.figure, args.value, unit=args.unit, script=args.script,
                                 details=parse_details(args.detail), note=args.note)
    record["args"] = []
    if args.backend is not None:  # "none" for a bench that loads no Keras
        record["backend"] = None if args.backend.lower() == "none" else args.backend
        record["versions"] = _record.versions(record["backend"]) if not args.imported else {}
    if args.host_kind:
        record["host"] = {"kind": args.host_kind, "cpu": args.cpu, "cores": args.cores,
                          "flags": sorted(args.flags.split(",")) if args.flags else [],
                          "accelerator": args.accelerator}
    if args.date:
        datetime.date.fromisoformat(args.date[:10])  # a date the table can sort
        record["date"] = args.date
    if args.commit or args.imported:  # text that names no commit imports none
        record["commit"], record["dirty"] = args.commit or None, False
    if args.imported:
        record["versions"] = {}
    record["imported"] = args.imported
    print(f"added to {_record.append(record, args.records)}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", help="records file (default: bench/records.jsonl, or $BERTLIB_BENCH_RECORDS)")
    parser.add_argument("--results", default=str(RESULTS), help="the page to write or check")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("render", help="write RESULTS.md from the records")
    commands.add_parser("check", help="fail when RESULTS.md is not up to date")
    adding = commands.add_parser("add", help="append one record, then render")
    adding.add_argument("--script", required=True, help="bench script (e.g. step_time.py) or 'make test'")
    adding.add_argument("--figure", required=True)
    adding.add_argument("--value", required=True, type=float)
    adding.add_argument("--unit", required=True, help='e.g. "x", "ms", "minutes" ("" for a plain ratio)')
    adding.add_argument("--backend", help="Keras backend, or 'none' (default: $KERAS_BACKEND)")
    adding.add_argument("--detail", action="append", default=[], metavar="NAME=VALUE")
    adding.add_argument("--note", default="")
    adding.add_argument("--date", help="ISO date of the run (default: now)")
    adding.add_argument("--commit", help="commit of the code measured (default: this checkout's HEAD)")
    adding.add_argument("--host-kind", help="another machine's kind, e.g. 'NVIDIA H200' (default: this one)")
    adding.add_argument("--cpu")
    adding.add_argument("--cores", type=int)
    adding.add_argument("--flags", help="comma-separated CPU flags, e.g. avx2,avx512f")
    adding.add_argument("--accelerator")
    adding.add_argument("--imported", action="store_true", help="copied from text, not written by the run")
    adding.add_argument("--no-render", action="store_true")
    args = parser.parse_args(argv)
    results = Path(args.results)
    if args.command == "add":
        add(args)
        if args.no_render:
            return 0
    text = render(load(args.records))
    if args.command == "check":
        if not results.exists() or results.read_text(encoding="utf-8") != text:
            print(f"{results} is not what the records give: run `python tools/results.py render`", file=sys.stderr)
            return 1
        print(f"{results} is up to date ({len(text.splitlines())} lines)")
        return 0
    write_atomically(results, text)
    print(f"wrote {results} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
