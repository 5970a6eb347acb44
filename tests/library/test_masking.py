"""Masked-LM masking against the paper's numbers (§3.1, A.1; guide chapter 3 and 6), a transcription of the
released code's `create_masked_lm_predictions` and a loop reference."""

import collections
import random

import numpy as np
import pytest
import tensorflow as tf

from bertlib.text.masking import MaskedLMMasker, mask_tokens_loop
from bertlib.text.tokenizer import WordPieceTokenizer

VOCABULARY_SIZE = 30522
PAD, UNK, CLS, SEP, MASK = 0, 100, 101, 102, 103  # the uncased BERT vocabulary
SPECIALS = [PAD, UNK, CLS, SEP, MASK]


def padded_batch(rows, seq_length, seed=0):
    """[CLS] words [SEP] [PAD]..., with random lengths, ids drawn outside the specials."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(999, VOCABULARY_SIZE, size=(rows, seq_length))
    lengths = rng.integers(seq_length // 4, seq_length + 1, size=rows)
    token_ids[:, 0] = CLS
    token_ids[np.arange(rows), lengths - 1] = SEP
    token_ids[np.arange(seq_length) >= lengths[:, None]] = PAD
    return token_ids


def released_create_masked_lm_predictions(tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng,
                                          do_whole_word_mask=False):
    """google-research/bert create_pretraining_data.py (master, eedf571), transcribed: FLAGS.do_whole_word_mask
    is an argument here; everything else is the released function line for line."""
    MaskedLmInstance = collections.namedtuple("MaskedLmInstance", ["index", "label"])
    cand_indexes = []
    for (i, token) in enumerate(tokens):
        if token == "[CLS]" or token == "[SEP]":
            continue
        if (do_whole_word_mask and len(cand_indexes) >= 1 and token.startswith("##")):
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])
    rng.shuffle(cand_indexes)
    output_tokens = list(tokens)
    num_to_predict = min(max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob))))
    masked_lms = []
    covered_indexes = set()
    for index_set in cand_indexes:
        if len(masked_lms) >= num_to_predict:
            break
        if len(masked_lms) + len(index_set) > num_to_predict:
            continue
        is_any_index_covered = False
        for index in index_set:
            if index in covered_indexes:
                is_any_index_covered = True
                break
        if is_any_index_covered:
            continue
        for index in index_set:
            covered_indexes.add(index)
            masked_token = None
            if rng.random() < 0.8:
                masked_token = "[MASK]"
            else:
                if rng.random() < 0.5:
                    masked_token = tokens[index]
                else:
                    masked_token = vocab_words[rng.randint(0, len(vocab_words) - 1)]
            output_tokens[index] = masked_token
            masked_lms.append(MaskedLmInstance(index=index, label=tokens[index]))
    assert len(masked_lms) <= num_to_predict
    masked_lms = sorted(masked_lms, key=lambda x: x.index)
    return (output_tokens, [p.index for p in masked_lms], [p.label for p in masked_lms])


def pair_rows(lengths_a, lengths_b, seq_length, seed=0, piece_share=0.0):
    """[CLS] A [SEP] B [SEP] [PAD]... rows as ids, and the same rows as the released code's token strings.

    Ids from 20000 up are "##" pieces (a share `piece_share` of the word tokens, never the first of A or B).
    """
    rng = np.random.default_rng(seed)
    rows, strings = [], []
    for length_a, length_b in zip(lengths_a, lengths_b):
        words = []
        for length in (length_a, length_b):
            ids = rng.integers(1000, 20000, size=length)
            pieces = rng.integers(20000, VOCABULARY_SIZE, size=length)
            is_piece = (rng.random(length) < piece_share) & (np.arange(length) > 0)
            words.append(list(np.where(is_piece, pieces, ids)))
        row = [CLS] + words[0] + [SEP] + words[1] + [SEP]
        strings.append([{CLS: "[CLS]", SEP: "[SEP]"}.get(i, f"##{i}" if i >= 20000 else f"w{i}") for i in row])
        rows.append(row + [PAD] * (seq_length - len(row)))
    return np.array(rows), strings


def selected_matrix(masked, shape):
    """(batch, seq) bool: the positions with a real prediction slot."""
    selected = np.zeros(shape, dtype=bool)
    rows = np.repeat(np.arange(shape[0]), masked["mask_positions"].shape[1])
    weights = masked["mask_weights"].ravel() > 0
    selected[rows[weights], masked["mask_positions"].ravel()[weights]] = True
    return selected


def test_rates_and_invariants_over_200k_tokens():
    token_ids = padded_batch(800, 512)
    masker = MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, max_predictions=512, seed=0)  # never binds
    masked = masker(token_ids)
    eligible = ~np.isin(token_ids, SPECIALS)
    assert eligible.sum() > 200_000
    selected = selected_matrix(masked, token_ids.shape)

    # The count per row is the released code's formula: 15% of the row's tokens, [CLS] and [SEP] included.
    num_tokens = (token_ids != PAD).sum(axis=1)
    expected_counts = [min(512, max(1, round(n * 0.15))) for n in num_tokens]
    np.testing.assert_array_equal(masked["mask_weights"].sum(axis=1), expected_counts)
    np.testing.assert_array_equal(masker.budget(token_ids), expected_counts)
    assert abs(selected.sum() / num_tokens.sum() - 0.15) < 0.005
    assert not (selected & ~eligible).any()  # specials and padding never selected

    new = masked["token_ids"]
    to_mask = (new == MASK)[selected].mean()
    unchanged = (new == token_ids)[selected].mean()
    to_random = ((new != MASK) & (new != token_ids))[selected].mean()
    assert abs(to_mask - 0.8) < 0.01 and abs(to_random - 0.1) < 0.01 and abs(unchanged - 0.1) < 0.01
    np.testing.assert_array_equal(new[~selected], token_ids[~selected])  # unselected tokens unchanged
    assert not np.isin(new[selected & (new != MASK)], SPECIALS).any()

    # Prediction slots: original ids, increasing positions, then zero padding slots.
    rows = np.arange(len(token_ids))[:, None]
    weights = masked["mask_weights"] > 0
    np.testing.assert_array_equal(masked["mask_ids"][weights], token_ids[rows, masked["mask_positions"]][weights])
    assert (np.diff(weights.astype(int), axis=1) <= 0).all()  # real slots first
    assert (np.diff(masked["mask_positions"], axis=1)[weights[:, 1:]] > 0).all()
    assert (masked["mask_positions"][~weights] == 0).all() and (masked["mask_ids"][~weights] == 0).all()
    assert {key: value.dtype.name for key, value in masked.items()} == {
        "token_ids": "int32", "mask_positions": "int32", "mask_ids": "int32", "mask_weights": "float32"}


def test_512_token_sequence_gets_61_44_mask_tokens_on_average():
    # Guide chapter 6, L1: 512 x 15% x 80% = 61.44. round(512 x 0.15) = 77 slots, so max_predictions=80.
    rng = np.random.default_rng(1)
    token_ids = rng.integers(999, VOCABULARY_SIZE, size=(600, 512))
    masked = MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, max_predictions=80, seed=1)(token_ids)
    assert abs((masked["token_ids"] == MASK).sum(axis=1).mean() - 61.44) < 1.0


@pytest.mark.parametrize("max_predictions", [20, 80])
def test_budget_is_the_released_codes_on_every_pair_length(max_predictions):
    # Every total length from 5 ([CLS] a [SEP] b [SEP]) to 512, with A and B split at random; the released
    # function, transcribed, on the same tokens as strings. Without whole words its count of predictions is
    # its budget (there are always enough candidates), so the two must agree row by row.
    rng = np.random.default_rng(3)
    totals = np.arange(5, 513)
    lengths_a = np.array([rng.integers(1, total - 3) for total in totals])
    token_ids, strings = pair_rows(lengths_a, totals - 3 - lengths_a, 512)
    masker = MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, max_predictions=max_predictions, seed=0)
    released = [len(released_create_masked_lm_predictions(tokens, 0.15, max_predictions, ["w"], random.Random(0))[1])
                for tokens in strings]
    np.testing.assert_array_equal(masker.budget(token_ids), released)
    np.testing.assert_array_equal(masker(token_ids)["mask_weights"].sum(axis=1), released)
    np.testing.assert_array_equal(mask_tokens_loop(token_ids, masker, np.random.default_rng(0))["mask_weights"]
                                  .sum(axis=1), released)
    if max_predictions == 80:  # the course's figures: a full 512-token pair 77 (its 509 eligible tokens would
        # give 76), a full 128-token pair 19
        assert released[-1] == 77 and masker.budget(token_ids)[-1] == 77
        assert released[128 - 5] == 19 and masker.budget(token_ids)[128 - 5] == 19


def test_whole_word_counts_agree_with_the_released_code_in_distribution():
    # Whole words: a row may fill fewer slots than its budget, by chance. The mean number of predictions and
    # of selected "##" pieces over many draws of the same rows must match the released function's.
    lengths = [(4, 5), (30, 27), (60, 63)]
    token_ids, strings = pair_rows([a for a, _ in lengths], [b for _, b in lengths], 128, seed=4, piece_share=0.4)
    masker = MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, max_predictions=20, whole_word=True,
                            continuation_token_ids=np.arange(20000, VOCABULARY_SIZE), seed=0)
    draws = 3000
    masked = masker(np.repeat(token_ids, draws, axis=0))
    ours = masked["mask_weights"].sum(axis=1).reshape(len(lengths), draws)
    ours_pieces = ((masked["mask_ids"] >= 20000) & (masked["mask_weights"] > 0)).sum(axis=1)
    ours_pieces = ours_pieces.reshape(len(lengths), draws)
    rng = random.Random(0)
    for row, tokens in enumerate(strings):
        released = [released_create_masked_lm_predictions(tokens, 0.15, 20, ["w"], rng, do_whole_word_mask=True)
                    for _ in range(draws)]
        counts = np.array([len(positions) for _, positions, _ in released])
        pieces = np.array([sum(label.startswith("##") for label in labels) for _, _, labels in released])
        assert counts.max() == ours[row].max() == masker.budget(token_ids)[row]
        for theirs, mine in ((counts, ours[row]), (pieces, ours_pieces[row])):  # within 4 standard errors
            assert abs(theirs.mean() - mine.mean()) <= 4 * np.sqrt((theirs.var() + mine.var()) / draws) + 1e-9


def test_max_predictions_caps_the_slots():
    token_ids = padded_batch(50, 512)
    masked = MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, max_predictions=20, seed=0)(token_ids)
    assert masked["mask_positions"].shape == (50, 20)
    num_tokens = (token_ids != PAD).sum(axis=1)
    np.testing.assert_array_equal(masked["mask_weights"].sum(axis=1), np.minimum(20, np.rint(num_tokens * 0.15)))
    assert (masked["mask_weights"].sum(axis=1) == 20).mean() > 0.5


def test_random_replacements_are_never_special_and_cover_the_rest():
    # A small vocabulary where specials would often be drawn if they were allowed.
    specials = [0, 1, 2, 3, 4]
    masker = MaskedLMMasker(40, 4, specials, mask_token_rate=0.0, random_token_rate=1.0,
                            max_predictions=64, seed=0)
    token_ids = np.random.default_rng(0).integers(5, 40, size=(400, 64))
    masked = masker(token_ids)
    selected = selected_matrix(masked, token_ids.shape)
    drawn = masked["token_ids"][selected]
    assert not np.isin(drawn, specials).any()
    assert set(np.unique(drawn)) == set(range(5, 40))


def test_rows_without_eligible_tokens_get_no_prediction():
    token_ids = np.array([[CLS, SEP, PAD, PAD], [PAD, PAD, PAD, PAD], [CLS, 2000, SEP, PAD]])
    masked = MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, max_predictions=3, seed=0)(token_ids)
    np.testing.assert_array_equal(masked["mask_weights"].sum(axis=1), [0, 0, 1])
    np.testing.assert_array_equal(masked["mask_positions"][2], [1, 0, 0])


def test_whole_word_selects_every_piece_of_a_word():
    # Ids 20000.. stand for "##" pieces; build words of 1 to 4 pieces.
    continuation_ids = np.arange(20000, VOCABULARY_SIZE)
    rng = np.random.default_rng(2)
    token_ids = padded_batch(300, 256, seed=2)
    is_piece = rng.random(token_ids.shape) < 0.4
    pieces = rng.integers(20000, VOCABULARY_SIZE, size=token_ids.shape)
    token_ids = np.where(np.isin(token_ids, SPECIALS) | ~is_piece, token_ids, pieces)
    masker = MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, max_predictions=256, whole_word=True,
                            continuation_token_ids=continuation_ids, seed=0)
    masked = masker(token_ids)
    selected = selected_matrix(masked, token_ids.shape)

    # Reference grouping, one token at a time: a "##" piece after an eligible token joins its word.
    budget_ok = []
    for row, chosen in zip(token_ids, selected):
        words, eligible = [], 0
        for position, token in enumerate(row):
            if token in SPECIALS:
                continue
            eligible += 1
            if token >= 20000 and words and words[-1][-1] == position - 1:
                words[-1].append(position)
            else:
                words.append([position])
        for word in words:
            assert len({bool(chosen[p]) for p in word}) == 1, f"word {word} split"
        budget = min(256, max(1, round(int((row != PAD).sum()) * 0.15)))  # [CLS] and [SEP] count
        longest = max(len(word) for word in words)
        budget_ok.append(budget - longest < chosen.sum() <= budget)
    assert all(budget_ok)


def test_whole_word_skips_a_word_that_does_not_fit_and_goes_on_as_the_original_code():
    # create_pretraining_data.py skips a shuffled word that would overflow the budget and tries the next ones,
    # so no word left out could still fit in what remains of the budget. Rows of one-piece and three-piece
    # words with a budget of 3 show the difference: stopping at the first misfit often selects 0 or 1 token.
    continuation_ids = np.arange(20000, VOCABULARY_SIZE)
    words = [[1000], [20001, 20002, 20003], [1001], [1002, 20004, 20005], [1003], [1004, 20006, 20007],
             [1005], [1006], [1007, 20008], [1008]]
    row = [CLS] + [1000 + index if position == 0 else 20000 + 10 * index + position
                   for index, word in enumerate(words) for position in range(len(word))] + [SEP]
    token_ids = np.array([row] * 200)
    budget = round(len(row) * 0.15)  # 20 tokens, [CLS] and [SEP] included: 3
    masker = MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, max_predictions=20, whole_word=True,
                            continuation_token_ids=continuation_ids, seed=0)
    selected = selected_matrix(masker(token_ids), token_ids.shape)
    starts = np.flatnonzero((token_ids[0] < 20000) & ~np.isin(token_ids[0], SPECIALS))
    ends = list(starts[1:]) + [len(row) - 1]
    for chosen in selected:
        left = budget - chosen.sum()
        assert left >= 0
        for start, end in zip(starts, ends):
            if not chosen[start]:
                assert end - start > left, f"a word of {end - start} pieces was left out with {left} slots free"


def test_whole_word_needs_continuation_ids():
    with pytest.raises(ValueError, match="continuation_token_ids or vocabulary"):
        MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, whole_word=True)


def test_loop_reference_agrees_in_distribution():
    token_ids = padded_batch(200, 128)
    masker = MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, max_predictions=20, seed=0)
    vectorized = masker(token_ids)
    looped = mask_tokens_loop(token_ids, masker, np.random.default_rng(0))
    np.testing.assert_array_equal(vectorized["mask_weights"].sum(axis=1), looped["mask_weights"].sum(axis=1))
    for masked in (vectorized, looped):
        assert abs((masked["token_ids"] == MASK).sum() / masked["mask_weights"].sum() - 0.8) < 0.03


def test_tensor_input_inside_tf_data_matches_numpy_for_a_seed():
    token_ids = padded_batch(8, 64)
    masker = MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, max_predictions=12)
    expected = masker(token_ids, seed=(7, 3))
    dataset = tf.data.Dataset.from_tensors(tf.constant(token_ids, tf.int32)).map(
        lambda ids: masker(ids, seed=tf.constant([7, 3], tf.int64)))
    assert dataset.element_spec["mask_positions"].shape == (8, 12)
    result = next(iter(dataset))
    for key, value in expected.items():
        np.testing.assert_array_equal(result[key].numpy(), value)
    assert not np.array_equal(masker(token_ids, seed=(7, 4))["mask_positions"], expected["mask_positions"])


def test_vocabulary_without_mask_token_is_a_clear_error(tmp_path):
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "##s"])
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        MaskedLMMasker.from_tokenizer(tokenizer)
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        MaskedLMMasker(7, None, [0, 1, 2, 3])


@pytest.mark.parametrize("kwargs, message", [
    ({"selection_rate": 1.5}, "selection_rate"),
    ({"mask_token_rate": 0.8, "random_token_rate": 0.3}, "at most 1"),
    ({"max_predictions": 0}, "max_predictions"),
])
def test_bad_settings_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, **kwargs)


def test_rates_are_listed_in_table_8_order_and_measured_so():
    # A mixture whose three shares all differ, so a swapped order cannot pass: 60% [MASK], 30% kept, 10% random.
    token_ids = padded_batch(400, 512)
    masker = MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS, max_predictions=512, mask_token_rate=0.6,
                            random_token_rate=0.1, seed=1)
    assert masker.rates == pytest.approx((0.6, 0.3, 0.1)) and masker.keep_rate == pytest.approx(0.3)
    assert MaskedLMMasker(VOCABULARY_SIZE, MASK, SPECIALS).rates == pytest.approx((0.8, 0.1, 0.1))
    masked = masker(token_ids)
    selected = selected_matrix(masked, token_ids.shape)
    new = masked["token_ids"][selected]
    old = token_ids[selected]
    measured = ((new == MASK).mean(), (new == old).mean(), ((new != MASK) & (new != old)).mean())
    np.testing.assert_allclose(measured, masker.rates, atol=0.01)  # MASK, SAME (kept), RND
