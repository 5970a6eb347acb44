"""How fast the pretraining input pipeline is, against how fast a tiny BERT consumes it.

Measures, with the tiny preset's shapes (batch 32, seq 128, 20 predictions):
1. the vectorized `MaskedLMMasker` against the per-token loop `mask_tokens_loop` (batches per second);
2. `bertlib.text.data.pretraining_dataset` with dynamic masking (batches per second, after warm-up);
3. `BertPretrainer(tiny).fit` on batches already in memory (steps per second, after warm-up);
4. `bertlib.text.data.stream_tfrecords` over the same instances written as 8 shards (batches per second), and
   what its resume costs: the time to skip already-trained records (microseconds per record).
The headline is (2) / (3): the pipeline should outrun training by 10x or more, so the accelerator never waits.

Run: KERAS_BACKEND=tensorflow .venv/bin/python bench/pipeline.py [--batches 300] [--train-steps 20]
"""

import argparse
import os
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
from _record import headline  # bench/_record.py: the run's record

BATCH_SIZE, SEQ_LENGTH, MAX_PREDICTIONS = 32, 128, 20


def rate(function, count):
    """Calls per second of `function()`, over `count` calls."""
    start = time.perf_counter()
    for _ in range(count):
        function()
    return count / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=300, help="pipeline batches to time")
    parser.add_argument("--train-steps", type=int, default=20, help="training steps to time")
    args = parser.parse_args()

    import tensorflow as tf

    from bertlib.model import BertBackbone, BertPretrainer, pretraining_batch
    from bertlib.model.config import BertConfig
    from bertlib.text import corpora, data
    from bertlib.text.masking import MaskedLMMasker, mask_tokens_loop

    tokenizer = data.default_tokenizer()
    arrays = data.build_pretraining_arrays(corpora.python_docs(), tokenizer, max_seq_length=SEQ_LENGTH,
                                           dupe_factor=2, seed=0)
    masker = MaskedLMMasker.from_tokenizer(tokenizer, max_predictions=MAX_PREDICTIONS, seed=0)
    print(f"instances: {len(arrays['token_ids'])}, tokens per sequence: {arrays['padding_mask'].sum(1).mean():.1f}")

    token_ids = arrays["token_ids"][:BATCH_SIZE]
    vectorized = rate(lambda: masker(token_ids), 200)
    rng = np.random.default_rng(0)
    looped = rate(lambda: mask_tokens_loop(token_ids, masker, rng), 20)
    print(f"masker_vectorized: {vectorized:.0f} batches/s")
    print(f"masker_loop: {looped:.0f} batches/s")
    print(f"vectorized_over_loop: {vectorized / looped:.1f}")

    dataset = data.pretraining_dataset(arrays, BATCH_SIZE, masker, seed=0)
    iterator = iter(dataset)
    for _ in range(20):  # warm-up: tracing, first prefetches
        next(iterator)
    pipeline = rate(lambda: next(iterator), args.batches)
    print(f"pipeline: {pipeline:.0f} batches/s (batch {BATCH_SIZE}, seq {SEQ_LENGTH}, dynamic masking)")
    del iterator  # no prefetching while training is timed

    pretrainer = BertPretrainer(BertBackbone(BertConfig.preset("tiny", max_sequence_length=SEQ_LENGTH)))
    pretrainer.compile(optimizer="adam")
    in_memory = dataset.take(1).cache().repeat().map(pretraining_batch)  # no input cost while timing
    pretrainer.fit(in_memory, steps_per_epoch=3, epochs=1, verbose=0)  # warm-up: compile the train step
    start = time.perf_counter()
    pretrainer.fit(in_memory, steps_per_epoch=args.train_steps, epochs=1, verbose=0)
    training = args.train_steps / (time.perf_counter() - start)
    print(f"training: {training:.1f} steps/s (tiny preset, {tf.config.list_logical_devices()[-1].device_type})")
    with tempfile.TemporaryDirectory() as shards:
        data.write_tfrecords(arrays, shards, num_shards=8)
        iterator = iter(data.stream_tfrecords(shards, BATCH_SIZE, masker, seed=0))
        for _ in range(20):
            next(iterator)
        streamed = rate(lambda: next(iterator), args.batches)
        skipped = 50 * len(arrays["token_ids"]) // BATCH_SIZE  # 50 epochs of batches
        start = time.perf_counter()
        resumed = iter(data.stream_tfrecords(shards, BATCH_SIZE, masker, seed=0, start_batch=skipped))
        next(resumed)
        skip_us = (time.perf_counter() - start) / (skipped * BATCH_SIZE) * 1e6
    print(f"streamed from 8 TFRecord shards: {streamed:.0f} batches/s; resuming skips {skipped * BATCH_SIZE:,} "
          f"records at {skip_us:.2f} us each")
    headline("pipeline_over_training", pipeline / training, unit="x", digits=1,
             details={"pipeline_batches_per_s": round(pipeline), "training_steps_per_s": round(training, 2)})


if __name__ == "__main__":
    main()
