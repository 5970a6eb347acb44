"""The pretraining data pipeline: arrays, tf.data with dynamic masking, TFRecords, the `bertlib data` command."""

import argparse
import json
import random
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bertlib.text import data
from bertlib.text.masking import MaskedLMMasker
from bertlib.text.nsp import create_nsp_instances

SEQ_LENGTH = 32


@pytest.fixture(scope="module")
def tokenizer():
    return data.default_tokenizer()


@pytest.fixture(scope="module")
def documents(tokenizer):
    words = [word for word in tokenizer.vocabulary[2000:8000] if word.isalpha()]
    rng = random.Random(0)
    return [[" ".join(rng.choice(words) for _ in range(rng.randint(2, 12))) + "."
             for _ in range(rng.randint(1, 10))] for _ in range(60)]


@pytest.fixture(scope="module")
def arrays(documents, tokenizer):
    return data.build_pretraining_arrays(documents, tokenizer, max_seq_length=SEQ_LENGTH, seed=0)


@pytest.fixture(scope="module")
def masker(tokenizer):
    return MaskedLMMasker.from_tokenizer(tokenizer, max_predictions=5)


def test_default_tokenizer_is_the_real_uncased_vocabulary(tokenizer):
    assert tokenizer.vocabulary_size == 30522
    assert (tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id) == (0, 101, 102, 103)


def test_instances_to_arrays_pads_each_instance(tokenizer, documents):
    instances = create_nsp_instances(documents, tokenizer, max_seq_length=SEQ_LENGTH, seed=0)
    arrays = data.instances_to_arrays(instances, SEQ_LENGTH)
    assert {key: value.shape for key, value in arrays.items()} == {
        "token_ids": (len(instances), SEQ_LENGTH), "segment_ids": (len(instances), SEQ_LENGTH),
        "padding_mask": (len(instances), SEQ_LENGTH), "next_sentence_labels": (len(instances),)}
    for row, instance in enumerate(instances):
        length = len(instance["token_ids"])
        assert arrays["token_ids"][row, :length].tolist() == instance["token_ids"]
        assert arrays["segment_ids"][row, :length].tolist() == instance["segment_ids"]
        assert arrays["padding_mask"][row].tolist() == [1] * length + [0] * (SEQ_LENGTH - length)
        assert (arrays["token_ids"][row, length:] == tokenizer.pad_id).all()
        assert arrays["next_sentence_labels"][row] == int(instance["is_random_next"])
    with pytest.raises(ValueError, match="max_seq_length=8"):
        data.instances_to_arrays(instances, 8)
    with pytest.raises(ValueError, match="empty"):
        data.instances_to_arrays([], SEQ_LENGTH)


def test_dupe_factor_repeats_creation_with_new_seeds(documents, tokenizer, arrays):
    doubled = data.build_pretraining_arrays(documents, tokenizer, max_seq_length=SEQ_LENGTH, dupe_factor=2, seed=0)
    expected = [instance["token_ids"] for seed in (0, 1)
                for instance in create_nsp_instances(documents, tokenizer, max_seq_length=SEQ_LENGTH, seed=seed)]
    rows = [ids[:length].tolist() for ids, length in zip(doubled["token_ids"], doubled["padding_mask"].sum(1))]
    assert sorted(rows) == sorted(expected)
    assert rows != expected  # shuffled, as the original
    with pytest.raises(ValueError, match="dupe_factor=0"):
        data.build_pretraining_arrays(documents, tokenizer, dupe_factor=0)


def test_dataset_has_fixed_shapes_and_a_correct_mask(arrays, masker):
    dataset = data.pretraining_dataset(arrays, 8, masker, seed=0)
    spec = dataset.element_spec
    assert {key: (tuple(value.shape), value.dtype.name) for key, value in spec.items()} == {
        "token_ids": ((8, SEQ_LENGTH), "int32"), "segment_ids": ((8, SEQ_LENGTH), "int32"),
        "padding_mask": ((8, SEQ_LENGTH), "int32"), "next_sentence_labels": ((8,), "int32"),
        "mask_positions": ((8, 5), "int32"), "mask_ids": ((8, 5), "int32"), "mask_weights": ((8, 5), "float32")}
    for batch in dataset.take(5):
        batch = {key: value.numpy() for key, value in batch.items()}
        weights = batch["mask_weights"] > 0
        rows = np.arange(8)[:, None]
        original = batch["token_ids"].copy()
        original[rows, batch["mask_positions"]] = np.where(weights, batch["mask_ids"],
                                                           original[rows, batch["mask_positions"]])
        # Undoing the mask gives back a row of the arrays, with its own labels.
        for row in range(8):
            matches = np.flatnonzero((arrays["token_ids"] == original[row]).all(axis=1))
            assert len(matches) >= 1
            assert arrays["next_sentence_labels"][matches[0]] == batch["next_sentence_labels"][row]
        assert weights.any(axis=1).all()


def test_dataset_is_deterministic_and_skip_resumes(arrays, masker):
    def batches(dataset, count):
        return [{key: value.numpy() for key, value in batch.items()} for batch in dataset.take(count)]

    steps_per_epoch = len(arrays["token_ids"]) // 8
    run = batches(data.pretraining_dataset(arrays, 8, masker, seed=3), steps_per_epoch + 4)
    again = batches(data.pretraining_dataset(arrays, 8, masker, seed=3), steps_per_epoch + 4)
    resumed = batches(data.pretraining_dataset(arrays, 8, masker, seed=3).skip(steps_per_epoch + 1), 3)
    for first, second in zip(run, again):
        assert all(np.array_equal(first[key], second[key]) for key in first)
    started = batches(data.pretraining_dataset(arrays, 8, masker, seed=3, start_batch=steps_per_epoch + 1), 3)
    for first, second, third in zip(run[steps_per_epoch + 1:], resumed, started):
        assert all(np.array_equal(first[key], second[key]) and np.array_equal(first[key], third[key])
                   for key in first)
    other_seed = batches(data.pretraining_dataset(arrays, 8, masker, seed=4), 1)[0]
    assert not np.array_equal(other_seed["token_ids"], run[0]["token_ids"])


def test_each_epoch_is_a_new_order_and_a_new_mask(arrays, masker):
    count = len(arrays["token_ids"])
    steps_per_epoch = count // 8
    in_order = [batch for batch in data.pretraining_dataset(arrays, 8, masker, shuffle=False, repeat=False)]
    assert len(in_order) == steps_per_epoch  # the incomplete batch is dropped
    np.testing.assert_array_equal(np.concatenate([batch["padding_mask"] for batch in in_order]),
                                  arrays["padding_mask"][:steps_per_epoch * 8])

    repeated = list(data.pretraining_dataset(arrays, 8, masker, shuffle=False).take(2 * steps_per_epoch))
    first, second = repeated[:steps_per_epoch], repeated[steps_per_epoch:]
    same_rows = all(np.array_equal(a["padding_mask"], b["padding_mask"]) for a, b in zip(first, second))
    same_masks = all(np.array_equal(a["mask_positions"], b["mask_positions"]) for a, b in zip(first, second))
    assert same_rows and not same_masks

    # Label each row with its index to follow it: each epoch is a permutation of distinct rows.
    indexed = dict(arrays, next_sentence_labels=np.arange(count, dtype=np.int32))
    shuffled = list(data.pretraining_dataset(indexed, 8, masker, seed=0).take(2 * steps_per_epoch))
    orders = [np.concatenate([batch["next_sentence_labels"] for batch in epoch])
              for epoch in (shuffled[:steps_per_epoch], shuffled[steps_per_epoch:])]
    for order in orders:
        assert len(set(order.tolist())) == steps_per_epoch * 8
    assert not np.array_equal(orders[0], orders[1])


def test_numpy_batches_are_the_tf_data_batches_without_tensorflow(arrays, masker):
    """`pretraining_batches` (no TensorFlow) against `pretraining_dataset`: unshuffled, the same batches to the
    last bit, masks included, over two epochs and from a resumed start; shuffled, each epoch a permutation of
    distinct rows in an order of its own, the same for the same seed, resumable at any batch."""
    count = len(arrays["token_ids"])
    steps_per_epoch = count // 8

    def tf_batches(dataset, number):
        return [{key: value.numpy() for key, value in batch.items()} for batch in dataset.take(number)]

    def numpy_batches(generator, number):
        return [next(generator) for _ in range(number)]

    def same(first, second):
        assert len(first) == len(second)
        for a, b in zip(first, second):
            assert sorted(a) == sorted(b)
            for key in a:
                assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
                np.testing.assert_array_equal(a[key], b[key], err_msg=key)

    for start in (0, steps_per_epoch + 2):
        same(numpy_batches(data.pretraining_batches(arrays, 8, masker, seed=5, shuffle=False, start_batch=start),
                           steps_per_epoch + 3),
             tf_batches(data.pretraining_dataset(arrays, 8, masker, seed=5, shuffle=False, start_batch=start),
                        steps_per_epoch + 3))
    one_epoch = list(data.pretraining_batches(arrays, 8, masker, shuffle=False, repeat=False))
    same(one_epoch, tf_batches(data.pretraining_dataset(arrays, 8, masker, shuffle=False, repeat=False), count))
    static = dict(arrays, **masker(arrays["token_ids"], seed=0))  # a stored mask: no masker
    same(list(data.pretraining_batches(static, 8, None, shuffle=False, repeat=False)),
         tf_batches(data.pretraining_dataset(static, 8, None, shuffle=False, repeat=False), count))

    indexed = dict(arrays, next_sentence_labels=np.arange(count, dtype=np.int32))
    run = numpy_batches(data.pretraining_batches(indexed, 8, masker, seed=3), 2 * steps_per_epoch + 2)
    orders = [np.concatenate([batch["next_sentence_labels"] for batch in run[epoch * steps_per_epoch:
                                                                             (epoch + 1) * steps_per_epoch]])
              for epoch in (0, 1)]
    assert all(len(set(order.tolist())) == steps_per_epoch * 8 for order in orders)
    assert not np.array_equal(orders[0], orders[1]) and not np.array_equal(orders[0], np.arange(len(orders[0])))
    tf_order = np.concatenate([batch["next_sentence_labels"] for batch in tf_batches(
        data.pretraining_dataset(indexed, 8, masker, seed=3), steps_per_epoch)])
    assert not np.array_equal(orders[0], tf_order)  # numpy's shuffle, not TensorFlow's
    same(numpy_batches(data.pretraining_batches(indexed, 8, masker, seed=3), 2 * steps_per_epoch + 2), run)
    same(numpy_batches(data.pretraining_batches(indexed, 8, masker, seed=3, start_batch=steps_per_epoch + 1), 3),
         run[steps_per_epoch + 1:steps_per_epoch + 4])
    assert not np.array_equal(next(data.pretraining_batches(indexed, 8, masker, seed=4))["next_sentence_labels"],
                              run[0]["next_sentence_labels"])
    with pytest.raises(ValueError, match="static mask"):  # at the call, before any batch is asked for
        data.pretraining_batches(arrays, 8, None)
    with pytest.raises(ValueError, match="batch_size"):
        data.pretraining_batches(arrays, count + 1, masker)


class CountingMasker(MaskedLMMasker):
    """A masker that records how many rows each call masks: what a pipeline built of each batch."""

    def mask_numpy(self, token_ids, rng):
        self.rows.append(len(token_ids))
        return super().mask_numpy(token_ids, rng)


def test_a_process_builds_and_masks_only_its_rows_of_every_batch(arrays, tokenizer, tmp_path):
    """`rows=(start, stop)`, a process's share of each global batch in a run over several: each pipeline (numpy,
    tf.data in memory, TFRecords streamed) gathers and masks only those rows, and they are the rows, masks included,
    of the whole batch that one process builds, also with whole-word masking and a share that is not a half."""
    data.write_tfrecords(arrays, tmp_path, num_shards=2)
    pipelines = {"numpy": lambda m, **rows: data.pretraining_batches(arrays, 8, m, seed=5, start_batch=3, **rows),
                 "tf.data": lambda m, **rows: data.pretraining_dataset(arrays, 8, m, seed=5, start_batch=3, **rows)
                 .take(4).as_numpy_iterator(),
                 "stream": lambda m, **rows: data.stream_tfrecords(tmp_path, 8, m, seed=5, start_batch=3,
                                                                   shuffle_window=16, **rows).take(4).as_numpy_iterator()}
    for name, pipeline in pipelines.items():
        for whole_word in (False, True):
            masker = CountingMasker.from_tokenizer(tokenizer, max_predictions=5, whole_word=whole_word)
            masker.rows = []
            whole = [next(batches) for batches in [pipeline(masker)] for _ in range(4)]
            assert set(masker.rows) == {8}
            for shares in ([(0, 4), (4, 8)], [(0, 3), (3, 8)]):
                for start, stop in shares:
                    masker.rows = []
                    parts = [next(batches) for batches in [pipeline(masker, rows=(start, stop))] for _ in range(4)]
                    assert set(masker.rows) == {stop - start}, (name, masker.rows)  # never the whole batch
                    for part, full in zip(parts, whole):
                        assert sorted(part) == sorted(full)
                        for key in full:
                            np.testing.assert_array_equal(part[key], full[key][start:stop], err_msg=f"{name} {key}")
            assert not np.array_equal(whole[0]["mask_positions"], whole[1]["mask_positions"])
    with pytest.raises(ValueError, match=r"rows=\(4, 9\) must be \(start, stop\) with 0 <= start < stop <= batch_size"):
        data.pretraining_dataset(arrays, 8, masker, rows=(4, 9))


def test_dataset_bad_input_is_a_clear_error(arrays, masker):
    with pytest.raises(ValueError, match="batch_size"):
        data.pretraining_dataset(arrays, len(arrays["token_ids"]) + 1, masker)
    with pytest.raises(ValueError, match="static mask"):
        data.pretraining_dataset(arrays, 8, None)
    with pytest.raises(ValueError, match="next_sentence_labels"):
        data.pretraining_dataset({"token_ids": arrays["token_ids"]}, 8, masker)


def test_tfrecords_round_trip_with_the_original_feature_names(arrays, masker, tmp_path):
    static = dict(arrays, **masker(arrays["token_ids"], seed=0))
    paths = data.write_tfrecords(static, tmp_path, num_shards=3)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(path.name for path in paths)  # no temp files
    example = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(str(paths[0])))).numpy())
    assert set(example.features.feature) == {"input_ids", "input_mask", "segment_ids", "next_sentence_labels",
                                             "masked_lm_positions", "masked_lm_ids", "masked_lm_weights"}
    read = data.read_tfrecords(tmp_path)
    assert {key: value.dtype for key, value in read.items()} == {key: value.dtype for key, value in static.items()}
    # Shard k holds rows k, k + 3, ...; rows come back shard by shard.
    order = np.concatenate([np.arange(shard, len(arrays["token_ids"]), 3) for shard in range(3)])
    for key, value in static.items():
        np.testing.assert_array_equal(read[key], value[order])

    dataset = data.pretraining_dataset(read, 8, None, shuffle=False, repeat=False)  # the stored, static mask
    first = next(iter(dataset))
    np.testing.assert_array_equal(first["mask_positions"].numpy(), read["mask_positions"][:8])
    with pytest.raises(FileNotFoundError, match="tfrecord"):
        data.read_tfrecords(tmp_path / "missing")


def test_streamed_tfrecords_cover_each_epoch_and_resume_exactly(arrays, masker, tmp_path):
    # Label each row with its index to follow it through shards, interleaving and the shuffle buffer.
    count = len(arrays["token_ids"])
    indexed = dict(arrays, next_sentence_labels=np.arange(count, dtype=np.int32))
    data.write_tfrecords(indexed, tmp_path, num_shards=3)

    def batches(dataset, number):
        return [{key: value.numpy() for key, value in batch.items()} for batch in dataset.take(number)]

    steps = 2 * count // 8 + 3  # past two epochs
    run = batches(data.stream_tfrecords(tmp_path, 8, masker, seed=3, shuffle_window=16), steps)
    labels = np.concatenate([batch["next_sentence_labels"] for batch in run])
    first_epoch, second_epoch = labels[:count], labels[count:2 * count]
    assert sorted(first_epoch) == sorted(second_epoch) == list(range(count))  # every row once an epoch
    assert not np.array_equal(first_epoch, np.arange(count))            # shuffled...
    assert not np.array_equal(first_epoch, second_epoch)                 # ...differently each epoch
    for batch in run:  # the rows are the stored rows, masked like pretraining_dataset's
        rows = batch["next_sentence_labels"]
        kept = batch["mask_weights"] == 0
        np.testing.assert_array_equal(batch["padding_mask"], arrays["padding_mask"][rows])
        original = np.take_along_axis(arrays["token_ids"][rows], batch["mask_positions"], axis=1)
        np.testing.assert_array_equal(np.where(kept, 0, batch["mask_ids"]), np.where(kept, 0, original))
        assert batch["token_ids"].shape == (8, SEQ_LENGTH) and batch["mask_positions"].shape == (8, 5)

    again = batches(data.stream_tfrecords(tmp_path, 8, masker, seed=3, shuffle_window=16), steps)
    resumed = batches(data.stream_tfrecords(tmp_path, 8, masker, seed=3, shuffle_window=16,
                                            start_batch=steps - 4), 4)
    for first, second in zip(run + run[-4:], again + resumed):
        assert all(np.array_equal(first[key], second[key]) for key in first)
    other = batches(data.stream_tfrecords(tmp_path, 8, masker, seed=0, shuffle_window=16), 1)[0]
    assert not np.array_equal(other["next_sentence_labels"], run[0]["next_sentence_labels"])


def test_streamed_tfrecords_keep_a_static_mask_and_name_bad_input(arrays, masker, tmp_path):
    static = dict(arrays, **masker(arrays["token_ids"], seed=0), next_sentence_labels=np.arange(
        len(arrays["token_ids"]), dtype=np.int32))
    data.write_tfrecords(static, tmp_path / "static", num_shards=2)
    batch = next(iter(data.stream_tfrecords(tmp_path / "static", 8, None, seed=0)))
    rows = batch["next_sentence_labels"].numpy()
    for key in ("token_ids", "mask_positions", "mask_ids", "mask_weights"):
        np.testing.assert_array_equal(batch[key].numpy(), static[key][rows])
    data.write_tfrecords(arrays, tmp_path / "dynamic", num_shards=2)
    with pytest.raises(ValueError, match="static mask"):
        data.stream_tfrecords(tmp_path / "dynamic", 8, None)
    with pytest.raises(FileNotFoundError, match="tfrecord"):
        data.stream_tfrecords(tmp_path / "missing", 8, masker)
    with pytest.raises(ValueError, match="start_batch=-1"):
        data.stream_tfrecords(tmp_path / "dynamic", 8, masker, start_batch=-1)


def written_shards(arrays, folder, num_shards, monkeypatch):
    """`write_tfrecords` into `folder`, returning the shard paths and the temporary files it wrote them to."""
    temporaries = []
    real_writer = tf.io.TFRecordWriter

    def recording_writer(path, *args, **kwargs):
        temporaries.append(Path(path))
        return real_writer(path, *args, **kwargs)

    monkeypatch.setattr(tf.io, "TFRecordWriter", recording_writer)
    paths = data.write_tfrecords(arrays, folder, num_shards=num_shards)
    monkeypatch.undo()
    return paths, temporaries


def test_a_write_killed_midway_leaves_nothing_a_reader_takes(arrays, masker, tmp_path, monkeypatch):
    # What a writer killed while writing leaves is its temporary file, half written: here a truncated copy of a
    # shard under each temporary name the writer used, and under an older bertlib's name `.NAME.XXXX.tfrecord`.
    paths, temporaries = written_shards(arrays, tmp_path, 3, monkeypatch)
    assert len(temporaries) == 3 and not any(path.exists() for path in temporaries)  # renamed onto the shards
    for temporary in temporaries:  # hidden, and no `*.tfrecord` glob (ours, run_pretraining.py's) matches it
        assert temporary.parent == tmp_path and temporary.name.startswith(".")
        assert not temporary.name.endswith(".tfrecord") and not temporary.match("*.tfrecord")
    complete = data.read_tfrecords(tmp_path)
    half = paths[0].read_bytes()[:len(paths[0].read_bytes()) // 2]
    for temporary in [*temporaries, tmp_path / ".pretraining-00000-of-00003.x1y2z3.tfrecord"]:
        temporary.write_bytes(half)
    assert data.tfrecord_files(tmp_path) == [str(path) for path in paths]
    again = data.read_tfrecords(tmp_path)  # with the broken files read, this raised DataLossError
    assert all(np.array_equal(again[key], complete[key]) for key in complete)
    streamed = next(iter(data.stream_tfrecords(tmp_path, 8, masker, seed=0)))
    assert streamed["token_ids"].shape == (8, SEQ_LENGTH)

    for path in paths:  # killed before its first shard was renamed: only temporary files, said so
        path.unlink()
    with pytest.raises(FileNotFoundError, match="only the temporary files of a write that did not finish"):
        data.read_tfrecords(tmp_path)


def test_a_folder_that_lacks_shards_is_refused_with_their_names(arrays, masker, tmp_path, monkeypatch):
    paths, _ = written_shards(arrays, tmp_path / "gaps", 5, monkeypatch)
    paths[1].unlink()
    paths[3].unlink()
    expected = ("2 of the 5 shards pretraining-\\*-of-00005.tfrecord are missing \\(pretraining-00001-of-00005"
                ".tfrecord, pretraining-00003-of-00005.tfrecord\\)")
    for read in (data.read_tfrecords, data.tfrecord_files, lambda path: data.stream_tfrecords(path, 8, masker)):
        with pytest.raises(ValueError, match=expected):
            read(tmp_path / "gaps")
    # Two writes of one prefix in one folder (with 2 and 3 shards) are not one set, even where each is complete.
    data.write_tfrecords(arrays, tmp_path / "mixed", num_shards=2)
    data.write_tfrecords(arrays, tmp_path / "mixed", num_shards=3)
    with pytest.raises(ValueError, match=r"the shards pretraining-\*.tfrecord come from writes of \[2, 3\] shards"):
        data.read_tfrecords(tmp_path / "mixed")
    # Complete sets of two prefixes (two corpora's shards side by side) and shards named otherwise are read.
    data.write_tfrecords(arrays, tmp_path / "two", num_shards=2, prefix="wiki")
    data.write_tfrecords(arrays, tmp_path / "two", num_shards=3, prefix="books")
    (tmp_path / "two" / "extra.tfrecord").write_bytes((tmp_path / "two" / "wiki-00000-of-00002.tfrecord").read_bytes())
    assert len(data.tfrecord_files(tmp_path / "two")) == 6


@pytest.mark.slow
def test_the_batches_train_a_tiny_pretrainer(arrays, masker):
    from bertlib.model import BertBackbone, BertPretrainer, pretraining_batch
    from bertlib.model.config import BertConfig

    # A finite loss alone would also pass batches that teach nothing (mask weights of 0 give a loss of 0): the
    # masked-LM loss must start near a uniform guess over the vocabulary and fall as the model learns which
    # words the corpus uses (about 6,000 of them: ln 6000 = 8.7 against ln 30522 = 10.3).
    dataset = data.pretraining_dataset(arrays, 8, masker, seed=0).map(pretraining_batch)
    pretrainer = BertPretrainer(BertBackbone(BertConfig.preset("tiny", max_sequence_length=SEQ_LENGTH)))
    pretrainer.compile(optimizer="adam")
    losses = pretrainer.fit(dataset, steps_per_epoch=10, epochs=3, verbose=0).history["mlm_logits_loss"]
    assert losses[0] > 0.8 * np.log(30522) and losses[-1] < losses[0] - 0.3, losses


def test_left_to_right_batches_predict_each_next_token(arrays):
    """Brute force, row by row: each batch row is one input row, unmasked, whose every position but the last
    reads out the next token, padding weighted 0; a pass visits every row once before any repeats."""
    count, length = arrays["token_ids"].shape
    batches = data.left_to_right_dataset(arrays, 8, seed=3).take(2 * (count // 8)).as_numpy_iterator()
    rows = {arrays["token_ids"][row].tobytes(): row for row in range(count)}
    seen = []
    for inputs, targets, weights in batches:
        assert inputs["mask_positions"].shape == (8, length - 1) and (inputs["mask_positions"] == np.arange(length - 1)).all()
        for token_ids, target, weight, segment_ids, padding_mask in zip(
                inputs["token_ids"], targets["mlm_logits"], weights["mlm_logits"], inputs["segment_ids"],
                inputs["padding_mask"]):
            row = rows[token_ids.tobytes()]
            seen.append(row)
            np.testing.assert_array_equal(target, arrays["token_ids"][row, 1:])
            np.testing.assert_array_equal(weight, arrays["padding_mask"][row, 1:].astype(np.float32))
            np.testing.assert_array_equal(segment_ids, arrays["segment_ids"][row])
            np.testing.assert_array_equal(padding_mask, arrays["padding_mask"][row])
    per_pass = count // 8 * 8
    assert len(set(seen[:per_pass])) == per_pass  # no row twice within a pass...
    assert seen[:per_pass] != sorted(seen[:per_pass]) and seen[:per_pass] != seen[per_pass:]  # ...shuffled anew
    again = next(data.left_to_right_dataset(arrays, 8, seed=3).as_numpy_iterator())[0]["token_ids"]
    np.testing.assert_array_equal(again, arrays["token_ids"][seen[:8]])  # the same seed, the same order
    with pytest.raises(ValueError, match="batch_size=0"):
        data.left_to_right_dataset(arrays, 0)
    with pytest.raises(ValueError, match="padding_mask"):
        data.left_to_right_dataset({"token_ids": arrays["token_ids"], "segment_ids": arrays["segment_ids"]}, 8)


def test_cli_writes_shards_and_prints_a_json_summary(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat.\nit was warm.\nthen it slept.\n\n"
                      "python is a language.\nit has classes.\n\nthe third document.\nends here.\n")
    out = tmp_path / "out"
    parser = argparse.ArgumentParser()
    data.add_arguments(parser)  # what `bertlib data` parses (bertlib.cli imports every command's module)
    code = data.run(parser.parse_args(["--corpus", str(corpus), "--out", str(out), "--max-seq-length", "24",
                     "--dupe-factor", "3", "--num-shards", "2", "--static-masking", "--max-predictions", "4"]))
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["instances"] > 0 and len(summary["shards"]) == 2
    read = data.read_tfrecords(out)
    assert len(read["token_ids"]) == summary["instances"] and read["mask_positions"].shape[1] == 4

    # A write killed midway left a shard of another --num-shards and a temporary file: --overwrite replaces
    # both, so the folder is one finished write again.
    data.write_tfrecords(read, out, num_shards=3)
    (out / "pretraining-00001-of-00003.tfrecord").unlink()
    leftover = out / ".pretraining-00002-of-00003.k3j9x1.tfrecord.tmp"
    leftover.write_bytes(b"half a shard")
    with pytest.raises(ValueError, match="not one finished write"):
        data.read_tfrecords(out)
    arguments = ["--corpus", str(corpus), "--out", str(out), "--max-seq-length", "24", "--num-shards", "2"]
    assert data.run(parser.parse_args(arguments)) == 2  # without --overwrite: refused, the folder holds shards
    assert "is not empty" in capsys.readouterr().err
    assert data.run(parser.parse_args([*arguments, "--overwrite"])) == 0
    assert sorted(path.name for path in out.iterdir()) == [f"pretraining-0000{k}-of-00002.tfrecord" for k in (0, 1)]
    assert len(data.read_tfrecords(out)["token_ids"]) == json.loads(capsys.readouterr().out)["instances"]


def test_readers_split_each_batch_and_a_process_opens_only_its_readers_shards(arrays, masker, tmp_path):
    """`readers=2` (one reader per process of a two-host run): reader r reads shards r, r + 2, ... and fills its half
    of every batch. A process's rows are then the same rows, masks included, as in the whole batch, and it opens
    only its reader's shards: with the other reader's shards made unreadable it still reads all of its batches,
    while the other half fails on them. No row comes twice within an epoch."""
    count = len(arrays["token_ids"])
    indexed = dict(arrays, next_sentence_labels=np.arange(count, dtype=np.int32))
    paths = data.write_tfrecords(indexed, tmp_path, num_shards=4)

    def batches(steps=6, **options):
        dataset = data.stream_tfrecords(tmp_path, 8, masker, seed=3, shuffle_window=16, readers=2, **options)
        return [{key: value.numpy() for key, value in batch.items()} for batch in dataset.take(steps)]

    whole = batches(steps=count // 8)  # within each reader's first epoch
    labels = np.concatenate([batch["next_sentence_labels"] for batch in whole])
    assert len(set(labels)) == len(labels)  # no row twice
    for batch in whole:  # write_tfrecords puts row i in shard i % 4: the first half from shards 0 and 2, the second
        assert set(batch["next_sentence_labels"][:4] % 2) == {0} and set(batch["next_sentence_labels"][4:] % 2) == {1}
    halves = [batches(rows=rows) for rows in ((0, 4), (4, 8))]
    for index, full in enumerate(whole[:6]):
        for (start, stop), part in zip(((0, 4), (4, 8)), halves):
            for key in full:
                np.testing.assert_array_equal(part[index][key], full[key][start:stop], err_msg=key)
    one_reader = data.stream_tfrecords(tmp_path, 8, masker, seed=3, shuffle_window=16)
    assert not np.array_equal(next(iter(one_reader))["next_sentence_labels"].numpy(), labels[:8])

    for path in paths[1::2]:  # reader 1's shards: not TFRecords any more
        path.write_bytes(b"not a record" * 100)
    again = batches(rows=(0, 4))
    assert all(np.array_equal(a[key], b[key]) for a, b in zip(again, halves[0]) for key in a)
    with pytest.raises(tf.errors.DataLossError):
        batches(rows=(4, 8))

    with pytest.raises(ValueError, match=r"4 shard\(s\) cannot be dealt to 8 readers.*--num-shards 8.*--stream-readers"):
        data.stream_tfrecords(tmp_path, 8, masker, readers=8)
    with pytest.raises(ValueError, match="batch_size=6 does not split into 4 readers"):
        data.stream_tfrecords(tmp_path, 6, masker, readers=4)
