"""What `bertlib pretrain` and `bertlib finetune` write loads back with `keras.saving.load_model` after
`import bertlib` alone, on TensorFlow, JAX and PyTorch: one tiny pretraining run and one tiny fine-tuning run on
its backbone, then every `.keras` file they wrote is loaded, compiled (optimizer, schedule, loss), in a fresh
process per backend, and gives the numbers it gave where it was trained."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from bertlib import cli
from tests.library.test_training import CORPUS_WORDS, SMALL_RUN, write_corpus_and_vocabulary
from tools.repo_paths import REPO_ROOT as ROOT

BACKENDS = ("tensorflow", "jax", "torch")
INPUTS = {"token_ids": np.array([[2, 11, 12, 13, 3, 21, 22, 3], [2, 30, 31, 3, 40, 41, 3, 0]], "int32"),
          "segment_ids": np.array([[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 0]], "int32"),
          "padding_mask": np.array([[1] * 8, [1] * 7 + [0]], "int32"),
          "mask_positions": np.array([[1, 5], [2, 4]], "int32")}

# Run in a fresh process: `import bertlib` and Keras, nothing else of bertlib; each file loaded as a user would.
LOAD = """
import json, sys
import numpy as np
import bertlib, keras

inputs = {name: np.array(value, "int32") for name, value in json.loads(sys.argv[1]).items()}
found = {}
for path in json.loads(sys.argv[2]):
    model = keras.saving.load_model(path)
    given = inputs if type(model).__name__ == "BertPretrainer" else {name: value for name, value in inputs.items()
                                                                    if name != "mask_positions"}
    outputs = [keras.ops.convert_to_numpy(value).tolist() for value in keras.tree.flatten(model(given))]
    found[path] = {"class": type(model).__module__ + "." + type(model).__name__, "outputs": outputs}
    if getattr(model, "optimizer", None) is not None:  # a compiled model: its optimizer, schedule and steps came back too
        learning_rate = model.optimizer.get_config()["learning_rate"]
        found[path].update(optimizer=type(model.optimizer).__module__ + "." + type(model.optimizer).__name__,
                           schedule=learning_rate.get("class_name") if isinstance(learning_rate, dict) else None,
                           iterations=int(keras.ops.convert_to_numpy(model.optimizer.iterations)))
print(json.dumps({"backend": keras.backend.backend(), "files": found}))
"""


def _glue_folder(folder):
    """An SST-2 folder in GLUE's layout: a header, then a sentence and its label per line."""
    rng = np.random.default_rng(0)
    words = CORPUS_WORDS.split()
    for split, rows in (("train", 32), ("dev", 8)):
        lines = [f"{' '.join(rng.choice(words, size=6))} .\t{row % 2}" for row in range(rows)]
        (folder / "SST-2").mkdir(parents=True, exist_ok=True)
        (folder / "SST-2" / f"{split}.tsv").write_text("sentence\tlabel\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def written_files(tmp_path_factory):
    """Every `.keras` file of a tiny `bertlib pretrain` and a tiny `bertlib finetune` on its backbone, run here."""
    root = tmp_path_factory.mktemp("commands")
    corpus, vocab = write_corpus_and_vocabulary(root, CORPUS_WORDS.split())
    run, out = root / "run", root / "finetuned"
    assert cli.main(["pretrain", "--corpus", str(corpus), "--vocab", str(vocab), "--checkpoint-dir", str(run),
                     "--steps", "4", "--checkpoint-every", "4", "--log-every", "2", "--warmup-steps", "2",
                     *(f"--{name.replace('_', '-')}={SMALL_RUN[name]}"
                       for name in ("preset", "batch_size", "seq_length", "max_predictions", "seed"))]) == 0
    (run / "vocab.txt").write_bytes(vocab.read_bytes())  # `bertlib finetune --init` reads it beside the model
    assert cli.main(["finetune", "--task", "sst2", "--data-dir", str(_glue_folder(root / "glue")),
                     "--init", str(run / "backbone.keras"), "--epochs", "1", "--batch-size", "8",
                     "--max-seq-length", "16", "--output-dir", str(out)]) == 0
    return sorted(str(path) for path in (*run.rglob("*.keras"), *out.rglob("*.keras")))


def _load_in_fresh_process(backend, paths):
    environment = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT),
                   "OMP_WAIT_POLICY": "PASSIVE"}
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(LOAD), json.dumps({k: v.tolist() for k, v in INPUTS.items()}),
         json.dumps(paths)], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, f"{backend}: {completed.stderr[-3000:]}"
    return json.loads(completed.stdout.splitlines()[-1])


@pytest.mark.slow
def test_every_file_the_commands_write_loads_after_import_bertlib_on_every_backend(written_files):
    names = {os.path.basename(path) for path in written_files}
    assert {"backbone.keras", "pretrainer.keras", "model.keras"} <= names, names
    expected = {}
    for path in written_files:  # here, where they were trained: the numbers each backend must give
        model = keras.saving.load_model(path)
        given = INPUTS if type(model).__name__ == "BertPretrainer" else \
            {name: value for name, value in INPUTS.items() if name != "mask_positions"}
        expected[path] = [keras.ops.convert_to_numpy(value) for value in keras.tree.flatten(model(given))]
    classes = {}
    for backend in BACKENDS:
        pytest.importorskip(backend)
        result = _load_in_fresh_process(backend, written_files)
        assert result["backend"] == backend
        for path, found in result["files"].items():
            classes[os.path.basename(path)] = found["class"]
            for got, want in zip(found["outputs"], expected[path], strict=True):
                np.testing.assert_allclose(got, want, atol=1e-4, err_msg=f"{backend}: {path}")
            if os.path.basename(path) != "backbone.keras":  # trained, so compiled: back with its optimizer
                assert found["schedule"] == "WarmupLinearDecay", (backend, path, found)
                assert "AdamW" in found["optimizer"], found["optimizer"]
                assert found["iterations"] == 4, (backend, path)  # 4 steps each: 4 x 8 pretraining, 32 / 8 SST-2
    assert classes["backbone.keras"] == "bertlib.model.backbone.BertBackbone"
    assert classes["pretrainer.keras"] == "bertlib.model.backbone.BertPretrainer"
    assert classes["model.keras"] == "bertlib.finetune.tasks.heads.BertClassifier"
