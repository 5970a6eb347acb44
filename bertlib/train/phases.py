"""The data of a pretraining run: the corpus, checked and read, and one source per sequence-length phase.

A run trains at `seq_length` for most steps, then at `long_seq_length` for the last `long_fraction` of them
(A.2: 128 for 90%, 512 for 10%); `phase_plan` cuts the steps, `phase_arrays` builds (or reads from TFRecords) the
examples of each phase, `phase_batches` batches them.
"""

import functools
from pathlib import Path


def check_corpus(corpus):
    """`corpus` as a list of names; a FileNotFoundError naming the text files that do not exist, a ValueError
    naming those that are not regular files."""
    names = [corpus] if isinstance(corpus, str) else list(corpus)
    if names in (["python-docs"], ["wikitext103"]) or (len(names) == 1 and names[0].startswith("tfrecords:")):
        return names
    from bertlib.text import corpora

    expected = ("Expected 'python-docs', 'wikitext103', 'tfrecords:DIR[,LONG_DIR]' or text files (one sentence "
                "per line, blank lines between documents).")
    missing = [path for path in names if not Path(path).exists()]
    if missing:
        raise FileNotFoundError(f"Corpus files not found: {missing}. {expected}")
    unreadable = [problem for problem in map(corpora.not_a_text_file, names) if problem]
    if unreadable:  # a folder, or a FIFO or a device, which would be read forever or block
        raise ValueError(f"Corpus {'; '.join(unreadable)}. {expected}")
    return names


def load_documents(corpus):
    """`corpus` ("python-docs", "wikitext103", or text file paths) -> list of documents of sentences."""
    from bertlib.text import corpora

    names = check_corpus(corpus)
    if names == ["python-docs"]:
        return corpora.python_docs()
    if names == ["wikitext103"]:
        return corpora.wikitext103()
    return corpora.text_files(names)


def phase_arrays(corpus, tokenizer, seq_lengths, seed, stream=False, readers=1, batch_size=None):
    """One source per sequence length: `arrays` built from documents or read from `tfrecords:DIR[,LONG_DIR]`,
    or with `stream` a `{"tfrecords": DIR, "static_mask": bool}` that `phase_batches` streams with `readers`
    readers (checked here against the shards and `batch_size`, before any training)."""
    from bertlib.text import data

    names = check_corpus(corpus)
    if names[0].startswith("tfrecords:"):
        folders = names[0][len("tfrecords:"):].split(",")
        if len(folders) < len(seq_lengths):
            raise ValueError(f"{names[0]!r} names {len(folders)} folder(s) but the run has "
                             f"{len(seq_lengths)} sequence-length phases {seq_lengths}; use "
                             "tfrecords:SHORT_DIR,LONG_DIR (written by `bertlib data --max-seq-length ...`).")
        result = []
        for folder, seq_length in zip(folders, seq_lengths):
            if stream:  # the sequence length is checked on the first example; the rest is read while training
                files = data.tfrecord_files(folder)
                data.check_readers(readers or 1, len(files), batch_size or (readers or 1))
                spec = data.tfrecord_spec(files)
                stored_length = spec[data.TFRECORD_NAMES["token_ids"]].shape[0]
                arrays = {"tfrecords": folder, "static_mask": data.TFRECORD_NAMES["mask_ids"] in spec}
            else:
                arrays = data.read_tfrecords(folder)
                stored_length = arrays["token_ids"].shape[1]
                if arrays["token_ids"].max() >= tokenizer.vocabulary_size:
                    raise ValueError(f"TFRecords in {folder} hold token id {arrays['token_ids'].max()}, "
                                     f"beyond the vocabulary ({tokenizer.vocabulary_size} ids); pass the "
                                     "--vocab they were built with.")
            if stored_length != seq_length:
                raise ValueError(f"TFRecords in {folder} have sequence length {stored_length}, "
                                 f"expected {seq_length}.")
            result.append(arrays)
        return result
    if stream:
        raise ValueError("stream=True (--stream) reads tfrecords:DIR corpora; other corpora are built in memory.")
    documents = load_documents(corpus)
    return [data.build_pretraining_arrays(documents, tokenizer, max_seq_length=seq_length, seed=seed)
            for seq_length in seq_lengths]


def phase_batches(source, batch_size, masker, seed, start_batch, next_sentence, rows=None, readers=1):
    """What `fit` trains one phase on, from a `phase_arrays` source: a tf.data pipeline of the examples in memory
    or streamed from TFRecords, or, where TensorFlow is not installed, `data.pretraining_batches` (numpy, the same
    batches in another shuffled order), each mapped by `pretraining_batch`. `rows=(start, stop)`: only those rows
    of every batch, built and masked as in the whole batch (a process's share, `distribute.process_rows`);
    `readers`: how many readers a stream deals its shards to (`data.stream_tfrecords`; 0 counts as 1)."""
    from bertlib.model.inputs import pretraining_batch
    from bertlib.text import data

    for_fit = functools.partial(pretraining_batch, next_sentence=next_sentence)
    if "tfrecords" in source:
        dataset = data.stream_tfrecords(source["tfrecords"], batch_size, masker, seed=seed, start_batch=start_batch,
                                         rows=rows, readers=readers or 1)
    elif not data.has_tensorflow():
        batches = data.pretraining_batches(source, batch_size, masker, seed=seed, start_batch=start_batch,
                                           rows=rows)
        return (for_fit(batch) for batch in batches)  # a generator: what `fit` takes
    else:
        dataset = data.pretraining_dataset(source, batch_size, masker, seed=seed, start_batch=start_batch,
                                           rows=rows)
    return dataset.map(for_fit)


def phase_plan(steps, long_fraction, seq_length, long_seq_length):
    """[(seq_length, first_step, end_step), ...]: the short phase, then the long one (A.2's 90% / 10%)."""
    if not 0.0 <= long_fraction < 1.0:
        raise ValueError(f"long_fraction must be in [0, 1), got {long_fraction!r}.")
    long_steps = round(steps * long_fraction)
    plan = [(seq_length, 0, steps - long_steps)]
    if long_steps:
        plan.append((long_seq_length, steps - long_steps, steps))
    return plan


def describe_corpus(corpus):
    """`corpus` as recorded in a checkpoint: names kept, file paths made absolute."""
    names = [corpus] if isinstance(corpus, str) else list(corpus)
    return [name if name in ("python-docs", "wikitext103") or name.startswith("tfrecords:")
            else str(Path(name).resolve()) for name in names]
