"""The fine-tuning heads' pooling choice: the paper's [CLS] pooler or the mean of the real tokens."""

import keras
import numpy as np
import pytest

from bertlib import BertBackbone, BertConfig
from bertlib.finetune.tasks.heads import BertClassifier


def test_mean_pooling_classifier_matches_manual_average(tmp_path):
    config = BertConfig(num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16, vocabulary_size=30,
                        max_sequence_length=8, dropout=0.0)
    backbone = BertBackbone(config)
    model = BertClassifier(backbone, num_outputs=3, dropout=0.0, pooling="mean")
    rng = np.random.default_rng(0)
    inputs = {"token_ids": rng.integers(1, 30, (2, 5)).astype("int32"), "segment_ids": np.zeros((2, 5), "int32"),
              "padding_mask": np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], "int32")}
    sequence = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    mask = inputs["padding_mask"][:, :, None]
    mean = (sequence * mask).sum(1) / mask.sum(1)
    dense = model.get_layer("classifier")
    expected = mean @ dense.kernel.numpy() + dense.bias.numpy()
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model(inputs)), expected, atol=1e-5)

    path = str(tmp_path / "mean.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    assert reloaded.pooling == "mean"
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(reloaded(inputs)),
                                  keras.ops.convert_to_numpy(model(inputs)))


def test_unknown_pooling_is_named():
    backbone = BertBackbone(BertConfig(num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                                       vocabulary_size=30, max_sequence_length=8))
    with pytest.raises(ValueError, match="pooling='max'"):
        BertClassifier(backbone, num_outputs=2, pooling="max")


@pytest.mark.parametrize("name", ["BertClassifier", "BertSpanExtractor", "BertMultipleChoice"])
def test_the_task_models_are_where_users_look_and_their_examples_run(name):
    """`from bertlib import BertClassifier` (and `bertlib.finetune.BertClassifier`), and the docstring's example
    runs as written: its names are imported in it, its shapes are the ones printed."""
    import doctest

    import bertlib
    import bertlib.finetune
    from bertlib.finetune.tasks import heads

    model_class = getattr(heads, name)
    assert getattr(bertlib, name) is model_class and getattr(bertlib.finetune, name) is model_class
    assert name in bertlib.__all__ and name in bertlib.finetune.__all__
    finder = doctest.DocTestFinder(recurse=False)
    (test,) = finder.find(model_class, name, globs={})  # no names given: the example imports its own
    assert test.examples, f"{name} has no example"
    result = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE).run(test)
    assert result.failed == 0 and result.attempted == len(test.examples)
