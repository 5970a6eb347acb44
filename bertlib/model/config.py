"""BERT hyperparameters (paper §3, §4.1 table 1; guide chapter 2)."""

import dataclasses
from dataclasses import dataclass

ATTENTION_IMPLEMENTATIONS = ("explicit", "fused")
# "gelu" is the exact x * Phi(x) of Hendrycks & Gimpel, which the paper cites (BERT appendix A.2) and
# which Hugging Face checkpoints declare as hidden_act="gelu". "gelu_approximate" is the tanh approximation
# used by the original TensorFlow code and by keras-hub; the two differ by up to ~1e-3 per activation.
ACTIVATIONS = ("gelu", "gelu_approximate")

# (num_layers, hidden_dim). Heads are hidden_dim / 64 and the FFN is 4 * hidden_dim, as in the paper's
# BASE/LARGE (§3) and in Turc et al. 2019, "Well-Read Students Learn Better" (the compact BERTs).
_PRESET_SIZES = {
    "tiny": (2, 128),
    "mini": (4, 256),
    "small": (4, 512),
    "medium": (8, 512),
    "base": (12, 768),  # BERT_BASE: L=12, H=768, A=12, 110M parameters (§3)
    "large": (24, 1024),  # BERT_LARGE: L=24, H=1024, A=16, 340M parameters (§3)
}


@dataclass
class BertConfig:
    """The numbers that define a BERT encoder.

    Args:
        num_layers: int. Transformer blocks, the paper's L.
        num_heads: int. Attention heads per block, the paper's A.
        hidden_dim: int. Width of every hidden state, the paper's H.
        intermediate_dim: int. Width of the feed-forward layer; 4H in the paper (§3).
        vocabulary_size: int, defaults to 30522 (the uncased WordPiece vocabulary, §4.2 says "30,000").
        max_sequence_length: int, defaults to 512 (learned positions, §A.2).
        type_vocab_size: int, defaults to 2 (segments A and B, §3).
        dropout: float, defaults to 0.1 (§A.2), on embeddings, attention probabilities and residuals.
        layer_norm_epsilon: float, defaults to 1e-12, as in the released checkpoints.
        attention: "explicit" (softmax(QK^T / sqrt(d)) V written out, can return probabilities for plots)
            or "fused" (`keras.ops.dot_product_attention`). Same weights, same numbers.
        activation: "gelu" (exact, the default) or "gelu_approximate" (tanh form, as keras-hub).
        causal: bool, defaults to False. True lets each token attend only to itself and its left: the
            left-to-right baseline of §5.1, Table 5 ("LTR & No NSP"), same architecture otherwise.

    Example:

    ```python
    BertConfig.preset("base").num_params()  # 109,482,240: BERT_BASE's "110M" (§3)
    ```
    """

    num_layers: int = 2
    num_heads: int = 2
    hidden_dim: int = 128
    intermediate_dim: int = 512
    vocabulary_size: int = 30522
    max_sequence_length: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1
    layer_norm_epsilon: float = 1e-12
    attention: str = "explicit"
    activation: str = "gelu"
    causal: bool = False

    def __post_init__(self):
        for name in ("num_layers", "num_heads", "hidden_dim", "intermediate_dim", "vocabulary_size",
                     "max_sequence_length", "type_vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"BertConfig.{name} must be a positive integer, got {value!r}.")
        if self.hidden_dim % self.num_heads:
            raise ValueError(
                f"BertConfig.hidden_dim ({self.hidden_dim}) must be divisible by num_heads "
                f"({self.num_heads}): each head gets hidden_dim / num_heads dimensions."
            )
        for name in ("dropout", "layer_norm_epsilon"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"BertConfig.{name} must be a number, got {value!r}.")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"BertConfig.dropout must be in [0, 1), got {self.dropout!r}.")
        if not self.layer_norm_epsilon > 0:
            raise ValueError(f"BertConfig.layer_norm_epsilon must be positive, got {self.layer_norm_epsilon!r}.")
        if self.attention not in ATTENTION_IMPLEMENTATIONS:
            raise ValueError(
                f"BertConfig.attention must be one of {ATTENTION_IMPLEMENTATIONS}, got {self.attention!r}."
            )

        if self.activation not in ACTIVATIONS:
            raise ValueError(f"BertConfig.activation must be one of {ACTIVATIONS}, got {self.activation!r}.")
        if not isinstance(self.causal, bool):  # "yes" or "no" would both be truthy
            raise ValueError(f"BertConfig.causal must be True or False, got {self.causal!r}.")

    @property
    def head_dim(self):
        return self.hidden_dim // self.num_heads

    @classmethod
    def preset(cls, name, **overrides):
        """A named size: tiny, mini, small, medium (Turc et al.), base or large (paper table 1)."""
        if name not in _PRESET_SIZES:
            raise ValueError(f"Unknown preset {name!r}; expected one of {sorted(_PRESET_SIZES)}.")
        num_layers, hidden_dim = _PRESET_SIZES[name]
        sizes = dict(num_layers=num_layers, hidden_dim=hidden_dim, num_heads=hidden_dim // 64,
                     intermediate_dim=4 * hidden_dim)
        return cls(**{**sizes, **overrides})

    @staticmethod
    def preset_names():
        return list(_PRESET_SIZES)

    def num_params(self, pooler=True):
        """Parameters of the backbone counted by hand (each dense layer is a weight matrix plus a bias)."""
        H, F = self.hidden_dim, self.intermediate_dim
        embeddings = (self.vocabulary_size + self.max_sequence_length + self.type_vocab_size) * H + 2 * H
        attention = 4 * (H * H + H)  # query, key, value, output projections
        feed_forward = (H * F + F) + (F * H + H)
        layer_norms = 2 * (2 * H)
        per_layer = attention + feed_forward + layer_norms
        return embeddings + self.num_layers * per_layer + (H * H + H if pooler else 0)

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"Unknown BertConfig fields {unknown}; expected a subset of {sorted(known)}.")
        return cls(**values)
