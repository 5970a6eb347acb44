"""A catalogue of bad inputs to the `bertlib` command line and library, each run in its own process (issue 15).

Every case is one command (`bertlib ...`) or one Python snippet, run in a subprocess with a timeout in a fresh
temporary folder, and classified as:

- clear error: it stopped with an error naming the problem (the expected words are in the message), no
  traceback on the command line; in the library, a ValueError/TypeError/FileNotFoundError naming it;
- correct result: it succeeded and the result checks out (for inputs that are odd but valid);
- traceback: it stopped with an exception a learner cannot act on (a traceback, or an error not naming it);
- hang: it ran past its timeout;
- loss: earlier work (a run's outputs, a checkpoint, the class's grades) was destroyed or overwritten;
- silent wrong answer: it succeeded but the result is wrong, or it accepted what it should have refused;
- escape: the input reached beyond what it was given (a submission forged a grade, read the grader's secrets,
  changed the grader or a neighbour; a registry wrote outside the cache);
- cryptic error: it stopped without a traceback, but the message does not name the problem (file, value).

Each case also carries `was`: its class before issue 22 where that differs from what it does now (measured on
the code before the fixes, commit fadff72, with `--repo`, or taken from the issue where that was not safe to
repeat); the totals are printed for both. The last section holds issue 22's cases (`--issue 22` runs only them).

The categories follow issue 15 (missing and empty files, wrong types and values for the flags, real files with
a byte order mark, unwritable outputs, damaged checkpoints, resuming another run, hostile values in the API,
the reference edge cases). It is a bench, not a test: it takes several minutes (most cases start TensorFlow).
The last line is `hostile_inputs_clear_or_correct: N/M`.

Run: .venv/bin/python bench/hostile_inputs.py [--jobs 2] [--only SUBSTRING] [--issue 22] [--repo PATH] [--verbose]
"""

import argparse
import collections
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _record import headline  # bench/_record.py: the run's record

REPO = Path(__file__).resolve().parent.parent  # the code under test (--repo sets another checkout)
PYTHON = sys.executable
BERTLIB = [PYTHON, "-m", "bertlib.cli"]
OUTCOMES = ("clear error", "correct result", "traceback", "hang", "loss", "silent wrong answer", "escape",
            "cryptic error")
ENV = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "",
       "PYTHONPATH": str(REPO)}

# A snippet's outcome, printed as JSON on its last line: what it returned, or what it raised.
SNIPPET_RUNNER = textwrap.dedent("""
    import json, sys, traceback
    source = sys.stdin.read()
    try:
        scope = {}
        exec(source, scope)
        print(json.dumps({"returned": repr(scope.get("result"))}))
    except BaseException as error:
        print(json.dumps({"raised": type(error).__name__, "message": str(error)[:500]}))
""")
CLEAR_EXCEPTIONS = {"ValueError", "TypeError", "FileNotFoundError", "DownloadTimeout"}

CORPUS_TEXT = "\n\n".join("\n".join(f"Sentence {d} {s} says the model reads words in context." for s in range(6))
                          for d in range(12)) + "\n"
MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
MRPC_ROWS = "".join(f"{i % 2}\t{i}\t{i + 100}\tThe cat number {i} sat.\tA cat {i} sat down.\n" for i in range(16))
SQUAD = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "Paris is the capital of France. " * 8,
                                                                    "qas": [{"id": f"q{i}", "question": "What is the capital?",
                                                                             "answers": [{"text": "Paris", "answer_start": 0}],
                                                                             "is_impossible": False} for i in range(4)]}]}]}
TINY_PRETRAIN = ["--preset", "tiny", "--batch-size", "4", "--seq-length", "32", "--max-predictions", "5",
                 "--warmup-steps", "2"]
TINY_FINETUNE = ["--init", "tiny", "--epochs", "1", "--batch-size", "4", "--max-seq-length", "32"]


def make_inputs(folder):
    """The files the cases use, written once into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.txt").write_text(CORPUS_TEXT, encoding="utf-8")
    (folder / "bom_corpus.txt").write_text("\ufeff" + CORPUS_TEXT, encoding="utf-8")
    (folder / "empty.txt").write_text("")
    (folder / "blank.txt").write_text("\n\n   \n")
    (folder / "binary.bin").write_bytes(bytes(range(256)) * 8)
    (folder / "nul.txt").write_bytes(b"abc\x00def\n" * 20)
    (folder / "latin1.txt").write_bytes("Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e.\n".encode("latin-1") * 20)
    (folder / "afile").write_text("I am a file.")
    (folder / "bad_vocab.txt").write_text("hello\nworld\n")
    for name, text in (("glue_bom/MRPC", "\ufeff" + MRPC_HEADER + MRPC_ROWS),
                       ("glue_plain/MRPC", MRPC_HEADER + MRPC_ROWS),
                       ("glue_badlabel/MRPC", MRPC_HEADER + "7\t1\t2\tA.\tB.\n"),
                       ("glue_empty/MRPC", "")):
        (folder / name).mkdir(parents=True, exist_ok=True)
        for split in ("train.tsv", "dev.tsv"):
            (folder / name / split).write_text(text, encoding="utf-8")
    (folder / "squad").mkdir(exist_ok=True)
    for split in ("train-v2.0.json", "dev-v2.0.json"):
        (folder / "squad" / split).write_text(json.dumps(SQUAD), encoding="utf-8")
    (folder / "squad_bad").mkdir(exist_ok=True)
    (folder / "squad_bad" / "train-v2.0.json").write_text("{not json", encoding="utf-8")
    (folder / "squad_bad" / "dev-v2.0.json").write_text("{not json", encoding="utf-8")
    (folder / "nonempty_out").mkdir(exist_ok=True)
    (folder / "nonempty_out" / "metrics.json").write_text('{"accuracy": 0.9}')


# ------------------------------------------------------------------------------------------------------ cases

def cli(*args):
    return [*BERTLIB, *args]


def error(*words):
    """Expect a clear error whose message holds each of `words`."""
    return {"expect": "error", "words": words}


def ok(check=None):
    """Expect success; `check(stdout, folder)` returns None when the result is right, else what is wrong."""
    return {"expect": "ok", "check": check}


def issue_15_adder(c):
    """`add(...)`: appends one of issue 15's cases to the list `c`."""
    def add(category, name, command, expectation, timeout=120, snippet=None, setup=None, loss=None):
        c.append({"category": category, "name": name, "command": command, "snippet": snippet, "timeout": timeout,
                  "setup": setup, "loss": loss, "was": None, "issue": 15, "env": {}, "restore": (), **expectation})
    return add


def api_adder(add):
    """`api(...)`: adds a case that runs a Python snippet against the library."""
    def api(category, name, snippet, expectation, timeout=120):
        first, _, rest = snippet.partition("\n")  # the first line sits after the opening quotes, unindented
        add(category, name, None, expectation, timeout=timeout, snippet=first + "\n" + textwrap.dedent(rest))
    return api


def cases(inputs):
    """Issue 15's cases, a section of bad input at a time, then issue 22's."""
    c = []
    add = issue_15_adder(c)
    data_cases(add, inputs)
    finetune_cases(add, inputs)
    pretrain_cases(add, inputs)
    api = api_adder(add)
    library_reference_cases(api)
    library_bad_value_cases(api, inputs)
    return c + issue_22_cases(inputs)


def data_cases(add, i):
    """`bertlib data` given missing, empty, mistyped or unwritable input."""
    data_out = ["--out", "OUT"]
    add("missing file", "data: corpus missing", cli("data", "--corpus", f"{i}/nope.txt", *data_out), error("nope.txt"))
    add("empty file", "data: corpus empty", cli("data", "--corpus", f"{i}/empty.txt", *data_out), error("no text"))
    add("empty file", "data: corpus of blank lines", cli("data", "--corpus", f"{i}/blank.txt", *data_out),
        error("no text"))
    add("wrong type", "data: binary corpus", cli("data", "--corpus", f"{i}/binary.bin", *data_out), error("UTF-8"))
    add("wrong type", "data: corpus with NUL bytes", cli("data", "--corpus", f"{i}/nul.txt", *data_out),
        error("binary"))
    add("wrong type", "data: Latin-1 corpus", cli("data", "--corpus", f"{i}/latin1.txt", *data_out), error("UTF-8"))
    for value in ("0", "1", "4", "100000", "-3"):
        add("bad value", f"data: --max-seq-length {value}",
            cli("data", "--corpus", f"{i}/corpus.txt", "--max-seq-length", value, *data_out),
            error("--max-seq-length"))
    add("wrong type", "data: --max-seq-length abc",
        cli("data", "--corpus", f"{i}/corpus.txt", "--max-seq-length", "abc", *data_out), error("invalid int"))
    add("bad value", "data: --num-shards 0", cli("data", "--corpus", f"{i}/corpus.txt", "--num-shards", "0",
                                                *data_out), error("--num-shards"))
    add("bad value", "data: --num-shards more than instances",
        cli("data", "--corpus", f"{i}/corpus.txt", "--num-shards", "100000", *data_out), error("--num-shards"))
    add("wrong type", "data: --num-shards 1.5", cli("data", "--corpus", f"{i}/corpus.txt", "--num-shards", "1.5",
                                                   *data_out), error("invalid int"))
    add("bad value", "data: --dupe-factor 0", cli("data", "--corpus", f"{i}/corpus.txt", "--dupe-factor", "0",
                                                 *data_out), error("--dupe-factor"))
    add("bad value", "data: --short-seq-prob 2", cli("data", "--corpus", f"{i}/corpus.txt", "--short-seq-prob",
                                                    "2", *data_out), error("--short-seq-prob"))
    add("bad value", "data: --max-predictions 0 --static-masking",
        cli("data", "--corpus", f"{i}/corpus.txt", "--max-predictions", "0", "--static-masking", *data_out),
        error("--max-predictions"))
    add("bad value", "data: --seed -1", cli("data", "--corpus", f"{i}/corpus.txt", "--seed", "-1", *data_out),
        error("--seed"))
    add("unwritable output", "data: --out is a file", cli("data", "--corpus", f"{i}/corpus.txt", "--out",
                                                         f"{i}/afile"), error("is a file"))
    add("unwritable output", "data: --out below a file", cli("data", "--corpus", f"{i}/corpus.txt", "--out",
                                                            f"{i}/afile/sub"), error("cannot be written"))
    add("missing file", "data: --vocab missing", cli("data", "--corpus", f"{i}/corpus.txt", "--vocab",
                                                    f"{i}/nope_vocab.txt", *data_out), error("--vocab"))
    add("wrong type", "data: vocab without [UNK]", cli("data", "--corpus", f"{i}/corpus.txt", "--vocab",
                                                      f"{i}/bad_vocab.txt", *data_out), error("[UNK]"))
    add("missing argument", "data: no --out", cli("data", "--corpus", f"{i}/corpus.txt"), error("--out"))

    def shards_written(stdout, folder):
        summary = json.loads(stdout.strip().splitlines()[-1])
        return None if summary["instances"] > 0 and len(summary["shards"]) == 2 else f"summary {summary}"

    add("real file", "data: BOM-prefixed corpus, 2 shards",
        cli("data", "--corpus", f"{i}/bom_corpus.txt", "--num-shards", "2", *data_out), ok(shards_written),
        timeout=240)
    add("loss", "data: second run into the same --out",
        ["sh", "-c", " ".join([*cli("data", "--corpus", f"{i}/corpus.txt", "--out", "OUT"), ">/dev/null", "&&",
                               *cli("data", "--corpus", f"{i}/corpus.txt", "--seed", "1", "--out", "OUT")])],
        error("already holds"), timeout=300, loss=lambda folder: None if list((folder / "OUT").glob("*.tfrecord"))
        else "the first run's shards are gone")



def finetune_cases(add, i):
    """`bertlib finetune` given bad input (no training needed for these)."""
    mrpc = ["--task", "mrpc", "--data-dir", f"{i}/glue_plain"]
    add("bad value", "finetune: unknown task", cli("finetune", "--task", "sst5", "--data-dir", f"{i}/glue_plain",
                                                  *TINY_FINETUNE), error("sst5"))
    add("missing file", "finetune: --data-dir missing", cli("finetune", "--task", "mrpc", "--data-dir",
                                                           f"{i}/nope", *TINY_FINETUNE), error("not found"))
    add("missing file", "finetune: --init missing", cli("finetune", *mrpc, "--init", f"{i}/nope.keras"),
        error("INIT"))
    add("wrong type", "finetune: --init is a text file", cli("finetune", *mrpc, "--init", f"{i}/corpus.txt"),
        error("INIT"))
    for flag, value, words in (("--epochs", "0", "epochs"), ("--batch-size", "-1", "batch_size"),
                               ("--learning-rate", "0", "learning_rate"), ("--learning-rate", "nan", "learning_rate"),
                               ("--max-seq-length", "0", "max_seq_length"), ("--epochs", "abc", "invalid int"),
                               ("--learning-rate", "fast", "invalid float"), ("--pooling", "max", "invalid choice"),
                               ("--grid", "batch_size=0", "positive"), ("--grid", "speed=3", "Grid part")):
        add("wrong type" if "invalid" in words else "bad value", f"finetune: {flag} {value}",
            cli("finetune", *mrpc, "--init", "tiny", flag, value), error(words))
    for value in ("0", "-5"):
        add("hang", f"finetune: squad_v2 --doc-stride {value}",
            cli("finetune", "--task", "squad_v2", "--data-dir", f"{i}/squad", "--init", "tiny", "--doc-stride",
                value), error("doc_stride"), timeout=60)
    add("bad value", "finetune: --max-query-length 0",
        cli("finetune", "--task", "squad_v2", "--data-dir", f"{i}/squad", "--init", "tiny", "--max-query-length",
            "0"), error("max_query_length"))
    add("loss", "finetune: non-empty --output-dir", cli("finetune", *mrpc, *TINY_FINETUNE, "--output-dir",
                                                       "OUT"), error("not empty", "--overwrite"),
        setup=lambda folder: shutil.copytree(i / "nonempty_out", folder / "OUT"),
        loss=lambda folder: None if (folder / "OUT" / "metrics.json").read_text() == '{"accuracy": 0.9}'
        else "the earlier metrics.json was overwritten")
    add("unwritable output", "finetune: --output-dir is a file",
        cli("finetune", *mrpc, *TINY_FINETUNE, "--output-dir", f"{i}/afile"), error("is a file"))
    add("unwritable output", "finetune: --output-dir below a file",
        cli("finetune", *mrpc, *TINY_FINETUNE, "--output-dir", f"{i}/afile/out"), error("cannot be written"))
    add("wrong type", "finetune: GLUE label not a class", cli("finetune", "--task", "mrpc", "--data-dir",
                                                             f"{i}/glue_badlabel", *TINY_FINETUNE),
        error("label '7'"), timeout=180)
    add("empty file", "finetune: empty GLUE file", cli("finetune", "--task", "mrpc", "--data-dir",
                                                      f"{i}/glue_empty", *TINY_FINETUNE), error("empty"),
        timeout=180)
    add("wrong type", "finetune: SQuAD file not JSON", cli("finetune", "--task", "squad_v2", "--data-dir",
                                                          f"{i}/squad_bad", *TINY_FINETUNE), error("not valid JSON"),
        timeout=180)
    add("bad value", "finetune: --max-seq-length 100000", cli("finetune", *mrpc, "--init", "tiny",
                                                             "--max-seq-length", "100000"),
        error("learned positions"), timeout=180)

    def mrpc_trained(stdout, folder):
        result = json.loads(stdout.strip().splitlines()[-1])
        wrong = [name for name in ("accuracy", "f1") if not 0 <= result.get(name, -1) <= 1]
        files = sorted(path.name for path in (folder / "OUT").iterdir())
        if wrong or files != ["dev_predictions.tsv", "metrics.json", "model.keras", "vocab.txt"]:
            return f"metrics {result}, files {files}"
        return None

    add("real file", "finetune: MRPC files with a byte order mark",
        cli("finetune", "--task", "mrpc", "--data-dir", f"{i}/glue_bom", *TINY_FINETUNE, "--output-dir", "OUT"),
        ok(mrpc_trained), timeout=420)



def pretrain_cases(add, i):
    """`bertlib pretrain` given bad settings, corpora and checkpoint folders."""
    corpus = ["--corpus", f"{i}/corpus.txt"]
    for flag, value, words in (("--steps", "0", "steps"), ("--batch-size", "0", "batch_size"),
                               ("--seq-length", "100000", "100000"), ("--seq-length", "1", "seq_length"),
                               ("--weight-decay", "-0.01", "weight_decay"), ("--learning-rate", "-1", "learning_rate"),
                               ("--long-fraction", "2", "long_fraction"), ("--dropout", "1.5", "dropout"),
                               ("--log-every", "0", "log_every"), ("--checkpoint-every", "0", "checkpoint_every"),
                               ("--max-predictions", "0", "max_predictions"), ("--strategy", "warp", "invalid choice"),
                               ("--preset", "huge", "huge"), ("--steps", "ten", "invalid int")):
        add("wrong type" if "invalid" in words else "bad value", f"pretrain: {flag} {value}",
            cli("pretrain", *corpus, *TINY_PRETRAIN, "--steps", "10", flag, value), error(words), timeout=180)
    add("missing file", "pretrain: corpus missing", cli("pretrain", "--corpus", f"{i}/nope.txt", *TINY_PRETRAIN),
        error("nope.txt"), timeout=180)
    add("empty file", "pretrain: corpus empty", cli("pretrain", "--corpus", f"{i}/empty.txt", *TINY_PRETRAIN),
        error("document"), timeout=180)
    add("wrong type", "pretrain: Latin-1 corpus", cli("pretrain", "--corpus", f"{i}/latin1.txt", *TINY_PRETRAIN),
        error("UTF-8"), timeout=180)
    add("missing file", "pretrain: --vocab missing", cli("pretrain", *corpus, *TINY_PRETRAIN, "--vocab",
                                                        f"{i}/nope_vocab.txt"), error("nope_vocab"), timeout=180)
    add("unwritable output", "pretrain: --checkpoint-dir is a file",
        cli("pretrain", *corpus, *TINY_PRETRAIN, "--checkpoint-dir", f"{i}/afile"), error("is a file"), timeout=180)
    add("missing file", "pretrain: tfrecords folder missing", cli("pretrain", "--corpus", f"tfrecords:{i}/nope",
                                                                 *TINY_PRETRAIN), error("nope"), timeout=180)

    def checkpoints_at_20(stdout, folder):
        state = json.loads((folder / "CKPT" / "latest.json").read_text())
        return None if state["step"] == 20 else f"latest.json at step {state['step']}"

    add("bad value", "pretrain: --checkpoint-every 20 (log every 25)",
        cli("pretrain", *corpus, *TINY_PRETRAIN, "--steps", "20", "--checkpoint-every", "20", "--checkpoint-dir",
            "CKPT"), ok(checkpoints_at_20), timeout=420)
    first_run = " ".join([*cli("pretrain", *corpus, *TINY_PRETRAIN, "--steps", "10", "--checkpoint-every", "5",
                               "--log-every", "5", "--checkpoint-dir", "CKPT"), ">/dev/null"])
    add("damaged checkpoint", "pretrain: truncated newest checkpoint",
        ["sh", "-c", f"{first_run} && head -c 500 CKPT/ckpt-00000010.npz > t && mv t CKPT/ckpt-00000010.npz && "
                     + " ".join(cli("pretrain", *corpus, *TINY_PRETRAIN, "--steps", "15", "--change-steps",
                                    "--checkpoint-every", "5", "--log-every", "5", "--checkpoint-dir", "CKPT"))
                     + " 2>err.txt; cat err.txt >&2"],
        ok(lambda stdout, folder: None if json.loads(stdout.strip().splitlines()[-1])["resumed_from"] == 5
           and "could not be read" in (folder / "err.txt").read_text() else "did not fall back and say so"),
        timeout=600)
    add("resume mismatch", "pretrain: resume with another learning rate",
        ["sh", "-c", f"{first_run} && " + " ".join(cli("pretrain", *corpus, *TINY_PRETRAIN, "--steps", "15",
                                                       "--learning-rate", "5e-4", "--checkpoint-dir", "CKPT"))],
        error("different run", "learning_rate"), timeout=600)



def library_reference_cases(api):
    """The library's metrics, masking and tokenizer at the edges, against their references."""
    api("NaN metric", "pearson with a NaN prediction",
        "from bertlib.finetune import metrics\nresult = metrics.pearson([1., 2, 3, 4], [1., float('nan'), 3, 4])",
        ok(lambda out, folder: None if out == "nan" else f"returned {out}"))
    api("NaN metric", "spearman of constant predictions",
        "from bertlib.finetune import metrics\nresult = metrics.spearman([1., 2, 3, 4], [2., 2, 2, 2])",
        ok(lambda out, folder: None if out == "nan" else f"returned {out}"))
    api("reference edge case", "SQuAD v1.1: empty prediction against 'The'",
        """from bertlib.finetune import metrics
        data = [{"paragraphs": [{"qas": [{"id": "q", "answers": [{"text": "The"}]}]}]}]
        result = metrics.squad_evaluate(data, {"q": ""})["f1"]""",
        ok(lambda out, folder: None if out == "0.0" else f"F1 {out}, evaluate-v1.1.py gives 0.0"))
    api("reference edge case", "SQuAD v2.0: gold 'The' counts as answerable",
        """from bertlib.finetune import metrics
        data = [{"paragraphs": [{"qas": [{"id": "q", "answers": [{"text": "The"}], "is_impossible": False}]}]}]
        result = metrics.squad_evaluate(data, {"q": ""}).get("HasAns_total")""",
        ok(lambda out, folder: None if out == "1" else f"HasAns_total {out}"))
    api("reference edge case", "masking at selection rate 0.0",
        """import numpy as np
        from bertlib.text.masking import MaskedLMMasker
        result = int(MaskedLMMasker(100, 4, [0, 1, 2, 3])(np.arange(5, 25)[None])["mask_weights"].sum()) \\
            + int(MaskedLMMasker(100, 4, [0, 1, 2, 3], selection_rate=0.0)(np.arange(5, 25)[None])["mask_weights"].sum())""",
        ok(lambda out, folder: None if out == "3" else f"selected {out} (expected 3 at 15% and 0 at 0.0)"))
    api("reference edge case", "offsets of [UNK] and x[MASK]y against tokenizer.json",
        """from tokenizers import Tokenizer
        from bertlib_course import paths
        from bertlib.text.data import default_tokenizer
        reference = Tokenizer.from_file(str(paths.minilm_dir() / "tokenizer.json")); reference.no_padding()
        text = "hello, \\u2603! x[MASK]y a\\u200bb"
        expected = reference.encode(text, add_special_tokens=False)
        tokens, offsets = default_tokenizer().tokenize_with_offsets(text)
        result = (tokens, offsets) == (expected.tokens, [tuple(o) for o in expected.offsets])""",
        ok(lambda out, folder: None if out == "True" else "offsets differ from tokenizer.json"))
    api("reference edge case", "convert_tokens_to_ids with an unknown token",
        """from bertlib.text.data import default_tokenizer
        result = default_tokenizer().convert_tokens_to_ids(["the", "zzqx!!"])""",
        ok(lambda out, folder: None if out == "[1996, 100]" else f"ids {out}"))



def library_bad_value_cases(api, i):
    """The library's classes and functions given bad values."""
    api("bad value", "BertConfig(causal='yes')", "from bertlib.model.config import BertConfig\nresult = BertConfig(causal='yes')",
        error("causal"))
    api("bad value", "BertConfig(num_heads=3)", "from bertlib.model.config import BertConfig\nresult = BertConfig(num_heads=3)",
        error("divisible"))
    api("bad value", "BertConfig(dropout=1.0)", "from bertlib.model.config import BertConfig\nresult = BertConfig(dropout=1.0)",
        error("dropout"))
    backbone = """import numpy as np
        from bertlib.model.config import BertConfig
        from bertlib.model import BertBackbone
        model = BertBackbone(BertConfig(num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32,
                                        vocabulary_size=50, max_sequence_length=16))
        good = {"token_ids": np.ones((2, 8), "int32"), "segment_ids": np.zeros((2, 8), "int32"),
                "padding_mask": np.ones((2, 8), "int32")}
        """
    api("bad value", "backbone: token id -1", backbone + "result = model(dict(good, token_ids=np.full((2, 8), -1)))",
        error("token_ids"), timeout=180)
    api("bad value", "backbone: token id = vocabulary size",
        backbone + "result = model(dict(good, token_ids=np.full((2, 8), 50)))", error("token_ids"), timeout=180)
    api("bad value", "backbone: padding mask of batch 1 for batch 2",
        backbone + "result = model(dict(good, padding_mask=np.ones((1, 8), 'int32')))", error("padding_mask"),
        timeout=180)
    api("bad value", "backbone: 17 tokens for 16 positions",
        backbone + "result = model({k: np.ones((1, 17), 'int32') for k in good})", error("17 tokens"), timeout=180)
    api("bad value", "HF config with fewer layers than its weights",
        backbone + """import json, tempfile, pathlib
        from bertlib.model.checkpoint import load_hf_checkpoint, save_hf_checkpoint
        folder = pathlib.Path(tempfile.mkdtemp())
        save_hf_checkpoint(BertBackbone(BertConfig(num_layers=2, hidden_dim=16, num_heads=2, intermediate_dim=32,
                                                   vocabulary_size=50, max_sequence_length=16)), folder)
        config = json.loads((folder / "config.json").read_text()); config["num_hidden_layers"] = 1
        (folder / "config.json").write_text(json.dumps(config))
        result = load_hf_checkpoint(folder)""", error("num_hidden_layers"), timeout=180)
    api("missing file", "load_hf_checkpoint on a missing folder",
        "from bertlib.model.checkpoint import load_hf_checkpoint\nresult = load_hf_checkpoint('nope')", error("nope"))
    api("bad value", "make_optimizer(weight_decay=-0.01)",
        "from bertlib.train.schedule import make_optimizer\nresult = make_optimizer(1e-4, 10, 100, weight_decay=-0.01)",
        error("weight_decay"), timeout=180)
    api("hang", "squad_features with doc_stride 0",
        """from bertlib.finetune import tasks
        from bertlib.text.data import default_tokenizer
        example = tasks.SquadExample("q", "Who?", "word " * 300, [{"text": "word", "answer_start": 0}])
        result = tasks.squad_features([example], default_tokenizer(), max_seq_length=64, doc_stride=0,
                                      max_query_length=16)""", error("doc_stride"), timeout=60)
    api("real file", "load_glue on a BOM-prefixed MRPC file",
        f"from bertlib.finetune import tasks\nresult = len(tasks.load_glue('mrpc', {str(i / 'glue_bom')!r}, 'train'))",
        ok(lambda out, folder: None if out == "16" else f"read {out} examples"))
    api("empty file", "load_squad on an empty file",
        f"from bertlib.finetune import tasks\nresult = tasks.load_squad({str(i / 'empty.txt')!r})", error("JSON"))
    api("wrong type", "tokenize(None)", "from bertlib.text.data import default_tokenizer\nresult = default_tokenizer().tokenize(None)",
        error("str"))
    api("wrong type", "WordPieceTokenizer with no [UNK]",
        "from bertlib.text.tokenizer import WordPieceTokenizer\nresult = WordPieceTokenizer(['a', 'b'])", error("[UNK]"))
    api("bad value", "MaskedLMMasker(selection_rate=1.5)",
        "from bertlib.text.masking import MaskedLMMasker\nresult = MaskedLMMasker(100, 4, [0], selection_rate=1.5)",
        error("selection_rate"))
    api("bad value", "compute_metrics for an unknown task",
        "from bertlib.finetune import metrics\nresult = metrics.compute_metrics('sst5', [1], [1])", error("sst5"))
    api("bad value", "accuracy on arrays of different lengths",
        "from bertlib.finetune import metrics\nresult = metrics.accuracy([1, 0], [1])", error("one length"))



# ---------------------------------------------------------------------------------------------------- issue 22
# Issue 22's cases: the grader attacked by a hostile learner (a one-chapter toy course, graded with `coursekit grade`),
# then the other inputs it names (registry paths and slow mirrors, SQuAD and GLUE input, pretraining folders).
# `was` is the class each had before the fixes: measured with --repo on a worktree of commit fadff72 where
# marked "measured", else the issue's own finding.

TOY_CELLS = [
    ("code", "import numpy as np\nfrom bertlib_course.checks import check_close, check_function, done", None),
    ("code", "### BEGIN SOLUTION\nanswer = 6.0 * 7\n### END SOLUTION", {"exercise": "9.1", "role": "solution"}),
    ("code", "check_close('answer', answer, 42.0)\ndone('9.1')", {"exercise": "9.1", "role": "check"}),
    ("code", "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
     {"exercise": "9.2", "role": "solution"}),
    ("code", "check_function('double', double, lambda x: 2 * x, lambda rng: (rng.normal(size=3),))\ndone('9.2')",
     {"exercise": "9.2", "role": "check"}),
]
TOY_NAME = "09_toy.ipynb"


def toy_notebook(attack=None, wrong=False, chapter="09", answer=None):
    """The toy solution notebook as JSON; `wrong` answers both exercises wrongly, `attack` is a cell before them,
    `answer` replaces the solution of 9.1."""
    cells = []
    for index, (kind, source, info) in enumerate(TOY_CELLS):
        if wrong:
            source = source.replace("answer = 6.0 * 7", "answer = np.float64(41.0)").replace("return 2 * x", "return x")
        if answer is not None and index == 1:
            source = answer
        cells.append({"cell_type": kind, "id": f"c{index}", "metadata": {"bertlib": info} if info else {},
                      "source": source, "outputs": [], "execution_count": None})
    if attack:
        cells.insert(1, {"cell_type": "code", "id": "attack", "metadata": {}, "source": attack, "outputs": [],
                         "execution_count": None})
    return {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                         "bertlib": {"chapter": chapter}}}


def toy_class(*submissions):
    """A setup writing solutions/09_toy.ipynb and `submissions` ({name: notebook JSON}) under SUB/<name>/."""
    def setup(folder):
        (folder / "solutions").mkdir()
        (folder / "solutions" / TOY_NAME).write_text(json.dumps(toy_notebook()), encoding="utf-8")
        (folder / "OUT").mkdir()
        for name, nb in submissions:
            (folder / "SUB" / name).mkdir(parents=True)
            (folder / "SUB" / name / TOY_NAME).write_text(json.dumps(nb), encoding="utf-8")
    return setup


def grade_command(*extra, out="OUT/grades.csv"):
    return cli("grade", "SUB", "--out", out, "--solutions", "solutions", "--timeout", "120", "--jobs", "2", *extra)


def totals(folder, csv_name="grades.csv"):
    """{student: score} from a grades.csv, or None when it was not written."""
    path = folder / "OUT" / csv_name
    if not path.exists():
        return None
    import csv

    scores = collections.Counter()
    with open(path, newline="", encoding="utf-8") as file:
        for row in csv.DictReader(file):
            scores[Path(row["notebook"]).parent.name] += int(row["score"])
    return dict(scores)


def scored(expected, escape="escape"):
    """A check: the students' totals must be `expected`, else `escape` (a forged or spoiled grade)."""
    def check(stdout, folder):
        got = totals(folder)
        if got is None:
            return "loss", "no grades.csv was written"
        return None if got == expected else (escape, f"scores {got}, expected {expected}")
    return check


FORGE = r'''
import glob, hashlib, hmac, json, os, re, stat
keys = set()
for folder in glob.glob("/proc/[0-9]*"):
    if folder == f"/proc/{os.getpid()}":
        continue
    try:  # the runner's report key, from its memory
        with open(f"{folder}/maps") as maps, open(f"{folder}/mem", "rb", buffering=0) as memory:
            for line in maps:
                span, permissions = line.split()[:2]
                start, end = (int(value, 16) for value in span.split("-"))
                if permissions.startswith("rw") and end - start < 2**28:
                    try:
                        memory.seek(start)
                        keys.update(re.findall(rb"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])", memory.read(end - start)))
                    except (OSError, ValueError, OverflowError):
                        pass
    except OSError:
        pass
payload = json.dumps({"started": list(range(20)), "timed_out": False, "kernel_died": False,
                      "results": {str(n): {"outcome": "passed", "ename": None, "evalue": None} for n in range(20)}})
lines = [json.dumps({"payload": payload, "hmac": hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()})
         for key in sorted(keys)[:500]]
for path in glob.glob("/proc/[0-9]*/fd/1"):
    try:
        if stat.S_ISFIFO(os.stat(path).st_mode) and not path.startswith(f"/proc/{os.getpid()}/"):
            with open(path, "w") as pipe:
                pipe.write("\n".join(lines) + "\n{")
    except OSError:
        pass
'''
KILL_NEIGHBOUR = '''
import glob, os, time
from ipykernel.connect import get_connection_file
from jupyter_client import BlockingKernelClient
mine, tried, end = os.path.realpath(get_connection_file()), set(), time.time() + 25
while time.time() < end:
    for path in set(glob.glob("/tmp/*/*.json") + glob.glob("/tmp/*/runtime/*.json")) - tried - {mine}:
        tried.add(path)
        try:
            client = BlockingKernelClient()
            client.load_connection_file(path)
            client.start_channels()
            client.execute("import os; os._exit(1)")
            time.sleep(0.5)
            client.stop_channels()
        except Exception:
            pass
    time.sleep(0.2)
'''
PATCH_CHECKS = '''
import bertlib_course.checks as checks
try:
    with open(checks.__file__, "a") as file:
        file.write("\\ndef check_close(*args, **kwargs):\\n    pass\\ncheck_function = check_close\\n")
except OSError:
    pass
'''
REWRITE_KEY = '''
import json, pathlib
path = pathlib.Path({path!r})
try:
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if (cell.get("metadata", {{}}).get("bertlib") or {{}}).get("role") == "check":
            cell["source"] = "pass"
    path.write_text(json.dumps(nb))
except OSError:
    pass
'''
SITECUSTOMIZE = '''
try:
    with open({path!r}, "w") as file:
        file.write("import numpy\\nnumpy.isclose = lambda *args, **kwargs: True\\n"
                   "numpy.allclose = lambda *args, **kwargs: True\\n")
except OSError:
    pass
'''
PATCH_NUMPY = '''
import builtins, numpy
from IPython.core.interactiveshell import ExecutionResult
numpy.isclose = lambda *args, **kwargs: numpy.ones(numpy.broadcast(*args[:2]).shape, bool)
numpy.allclose = lambda *args, **kwargs: True
builtins.float = lambda *args: 42.0
ExecutionResult.error_in_exec = property(lambda self: None, lambda self, value: None)
'''
FLOOD = '''
import glob, os, stat
block = b"y" * 2**20
for path in glob.glob("/proc/[0-9]*/fd/[12]"):
    try:
        if stat.S_ISFIFO(os.stat(path).st_mode):
            with open(path, "wb") as pipe:
                for _ in range(512):
                    pipe.write(block)
    except OSError:
        pass
'''
LEAK_ENVIRONMENT = "import os\nraise RuntimeError(repr(dict(os.environ)))"
BENCH_SECRET = "bertlib-bench-secret-4b1d"


def issue_22_adder(c):
    """`add(...)`: appends one of issue 22's cases to the list `c`; `was` is its class before the fixes."""
    def add(category, name, command, expectation, was, timeout=300, snippet=None, setup=None, env=None,
            restore=()):
        c.append({"category": category, "name": name, "command": command, "snippet": snippet, "timeout": timeout,
                  "setup": setup, "loss": None, "was": was, "issue": 22, "env": env or {}, "restore": restore,
                  **expectation})
    return add


def issue_22_cases(inputs):
    """Issue 22's cases: the grader attacked, then downloads, SQuAD and GLUE input, pretraining folders."""
    c = []
    add = issue_22_adder(c)
    grader_attack_cases(add)
    grader_input_cases(add)
    download_cases(add)
    squad_and_glue_cases(add, inputs)
    pretraining_folder_cases(add, inputs)
    return c


def grader_attack_cases(add):
    """A learner's kernel that forges, kills, patches or plants, against the toy course."""
    wrong = toy_notebook(wrong=True)
    stubs = toy_notebook(attack=FORGE, wrong=True)
    add("grader", "grade: a kernel forges the signed report with the key in the runner's memory",
        grade_command(), ok(scored({"forger": 0})), "escape", setup=toy_class(("forger", stubs)))
    add("grader", "grade: a kernel kills its neighbour through its connection file (--jobs 2)",
        grade_command(), ok(scored({"neighbour": 2, "attacker": 2})), "escape",
        setup=toy_class(("neighbour", toy_notebook(attack="import time\ntime.sleep(20)")),
                        ("attacker", toy_notebook(attack=KILL_NEIGHBOUR))))
    checks_py = REPO / "course" / "bertlib_course" / "checks.py"
    add("grader", "grade: a kernel patches bertlib_course/checks.py",
        grade_command(), ok(scored({"patcher": 0})), "escape", restore=(checks_py,),
        setup=toy_class(("patcher", toy_notebook(attack=PATCH_CHECKS, wrong=True))))

    def rewrite_setup(folder):
        attack = REWRITE_KEY.format(path=str(folder / "solutions" / TOY_NAME))
        toy_class(("rewriter", toy_notebook(attack=attack, wrong=True)), ("later", wrong))(folder)

    def then_later(first):  # the attacker's run, then wrong answers graded in a later run
        return ["sh", "-c", " ".join(grade_command(out="OUT/first.csv")).replace(" SUB ", f" SUB/{first} ")
                + " && " + " ".join(grade_command()).replace(" SUB ", " SUB/later ")]

    add("grader", "grade: a kernel rewrites the answer key in solutions/, a later run grades wrong answers",
        then_later("rewriter"), ok(scored({"later": 0})), "escape", setup=rewrite_setup)
    planted = REPO / "sitecustomize.py"
    add("grader", "grade: a kernel drops sitecustomize.py at the repository root, a later run grades wrong answers",
        then_later("planter"), ok(scored({"later": 0})), "escape", restore=(planted,),
        setup=toy_class(("planter", toy_notebook(attack=SITECUSTOMIZE.format(path=str(planted)))),
                        ("later", wrong)))
    add("grader", "grade: a kernel patches numpy, builtins and IPython so checks pass",
        grade_command(), ok(scored({"patcher": 0})), "escape",
        setup=toy_class(("patcher", toy_notebook(attack=PATCH_NUMPY, wrong=True))))



def grader_input_cases(add):
    """Submissions that flood, leak the environment or are not plain notebooks."""
    right = toy_notebook()

    def bounded(stdout, folder):
        resident = int(stdout.strip().splitlines()[-1].split()[-1]) * 1024
        got = totals(folder)
        if got is None:
            return "loss", "no grades.csv was written"
        if resident > 2**30:
            return "loss", (f"the grader held {resident / 2**30:.1f} GB for 1 GB of output: a larger flood loses "
                            f"every grade (issue 22: killed at 3 GB, no grades.csv)")
        return None if got == {"flooder": 2, "honest": 2} or got.get("honest") == 2 else (
            "loss", f"scores {got}")

    meter = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
             "print('peak resident KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)")
    add("grader", "grade: a kernel floods its pipes with 1 GB", [PYTHON, "-c", meter, *grade_command()],
        ok(bounded), "loss",
        setup=toy_class(("flooder", toy_notebook(attack=FLOOD)), ("honest", right)))

    def no_secret(stdout, folder):
        texts = [path.read_text(encoding="utf-8") for path in (folder / "OUT").rglob("*") if path.is_file()]
        return ("escape", "the grader's secret is in the reports") if any(BENCH_SECRET in text for text in texts) \
            else None

    add("grader", "grade: the grader's environment in a learner's feedback", grade_command(), ok(no_secret),
        "escape", env={"BERTLIB_BENCH_GRADER_SECRET": BENCH_SECRET},
        setup=toy_class(("leaker", toy_notebook(answer=LEAK_ENVIRONMENT))))

    def graded_with_message(student, words, scores=0):
        """Everyone graded, `student` scored `scores`, and a row says `words`."""
        def check(stdout, folder):
            got = totals(folder)
            if got is None or got.get("honest") != 2:
                return "loss", f"the class was not graded: {got}"
            if got.get(student, 0) != scores:
                return "escape", f"{student} scored {got.get(student)}"
            text = (folder / "OUT" / "grades.csv").read_text(encoding="utf-8")
            missing = [word for word in words if word not in text]
            return ("cryptic error", f"no row says {missing}") if missing else None
        return check

    add("grader", 'grade: "chapter": "²" in a notebook\'s metadata', grade_command(),
        ok(graded_with_message("superscript", ["superscript"], scores=2)), "traceback",
        setup=toy_class(("superscript", toy_notebook(chapter="²")), ("honest", right)))

    def linked_setup(folder):
        toy_class(("honest", right))(folder)
        (folder / "SUB" / "linker").mkdir()
        (folder / "SUB" / "linker" / TOY_NAME).symlink_to(folder / "solutions" / TOY_NAME)

    add("grader", "grade: a submission that is a link to the solution notebook", grade_command(),
        ok(graded_with_message("linker", ["symbolic link"])), "escape", setup=linked_setup)

    def fifo_setup(folder):
        toy_class(("honest", right))(folder)
        (folder / "SUB" / "fifo").mkdir()
        os.mkfifo(folder / "SUB" / "fifo" / TOY_NAME)

    add("grader", "grade: a FIFO named like a notebook", grade_command(),
        ok(graded_with_message("fifo", ["not a regular file"])), "cryptic error", setup=fifo_setup, timeout=200)



def download_cases(add):
    """Downloads (H4): registry entries confined to the cache, slow mirrors given up."""
    download = textwrap.dedent("""
        import http.server, io, json, os, pathlib, threading, time, zipfile
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("TOY/train.tsv", "sentence\\tlabel\\na\\t1\\n")
        data = archive.getvalue()
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                for index in range(len(data)):
                    self.wfile.write(data[index:index + 1] if SLOW else data[index:])
                    if not SLOW:
                        break
                    self.wfile.flush()
                    time.sleep(3)
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        import hashlib
        entry = {"title": "toy", "folder": FOLDER, "downloads": [{
            "url": f"http://127.0.0.1:{server.server_address[1]}/glue/data/TOY.zip",
            "sha256": hashlib.sha256(data).hexdigest(), "members": {MEMBER: "TOY/train.tsv"}}],
            "files": {MEMBER: hashlib.sha256(b"sentence\\tlabel\\na\\t1\\n").hexdigest()}}
        pathlib.Path("registry.json").write_text(json.dumps({"datasets": {"toy": entry}}))
        os.environ.update(BERTLIB_DATA_REGISTRY=os.path.abspath("registry.json"), BERTLIB_CACHE=os.path.abspath("cache"),
                          HOME=os.path.abspath("home"))
        os.makedirs("home", exist_ok=True)
        def outside_the_cache():
            here = [path for path in pathlib.Path(".").rglob("*") if path.is_file() and path.parts[0] != "cache"
                    and path.name not in ("registry.json",)]
            return [str(path) for path in here] + [str(path) for path in pathlib.Path("/tmp").glob("bertlib-escape-*")]
        from bertlib.io import downloads
        try:
            result = str(downloads.fetch("toy"))
        finally:
            escaped = outside_the_cache()
            import shutil
            shutil.rmtree("/tmp/bertlib-escape-bench", ignore_errors=True)
            if escaped:
                result = f"ESCAPED {escaped}"
    """)

    def stayed_in_the_cache(returned, folder):
        return ("escape", returned[:200]) if "ESCAPED" in returned else "accepted the registry entry"

    for name, folder_value, member in (("a registry member name with ../", "glue/TOY", "../../../escaped.tsv"),
                                       ("a registry folder that is an absolute path",
                                        "/tmp/bertlib-escape-bench", "train.tsv")):
        add("download", f"download: {name}", None, {**error("expected a plain relative"),
                                                    "check": stayed_in_the_cache},
            "escape", timeout=120, snippet=f"SLOW = False\nFOLDER = {folder_value!r}\nMEMBER = {member!r}\n"
                                           + download)
    add("download", "download: a mirror sending one byte every 3 seconds", None,
        error("too slow"), "hang", timeout=200,
        snippet="SLOW = True\nFOLDER = 'glue/TOY'\nMEMBER = 'train.tsv'\n" + download)



def squad_and_glue_cases(add, i):
    """SQuAD and GLUE input (H3)."""
    context = "Denver won the game in Santa Clara \U0001f3c8 and the Broncos took the Super Bowl title."

    def squad(path, questions, version_2=False):
        qas = [{"id": qid, "question": question, "answers": [{"text": text, "answer_start": start}
                                                             for text, start in answers],
                **({"is_impossible": not answers} if version_2 else {})} for qid, question, answers in questions]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"version": "2.0" if version_2 else "1.1", "data": [
            {"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}), encoding="utf-8")

    def squad_setup(files):
        def setup(folder):
            for name, questions, version_2 in files:
                squad(folder / "SQ" / name, questions, version_2)
        return setup

    good = [(f"q{n}", "Who won?", [("Denver", 0)]) for n in range(4)]
    finetune = ["--init", "tiny", "--epochs", "1", "--batch-size", "4", "--max-seq-length", "64",
                "--max-query-length", "16", "--output-dir", "OUT"]
    add("squad", "finetune: squad_v1 dev question without answers", cli(
        "finetune", "--task", "squad_v1", "--data-dir", "SQ", *finetune), error("no answers", "dev-v1.1.json"),
        "cryptic error", timeout=420, setup=squad_setup([("train-v1.1.json", good, False),
                                                     ("dev-v1.1.json", good + [("q-none", "Who lost?", [])], False)]))
    off_by_one = [("q-off", "Where?", [("Santa Clara", context.index("Santa Clara") + 1)])]
    utf16 = [("q-js", "Who took the title?", [("Broncos", len(context[:context.index("Broncos")]
                                                               .encode("utf-16-le")) // 2)])]
    for name, questions, words in (("answer_start off by one", off_by_one, ["train-v1.1.json", "q-off"]),
                                   ("answer_start counted in UTF-16 units", utf16, ["UTF-16", "q-js"])):
        add("squad", f"finetune: squad_v1 {name}",
            ["sh", "-c", " ".join(cli("finetune", "--task", "squad_v1", "--data-dir", "SQ", *finetune))
             + " 2>err.txt; status=$?; cat err.txt >&2; exit $status"],
            ok(lambda stdout, folder, words=words: None if all(word in (folder / "err.txt").read_text()
                                                               for word in words)
               else "the answers were dropped without naming the file and question"),
            "silent wrong answer", timeout=420,
            setup=squad_setup([("train-v1.1.json", good + questions, False), ("dev-v1.1.json", good, False)]))

    nan_model = textwrap.dedent("""
        import numpy as np, sys
        from bertlib import BertBackbone, BertConfig, save_hf_checkpoint
        model = BertBackbone(BertConfig.preset("tiny"))
        model.set_weights([np.full(w.shape, np.nan, w.dtype) for w in model.get_weights()])
        from bertlib.text.data import default_tokenizer
        save_hf_checkpoint(model, sys.argv[1], vocabulary=default_tokenizer().vocabulary)
    """)
    add("squad", "finetune: squad_v2 with NaN model outputs",
        ["sh", "-c", f"{PYTHON} -c '{nan_model}' NAN && " + " ".join(
            cli("finetune", "--task", "squad_v2", "--data-dir", "SQ", "--init", "NAN", "--epochs", "1",
                "--batch-size", "4", "--max-seq-length", "64", "--max-query-length", "16", "--output-dir", "OUT"))],
        error("NaN"), "silent wrong answer", timeout=420,
        setup=squad_setup([("train-v2.0.json", good, True), ("dev-v2.0.json", good + [("q2", "Lost?", [])], True)]))

    rows = "sentence\tlabel\na charming caf\u00e9 film\t1\ndull\t0\n" * 4
    for encoding, words, was in (("cp1252", ["train.tsv", "not UTF-8"], "cryptic error"),
                                 ("utf-16-le", ["train.tsv", "UTF-16"], "cryptic error")):
        add("encoding", f"finetune: SST-2 TSV in {encoding}", cli("finetune", "--task", "sst2", "--data-dir", "GL",
                                                                  *finetune), error(*words), was, timeout=300,
            setup=lambda folder, encoding=encoding: [(folder / "GL" / "SST-2").mkdir(parents=True)] + [
                (folder / "GL" / "SST-2" / split).write_bytes(rows.encode(encoding)) for split in
                ("train.tsv", "dev.tsv")])



def pretraining_folder_cases(add, i):
    """Pretraining (H3): a damaged latest.json, two runs on one folder."""
    pretrain = cli("pretrain", "--corpus", f"{i}/corpus.txt", *TINY_PRETRAIN, "--checkpoint-every", "5",
                   "--log-every", "5", "--checkpoint-dir", "CKPT")
    first = " ".join([*pretrain, "--steps", "10", ">/dev/null"])
    add("pretraining", "pretrain: following the advice for a damaged latest.json",
        ["sh", "-c", f"{first} && printf '{{\"step\": 10, \"che' > CKPT/latest.json && "
         + " ".join([*pretrain, "--steps", "15", "--change-steps"]) + " 2>advice.txt; "
         + "if grep -q 'mv ' advice.txt; then mv CKPT/latest.json CKPT/latest.json.damaged; "
         + "else rm -f CKPT/latest.json; fi; " + " ".join([*pretrain, "--steps", "15", "--change-steps"])],
        ok(lambda stdout, folder: None if json.loads(stdout.strip().splitlines()[-1]).get("resumed_from") == 10
           else ("loss", "following the advice restarted at step 0")), "loss", timeout=900)
    add("pretraining", "pretrain: a second run on a checkpoint folder in use",
        ["sh", "-c", " ".join([*pretrain, "--steps", "200"]) + " >/dev/null 2>&1 & sleep 20; "
         + " ".join([*pretrain, "--steps", "10"]) + "; status=$?; kill %1 2>/dev/null; wait; exit $status"],
        error("in use"), "loss", timeout=600)  # measured: accepted (exit 0); the issue: the runs replace each
    # other's checkpoints, which this command does not look at



# --------------------------------------------------------------------------------------------------- running

def run_case(case, inputs):
    folder = Path(tempfile.mkdtemp(prefix="hostile-"))
    saved = {path: path.read_bytes() if path.exists() else None for path in case["restore"]}
    try:
        if case["setup"]:
            case["setup"](folder)
        command = [part.replace("OUT", str(folder / "OUT")).replace("CKPT", str(folder / "CKPT"))
                   if isinstance(part, str) else part for part in (case["command"] or [PYTHON, "-c", SNIPPET_RUNNER])]
        started = time.perf_counter()
        try:
            done = subprocess.run(command, input=case["snippet"], capture_output=True, text=True, cwd=folder,
                                  env={**ENV, **case["env"]}, timeout=case["timeout"], start_new_session=True)
        except subprocess.TimeoutExpired:
            return "hang", f"no answer after {case['timeout']} s", time.perf_counter() - started
        seconds = time.perf_counter() - started
        outcome, detail = classify(case, done, folder)
        if case["loss"] and outcome != "hang":
            lost = case["loss"](folder)
            if lost:
                outcome, detail = "loss", lost
        return outcome, detail, seconds
    finally:
        for path, data in saved.items():  # what a hostile case may have changed in the code under test
            if data is None:
                path.unlink(missing_ok=True)
            elif not path.exists() or path.read_bytes() != data:
                path.write_bytes(data)
        shutil.rmtree(folder, ignore_errors=True)


def classify(case, done, folder):
    stdout, stderr = done.stdout, done.stderr
    if case["snippet"] is not None:
        try:
            report = json.loads(stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            return "traceback", f"the snippet crashed: {stderr[-300:]}"
        if "raised" in report:
            named = all(word in report["message"] for word in case.get("words", ()))
            if case["expect"] == "error" and report["raised"] in CLEAR_EXCEPTIONS and named:
                return "clear error", f"{report['raised']}: {report['message'][:150]}"
            return "traceback", f"{report['raised']}: {report['message'][:150]}"
        if case["expect"] == "error":
            verdict = case["check"](report["returned"], folder) if case.get("check") else None
            return _judged(verdict or f"accepted, returned {report['returned'][:100]}", "")
        wrong = case["check"](report["returned"], folder) if case["check"] else None
        return _judged(wrong, report["returned"][:100])
    if done.returncode != 0:
        if "Traceback (most recent call last)" in stderr:
            return "traceback", stderr.strip().splitlines()[-1][:200]
        message = stderr.strip()[-400:]
        if case["expect"] == "error" and all(word in stderr for word in case["words"]):
            return "clear error", message.splitlines()[-1][:200] if message else ""
        return "cryptic error", f"exit {done.returncode}, unclear: {message[-200:]}"
    if case["expect"] == "error":
        return "silent wrong answer", f"exit 0 where an error was expected: {stdout.strip()[-150:]}"
    try:
        wrong = case["check"](stdout, folder) if case["check"] else None
    except Exception as error:  # the check could not even read the result
        wrong = f"result unreadable: {type(error).__name__}: {error}"
    return _judged(wrong, stdout.strip()[-150:])


def _judged(wrong, shown):
    """A check's verdict: None (right), a text (a silent wrong answer), or (class, text) for another class."""
    if isinstance(wrong, tuple):
        return wrong
    return ("silent wrong answer", wrong) if wrong else ("correct result", shown)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="run the cases whose name holds this")
    parser.add_argument("--verbose", action="store_true", help="print each case's message")
    parser.add_argument("--library", action="store_true", help="run only the library (Python snippet) cases")
    parser.add_argument("--issue", type=int, help="run only the cases of this issue (15 or 22)")
    parser.add_argument("--repo", type=Path, help="the checkout whose code is tested (default: this one); e.g. a "
                                                  "worktree of an older commit, to measure what a case `was`")
    args = parser.parse_args()
    if args.repo:
        global REPO
        REPO = args.repo.resolve()
        ENV["PYTHONPATH"] = str(REPO)
    inputs = Path(tempfile.mkdtemp(prefix="hostile-inputs-"))
    try:
        make_inputs(inputs)
        selected = [case for case in cases(inputs) if args.only in case["name"]
                    and (not args.library or case["snippet"] is not None)
                    and (args.issue is None or case["issue"] == args.issue)]
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(lambda case: run_case(case, inputs), selected))
    finally:
        shutil.rmtree(inputs, ignore_errors=True)
    counts, before = collections.Counter(), collections.Counter()
    by_category = collections.defaultdict(collections.Counter)
    for case, (outcome, detail, seconds) in zip(selected, results):
        counts[outcome] += 1
        before[case["was"] or outcome] += 1
        by_category[case["category"]][outcome] += 1
        was = f" (was: {case['was']})" if case["was"] and case["was"] != outcome else ""
        if args.verbose or outcome not in ("clear error", "correct result") or was:
            print(f"{outcome:20s} {seconds:6.1f} s  {case['name']}{was}: {detail}")
    print(f"\n{len(selected)} cases in {time.perf_counter() - started:.0f} s")
    print(f"{'category':22s} " + " ".join(f"{outcome[:12]:>12s}" for outcome in OUTCOMES))
    for category, outcome_counts in sorted(by_category.items()):
        print(f"{category:22s} " + " ".join(f"{outcome_counts[outcome]:12d}" for outcome in OUTCOMES))
    print(f"{'before issue 22':22s} " + " ".join(f"{before[outcome]:12d}" for outcome in OUTCOMES))
    print(f"{'now':22s} " + " ".join(f"{counts[outcome]:12d}" for outcome in OUTCOMES))
    for outcome in OUTCOMES:
        print(f"{outcome}: {counts[outcome]} (before issue 22: {before[outcome]})")
    good = counts["clear error"] + counts["correct result"]
    headline("hostile_inputs_clear_or_correct", good, unit=f"of {len(selected)} cases", shown=f"{good}/{len(selected)}")


if __name__ == "__main__":
    main()
