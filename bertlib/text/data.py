"""Pretraining data: NSP instances as arrays, a tf.data pipeline with dynamic masking, and TFRecords (§3, A.2).

The flow is the one of the original `create_pretraining_data.py`, split so each step can be read alone::

    documents --(bertlib.text.nsp)--> instances --instances_to_arrays--> arrays --pretraining_dataset--> batches
                                                                          \\--pretraining_batches--> numpy batches
                                                                          \\--write_tfrecords--> shards
    shards --read_tfrecords--> arrays (in memory)      shards --stream_tfrecords--> batches (any size)
    arrays --left_to_right_dataset--> next-token batches (the left-to-right baseline, no masking)

`arrays` is a dict of numpy arrays: (n, seq) int32 `token_ids, segment_ids, padding_mask`, (n,) int32
`next_sentence_labels` (1 = NotNext, i.e. `is_random_next`) and, for statically masked data, (n, predictions)
`mask_positions, mask_ids` (int32) and `mask_weights` (float32).

The command `bertlib data` builds the arrays from a corpus and writes them as sharded TFRecords.
"""

import itertools
import json
import re
import sys
from pathlib import Path

import numpy as np

from bertlib._lazy import check_extras, is_installed
from bertlib.io.files import atomic_write, check_output_dir

SEQUENCE_KEYS = ("token_ids", "segment_ids", "padding_mask")
MASK_KEYS = ("mask_positions", "mask_ids", "mask_weights")

# Our names -> the feature names of the original create_pretraining_data.py TFRecords.
TFRECORD_NAMES = {"token_ids": "input_ids", "padding_mask": "input_mask", "segment_ids": "segment_ids",
                  "mask_positions": "masked_lm_positions", "mask_ids": "masked_lm_ids",
                  "mask_weights": "masked_lm_weights", "next_sentence_labels": "next_sentence_labels"}

# A shard `write_tfrecords` names: PREFIX-INDEX-of-COUNT.tfrecord. While it is written it is a hidden temporary
# file that does not end in .tfrecord (TEMPORARY_SUFFIX), renamed when complete: a reader that globs
# `*.tfrecord`, ours or the original run_pretraining.py, never sees half a shard.
SHARD_NAME = re.compile(r"(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.tfrecord")
TEMPORARY_SUFFIX = ".tfrecord.tmp"


def default_tokenizer():
    """The `WordPieceTokenizer` of the real uncased BERT vocabulary, which ships with bertlib."""
    from bertlib.text.tokenizer import WordPieceTokenizer

    return WordPieceTokenizer.bert_uncased()


def instances_to_arrays(instances, max_seq_length):
    """Pad NSP instances (dicts from `bertlib.text.nsp.create_nsp_instances`) into fixed-shape numpy arrays.

    Returns (n, max_seq_length) int32 `token_ids`, `segment_ids`, `padding_mask` (1 real, 0 pad; padding
    id 0 is [PAD]) and (n,) int32 `next_sentence_labels` (1 when `is_random_next`).
    """
    if not instances:
        raise ValueError("instances is empty: there is nothing to pad into arrays.")
    count = len(instances)
    arrays = {key: np.zeros((count, max_seq_length), dtype=np.int32) for key in SEQUENCE_KEYS}
    for row, instance in enumerate(instances):
        length = len(instance["token_ids"])
        if length > max_seq_length or len(instance["segment_ids"]) != length:
            raise ValueError(f"instance {row} has {length} tokens and {len(instance['segment_ids'])} "
                             f"segment ids; expected equal lengths of at most max_seq_length={max_seq_length}.")
        arrays["token_ids"][row, :length] = instance["token_ids"]
        arrays["segment_ids"][row, :length] = instance["segment_ids"]
        arrays["padding_mask"][row, :length] = 1
    arrays["next_sentence_labels"] = np.array([int(instance["is_random_next"]) for instance in instances],
                                              dtype=np.int32)
    return arrays


def build_pretraining_arrays(documents, tokenizer, max_seq_length=128, dupe_factor=1, short_seq_prob=0.1,
                             seed=0, progress=False):
    """Documents of sentences -> shuffled NSP arrays, as the original `create_training_instances`.

    Each sentence is tokenized once; instance creation then runs `dupe_factor` times with seeds
    `seed, seed + 1, ...`, so each copy cuts chunks, picks random B's and truncates differently (and,
    with static masking, gets a different mask). The instances are shuffled with `seed`.

    Args:
        documents: list of documents, each a list of sentence strings.
        tokenizer: `WordPieceTokenizer`.
        max_seq_length: int, defaults to 128.
        dupe_factor: int, defaults to 1.
        short_seq_prob: float, defaults to 0.1.
        seed: int, defaults to 0.
        progress: bool, show tqdm progress bars.
    """
    from bertlib.text import nsp

    if dupe_factor < 1:
        raise ValueError(f"dupe_factor={dupe_factor} must be at least 1.")
    token_documents = nsp.tokenize_documents(documents, tokenizer, progress=progress)
    instances = []
    for copy in range(dupe_factor):
        instances.extend(nsp.create_nsp_instances_from_ids(
            token_documents, tokenizer.cls_id, tokenizer.sep_id, max_seq_length=max_seq_length,
            short_seq_prob=short_seq_prob, seed=seed + copy))
    arrays = instances_to_arrays(instances, max_seq_length)
    order = np.random.default_rng(seed).permutation(len(instances))
    return {key: value[order] for key, value in arrays.items()}


def has_tensorflow():
    """Whether TensorFlow is installed (for tf.data), found without importing it."""
    return is_installed("tensorflow")


def input_options():
    """The `tf.data.Options` of bertlib's training pipelines: on a machine with only CPUs, tf.data's autotuner
    is off.

    With the autotuner on, a tiny model's `fit` on 2 cores switched between rounds of 150 ms steps on both
    cores and 255 ms steps on one, whatever the thread settings; with it off, every round ran at 148-163 ms
    (bench/threads.py, bench/RESULTS.md, issue 17). A parallel map then uses every core and the prefetch
    buffer keeps its own small adjustment. With a GPU or TPU the autotuner stays on: there the input
    pipeline, not the host's cores, is what must keep up.

    Example:
    >>> dataset = dataset.with_options(input_options())
    """
    import tensorflow as tf

    options = tf.data.Options()
    accelerators = tf.config.list_logical_devices("GPU") + tf.config.list_logical_devices("TPU")
    options.autotune.enabled = bool(accelerators)
    return options


def pretraining_dataset(arrays, batch_size, masker, seed=0, shuffle=True, repeat=True, start_batch=0, rows=None):
    """A tf.data pipeline of fixed-shape pretraining batches with dynamic masking (§3.1, A.2).

    Every batch is a dict of int32 (batch_size, seq) `token_ids, segment_ids, padding_mask`, int32
    (batch_size, max_predictions) `mask_positions, mask_ids`, float32 `mask_weights` and int32 (batch_size,)
    `next_sentence_labels`; the last incomplete batch of an epoch is dropped so every shape is static (TPUs
    need that). Map it with `bertlib.model.inputs.pretraining_batch` for `BertPretrainer.fit`.

    The pipeline is a pure function of `seed` and the batch number: epoch `e` is shuffled with seed
    `(seed, e)` and batch `b` (counted from the start) is masked with seed `(seed, b)`. So each epoch gets
    a fresh order and a fresh mask, two runs give the same batches, and `dataset.skip(n)` yields exactly the
    batches n, n+1, ... (resuming training after n steps). `start_batch=n` gives the same batches without
    computing the n skipped ones (`.skip(n)` masks each of them, about a millisecond per batch).
    `pretraining_batches` is the same contract without TensorFlow.

    Args:
        arrays: dict of numpy arrays (see the module docstring), e.g. from `build_pretraining_arrays` or
            `read_tfrecords`. Kept in memory as constants.
        batch_size: int.
        masker: `bertlib.text.masking.MaskedLMMasker`, or None to use the static mask stored in `arrays`.
        seed: non-negative int, defaults to 0.
        shuffle: bool, defaults to True (reshuffle every epoch).
        repeat: bool, defaults to True (endless); False gives one epoch.
        start_batch: int, defaults to 0; the number of the first batch (a cheap `.skip(start_batch)`).
        rows: optional `(start, stop)`: only rows start:stop of every batch are gathered and masked, with the
            masks they get in the whole batch (one process's share of each global batch, in a run over several).

    Example:
    >>> dataset = pretraining_dataset(arrays, 32, MaskedLMMasker.from_tokenizer(tokenizer), seed=0)
    >>> pretrainer.fit(dataset.map(pretraining_batch), steps_per_epoch=100, epochs=3)
    """
    import tensorflow as tf

    keys, steps_per_epoch = _check_pretraining_input(arrays, batch_size, masker, seed, start_batch)
    start, stop, batch_rows = _batch_rows(rows, batch_size)
    count = len(arrays["token_ids"])
    columns = {key: tf.constant(arrays[key]) for key in keys}
    seq_length = arrays["token_ids"].shape[1]

    def epoch_batches(epoch):
        indices = tf.range(count, dtype=tf.int64)
        if shuffle:
            indices = tf.random.experimental.stateless_shuffle(indices, seed=tf.stack([tf.constant(seed, tf.int64), epoch]))
        indices = tf.reshape(indices[:steps_per_epoch * batch_size], (steps_per_epoch, batch_size))
        return tf.data.Dataset.from_tensor_slices(indices)

    def make_batch(batch_number, indices):
        features = {key: tf.gather(column, indices[start:stop]) for key, column in columns.items()}
        if masker is not None:
            features.update(masker(tf.ensure_shape(features["token_ids"], (stop - start, seq_length)),
                                   seed=tf.stack([tf.constant(seed, tf.int64), batch_number]), batch_rows=batch_rows))
        return {key: tf.cast(value, tf.float32 if key == "mask_weights" else tf.int32)
                for key, value in features.items()}

    first_epoch = start_batch // steps_per_epoch
    epochs = tf.data.Dataset.counter(first_epoch) if repeat else tf.data.Dataset.range(first_epoch, 1)
    dataset = epochs.flat_map(epoch_batches).enumerate(first_epoch * steps_per_epoch)
    dataset = dataset.skip(start_batch - first_epoch * steps_per_epoch)  # index slices only: cheap
    dataset = dataset.map(make_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(input_options())


def pretraining_batches(arrays, batch_size, masker, seed=0, shuffle=True, repeat=True, start_batch=0, rows=None):
    """`pretraining_dataset`'s batches as a generator of numpy dicts, for a machine without TensorFlow (a JAX or
    PyTorch install): `fit` takes it on those backends. The same arguments, keys, dtypes and shapes, and the same
    contract: a pure function of `seed` and the batch number, batch `b` masked with seed `(seed, b)`,
    `start_batch=n` resuming at batch n. Only the shuffle differs: epoch `e` is numpy's
    `default_rng((seed, e)).permutation`, not TensorFlow's stateless shuffle, so with `shuffle=False` the two
    give the same batches and with shuffling each gives its own order. `rows=(start, stop)` gathers and masks
    only those rows of every batch, as `pretraining_dataset`'s does. The training loop's thread builds every
    batch (no parallel map, no prefetch): masking a 256 x 128 batch took 3.6 ms on an H200 machine's CPU, against
    75 ms for the BERT-BASE step it fed (bench/RESULTS.md).

    Example:
    >>> batches = pretraining_batches(arrays, 32, MaskedLMMasker.from_tokenizer(tokenizer), seed=0)
    >>> pretrainer.fit((pretraining_batch(batch) for batch in batches), steps_per_epoch=100, epochs=3)
    """
    # Checked at the call, not at the first batch a `fit` asks for.
    keys, steps_per_epoch = _check_pretraining_input(arrays, batch_size, masker, seed, start_batch)
    start, stop, batch_rows = _batch_rows(rows, batch_size)
    count = len(arrays["token_ids"])
    first_epoch = start_batch // steps_per_epoch

    def batches():
        for epoch in itertools.count(first_epoch) if repeat else range(first_epoch, 1):
            order = np.random.default_rng((seed, epoch)).permutation(count) if shuffle else np.arange(count)
            for batch_number in range(max(start_batch, epoch * steps_per_epoch), (epoch + 1) * steps_per_epoch):
                first_row = (batch_number - epoch * steps_per_epoch) * batch_size
                picked = order[first_row + start:first_row + stop]
                features = {key: arrays[key][picked] for key in keys}
                if masker is not None:
                    features.update(masker(features["token_ids"], seed=(seed, batch_number), batch_rows=batch_rows))
                yield {key: np.asarray(value, np.float32 if key == "mask_weights" else np.int32)
                       for key, value in features.items()}

    return batches()


def check_readers(readers, num_shards, batch_size):
    """A ValueError naming the numbers when `stream_tfrecords` cannot deal `num_shards` shards to `readers`
    readers or split a batch of `batch_size` into their equal blocks."""
    if not isinstance(readers, int) or isinstance(readers, bool) or readers < 1:
        raise ValueError(f"readers={readers!r} must be a positive integer.")
    if num_shards < readers:
        raise ValueError(f"{num_shards} shard(s) cannot be dealt to {readers} readers (one reader per process "
                         f"reads a share of the shards): write at least {readers} shards (bertlib data "
                         f"--num-shards {readers}) or read with fewer (bertlib pretrain --stream-readers).")
    if batch_size % readers:
        raise ValueError(f"batch_size={batch_size} does not split into {readers} readers' equal blocks.")


def _batch_rows(rows, batch_size):
    """`(start, stop, batch_rows)` for a pipeline's `rows`: the whole batch for None; the masker's `batch_rows`
    (None for the whole batch); a ValueError for rows that are not a slice of the batch."""
    if rows is None:
        return 0, batch_size, None
    start, stop = (int(value) for value in rows)
    if not 0 <= start < stop <= batch_size:
        raise ValueError(f"rows={tuple(rows)} must be (start, stop) with 0 <= start < stop <= batch_size "
                         f"({batch_size}).")
    return start, stop, (start, stop, batch_size)


def _check_pretraining_input(arrays, batch_size, masker, seed, start_batch):
    """(the keys a batch gathers from `arrays`, batches per epoch), or a ValueError naming what is wrong."""
    missing = [key for key in SEQUENCE_KEYS + ("next_sentence_labels",) if key not in arrays]
    if masker is None:
        missing += [key for key in MASK_KEYS if key not in arrays]
    if missing:
        raise ValueError(f"arrays lacks {missing}; expected {SEQUENCE_KEYS + ('next_sentence_labels',)}"
                         + (" and a static mask (or pass a masker)" if masker is None else "") + ".")
    if seed < 0 or start_batch < 0:
        raise ValueError(f"seed={seed} and start_batch={start_batch} must be non-negative ints.")
    count = len(arrays["token_ids"])
    steps_per_epoch = count // batch_size
    if batch_size < 1 or steps_per_epoch == 0:
        raise ValueError(f"batch_size={batch_size} needs 1 <= batch_size <= the number of examples ({count}).")
    return SEQUENCE_KEYS + ("next_sentence_labels",) + (MASK_KEYS if masker is None else ()), steps_per_epoch


def left_to_right_dataset(arrays, batch_size, seed=0):
    """Batches for a left-to-right language model (`BertPretrainer` with a causal backbone, no NSP): every
    position predicts the next token, the baseline of the paper's ablation C.1 (chapter 03).

    Each element is `(inputs, targets, weights)` for `train_on_batch(*batch)` or `fit`: `inputs` holds the
    unmasked `token_ids, segment_ids, padding_mask` and `mask_positions` = 0 .. seq-2 (every position but the
    last reads out a prediction); `targets["mlm_logits"]` is `token_ids[:, 1:]`, the token after each position;
    `weights["mlm_logits"]` is `padding_mask[:, 1:]` as float32, so no padding is predicted. The rows are
    shuffled with `seed` (a new order each pass), repeated without end, and batched with the last incomplete
    batch dropped.

    Args:
        arrays: dict of numpy arrays with `token_ids, segment_ids, padding_mask` (n, seq), as for
            `pretraining_dataset`.
        batch_size: int, 1 <= batch_size <= n.
        seed: int, defaults to 0.
    """
    import tensorflow as tf

    missing = [key for key in SEQUENCE_KEYS if key not in arrays]
    if missing:
        raise ValueError(f"arrays lacks {missing}; expected {SEQUENCE_KEYS}.")
    count, length = arrays["token_ids"].shape
    if not 1 <= batch_size <= count:
        raise ValueError(f"batch_size={batch_size} needs 1 <= batch_size <= the number of examples ({count}).")
    inputs = {name: arrays[name] for name in SEQUENCE_KEYS}
    inputs["mask_positions"] = np.tile(np.arange(length - 1, dtype=np.int32), (count, 1))
    targets = {"mlm_logits": arrays["token_ids"][:, 1:]}
    weights = {"mlm_logits": arrays["padding_mask"][:, 1:].astype(np.float32)}
    return (tf.data.Dataset.from_tensor_slices((inputs, targets, weights)).shuffle(count, seed=seed)
            .repeat().batch(batch_size, drop_remainder=True).with_options(input_options()))


def write_tfrecords(arrays, out_dir, num_shards=1, prefix="pretraining"):
    """Write `arrays` as `num_shards` TFRecord files holding the original create_pretraining_data features.

    Features: `input_ids`, `input_mask`, `segment_ids`, `next_sentence_labels` and, when `arrays` holds a
    static mask, `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`. Example i goes to shard
    i % num_shards. Each shard is written to a hidden temporary file in `out_dir` (`.NAME.XXXX.tfrecord.tmp`,
    which no `*.tfrecord` glob matches), then renamed (atomic): a writer killed midway leaves complete shards
    and temporary files, and `tfrecord_files` refuses a set that lacks shards. Returns the list of shard paths.
    """
    import tensorflow as tf

    count = len(arrays["token_ids"])
    if not 1 <= num_shards <= count:
        raise ValueError(f"num_shards={num_shards} must be between 1 and the number of examples ({count}).")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    keys = [key for key in TFRECORD_NAMES if key in arrays]

    def feature(key, row):
        values = np.atleast_1d(arrays[key][row])
        if key == "mask_weights":
            return tf.train.Feature(float_list=tf.train.FloatList(value=values.tolist()))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values.tolist()))

    paths = []
    for shard in range(num_shards):
        path = out_dir / f"{prefix}-{shard:05d}-of-{num_shards:05d}.tfrecord"

        def write_shard(temporary, shard=shard):
            with tf.io.TFRecordWriter(temporary) as writer:
                for row in range(shard, count, num_shards):
                    example = tf.train.Example(features=tf.train.Features(
                        feature={TFRECORD_NAMES[key]: feature(key, row) for key in keys}))
                    writer.write(example.SerializeToString())

        paths.append(atomic_write(path, write_shard, temporary_suffix=TEMPORARY_SUFFIX))
    return paths




def tfrecord_files(path):
    """The sorted `*.tfrecord` shards at `path` (a file or a folder, local or `gs://`), or a clear error.

    In a folder, hidden files (a writer's temporary files, also those an older bertlib named `.NAME.XXXX.tfrecord`)
    are not shards. Shards named `PREFIX-INDEX-of-COUNT.tfrecord` must be complete sets: a folder that lacks some
    (a `bertlib data` stopped midway, a partial copy) or mixes two writes of one prefix is refused with the
    names, before anything trains on it.
    """
    import tensorflow as tf

    path = str(path)
    if tf.io.gfile.isdir(path):
        folder = path.rstrip("/")
        files = sorted(name for name in tf.io.gfile.glob(folder + "/*.tfrecord")
                       if not name.rsplit("/", 1)[-1].startswith("."))
        unfinished = [name for pattern in (f"/.*{TEMPORARY_SUFFIX}", "/.*.tfrecord")
                      for name in tf.io.gfile.glob(folder + pattern)]
        if not files and unfinished:
            raise FileNotFoundError(f"No finished .tfrecord shards at {path}, only the temporary files of a write "
                                    f"that did not finish ({sorted(unfinished)[:3]}); run `bertlib data` again "
                                    "with --overwrite.")
        check_shard_sets(files, path)
    else:
        files = [path] if tf.io.gfile.exists(path) else []
    if not files:
        raise FileNotFoundError(f"No .tfrecord files at {path}; expected a file or a folder of shards.")
    return files


def check_shard_sets(files, path):
    """A ValueError naming the shards missing from each `PREFIX-*-of-COUNT.tfrecord` set among `files`, and the
    sets of one prefix written with different counts; files named otherwise are not checked."""
    sets = {}
    for name in files:
        match = SHARD_NAME.fullmatch(name.rsplit("/", 1)[-1])
        if match:
            sets.setdefault((match["prefix"], int(match["count"])), set()).add(int(match["index"]))
    problems = []
    for (prefix, count), indices in sorted(sets.items()):
        missing = [f"{prefix}-{index:05d}-of-{count:05d}.tfrecord" for index in range(count) if index not in indices]
        stray = sorted(index for index in indices if index >= count)
        if missing:
            listing = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            problems.append(f"{len(missing)} of the {count} shards {prefix}-*-of-{count:05d}.tfrecord are missing "
                            f"({listing})")
        if stray:
            problems.append(f"{prefix}-{stray[0]:05d}-of-{count:05d}.tfrecord numbers a shard beyond its set of "
                            f"{count}")
    counts = {}
    for prefix, count in sets:
        counts.setdefault(prefix, []).append(count)
    problems += [f"the shards {prefix}-*.tfrecord come from writes of {sorted(found)} shards" for prefix, found
                 in sorted(counts.items()) if len(found) > 1]
    if problems:
        raise ValueError(f"The TFRecords at {path} are not one finished write: {'; '.join(problems)}. A `bertlib "
                         "data` stopped before it finished, or an incomplete copy, leaves such a folder; nothing "
                         "was trained on it. Write the shards again (`bertlib data --overwrite`) or copy the "
                         "missing ones.")


def tfrecord_spec(files):
    """The `tf.io.parse_example` spec of the shards `files` (from `tfrecord_files`), shaped by the first example."""
    import tensorflow as tf

    first_file = files[0]
    records = list(tf.data.TFRecordDataset(first_file).take(1))
    if not records:
        raise ValueError(f"{first_file} holds no records.")
    stored = tf.train.Example.FromString(records[0].numpy()).features.feature
    spec = {}
    for key, name in TFRECORD_NAMES.items():
        if name in stored:
            values = stored[name].float_list.value if key == "mask_weights" else stored[name].int64_list.value
            shape = () if key == "next_sentence_labels" else (len(values),)
            spec[name] = tf.io.FixedLenFeature(shape, tf.float32 if key == "mask_weights" else tf.int64)
    missing = [TFRECORD_NAMES[key] for key in SEQUENCE_KEYS + ("next_sentence_labels",) if TFRECORD_NAMES[key]
               not in spec]
    if missing:
        raise ValueError(f"{first_file} lacks the features {missing} of create_pretraining_data.py TFRecords.")
    return spec


def _parse_records(records, spec):
    """A batch of serialized examples -> our names, int32 (float32 `mask_weights`)."""
    import tensorflow as tf

    names = {name: key for key, name in TFRECORD_NAMES.items()}
    parsed = tf.io.parse_example(records, spec)
    return {names[name]: tf.cast(value, tf.float32 if name == "masked_lm_weights" else tf.int32)
            for name, value in parsed.items()}


def read_tfrecords(path):
    """Read TFRecords written by `write_tfrecords` (or the original code) back into `arrays`.

    `path` is one .tfrecord file or a folder (all its `*.tfrecord` files, sorted), local or on any file system
    TensorFlow reads (`gs://bucket/folder` on a Cloud TPU). Shapes are taken from the first example. Rows come
    shard by shard, so their order differs from the written arrays when num_shards > 1. Everything is read
    into host memory (about 1.5 KB per 128-token instance); `stream_tfrecords` reads corpora of any size.
    """
    import tensorflow as tf

    files = tfrecord_files(path)
    spec = tfrecord_spec(files)
    columns = {}
    for batch in tf.data.TFRecordDataset(files).batch(4096).map(
            lambda records: _parse_records(records, spec)):
        for key, value in batch.items():
            columns.setdefault(key, []).append(value.numpy())
    return {key: np.concatenate(values) for key, values in columns.items()}


def stream_tfrecords(path, batch_size, masker, seed=0, start_batch=0, shuffle_window=10_000, cycle_length=4,
                     rows=None, readers=1):
    """Pretraining batches streamed from TFRecord shards, for corpora larger than host memory.

    It reads like the original run_pretraining.py: every epoch visits the shards in a new order and reads
    `cycle_length` of them interleaved; then, where the original shuffled in a buffer of 100 records, each
    window of `shuffle_window` consecutive records is permuted (stateless, so no hidden random state).
    Batches and their masks are those of `pretraining_dataset` (batch `b` masked with seed `(seed, b)`, fixed
    shapes, endless). Memory holds one window, not the corpus; the price is a local shuffle instead of
    `pretraining_dataset`'s full one.

    The stream is a pure function of `seed`, so `start_batch=n` resumes exactly at batch n. It gets there by
    skipping n batches of raw records before any parsing or masking: about 3 microseconds a record on
    this project's CPU (`bench/pipeline.py`), so a resume deep into a long run costs minutes, not hours.
    `rows=(start, stop)` parses and masks only those rows of every batch (one process's share of each global
    batch).

    `readers=N` deals the sorted shards to N readers (shard i to reader i % N); each reads its own shards as above
    and fills its block of `batch_size / N` rows of every batch. A pipeline with `rows` opens only the shards of the
    readers whose blocks hold its rows, so with one reader per process each host reads 1/N of the corpus, and the
    batches depend on `readers`, not on how many processes build them. With one reader (the default) every batch
    draws from all shards, and every process reads them all.
    """
    import tensorflow as tf

    if seed < 0 or start_batch < 0 or batch_size < 1 or shuffle_window < 1 or cycle_length < 1:
        raise ValueError(f"seed={seed}, start_batch={start_batch}, batch_size={batch_size}, "
                         f"shuffle_window={shuffle_window} and cycle_length={cycle_length} must be "
                         "non-negative (the last three positive).")
    start, stop, batch_rows = _batch_rows(rows, batch_size)
    files = tfrecord_files(path)
    check_readers(readers, len(files), batch_size)
    first, last = start // (batch_size // readers), (stop - 1) // (batch_size // readers)  # the readers of the rows
    spec = tfrecord_spec(files)
    if masker is None and TFRECORD_NAMES["mask_ids"] not in spec:
        raise ValueError(f"The TFRecords at {path} hold no static mask; pass a masker.")
    seq_length = spec[TFRECORD_NAMES["token_ids"]].shape[0]

    def permuted(values, *salt):  # a stateless shuffle: the same for the same seed and salt, in any process
        key = tf.constant([seed, 0], tf.int64)
        for value in salt:
            key = tf.random.experimental.stateless_fold_in(key, value)
        return tf.gather(values, tf.random.experimental.stateless_shuffle(tf.range(tf.shape(values)[0]), key))

    def reader_records(reader):  # endless; one reader: every shard, and the salts of the stream before readers
        shards = tf.constant(files[reader::readers])
        salt = () if readers == 1 else (readers, reader)

        def epoch_records(epoch):  # every record once, shards in a new order, windows of records permuted
            records = tf.data.Dataset.from_tensor_slices(permuted(shards, epoch, *salt)).interleave(
                tf.data.TFRecordDataset, cycle_length=cycle_length)
            windows = records.batch(shuffle_window).enumerate()
            return windows.map(lambda index, window: permuted(window, epoch, index, *salt)).unbatch()

        return tf.data.Dataset.counter().flat_map(epoch_records).batch(batch_size // readers, drop_remainder=True)

    offset = first * batch_size // readers  # the first row of the blocks read
    blocks = [reader_records(reader) for reader in range(first, last + 1)]
    dataset = blocks[0] if len(blocks) == 1 else tf.data.Dataset.zip(tuple(blocks)).map(
        lambda *parts: tf.concat(parts, axis=0))

    def make_batch(batch_number, records):
        features = _parse_records(records[start - offset:stop - offset], spec)
        if masker is not None:
            features = {key: value for key, value in features.items() if key not in MASK_KEYS}
            features.update(masker(tf.ensure_shape(features["token_ids"], (stop - start, seq_length)),
                                   seed=tf.stack([tf.constant(seed, tf.int64), batch_number]), batch_rows=batch_rows))
        return {key: tf.cast(value, tf.float32 if key == "mask_weights" else tf.int32)
                for key, value in features.items()}

    dataset = dataset.enumerate().skip(start_batch)  # raw records only: no parsing, no masking
    dataset = dataset.map(make_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(input_options())


MAX_MODEL_SEQ_LENGTH = 512  # the presets' learned positions (BertConfig.max_sequence_length)


def add_arguments(parser):
    parser.add_argument("--corpus", nargs="+", default=["python-docs"],
                        help="'python-docs' (the embedded corpus) or text files: one sentence per line, "
                             "blank lines between documents")
    parser.add_argument("--vocab", default=None, help="vocab.txt (default: the real uncased BERT vocabulary)")
    parser.add_argument("--out", required=True, help="output folder for the TFRecord shards")
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--dupe-factor", type=int, default=1)
    parser.add_argument("--short-seq-prob", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-shards", type=int, default=1)
    parser.add_argument("--static-masking", action="store_true",
                        help="mask once and store masked_lm_* features (default: leave masking to training)")
    parser.add_argument("--max-predictions", type=int, default=20, help="prediction slots per sequence")
    parser.add_argument("--overwrite", action="store_true", help="replace the shards already in --out")


def check_arguments(args):
    """Every argument of `bertlib data` checked before the corpus is read: a ValueError naming the problem."""
    from bertlib.text import corpora

    problems = []
    if not 5 <= args.max_seq_length <= MAX_MODEL_SEQ_LENGTH:
        problems.append(f"--max-seq-length {args.max_seq_length}: an NSP pair [CLS] A [SEP] B [SEP] needs at "
                        f"least 5 tokens, and the model has {MAX_MODEL_SEQ_LENGTH} positions")
    for name in ("dupe_factor", "num_shards", "max_predictions"):
        if getattr(args, name) < 1:
            problems.append(f"--{name.replace('_', '-')} {getattr(args, name)} must be at least 1")
    if args.static_masking and args.max_predictions > args.max_seq_length - 3:  # the slots are stored then
        problems.append(f"--max-predictions {args.max_predictions} is more than the {args.max_seq_length - 3} "
                        f"tokens a sequence of --max-seq-length {args.max_seq_length} holds besides [CLS] and "
                        "its two [SEP]")
    if not 0.0 <= args.short_seq_prob <= 1.0:
        problems.append(f"--short-seq-prob {args.short_seq_prob} must be in [0, 1]")
    if args.seed < 0:
        problems.append(f"--seed {args.seed} must be >= 0")
    if args.vocab is not None and not Path(args.vocab).is_file():
        problems.append(f"--vocab {args.vocab} is not a file (expected a vocab.txt, one piece per line)")
    if args.corpus != ["python-docs"]:
        missing = [path for path in args.corpus if not Path(path).exists()]
        if missing:
            problems.append(f"--corpus files not found: {missing} (expected 'python-docs' or text files)")
        for path in args.corpus:  # a FIFO or a device would be read forever, or block: refused here
            problem = Path(path).exists() and corpora.not_a_text_file(path, folders=True)
            if problem:
                problems.append(f"--corpus {problem}")
    if problems:
        raise ValueError("; ".join(problems) + ".")
    check_output_dir(args.out, "--out", overwrite=args.overwrite, earlier="*.tfrecord")  # --overwrite: shards replaced


def run(args):
    try:
        return _run(args)
    except (ValueError, OSError) as error:  # a bad corpus, vocabulary or folder: say which, no traceback
        print(f"bertlib data: error: {error}", file=sys.stderr)
        return 2


def _run(args):
    from bertlib.text import corpora
    from bertlib.text.masking import MaskedLMMasker
    from bertlib.text.tokenizer import WordPieceTokenizer

    check_extras("bertlib data", data=["tqdm"], tensorflow=["tensorflow"])  # progress bars, TFRecords
    check_arguments(args)
    documents = corpora.python_docs() if args.corpus == ["python-docs"] else corpora.text_files(args.corpus)
    if not documents:
        raise ValueError(f"--corpus {args.corpus} holds no text (empty files or only blank lines).")
    tokenizer = (WordPieceTokenizer.from_vocab_file(args.vocab) if args.vocab else default_tokenizer())
    arrays = build_pretraining_arrays(documents, tokenizer, max_seq_length=args.max_seq_length,
                                      dupe_factor=args.dupe_factor, short_seq_prob=args.short_seq_prob,
                                      seed=args.seed, progress=True)
    if args.static_masking:
        masker = MaskedLMMasker.from_tokenizer(tokenizer, max_predictions=args.max_predictions, seed=args.seed)
        masked = masker(arrays["token_ids"])
        arrays.update(masked)
    if args.num_shards > len(arrays["token_ids"]):
        raise ValueError(f"--num-shards {args.num_shards} exceeds the {len(arrays['token_ids'])} instances built.")
    for old in [*Path(args.out).glob("*.tfrecord"), *Path(args.out).glob(".*" + TEMPORARY_SUFFIX)]:
        old.unlink()  # --overwrite: never mix two runs' shards; a killed write's temporary files go too
    paths = write_tfrecords(arrays, args.out, num_shards=args.num_shards)
    summary = {"instances": len(arrays["token_ids"]), "documents": len(documents),
               "tokens": int(arrays["padding_mask"].sum()),
               "random_next_fraction": round(float(arrays["next_sentence_labels"].mean()), 4),
               "max_seq_length": args.max_seq_length, "static_masking": args.static_masking,
               "shards": [str(path) for path in paths]}
    print(json.dumps(summary), file=sys.stdout)
    return 0
