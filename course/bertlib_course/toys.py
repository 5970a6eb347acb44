"""The toy languages and tiny models the chapters build experiments on, written once (chapters 03 and 08 share the
ring language; add a chapter's toy here when a second chapter needs it).

The ring language (chapter 03, chapter 08's task 1): 40 words `w00 ... w39` on a ring; a sentence is a walk on it,
each word followed by the word 1, 2 or 3 places on, so a masked word is pinned down by its neighbours on both sides
and the language is learned in a few hundred steps by a two-layer encoder.

Example:
>>> tokenizer = ring_tokenizer()
>>> train = ring_sentences(20_000, seed=0)          # token_ids (20000, 16): [CLS] 14 words [SEP]
>>> tokenizer.decode(train["token_ids"][0])       # the special tokens are left out
'w16 w19 w21 w23 w24 w25 w26 w27 w28 w29 w32 w34 w37 w39'
"""

import contextlib

import numpy as np

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def ring_tokenizer(ring=40):
    """A `WordPieceTokenizer` over the five special tokens and the ring's words `w00 ... w{ring-1}`."""
    from bertlib.text.tokenizer import WordPieceTokenizer

    return WordPieceTokenizer(SPECIAL_TOKENS + [f"w{i:02d}" for i in range(ring)])


def ring_sentences(count, seed, ring=40, length=14):
    """`count` walks of `length` words on the ring, as the feature dict of a pretrainer (one segment, no padding).

    Returns:
        dict of int32 arrays: `token_ids` (count, length + 2), [CLS] first and [SEP] last; `segment_ids` and
        `next_sentence_labels` zeros; `padding_mask` ones.
    """
    first_word = len(SPECIAL_TOKENS)  # the id of w00 in `ring_tokenizer`
    rng = np.random.default_rng(seed)
    steps = rng.integers(1, 4, size=(count, length - 1))
    words = (rng.integers(ring, size=(count, 1)) + np.c_[np.zeros(count, int), np.cumsum(steps, axis=1)]) % ring
    cls_id, sep_id = SPECIAL_TOKENS.index("[CLS]"), SPECIAL_TOKENS.index("[SEP]")
    token_ids = np.c_[np.full(count, cls_id), first_word + words, np.full(count, sep_id)].astype(np.int32)
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": np.ones_like(token_ids),
            "next_sentence_labels": np.zeros(count, np.int32)}


def initial_weights(config, seed, next_sentence=False):
    """The weights a fresh `BertPretrainer(BertBackbone(config))` gets from `seed`, without touching the caller's
    random state (`bertlib.train.pretraining.seeded`)."""
    from bertlib.model.backbone import BertBackbone, BertPretrainer
    from bertlib.train import pretraining

    with pretraining.seeded(seed):
        return BertPretrainer(BertBackbone(config), next_sentence=next_sentence).get_weights()


def restart(model, weights):
    """A compiled model back to `weights` with its optimizer's state zeroed (step counter, moments): a fresh start
    without compiling again, which costs more than training at this size."""
    model.set_weights(weights)
    for variable in model.optimizer.variables:
        variable.assign(np.zeros(variable.shape, variable.dtype))


def fast_compile(steps_per_call, xla=True):
    """The `compile()` options that make a tiny model's training step cheapest on this backend, for models
    without dropout (chapters 01, 03 and 08). Measured by `bench/tiny_step.py` (2 layers, hidden 64, batch 64 x 16) on
    a quiet 2-core CPU: on TensorFlow, XLA with `steps_per_call` steps a call into the compiled step runs a step in
    10 ms, against 15 ms with the steps a call alone and 24 ms with Keras' defaults; JAX compiles every step already
    (12-13 ms; more steps a call do not pay); PyTorch's Keras runs one step a call (38 ms). With dropout, XLA on
    TensorFlow is slower (35 ms: drawing its random masks), so a model with dropout keeps the defaults. The same
    steps on the same batches: only the rounding of float32 sums may differ under XLA.

    Args:
        steps_per_call: int, steps per call on TensorFlow; it must divide the steps of each `fit` epoch.
        xla: bool, also compile the step with XLA on TensorFlow. XLA's compile takes seconds, so it pays for
            long runs of one compiled model: chapter 03's grid (batch 64, one model, 25,200 steps: 589 s down to
            about 380 s). Chapter 08's runs (batch 32, three models) were slower with it (116 s against 102 s for
            its twelve branch runs), and chapter 01's telephone classifier (640 steps a model) gained nothing
            (about 12.5 s a model against 10 s with the steps a call alone), so both pass False.

    Returns:
        dict of keyword arguments for `model.compile`.
    """
    import keras

    if keras.backend.backend() != "tensorflow":
        return {}
    return {"jit_compile": True, "steps_per_execution": steps_per_call} if xla else \
        {"steps_per_execution": steps_per_call}


@contextlib.contextmanager
def one_cpu_thread():
    """Run the block's PyTorch operations on one CPU thread, then give back the threads it had.

    PyTorch splits each operation across its CPU threads. A tiny model's operations are too small for that to pay
    (a 1,024 x 64 by 64 x 64 matmul takes microseconds, about what waking a second thread costs), so its step runs
    faster on one thread: `bench/tiny_step.py --torch-threads 1` (2 layers, hidden 64, batch 64 x 16, no dropout)
    on a quiet 2-core CPU, 20.1-20.2 ms a step against 27.6-27.9 ms on both threads, and 20 ms of CPU time
    against 29 (bench/RESULTS.md). Chapter 08's 1,000-step toy run took 17.7 s against 25.5 s, with the same
    readings. A BERT-sized step wants both threads (MiniLM's size, batch 16 x 128: 2.4 s a step on one against
    1.4-1.5 s on two), so the chapters scope this to their tiny models' training. TensorFlow and JAX size their
    thread pools when they start (`bertlib.train.host.configure_cpu`) and cannot change them later, so there the
    block runs as it is; their tiny steps are compiled instead (`fast_compile`).
    """
    import keras

    if keras.backend.backend() != "torch":
        yield
        return
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def branch_probe(pretrainer, test_inputs, targets, wrong):
    """What a masked-LM head does with one examined word shown three ways (chapter 08, task 1).

    Args:
        pretrainer: a `BertPretrainer` whose head reads one slot (`mask_positions` of shape (n, 1)).
        test_inputs: dict with the keys "[MASK] shown", "word kept" and "random word", each the feature dict of
            the same n sentences with the examined word replaced by [MASK], left as it is, or replaced by `wrong`.
        targets: (n,) the examined words' ids; wrong: (n,) the planted random words' ids.

    Returns:
        dict of floats: "cloze accuracy" (the word found behind [MASK]), "trusts a correct word" (a visible correct
        word predicted as itself), "fooled by a random word" (a planted word predicted as itself), "corrects a random
        word" (the true word predicted behind a planted one), "cloze perplexity" (exp of the mean negative log
        probability of the true word behind [MASK]).
    """
    logits = {kind: np.asarray(pretrainer.predict(inputs, batch_size=1000, verbose=0)["mlm_logits"][:, 0])
              for kind, inputs in test_inputs.items()}
    predicted = {kind: values.argmax(-1) for kind, values in logits.items()}
    cloze = logits["[MASK] shown"] - logits["[MASK] shown"].max(-1, keepdims=True)
    log_probability = cloze[np.arange(len(targets)), targets] - np.log(np.exp(cloze).sum(-1))
    return {"cloze accuracy": float(np.mean(predicted["[MASK] shown"] == targets)),
            "trusts a correct word": float(np.mean(predicted["word kept"] == targets)),
            "fooled by a random word": float(np.mean(predicted["random word"] == wrong)),
            "corrects a random word": float(np.mean(predicted["random word"] == targets)),
            "cloze perplexity": float(np.exp(-log_probability.mean()))}
