"""Masked-LM masking: pick 15% of the tokens, then 80% [MASK], 10% kept, 10% random token (§3.1, A.1).

One vectorized numpy algorithm serves both uses:

- static masking: call the masker on a numpy batch once and store the result (the original
  `create_pretraining_data.py` does this, with `dupe_factor` copies to vary the masks);
- dynamic masking: call it on a `tf.Tensor` inside `tf.data` (`bertlib.text.data.pretraining_dataset`), where it
  runs through `tf.numpy_function`, so every epoch sees a fresh mask. tf.data always runs on TensorFlow,
  whatever the Keras backend, and wrapping the numpy code keeps one algorithm instead of two that could drift.
  The price (our judgement, measured by bench/pipeline.py): the masking holds Python's GIL, so it uses about
  one CPU core, and the pipeline cannot be shipped to a tf.data service worker.

`mask_tokens_loop` is a per-token Python version of the same rules, kept as a readable reference for the
course (and for `bench/pipeline.py`); it is not used by the library.
"""

import sys

import numpy as np


class MaskedLMMasker:
    """Chooses the masked-LM prediction slots of a padded batch of token ids (§3.1, appendix A.1).

    The budget is the released `create_pretraining_data.py`'s: in each row,
    `num_to_predict = min(max_predictions, max(1, round(n_tokens * selection_rate)))`, where `n_tokens` counts
    every token of the row but padding, [CLS] and the [SEP]s included ("15% of all WordPiece tokens in each
    sequence", §3.1). A full 512-token pair gets round(76.8) = 77 slots, a full 128-token pair round(19.2) = 19
    (capped by `max_predictions`). The slots go to eligible tokens only: not in `special_token_ids` ([PAD]=0,
    [CLS], [SEP], ...), so specials and padding are never predicted. `budget(token_ids)` gives the counts.

    Where this still differs from the released code (each a choice, none changes the budget of a real pair):
    a row with no eligible token gets no slot, and `selection_rate=0.0` selects nothing (the released
    `max(1, ...)` picks one token even then); [UNK] and every other id in `special_token_ids` is never chosen
    (the released code excludes only [CLS] and [SEP]); a random replacement is never a special token (the
    released code draws from the whole vocabulary, [PAD], [MASK] and [unused] pieces included); with
    `whole_word`, a "##" piece right after a special token starts a word (the released code joins a "##"
    piece after [SEP] to the last word before it).

    Each selected token takes one of three branches, listed in Table 8's MASK/SAME/RND order (`rates`): it is
    replaced by `mask_token_id` with probability `mask_token_rate`, kept as it is with the rest of the
    probability (the keep branch, `keep_rate`), or replaced by a uniformly random non-special token with
    probability `random_token_rate` (which may, rarely, draw the original token, as the original code does).

    With `whole_word=True` all WordPiece pieces of a word (a token followed by its `##` continuations) are
    selected together, as in the released "Whole Word Masking" models. The masker must then know the
    continuation ids: pass `continuation_token_ids`, or `vocabulary` (the list of token strings; every
    token starting with "##" is a continuation). Words are taken in random order, and a word that would
    overflow the budget is skipped while later, shorter ones may still fit, as in the original code; a row
    may still get up to (longest word - 1) fewer predictions than `num_to_predict`. The 80/10/10 choice
    stays per token, as in the original code.

    Calling the masker on a numpy array returns numpy arrays; on a `tf.Tensor` (e.g. inside `tf.data.map`)
    it returns tensors. Both return a dict:
    `token_ids` (batch, seq) int32 after masking, `mask_positions` (batch, max_predictions) int32 in
    increasing order, `mask_ids` the original tokens there, `mask_weights` float32, 1.0 for a real
    prediction and 0.0 for a padding slot (whose position and id are 0).

    Args:
        vocabulary_size: int, the number of token ids.
        mask_token_id: int, the id of "[MASK]" (`tokenizer.mask_id` raises a clear error for a vocabulary
            that has none).
        special_token_ids: iterable of ints never selected and never drawn as random replacements; must
            include the padding id. `mask_token_id` is added to it.
        selection_rate: float, defaults to 0.15, the share of a row's tokens (padding excluded) to predict.
        mask_token_rate: float, defaults to 0.8, the share of selected tokens replaced by [MASK].
        random_token_rate: float, defaults to 0.1, the share replaced by a random token.
        max_predictions: int, defaults to 20 (the paper's recipe for 128-token sequences).
        whole_word: bool, defaults to False.
        continuation_token_ids: optional iterable of the ids of "##" pieces (for `whole_word`).
        vocabulary: optional list of token strings (for `whole_word`), an alternative to the above.
        seed: optional int for the masker's own random generator (numpy calls without a `seed`).
        padding_token_id: int, defaults to 0 ([PAD] of BERT's vocabularies): the id not counted in the budget.
            It is added to `special_token_ids`.

    Example:
    >>> masker = MaskedLMMasker.from_tokenizer(tokenizer, max_predictions=20, seed=0)
    >>> masked = masker(batch["token_ids"])        # numpy in, numpy out
    >>> masked["mask_positions"].shape
    (32, 20)
    """

    def __init__(self, vocabulary_size, mask_token_id, special_token_ids, selection_rate=0.15,
                 mask_token_rate=0.8, random_token_rate=0.1, max_predictions=20, whole_word=False,
                 continuation_token_ids=None, vocabulary=None, seed=None, padding_token_id=0):
        if mask_token_id is None or not 0 <= int(mask_token_id) < vocabulary_size:
            raise ValueError(f"mask_token_id={mask_token_id!r} is not a token id in [0, {vocabulary_size}); "
                             "the vocabulary needs a [MASK] token for masked-LM pretraining.")
        for name, rate in (("selection_rate", selection_rate), ("mask_token_rate", mask_token_rate),
                           ("random_token_rate", random_token_rate)):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name}={rate} must be in [0, 1].")
        if mask_token_rate + random_token_rate > 1.0:
            raise ValueError(f"mask_token_rate + random_token_rate = {mask_token_rate + random_token_rate} "
                             "must be at most 1 (the rest are left unchanged).")
        if padding_token_id is None or not 0 <= int(padding_token_id) < vocabulary_size:
            raise ValueError(f"padding_token_id={padding_token_id!r} is not a token id in [0, {vocabulary_size}).")
        if max_predictions < 1:
            raise ValueError(f"max_predictions={max_predictions} must be at least 1.")
        self.vocabulary_size = int(vocabulary_size)
        self.mask_token_id = int(mask_token_id)
        self.padding_token_id = int(padding_token_id)
        self.special_token_ids = sorted({int(i) for i in special_token_ids}
                                        | {self.mask_token_id, self.padding_token_id})
        self.selection_rate = selection_rate
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.max_predictions = int(max_predictions)
        self.whole_word = whole_word
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self._is_special = np.zeros(self.vocabulary_size, dtype=bool)  # a lookup table is faster than np.isin
        self._is_special[self.special_token_ids] = True
        self._replacement_ids = np.flatnonzero(~self._is_special)
        if len(self._replacement_ids) == 0:
            raise ValueError("Every token id is special: there is nothing to predict or draw at random.")
        if vocabulary is not None:
            continuation_token_ids = [i for i, token in enumerate(vocabulary) if token.startswith("##")]
        if whole_word and continuation_token_ids is None:
            raise ValueError("whole_word=True needs continuation_token_ids or vocabulary, to know which "
                             "tokens are '##' pieces of the previous word.")
        self.continuation_token_ids = None
        if continuation_token_ids is not None:
            self.continuation_token_ids = np.asarray(sorted(continuation_token_ids), dtype=np.int64)
            self._is_continuation = np.zeros(self.vocabulary_size, dtype=bool)
            self._is_continuation[self.continuation_token_ids] = True

    @classmethod
    def from_tokenizer(cls, tokenizer, **kwargs):
        """A masker for a `bertlib.text.tokenizer.WordPieceTokenizer` (raises its clear error if there is no [MASK])."""
        return cls(tokenizer.vocabulary_size, tokenizer.mask_id, tokenizer.special_token_ids,
                   vocabulary=tokenizer.vocabulary, padding_token_id=tokenizer.pad_id, **kwargs)

    @property
    def keep_rate(self):
        """The share of selected tokens kept as they are: what [MASK] and random replacement leave."""
        return 1.0 - self.mask_token_rate - self.random_token_rate

    @property
    def rates(self):
        """`(mask_token_rate, keep_rate, random_token_rate)`, Table 8's MASK/SAME/RND order: (0.8, 0.1, 0.1)."""
        return self.mask_token_rate, self.keep_rate, self.random_token_rate

    def budget(self, token_ids):
        """(batch,) int64: the prediction slots each row of a (batch, seq) array gets (see the class docstring).

        With `whole_word`, a row may fill fewer: a word that would overflow what is left is skipped.
        """
        token_ids = np.asarray(token_ids)
        num_tokens = (token_ids != self.padding_token_id).sum(axis=1)  # [CLS] and [SEP] count, padding not
        has_eligible = (~self._is_special[token_ids]).any(axis=1)
        # np.rint rounds half to even, as Python 3's round in the released code, on the same float product.
        num_to_predict = np.minimum(self.max_predictions, np.maximum(1, np.rint(num_tokens * self.selection_rate)))
        return np.where(has_eligible & (self.selection_rate > 0), num_to_predict, 0).astype(np.int64)

    def __call__(self, token_ids, seed=None, batch_rows=None):
        """Mask a (batch, seq) batch. `seed`: int or pair of ints (or an int tensor inside tf.data).

        Without `seed`, numpy calls draw from the masker's own generator (a new mask each call).
        `batch_rows=(start, stop, batch_size)`: `token_ids` are rows start:stop of a batch of `batch_size` rows
        (one process's share, in a run over several), masked as they are masked in that whole batch.
        """
        if _is_tf_tensor(token_ids):
            return self._mask_tensor(token_ids, seed, batch_rows)
        rng = self._rng if seed is None else np.random.default_rng(np.atleast_1d(seed).astype(np.uint64))
        return self.mask_numpy(np.asarray(token_ids), _rows_of_batch(rng, batch_rows, np.shape(token_ids)))

    def mask_numpy(self, token_ids, rng):
        """The vectorized algorithm: (batch, seq) int array and a numpy Generator -> dict of numpy arrays."""
        token_ids = np.asarray(token_ids)
        if token_ids.ndim != 2:
            raise ValueError(f"token_ids must be a (batch, seq) array; got shape {token_ids.shape}.")
        if token_ids.size and not 0 <= token_ids.min() <= token_ids.max() < self.vocabulary_size:
            raise ValueError(f"token_ids must be in [0, {self.vocabulary_size}); got values from "
                             f"{token_ids.min()} to {token_ids.max()}. Does the masker match the vocabulary?")
        seq_length = token_ids.shape[1]
        positions = np.broadcast_to(np.arange(seq_length), token_ids.shape)
        eligible = ~self._is_special[token_ids]  # (batch, seq)

        # A word is an eligible token plus the "##" pieces right after it; without whole_word every token is
        # its own word. Each word gets one random key; sorting by key shuffles words, keeping pieces together.
        word_start = eligible
        if self.whole_word:
            previous_eligible = np.pad(eligible[:, :-1], ((0, 0), (1, 0)))
            continuation = self._is_continuation[token_ids]
            word_start = eligible & ~(continuation & previous_eligible)
        start_position = np.maximum.accumulate(np.where(word_start, positions, 0), axis=1)
        word_id = np.where(eligible, start_position, seq_length + positions)  # unique per word, per row
        word_key = np.take_along_axis(rng.random(token_ids.shape), start_position, axis=1)
        word_key = np.where(eligible, word_key, 2.0)  # ineligible tokens sort last
        order = np.argsort(word_key, axis=1)  # (batch, seq); pieces of a word share a key, so stay together

        num_to_predict = self.budget(token_ids)  # (batch,)

        # In shuffled order, a word is taken if the tokens up to its end fit in the budget.
        sorted_eligible = np.take_along_axis(eligible, order, axis=1)
        sorted_word_id = np.take_along_axis(word_id, order, axis=1)
        count_so_far = np.cumsum(sorted_eligible, axis=1)
        word_ends = np.pad(sorted_word_id[:, 1:] != sorted_word_id[:, :-1], ((0, 0), (0, 1)),
                           constant_values=True)
        if self.whole_word:
            sorted_selected = sorted_eligible & self._greedy_words(word_ends, count_so_far, num_to_predict)
        else:  # one token per word: taking words while they fit is a prefix of the shuffled order
            count_at_word_end = np.minimum.accumulate(
                np.where(word_ends, count_so_far, seq_length + 1)[:, ::-1], axis=1)[:, ::-1]
            sorted_selected = sorted_eligible & (count_at_word_end <= num_to_predict[:, None])
        selected = np.zeros_like(eligible)
        np.put_along_axis(selected, order, sorted_selected, axis=1)  # (batch, seq)

        # 80% [MASK], 10% kept, 10% random non-special token, decided per token by one draw: below
        # mask_token_rate [MASK], the next random_token_rate a random token, the rest kept.
        branch = rng.random(token_ids.shape)
        random_tokens = self._replacement_ids[rng.integers(len(self._replacement_ids), size=token_ids.shape)]
        replaced = np.where(branch < self.mask_token_rate, self.mask_token_id,
                            np.where(branch < self.mask_token_rate + self.random_token_rate,
                                     random_tokens, token_ids))
        masked_ids = np.where(selected, replaced, token_ids)

        # Selected positions first, in increasing order, then padding slots.
        width = max(self.max_predictions, seq_length)
        first_selected = np.argsort(~selected, axis=1, kind="stable")
        first_selected = np.pad(first_selected, ((0, 0), (0, width - seq_length)))[:, :self.max_predictions]
        mask_weights = np.arange(self.max_predictions) < selected.sum(axis=1, keepdims=True)
        mask_positions = np.where(mask_weights, first_selected, 0)
        mask_ids = np.where(mask_weights, np.take_along_axis(token_ids, mask_positions, axis=1), 0)
        return {"token_ids": masked_ids.astype(np.int32), "mask_positions": mask_positions.astype(np.int32),
                "mask_ids": mask_ids.astype(np.int32), "mask_weights": mask_weights.astype(np.float32)}

    @staticmethod
    def _greedy_words(word_ends, count_so_far, num_to_predict):
        """(batch, seq) bool in shuffled order: the tokens of the words taken by the original code's rule.

        `create_pretraining_data.py` walks the shuffled words and skips one that would overflow the budget,
        then goes on with the next: a shorter word later in the order may still fit. One step per position,
        vectorized over the batch.
        """
        end_counts = np.where(word_ends, count_so_far, 0)
        previous_end_count = np.maximum.accumulate(np.pad(end_counts[:, :-1], ((0, 0), (1, 0))), axis=1)
        word_length = count_so_far - previous_end_count  # at a word's end: its number of eligible tokens
        taken = np.zeros(word_ends.shape[0], dtype=np.int64)
        take_word = np.zeros(word_ends.shape, dtype=bool)
        for position in range(word_ends.shape[1]):
            length = word_length[:, position]
            fits = word_ends[:, position] & (length > 0) & (taken + length <= num_to_predict)
            taken += np.where(fits, length, 0)
            take_word[:, position] = fits
        # Each token follows the decision made at the end of its word (the next word end at or after it).
        seq_length = word_ends.shape[1]
        next_end = np.minimum.accumulate(np.where(word_ends, np.arange(seq_length), seq_length)[:, ::-1],
                                         axis=1)[:, ::-1]
        return np.take_along_axis(take_word, next_end, axis=1)

    def _mask_tensor(self, token_ids, seed, batch_rows=None):
        import tensorflow as tf

        def mask_with_seed(token_ids, seed):
            rng = _rows_of_batch(np.random.default_rng(seed.astype(np.uint64)), batch_rows, token_ids.shape)
            outputs = self.mask_numpy(token_ids, rng)
            return tuple(outputs[name] for name in _OUTPUT_NAMES)

        def mask_with_own_generator(token_ids):
            outputs = self.mask_numpy(token_ids, _rows_of_batch(self._rng, batch_rows, token_ids.shape))
            return tuple(outputs[name] for name in _OUTPUT_NAMES)

        if seed is None:
            outputs = tf.numpy_function(mask_with_own_generator, [token_ids], _OUTPUT_DTYPES, stateful=True)
        else:
            seed = tf.reshape(tf.cast(seed, tf.int64), [-1])
            outputs = tf.numpy_function(mask_with_seed, [token_ids, seed], _OUTPUT_DTYPES, stateful=False)
        batch_size, seq_length = token_ids.shape
        shapes = [(batch_size, seq_length)] + [(batch_size, self.max_predictions)] * 3
        for tensor, shape in zip(outputs, shapes):
            tensor.set_shape(shape)
        return dict(zip(_OUTPUT_NAMES, outputs))


class _RowsOfBatch:
    """A numpy Generator seen by `mask_numpy` for rows start:stop of a batch: each draw is made for the whole
    batch and cut to those rows, so the rows get the masks they get when the whole batch is masked (the masker's
    draws are `random` and `integers` of the batch's shape; every other step works row by row)."""

    def __init__(self, rng, start, stop, batch_size):
        self._rng, self._start, self._stop, self._batch_size = rng, start, stop, batch_size

    def random(self, shape):
        return self._rng.random((self._batch_size, *shape[1:]))[self._start:self._stop]

    def integers(self, high, size):
        return self._rng.integers(high, size=(self._batch_size, *size[1:]))[self._start:self._stop]


def _rows_of_batch(rng, batch_rows, shape):
    """`rng` itself, or for `batch_rows=(start, stop, batch_size)` a `_RowsOfBatch` (checked against `shape`)."""
    if batch_rows is None:
        return rng
    start, stop, batch_size = (int(value) for value in batch_rows)
    if not 0 <= start < stop <= batch_size or len(shape) != 2 or shape[0] != stop - start:
        raise ValueError(f"batch_rows={tuple(batch_rows)} must be rows start:stop of a batch of batch_size rows, "
                         f"as many as token_ids has (shape {tuple(shape)}).")
    return _RowsOfBatch(rng, start, stop, batch_size)


_OUTPUT_NAMES = ("token_ids", "mask_positions", "mask_ids", "mask_weights")
_OUTPUT_DTYPES = ("int32", "int32", "int32", "float32")


def _is_tf_tensor(value):
    # Checked without importing TensorFlow, so numpy-only (static) masking stays light.
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(value, (tf.Tensor, tf.Variable))


def mask_tokens_loop(token_ids, masker, rng):
    """The masking rules one token at a time, for reading (and for the speed comparison in bench/).

    Same rules as `MaskedLMMasker` (without whole-word grouping): shuffle the eligible positions, keep the
    first `num_to_predict`, then for each one draw [MASK] / random token / unchanged. The random draws differ
    from the vectorized version, so results agree in distribution, not token for token.
    """
    masked_batch, positions_batch, ids_batch, weights_batch = [], [], [], []
    for row in token_ids:
        row = [int(token) for token in row]
        candidates = [position for position, token in enumerate(row) if token not in masker.special_token_ids]
        rng.shuffle(candidates)
        num_tokens = sum(token != masker.padding_token_id for token in row)  # [CLS] and [SEP] count
        num_to_predict = min(masker.max_predictions, max(1, round(num_tokens * masker.selection_rate)))
        num_to_predict = num_to_predict if candidates and masker.selection_rate > 0 else 0
        chosen = sorted(candidates[:num_to_predict])
        masked = list(row)
        for position in chosen:
            draw = rng.random()
            if draw < masker.mask_token_rate:
                masked[position] = masker.mask_token_id
            elif draw < masker.mask_token_rate + masker.random_token_rate:
                masked[position] = int(rng.choice(masker._replacement_ids))
        padding = masker.max_predictions - len(chosen)
        masked_batch.append(masked)
        positions_batch.append(chosen + [0] * padding)
        ids_batch.append([row[position] for position in chosen] + [0] * padding)
        weights_batch.append([1.0] * len(chosen) + [0.0] * padding)
    return {"token_ids": np.array(masked_batch, dtype=np.int32),
            "mask_positions": np.array(positions_batch, dtype=np.int32),
            "mask_ids": np.array(ids_batch, dtype=np.int32),
            "mask_weights": np.array(weights_batch, dtype=np.float32)}
