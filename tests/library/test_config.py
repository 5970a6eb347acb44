import pytest

from bertlib import BertBackbone, BertConfig

# keras-hub's preset figures for bert_tiny_en_uncased / bert_base_en_uncased / bert_large_en_uncased,
# which are the paper's "110M" and "340M" (§3) counted exactly.
EXACT_COUNTS = {"tiny": 4_385_920, "base": 109_482_240, "large": 335_141_888}


@pytest.mark.parametrize("name", sorted(EXACT_COUNTS))
def test_analytic_parameter_count_matches_keras_hub_figures(name):
    assert BertConfig.preset(name).num_params() == EXACT_COUNTS[name]


@pytest.mark.parametrize("name", ["tiny", "base"])
def test_built_parameter_count_matches_analytic(name):
    config = BertConfig.preset(name)
    assert BertBackbone(config).count_params() == config.num_params() == EXACT_COUNTS[name]


def test_paper_rounding_of_base_and_large():
    # §3: "BERT_BASE (L=12, H=768, A=12, Total Parameters=110M) and BERT_LARGE (L=24, H=1024, A=16, 340M)"
    assert round(BertConfig.preset("base").num_params() / 1e6, -1) == 110
    assert round(BertConfig.preset("large").num_params() / 1e6, -1) == 340


def test_presets_follow_turc_et_al_and_table_1():
    expected = {"tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8), "medium": (8, 512, 8),
                "base": (12, 768, 12), "large": (24, 1024, 16)}
    for name, (layers, hidden, heads) in expected.items():
        config = BertConfig.preset(name)
        assert (config.num_layers, config.hidden_dim, config.num_heads) == (layers, hidden, heads)
        assert config.intermediate_dim == 4 * hidden


@pytest.mark.parametrize("kwargs, message", [
    (dict(hidden_dim=100, num_heads=3), "divisible"),
    (dict(num_layers=0), "num_layers"),
    (dict(hidden_dim=-8), "hidden_dim"),
    (dict(dropout=1.0), "dropout"),
    (dict(dropout=-0.1), "dropout"),
    (dict(attention="flash"), "attention"),
    (dict(activation="relu"), "activation"),
])
def test_bad_config_names_value_and_rule(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BertConfig(**kwargs)


def test_unknown_preset_and_round_trip():
    with pytest.raises(ValueError, match="Unknown preset 'huge'"):
        BertConfig.preset("huge")
    config = BertConfig.preset("mini", dropout=0.0)
    assert BertConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="Unknown BertConfig fields"):
        BertConfig.from_dict({**config.to_dict(), "hidden_size": 1})
