"""A catalogue of bad inputs to the `bertlib` command line and library, each run in its own process (issue 15).

Every case is one command (`bertlib ...`) or one Python snippet, run in a subprocess with a timeout in a fresh
temporary folder, and classified as:

- clear error: it stopped with an error naming the problem (the expected words are in the message), no
  traceback on the command line; in the library, a ValueError/TypeError/FileNotFoundError naming it;
- correct result: it succeeded and the result checks out (for inputs that are odd but valid);
- traceback: it stopped with an exception a learner cannot act on (a traceback, or an error not naming it);
- hang: it ran past its timeout;
- loss: earlier work (a run's outputs, a checkpoint) was destroyed or overwritten;
- silent wrong answer: it succeeded but the result is wrong, or it accepted what it should have refused.

The categories follow issue 15 (missing and empty files, wrong types and values for the flags, real files with
a byte order mark, unwritable outputs, damaged checkpoints, resuming another run, hostile values in the API,
the reference edge cases). It is a bench, not a test: it takes several minutes (most cases start TensorFlow).
The last line is `hostile_inputs_clear_or_correct: N/M`.

Run: .venv/bin/python bench/hostile_inputs.py [--jobs 2] [--only SUBSTRING] [--verbose]
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

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BERTLIB = [PYTHON, "-m", "bertlib.cli"]
OUTCOMES = ("clear error", "correct result", "traceback", "hang", "loss", "silent wrong answer")
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
CLEAR_EXCEPTIONS = {"ValueError", "TypeError", "FileNotFoundError"}

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


def cases(inputs):
    i = inputs
    data_out = ["--out", "OUT"]
    c = []

    def add(category, name, command, expectation, timeout=120, snippet=None, setup=None, loss=None):
        c.append({"category": category, "name": name, "command": command, "snippet": snippet, "timeout": timeout,
                  "setup": setup, "loss": loss, **expectation})

    # bertlib data --------------------------------------------------------------------------------------------
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

    # bertlib finetune (no training needed for these) ----------------------------------------------------------
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

    # bertlib pretrain ----------------------------------------------------------------------------------------
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
                     + " ".join(cli("pretrain", *corpus, *TINY_PRETRAIN, "--steps", "15", "--checkpoint-every", "5",
                                    "--log-every", "5", "--checkpoint-dir", "CKPT")) + " 2>err.txt; cat err.txt >&2"],
        ok(lambda stdout, folder: None if json.loads(stdout.strip().splitlines()[-1])["resumed_from"] == 5
           and "could not be read" in (folder / "err.txt").read_text() else "did not fall back and say so"),
        timeout=600)
    add("resume mismatch", "pretrain: resume with another learning rate",
        ["sh", "-c", f"{first_run} && " + " ".join(cli("pretrain", *corpus, *TINY_PRETRAIN, "--steps", "15",
                                                       "--learning-rate", "5e-4", "--checkpoint-dir", "CKPT"))],
        error("different run", "learning_rate"), timeout=600)

    # The library -----------------------------------------------------------------------------------------------
    def api(category, name, snippet, expectation, timeout=120):
        first, _, rest = snippet.partition("\n")  # the first line sits after the opening quotes, unindented
        add(category, name, None, expectation, timeout=timeout, snippet=first + "\n" + textwrap.dedent(rest))

    api("NaN metric", "pearson with a NaN prediction",
        "from bertlib import metrics\nresult = metrics.pearson([1., 2, 3, 4], [1., float('nan'), 3, 4])",
        ok(lambda out, folder: None if out == "nan" else f"returned {out}"))
    api("NaN metric", "spearman of constant predictions",
        "from bertlib import metrics\nresult = metrics.spearman([1., 2, 3, 4], [2., 2, 2, 2])",
        ok(lambda out, folder: None if out == "nan" else f"returned {out}"))
    api("reference edge case", "SQuAD v1.1: empty prediction against 'The'",
        """from bertlib import metrics
        data = [{"paragraphs": [{"qas": [{"id": "q", "answers": [{"text": "The"}]}]}]}]
        result = metrics.squad_evaluate(data, {"q": ""})["f1"]""",
        ok(lambda out, folder: None if out == "0.0" else f"F1 {out}, evaluate-v1.1.py gives 0.0"))
    api("reference edge case", "SQuAD v2.0: gold 'The' counts as answerable",
        """from bertlib import metrics
        data = [{"paragraphs": [{"qas": [{"id": "q", "answers": [{"text": "The"}], "is_impossible": False}]}]}]
        result = metrics.squad_evaluate(data, {"q": ""}).get("HasAns_total")""",
        ok(lambda out, folder: None if out == "1" else f"HasAns_total {out}"))
    api("reference edge case", "masking at selection rate 0.0",
        """import numpy as np
        from bertlib.masking import MaskedLMMasker
        result = int(MaskedLMMasker(100, 4, [0, 1, 2, 3])(np.arange(5, 25)[None])["mask_weights"].sum()) \\
            + int(MaskedLMMasker(100, 4, [0, 1, 2, 3], selection_rate=0.0)(np.arange(5, 25)[None])["mask_weights"].sum())""",
        ok(lambda out, folder: None if out == "3" else f"selected {out} (expected 3 at 15% and 0 at 0.0)"))
    api("reference edge case", "offsets of [UNK] and x[MASK]y against tokenizer.json",
        """from tokenizers import Tokenizer
        from bertlib import resources
        from bertlib.data import default_tokenizer
        reference = Tokenizer.from_file(str(resources.minilm_dir() / "tokenizer.json")); reference.no_padding()
        text = "hello, \\u2603! x[MASK]y a\\u200bb"
        expected = reference.encode(text, add_special_tokens=False)
        tokens, offsets = default_tokenizer().tokenize_with_offsets(text)
        result = (tokens, offsets) == (expected.tokens, [tuple(o) for o in expected.offsets])""",
        ok(lambda out, folder: None if out == "True" else "offsets differ from tokenizer.json"))
    api("reference edge case", "convert_tokens_to_ids with an unknown token",
        """from bertlib.data import default_tokenizer
        result = default_tokenizer().convert_tokens_to_ids(["the", "zzqx!!"])""",
        ok(lambda out, folder: None if out == "[1996, 100]" else f"ids {out}"))
    api("bad value", "BertConfig(causal='yes')", "from bertlib.config import BertConfig\nresult = BertConfig(causal='yes')",
        error("causal"))
    api("bad value", "BertConfig(num_heads=3)", "from bertlib.config import BertConfig\nresult = BertConfig(num_heads=3)",
        error("divisible"))
    api("bad value", "BertConfig(dropout=1.0)", "from bertlib.config import BertConfig\nresult = BertConfig(dropout=1.0)",
        error("dropout"))
    backbone = """import numpy as np
        from bertlib.config import BertConfig
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
        from bertlib.checkpoint import load_hf_checkpoint, save_hf_checkpoint
        folder = pathlib.Path(tempfile.mkdtemp())
        save_hf_checkpoint(BertBackbone(BertConfig(num_layers=2, hidden_dim=16, num_heads=2, intermediate_dim=32,
                                                   vocabulary_size=50, max_sequence_length=16)), folder)
        config = json.loads((folder / "config.json").read_text()); config["num_hidden_layers"] = 1
        (folder / "config.json").write_text(json.dumps(config))
        result = load_hf_checkpoint(folder)""", error("num_hidden_layers"), timeout=180)
    api("missing file", "load_hf_checkpoint on a missing folder",
        "from bertlib.checkpoint import load_hf_checkpoint\nresult = load_hf_checkpoint('nope')", error("nope"))
    api("bad value", "make_optimizer(weight_decay=-0.01)",
        "from bertlib.training import make_optimizer\nresult = make_optimizer(1e-4, 10, 100, weight_decay=-0.01)",
        error("weight_decay"), timeout=180)
    api("hang", "squad_features with doc_stride 0",
        """from bertlib import tasks
        from bertlib.data import default_tokenizer
        example = tasks.SquadExample("q", "Who?", "word " * 300, [{"text": "word", "answer_start": 0}])
        result = tasks.squad_features([example], default_tokenizer(), max_seq_length=64, doc_stride=0,
                                      max_query_length=16)""", error("doc_stride"), timeout=60)
    api("real file", "load_glue on a BOM-prefixed MRPC file",
        f"from bertlib import tasks\nresult = len(tasks.load_glue('mrpc', {str(i / 'glue_bom')!r}, 'train'))",
        ok(lambda out, folder: None if out == "16" else f"read {out} examples"))
    api("empty file", "load_squad on an empty file",
        f"from bertlib import tasks\nresult = tasks.load_squad({str(i / 'empty.txt')!r})", error("JSON"))
    api("wrong type", "tokenize(None)", "from bertlib.data import default_tokenizer\nresult = default_tokenizer().tokenize(None)",
        error("str"))
    api("wrong type", "WordPieceTokenizer with no [UNK]",
        "from bertlib.tokenizer import WordPieceTokenizer\nresult = WordPieceTokenizer(['a', 'b'])", error("[UNK]"))
    api("bad value", "MaskedLMMasker(selection_rate=1.5)",
        "from bertlib.masking import MaskedLMMasker\nresult = MaskedLMMasker(100, 4, [0], selection_rate=1.5)",
        error("selection_rate"))
    api("bad value", "compute_metrics for an unknown task",
        "from bertlib import metrics\nresult = metrics.compute_metrics('sst5', [1], [1])", error("sst5"))
    api("bad value", "accuracy on arrays of different lengths",
        "from bertlib import metrics\nresult = metrics.accuracy([1, 0], [1])", error("one length"))
    return c


# --------------------------------------------------------------------------------------------------- running

def run_case(case, inputs):
    folder = Path(tempfile.mkdtemp(prefix="hostile-"))
    try:
        if case["setup"]:
            case["setup"](folder)
        command = [part.replace("OUT", str(folder / "OUT")).replace("CKPT", str(folder / "CKPT"))
                   if isinstance(part, str) else part for part in (case["command"] or [PYTHON, "-c", SNIPPET_RUNNER])]
        started = time.perf_counter()
        try:
            done = subprocess.run(command, input=case["snippet"], capture_output=True, text=True, cwd=folder,
                                  env=ENV, timeout=case["timeout"])
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
            return "silent wrong answer", f"accepted, returned {report['returned'][:100]}"
        wrong = case["check"](report["returned"], folder) if case["check"] else None
        return ("silent wrong answer", wrong) if wrong else ("correct result", report["returned"][:100])
    if done.returncode != 0:
        if "Traceback (most recent call last)" in stderr:
            return "traceback", stderr.strip().splitlines()[-1][:200]
        message = stderr.strip()[-400:]
        if case["expect"] == "error" and all(word in stderr for word in case["words"]):
            return "clear error", message.splitlines()[-1][:200] if message else ""
        return "traceback", f"exit {done.returncode}, unclear: {message[-200:]}"
    if case["expect"] == "error":
        return "silent wrong answer", f"exit 0 where an error was expected: {stdout.strip()[-150:]}"
    try:
        wrong = case["check"](stdout, folder) if case["check"] else None
    except Exception as error:  # the check could not even read the result
        wrong = f"result unreadable: {type(error).__name__}: {error}"
    return ("silent wrong answer", wrong) if wrong else ("correct result", stdout.strip()[-150:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="run the cases whose name holds this")
    parser.add_argument("--verbose", action="store_true", help="print each case's message")
    parser.add_argument("--library", action="store_true", help="run only the library (Python snippet) cases")
    args = parser.parse_args()
    inputs = Path(tempfile.mkdtemp(prefix="hostile-inputs-"))
    try:
        make_inputs(inputs)
        selected = [case for case in cases(inputs) if args.only in case["name"]
                    and (not args.library or case["snippet"] is not None)]
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(lambda case: run_case(case, inputs), selected))
    finally:
        shutil.rmtree(inputs, ignore_errors=True)
    counts = collections.Counter()
    by_category = collections.defaultdict(collections.Counter)
    for case, (outcome, detail, seconds) in zip(selected, results):
        counts[outcome] += 1
        by_category[case["category"]][outcome] += 1
        if args.verbose or outcome not in ("clear error", "correct result"):
            print(f"{outcome:20s} {seconds:6.1f} s  {case['name']}: {detail}")
    print(f"\n{len(selected)} cases in {time.perf_counter() - started:.0f} s")
    print(f"{'category':22s} " + " ".join(f"{outcome[:12]:>12s}" for outcome in OUTCOMES))
    for category, outcome_counts in sorted(by_category.items()):
        print(f"{category:22s} " + " ".join(f"{outcome_counts[outcome]:12d}" for outcome in OUTCOMES))
    for outcome in OUTCOMES:
        print(f"{outcome}: {counts[outcome]}")
    good = counts["clear error"] + counts["correct result"]
    print(f"hostile_inputs_clear_or_correct: {good}/{len(selected)}")


if __name__ == "__main__":
    main()
