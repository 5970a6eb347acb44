"""bertlib_course.evidence.masking_effects (chapter 06, L2) against a loop over the masker's output, row by row."""

import numpy as np

from bertlib.text.data import default_tokenizer
from bertlib.text.masking import MaskedLMMasker
from bertlib_course.evidence import masking_effects


def loop_effects(masker, rows):
    out = masker(rows)
    targets, masks, intact, interior, free = 0, 0, 0, 0, 0
    for row, positions, weights, masked in zip(rows, out["mask_positions"], out["mask_weights"], out["token_ids"]):
        chosen = {int(position) for position, weight in zip(positions, weights) if weight > 0}
        targets += len(chosen)
        masks += sum(int(token) == masker.mask_token_id for token in masked)
        intact += len(row) - len(chosen)
        for position in chosen:
            if 0 < position < len(row) - 1:
                interior += 1
                free += position - 1 not in chosen and position + 1 not in chosen
    cells = rows.size
    return {"signal": targets / len(rows), "mask_share": masks / cells, "intact_share": intact / cells,
            "free_neighbours": free / interior}


def test_masking_effects_agree_with_a_loop_and_with_the_rates():
    tokenizer = default_tokenizer()
    ordinary = np.setdiff1d(np.arange(tokenizer.vocabulary_size), tokenizer.special_token_ids)
    rows = np.random.default_rng(0).choice(ordinary, size=(200, 128))
    for rate in (0.05, 0.15, 0.5):
        masker = MaskedLMMasker.from_tokenizer(tokenizer, selection_rate=rate, max_predictions=128, seed=0)
        effects = masking_effects(masker, rows)
        expected = loop_effects(MaskedLMMasker.from_tokenizer(tokenizer, selection_rate=rate, max_predictions=128,
                                                              seed=0), rows)
        assert effects.keys() == expected.keys()
        np.testing.assert_allclose([effects[key] for key in expected], list(expected.values()), rtol=1e-12)
        assert effects["signal"] == round(128 * rate)       # ordinary rows: the budget of 128 tokens
        assert abs(effects["mask_share"] - 0.8 * rate) < 0.01
        assert abs(effects["free_neighbours"] - (1 - rate) ** 2) < 0.05
