"""bertlib: a small, readable Keras 3 BERT, grown chapter by chapter in the course notebooks."""

from bertlib.config import BertConfig
from bertlib.layers import BertEmbedding, MultiHeadSelfAttention, TransformerEncoderBlock
from bertlib.model import BertBackbone, BertPretrainer, MaskedLMHead, NextSentenceHead, pretraining_batch

__version__ = "0.1.0"
